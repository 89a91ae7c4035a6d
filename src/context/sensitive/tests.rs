use super::*;
use serde_json::json;

fn config() -> SensitiveConfig {
    serde_json::from_value(json!({
        "detect": ["email", "phone", "card", "iban", "secret"],
        "patterns": {"employee_id": "EMP-[0-9]{6}"},
        "fields": {"crm:get_customer": ["/address"]},
        "reveal_to": {"email": ["mailer:*"]}
    }))
    .unwrap()
}

#[test]
fn values_become_stable_placeholders_keys_included() {
    let s = Sensitive::compile(&config()).unwrap();
    let mut map = Placeholders::default();
    s.remember_fields(
        "crm:get_customer",
        &json!({"address": "1 Main Street"}),
        &mut map,
    );
    let mut v = json!({
        "to": "ada@example.com",
        "ada@example.com": ["call +1 415 555 2671", "EMP-123456", "ship to 1 Main Street"],
        "again": "ada@example.com"
    });
    let r = s.redactor(&map);
    r.redact_value(&mut v, &mut map);
    let text = v.to_string();
    for real in ["ada@example.com", "415 555", "EMP-123456", "Main Street"] {
        assert!(!text.contains(real), "{real} in {text}");
    }
    assert_eq!(v["to"], v["again"]);
    // Keys are redacted too, with the same placeholder as the same value elsewhere.
    let key = v["to"].as_str().unwrap().to_string();
    assert!(key.starts_with("⟪email:"), "{key}");
    assert_eq!(v[&key][0], "call ⟪phone:2⟫");
    assert_eq!(v[&key][2], "ship to ⟪address:1⟫");
}

#[test]
fn placeholders_come_back_only_where_revealed() {
    let s = Sensitive::compile(&config()).unwrap();
    let mut map = Placeholders::default();
    let p = map.placeholder("email", "ada@example.com");
    let mut args = json!({"to": p.clone(), "body": format!("hi {p}")});
    assert!(s.substitute(&map, "mailer:send_mail", &mut args).unwrap());
    assert_eq!(
        args,
        json!({"to": "ada@example.com", "body": "hi ada@example.com"})
    );

    let mut args = json!({"q": p.clone()});
    let e = s.substitute(&map, "web:post", &mut args).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the arguments hold ⟪email:1⟫, a value of kind `email`, and the rule sandbox.sensitive.reveal_to.email does not let web:post receive it (it allows mailer:*); pass it only to a tool the rule allows, or ask the operator"
    );
    let mut args = json!(["⟪email:9⟫"]);
    assert!(matches!(
        s.substitute(&map, "mailer:send_mail", &mut args),
        Err(SubstituteError::Unknown { .. })
    ));
    // A placeholder-looking string with no number is left alone.
    let mut args = json!("⟪email⟫");
    assert!(!s.substitute(&map, "mailer:send_mail", &mut args).unwrap());
}

#[test]
fn principal_policies_only_add() {
    let mut base = config();
    let more: SensitiveConfig = serde_json::from_value(json!({
        "detect": ["email"], "patterns": {"badge": "B-[0-9]{4}"}
    }))
    .unwrap();
    base.add("policy 'p'", &more).unwrap();
    assert!(base.patterns.contains_key("badge"));
    let widen: SensitiveConfig =
        serde_json::from_value(json!({"reveal_to": {"email": ["*"]}})).unwrap();
    assert!(matches!(
        base.add("policy 'p'", &widen),
        Err(SensitiveError::NotAddOnly { .. })
    ));
    let clash: SensitiveConfig =
        serde_json::from_value(json!({"patterns": {"badge": "X"}})).unwrap();
    assert!(matches!(
        base.add("policy 'p'", &clash),
        Err(SensitiveError::Conflict { .. })
    ));
    assert_eq!(pointer_kind("/contact/Email"), "email");
    assert_eq!(pointer_kind("/0"), "field");
}
