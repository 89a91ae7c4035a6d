use super::*;
use placeholders::Unresolved;
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
    )
    .unwrap();
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
    let tag = &key["⟪email:".len()..key.len() - "⟫".len() - ":3".len()];
    // Numbered in the document's order (objects keep their key order): the email first.
    assert_eq!(v[&key][0], format!("call ⟪phone:{tag}:3⟫"));
    assert_eq!(v[&key][2], format!("ship to ⟪address:{tag}:1⟫"));
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
        format!("the arguments hold {p}, a value of kind `email`, and the rule sandbox.sensitive.reveal_to.email does not let web:post receive it (it allows mailer:*); pass it only to a tool the rule allows, or ask the operator")
    );
    // A kind reveal_to has no entry for: the message names no rule that does not exist.
    let phone = map.placeholder("phone", "+1 415 555 2671");
    let mut args = json!({"to": phone.clone()});
    let e = s
        .substitute(&map, "mailer:send_mail", &mut args)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("the arguments hold {phone}, a value of kind `phone`, and no tool may receive values of that kind: sandbox.sensitive.reveal_to has no entry for `phone`, so mailer:send_mail does not get it. Ask the operator to add one (\"reveal_to\": {{\"phone\": [\"mailer:send_mail\"]}}) if mailer:send_mail should")
    );
    let tagged = &p[..p.len() - "1⟫".len()];
    let mut args = json!([format!("{tagged}9⟫")]);
    assert_eq!(
        s.substitute(&map, "mailer:send_mail", &mut args).unwrap_err().to_string(),
        format!("the arguments hold {tagged}9⟫, which has this session's tag, but this session never returned that kind with that number. Pass placeholders exactly as this session's executions returned them; the call was not made")
    );
    // The untagged form of earlier versions is refused, saying so.
    let mut args = json!("⟪email:1⟫");
    let e = s
        .substitute(&map, "mailer:send_mail", &mut args)
        .unwrap_err();
    assert!(
        matches!(
            &e,
            SubstituteError::Unknown {
                why: Unresolved::Untagged,
                ..
            }
        ),
        "{e}"
    );
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
}

#[test]
fn marked_fields_are_found_in_json_text_and_masked_whatever_their_shape() {
    let s = Sensitive::compile(&config()).unwrap();
    let mut map = Placeholders::default();
    // A server answering JSON as text (one text item, or a content array of them).
    s.remember_fields(
        "crm:get_customer",
        &json!("{\"address\": \"1 Main Street\"}"),
        &mut map,
    )
    .unwrap();
    s.remember_fields(
        "crm:get_customer",
        &json!([{"type": "text", "text": "{\"address\": {\"line\": \"9 Elm Road\", \"no\": 42}}"}]),
        &mut map,
    )
    .unwrap();
    let mut v = json!({"a": "1 Main Street", "b": "at 9 Elm Road", "n": 42, "s": "42", "m": 4200});
    let r = s.redactor(&map);
    r.redact_value(&mut v, &mut map);
    let text = v.to_string();
    for real in ["Main Street", "Elm Road"] {
        assert!(!text.contains(real), "{real} in {text}");
    }
    // 42 is masked where a whole number or string equals it, not inside 4200.
    assert!(v["n"].as_str().unwrap().starts_with("⟪address:"), "{v}");
    assert!(v["s"].as_str().unwrap().starts_with("⟪address:"), "{v}");
    assert_eq!(v["m"], 4200, "only the exact number is masked");
    assert_eq!(pointer_kind("/0"), "field");
}
