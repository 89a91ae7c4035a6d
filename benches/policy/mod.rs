//! The policy's key of the benchmark (issue 28), run alone with
//! `cargo bench --bench sandbox -- policy`:
//!
//! - `policy_check_us`: the host's time to decide one call (`Policy::check_call`, what the gate
//!   adds before a call is forwarded) under 20 rules with CEL conditions on the arguments (10
//!   deny rules on other tools, 9 on this one, 1 conditioned allow that holds) and 10 data-flow
//!   rules (`FlowPolicy::decide` after two labels were read, none of them applying), p50/p99 of
//!   20,000 decisions; and `policy_check_plain_us`, the same call under 20 glob rules and no
//!   flow rules.

use super::percentiles;
use mcp_sandbox::context::flow::{FlowRuleConfig, FlowVerdict, Taint};
use mcp_sandbox::context::policy::{Policy, RuleEntry, Rules};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Instant;

fn time(policy: &Policy, args: &Value, n: usize) -> Value {
    let taint = Taint::default();
    taint.add("internal", "crm:list");
    taint.add("logs", "ops:tail");
    let mut us = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let verdict = policy.check_call("mailer", "send", args);
        let flow = taint.with_read(|read| policy.flow().decide("mailer:send", read));
        us.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(verdict.is_ok(), "{verdict:?}");
        assert_eq!(flow, FlowVerdict::Allow);
    }
    percentiles(us)
}

pub fn bench() -> Value {
    let mut deny: Vec<Value> = (0..10)
        .map(|i| json!({"tool": format!("other{i}:*"), "if": "args.amount > 100"}))
        .collect();
    deny.extend((0..9).map(|i| {
        json!({"tool": "mailer:send", "if": format!("has(args.meta) && args.meta.priority > {}", 10 + i)})
    }));
    let allow = vec![json!({"tool": "mailer:*", "if": "args.to.all(a, a.endsWith('@acme.com'))"})];
    let entries = |v: Vec<Value>| -> Vec<RuleEntry> {
        serde_json::from_value(Value::Array(v)).expect("rules")
    };
    let labels: BTreeMap<String, Vec<String>> = (0..10)
        .map(|i| (format!("src{i}:*"), vec![format!("label{i}")]))
        .chain([
            ("crm:*".to_string(), vec!["internal".to_string()]),
            ("mailer:*".to_string(), vec!["egress".to_string()]),
        ])
        .collect();
    let flows: Vec<FlowRuleConfig> = (0..10)
        .map(|i| FlowRuleConfig {
            after: vec![format!("label{i}"), "internal".to_string()],
            deny: vec!["egress".to_string()],
            ..Default::default()
        })
        .collect();
    let conditioned = Policy::allow_all()
        .with(Rules::from_entries("config", Some(&entries(allow)), &entries(deny)).expect("rules"))
        .with_flow("config", &labels, &flows)
        .expect("flow rules");
    let globs: Vec<String> = (0..19).map(|i| format!("other{i}:*")).collect();
    let plain = Policy::allow_all()
        .with(Rules::new("config", Some(&["mailer:*".to_string()]), &globs).expect("rules"));
    let args = json!({"to": ["ann@acme.com", "bob@acme.com"], "subject": "report", "meta": {"priority": 1}});
    json!({
        "policy_check_us": time(&conditioned, &args, 20_000),
        "policy_check_plain_us": time(&plain, &args, 20_000),
    })
}
