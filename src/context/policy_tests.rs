//! Unit tests of `context::policy`.

use super::*;

fn lists(allow: Option<&[&str]>, deny: &[&str]) -> RuleLists {
    RuleLists {
        allow: allow.map(|a| a.iter().map(|s| s.to_string()).collect()),
        deny: deny.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn deny_wins_and_allow_list_restricts() {
    let p = Policy::allow_all().with(
        Rules::from_lists(
            "config",
            &lists(
                Some(&["filesystem:read_*", "memory"]),
                &["filesystem:read_media_file"],
            ),
        )
        .unwrap(),
    );
    assert!(p.allows("filesystem", "read_text_file"));
    assert!(p.allows("memory", "create_entities"));
    assert!(!p.allows("filesystem", "write_file"));
    assert!(!p.allows("everything", "echo"));
    let why = p.check("filesystem", "read_media_file").unwrap_err();
    assert_eq!(
        why,
        "filesystem:read_media_file is denied by the config rule deny \"filesystem:read_media_file\""
    );
    let why = p.check("filesystem", "write_file").unwrap_err();
    assert_eq!(
        why,
        "filesystem:write_file is not in the config allow list (\"filesystem:read_*\", \"memory\")"
    );
}

#[test]
fn layers_only_narrow() {
    let config = Rules::from_lists("config", &lists(None, &["fs:write_file"])).unwrap();
    let cli = Rules::from_lists("--allow/--deny", &lists(Some(&["fs:*"]), &[])).unwrap();
    let p = Policy::allow_all().with(config).with(cli);
    assert!(p.allows("fs", "read"));
    assert!(!p.allows("fs", "write_file"));
    assert!(!p.allows("other", "x"));
    assert!(Policy::allow_all().allows("any", "thing"));
    assert!(Policy::allow_all().is_allow_all());
}

#[test]
fn empty_allow_list_denies_everything() {
    let p = Policy::allow_all().with(Rules::new("config", Some(&[]), &[]).unwrap());
    assert!(!p.allows("a", "b"));
}

#[test]
fn wildcards_do_not_cross_the_colon_by_accident() {
    let p = Policy::allow_all()
        .with(Rules::from_lists("config", &lists(Some(&["mem?ry:read_*"]), &[])).unwrap());
    assert!(p.allows("memory", "read_graph"));
    assert!(!p.allows("memory", "create_entities"));
    // "*" alone is every tool of every server.
    let all = Policy::allow_all().with(Rules::new("c", Some(&["*".into()]), &[]).unwrap());
    assert!(all.allows("x", "y"));
}

#[test]
fn deny_wins_over_ask_and_ask_over_allow() {
    let p = Policy::allow_all()
        .with(Rules::from_lists("config", &lists(Some(&["fs"]), &["fs:delete_*"])).unwrap())
        .with_ask("config", &["fs:write_*".into(), "fs:delete_*".into()])
        .unwrap();
    assert!(p.check("fs", "delete_file").is_err());
    assert!(p.check("fs", "write_file").is_ok());
    assert_eq!(
        p.asks("fs", "write_file").as_deref(),
        Some("config rule ask \"fs:write_*\"")
    );
    assert_eq!(p.asks("fs", "read_file"), None);
    assert!(Policy::allow_all()
        .with_ask("--ask", &["a:b:c".into()])
        .is_err());
    let pre = PreApproved::new(&["fs:write_*".into()]).unwrap();
    assert_eq!(pre.matching("fs", "write_file"), Some("fs:write_*"));
    assert_eq!(pre.matching("fs", "read_file"), None);
}

fn entries(v: serde_json::Value) -> Vec<RuleEntry> {
    serde_json::from_value(v).unwrap()
}

#[test]
fn conditions_decide_with_the_arguments_and_fail_closed() {
    use serde_json::json;
    let allow = entries(
        json!(["fx:echo", "fx:add", {"tool": "fx:mail", "if": "args.to.all(a, a.endsWith('@acme.com'))", "name": "internal"}]),
    );
    let deny =
        entries(json!([{"tool": "fx:mail", "if": "has(args.meta) && args.meta.priority > 5"}]));
    let p = Policy::allow_all()
        .with(Rules::from_entries("config", Some(&allow), &deny).unwrap())
        .with_ask_entries(
            "config",
            &entries(json!([{"tool": "fx:add", "if": "args.a > 100", "name": "big"}])),
        )
        .unwrap();
    // By name: the conditioned allow counts, the conditioned deny does not.
    assert!(p.check("fx", "mail").is_ok());
    assert!(p
        .check_call("fx", "mail", &json!({"to": ["a@acme.com"]}))
        .is_ok());
    let why = p
        .check_call("fx", "mail", &json!({"to": ["a@acme.com", "b@evil.com"]}))
        .unwrap_err();
    assert_eq!(why, "fx:mail is allowed by the config only when its arguments satisfy rule \"internal\" (allow \"fx:mail\" if args.to.all(a, a.endsWith('@acme.com'))); these do not");
    let why = p
        .check_call(
            "fx",
            "mail",
            &json!({"to": ["a@acme.com"], "meta": {"priority": 9}}),
        )
        .unwrap_err();
    assert_eq!(why, "fx:mail is denied by the config rule \"deny fx:mail if has(args.meta) && args.meta.priority > 5\" (deny \"fx:mail\" if has(args.meta) && args.meta.priority > 5)");
    let why = p
        .check_call(
            "fx",
            "mail",
            &json!({"to": ["a@acme.com"], "meta": {"priority": "high"}}),
        )
        .unwrap_err();
    assert!(
        why.contains("could not be evaluated") && why.contains("fail closed"),
        "{why}"
    );
    let why = p
        .check_call("fx", "mail", &json!({"to": "a@acme.com"}))
        .unwrap_err();
    assert!(why.contains("could not be evaluated"), "{why}");
    assert_eq!(
        p.asks_call("fx", "add", Some(&json!({"a": 150})))
            .as_deref(),
        Some("config rule \"big\" (ask \"fx:add\" if args.a > 100)")
    );
    assert_eq!(p.asks_call("fx", "add", Some(&json!({"a": 1}))), None);
    // An ask rule whose condition fails refuses the call too.
    let why = p.check_call("fx", "add", &json!({"a": "x"}));
    assert!(
        why.as_ref()
            .is_err_and(|w| w.contains("could not be evaluated")),
        "{why:?}"
    );
    // Refused at load: the rule and where the expression is wrong.
    let bad = Rules::from_entries(
        "config",
        None,
        &entries(json!([{"tool": "fx:mail", "if": "args.to ==", "name": "broken"}])),
    )
    .unwrap_err();
    assert!(
        bad.to_string().starts_with(
            "rule \"broken\": the condition `if` is not valid CEL over `args`: at line:column 1:"
        ),
        "{bad}"
    );
    assert!(Rules::from_entries(
        "c",
        None,
        &entries(json!([{"tool": "fx:mail", "name": "a b"}]))
    )
    .is_err());
}

#[test]
fn bad_patterns_are_refused() {
    for bad in ["", ":x", "a:b:c", "fs:", "a b:c"] {
        assert!(
            Rules::new("c", None, &[bad.to_string()]).is_err(),
            "{bad:?} accepted"
        );
    }
}
