//! Unit tests of `context::flow`: labels, flow rules, the cap.

use super::*;

fn policy() -> FlowPolicy {
    let mut p = FlowPolicy::default();
    let labels = BTreeMap::from([
        ("crm:*".to_string(), vec!["private".to_string()]),
        ("web:*".to_string(), vec!["untrusted".to_string()]),
        ("mail:send*".to_string(), vec!["egress".to_string()]),
    ]);
    let flows = [
        FlowRuleConfig {
            after: vec!["private".into()],
            deny: vec!["egress".into()],
            ..Default::default()
        },
        FlowRuleConfig {
            after: vec!["untrusted".into()],
            ask: vec!["egress".into()],
            name: Some("outsiders".into()),
            ..Default::default()
        },
    ];
    p.add("config", &labels, &flows).unwrap();
    p
}

#[test]
fn a_rule_applies_once_all_its_labels_were_read() {
    let p = policy();
    let taint = Taint::default();
    assert_eq!(p.decide("mail:send", &taint.read()), FlowVerdict::Allow);
    assert!(taint.add("untrusted", "web:fetch"));
    assert!(!taint.add("untrusted", "web:other"), "first source is kept");
    match p.decide("mail:send", &taint.read()) {
        FlowVerdict::Ask { rule, label, .. } => {
            assert_eq!(rule, "config flow rule \"outsiders\"");
            assert_eq!(label, "egress");
        }
        other => panic!("{other:?}"),
    }
    taint.add("private", "crm:get_customer");
    match p.decide("mail:send", &taint.read()) {
        FlowVerdict::Deny { message, .. } => {
            assert!(
                message.starts_with(
                    "mail:send is egress; this execution read private data from crm:get_customer at "
                ),
                "{message}"
            );
            assert!(message.ends_with(" ms (config flows[0])"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.decide("crm:get", &taint.read()), FlowVerdict::Allow);
}

#[test]
fn inherited_labels_say_so() {
    let p = policy();
    let taint = Taint::default();
    let earlier = [LabelSource {
        label: "private".into(),
        tool: "crm:get_customer".into(),
        at_ms: 5.0,
        earlier: false,
        execution: None,
    }];
    assert_eq!(taint.inherit(&earlier), 1);
    assert_eq!(taint.inherit(&earlier), 0, "already read");
    assert_eq!(taint.untraced().len(), 1);
    assert!(taint.untraced().is_empty());
    let FlowVerdict::Deny { message, .. } = p.decide("mail:send", &taint.read()) else {
        panic!()
    };
    assert_eq!(
        message,
        "mail:send is egress; this execution read private data from crm:get_customer in an earlier execution of this session (config flows[0])"
    );
}

#[test]
fn past_the_label_cap_every_rule_applies() {
    let p = policy();
    let taint = Taint::default();
    for i in 0..MAX_LABELS {
        assert!(taint.add(&format!("l{i}"), "web:many"));
    }
    assert_eq!(p.decide("mail:send", &taint.read()), FlowVerdict::Allow);
    // The 65th distinct label: not dropped, it becomes "every label".
    assert!(taint.add("private", "crm:get_customer"));
    assert!(!taint.add("another", "crm:get_customer"), "recorded once");
    let read = taint.read();
    assert_eq!(read.len(), MAX_LABELS + 1);
    assert_eq!(read[MAX_LABELS].label, ALL_LABELS);
    match p.decide("mail:send", &read) {
        FlowVerdict::Deny { label, message, .. } => {
            assert_eq!(label, "egress");
            assert_eq!(
                message,
                "mail:send is egress; this execution read more than 64 distinct labels, the most the host tracks (the first past it came from crm:get_customer), so every flow rule applies as if all its labels were read; read fewer kinds of data in one execution or session (config flows[0])"
            );
        }
        other => panic!("{other:?}"),
    }
    // Kept and inherited as such (a session's labels, a stored value's).
    let next = Taint::default();
    next.inherit(&read);
    assert!(matches!(
        p.decide("mail:send", &next.read()),
        FlowVerdict::Deny { .. }
    ));
}

#[test]
fn bad_rules_are_refused_with_their_position() {
    let mut p = FlowPolicy::default();
    let bad = |f: FlowRuleConfig| FlowPolicy::default().add("config", &BTreeMap::new(), &[f]);
    assert_eq!(
        bad(FlowRuleConfig {
            deny: vec!["egress".into()],
            ..Default::default()
        }),
        Err(FlowError::EmptyAfter {
            rule: "config flows[0]".into()
        })
    );
    assert_eq!(
        bad(FlowRuleConfig {
            after: vec!["private".into()],
            ..Default::default()
        }),
        Err(FlowError::NoEffect {
            rule: "config flows[0]".into()
        })
    );
    assert!(matches!(
        bad(FlowRuleConfig {
            after: vec!["Private Data".into()],
            deny: vec!["egress".into()],
            ..Default::default()
        }),
        Err(FlowError::BadLabel { .. })
    ));
    let labels = BTreeMap::from([("x:*".to_string(), vec!["".to_string()])]);
    assert!(p.add("config", &labels, &[]).is_err());
}
