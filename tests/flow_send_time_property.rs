//! A property of the flow rules under any interleaving (issue 43): however a script interleaves
//! private reads, egress calls (some carrying a placeholder), slow calls that hold the
//! concurrency slots and its own sleeps, under any `max_concurrent_calls`, no egress call
//! reaches its server after a private read's answer reached the script. Real runners, and an
//! in-process server (the library API, as `tests/common`'s `local_server`) that records, in one
//! sequence, when each egress call arrives and when each private answer is handed back.
//!
//! The in-process tools run inside the call's future, polled by the session's task: a private
//! answer is handed back in the same poll that gives it to the session, which adds its label
//! before it polls any other call again. So "an egress call arrived after a private answer" is
//! exactly "it was sent after the label joined" — no timing slack, no rate assertion.

use mcp_sandbox::context::flow::FlowRuleConfig;
use mcp_sandbox::context::policy::Policy;
use mcp_sandbox::context::sensitive::SensitiveConfig;
use mcp_sandbox::exec::placeholders::ExecPlaceholders;
use mcp_sandbox::{Catalog, ExecError, ExecRequest, InProcessServer, Limits};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server saw, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// A private answer handed back to the host.
    Answered,
    /// An egress call arrived, with its `to`.
    Sent(String),
}

type Log = Arc<Mutex<Vec<Seen>>>;

fn server(log: &Log) -> InProcessServer {
    let (read_log, send_log) = (log.clone(), log.clone());
    InProcessServer::new("p")
        .tool(
            "read",
            "A private record, after ms milliseconds",
            json!({"type": "object"}),
            move |args| {
                let log = read_log.clone();
                async move {
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    log.lock().unwrap().push(Seen::Answered);
                    Ok::<Value, ExecError>(json!({"email": "ada@example.com"}))
                }
            },
        )
        .tool("send", "Egress", json!({"type": "object"}), move |args| {
            let log = send_log.clone();
            async move {
                let to = args["to"].as_str().unwrap_or_default().to_string();
                log.lock().unwrap().push(Seen::Sent(to));
                Ok::<Value, ExecError>(json!("sent"))
            }
        })
        .tool(
            "hold",
            "Unlabelled, answers after ms milliseconds",
            json!({"type": "object"}),
            |args| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<Value, ExecError>(json!("held"))
            },
        )
}

/// One step of a generated script.
#[derive(Debug, Clone)]
enum Op {
    /// A private read taking `ms`; awaited at once or left running.
    Read { ms: u64, awaited: bool },
    /// An egress call; `placeholder`: to the map's `⟪email:TAG:1⟫` (resolved to the real address), else to a
    /// literal address.
    Send { placeholder: bool, awaited: bool },
    /// An unlabelled call that holds a slot for `ms`.
    Hold { ms: u64 },
    /// The script's own timer.
    Sleep { ms: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..30, any::<bool>()).prop_map(|(ms, awaited)| Op::Read { ms, awaited }),
        (any::<bool>(), any::<bool>()).prop_map(|(placeholder, awaited)| Op::Send {
            placeholder,
            awaited
        }),
        (0u64..30).prop_map(|ms| Op::Hold { ms }),
        (0u64..20).prop_map(|ms| Op::Sleep { ms }),
    ]
}

/// The script: each call's outcome (`ok` or the error code) in order of the calls.
fn script(ops: &[Op], held: &str) -> String {
    let mut s = String::from(
        "const calls = [];\nconst track = (p) => { const t = p.then(() => 'ok', e => e.code); calls.push(t); return t; };\n",
    );
    for op in ops {
        s.push_str(&match op {
            Op::Read { ms, awaited } => format!(
                "{}track(mcp.p.read({{ms: {ms}}}));\n",
                if *awaited { "await " } else { "" }
            ),
            Op::Send {
                placeholder,
                awaited,
            } => format!(
                "{}track(mcp.p.send({{to: '{}'}}));\n",
                if *awaited { "await " } else { "" },
                if *placeholder {
                    held
                } else {
                    "out@evil.example"
                }
            ),
            Op::Hold { ms } => format!("track(mcp.p.hold({{ms: {ms}}}));\n"),
            Op::Sleep { ms } => format!("await new Promise(r => setTimeout(r, {ms}));\n"),
        });
    }
    s.push_str("return await Promise.all(calls);\n");
    s
}

fn policy() -> Policy {
    let labels = BTreeMap::from([
        ("p:read".to_string(), vec!["private".to_string()]),
        ("p:send".to_string(), vec!["egress".to_string()]),
    ]);
    let flows = [FlowRuleConfig {
        after: vec!["private".into()],
        deny: vec!["egress".into()],
        ..Default::default()
    }];
    let sensitive: SensitiveConfig =
        serde_json::from_value(json!({"detect": ["email"], "reveal_to": {"email": ["p:send"]}}))
            .unwrap();
    Policy::allow_all()
        .with_flow("config", &labels, &flows)
        .unwrap()
        .with_sensitive("config", &sensitive, true)
        .unwrap()
}

/// Runs `ops` under `slots`; checks the property and the outcome's agreement with the server.
async fn case(ops: Vec<Op>, slots: u64) -> Result<(), TestCaseError> {
    let log: Log = Arc::default();
    let mut catalog = Catalog::new();
    catalog.add(Arc::new(server(&log))).unwrap();
    let policy = policy();
    // The execution's own map, holding the address's placeholder (`⟪email:TAG:1⟫`, the tag
    // the map's own) before it starts, as a session's would.
    let placeholders = ExecPlaceholders::open(policy.sensitive().unwrap().clone(), None, None)
        .await
        .unwrap();
    let held = placeholders.redact_text("ann@evil.example");
    assert!(
        held.starts_with("⟪email:") && held.ends_with(":1⟫"),
        "{held}"
    );
    let limits = Limits {
        max_concurrent_calls: slots,
        ..Limits::default()
    };
    let code = script(&ops, &held);
    let outcome = mcp_sandbox::execute(
        &catalog,
        &crate::common::runner(),
        ExecRequest {
            code: code.clone(),
            request: mcp_sandbox::context::RequestContext::default()
                .with_limits(limits)
                .with_policy(policy),
            placeholders: Some(placeholders),
            ..Default::default()
        },
    )
    .await;
    prop_assert!(outcome.error.is_none(), "{code}\n{outcome:?}");
    let seen = log.lock().unwrap().clone();
    // The property: nothing leaves after a private answer was handed back.
    if let Some(first) = seen.iter().position(|s| *s == Seen::Answered) {
        let late: Vec<&Seen> = seen[first..]
            .iter()
            .filter(|s| matches!(s, Seen::Sent(_)))
            .collect();
        prop_assert!(
            late.is_empty(),
            "sent after a private read: {late:?}\n{seen:?}\n{code}"
        );
    }
    // What went out carries the resolved value, never the placeholder.
    for s in &seen {
        if let Seen::Sent(to) = s {
            prop_assert!(to == "ann@evil.example" || to == "out@evil.example", "{to}");
        }
    }
    // The script's view agrees: each egress call either went out (`ok`) or was refused
    // (`PERMISSION_DENIED`), and each refusal has its one `flow_decision` deny event.
    let results = outcome.result.as_array().cloned().unwrap_or_default();
    let kinds: Vec<&Op> = ops
        .iter()
        .filter(|o| !matches!(o, Op::Sleep { .. }))
        .collect();
    prop_assert_eq!(results.len(), kinds.len());
    let (mut sent, mut refused) = (0, 0);
    for (op, r) in kinds.iter().zip(&results) {
        match op {
            Op::Send { .. } if r == "ok" => sent += 1,
            Op::Send { .. } => {
                prop_assert_eq!(r, &json!("PERMISSION_DENIED"));
                refused += 1;
            }
            _ => prop_assert_eq!(r, &json!("ok")),
        }
    }
    let outgoing = seen.iter().filter(|s| matches!(s, Seen::Sent(_))).count();
    prop_assert_eq!(sent, outgoing, "{:?}", seen);
    let denials = outcome
        .traces
        .iter()
        .filter(|t| {
            t.kind == mcp_sandbox::trace::TraceKind::FlowDecision
                && t.decision.as_deref() == Some("deny")
        })
        .count();
    prop_assert_eq!(refused, denials, "{:?}", outcome.traces);
    Ok(())
}

proptest! {
    // Each case starts a real runner: few cases, no failure file in the source tree.
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_egress_call_leaves_after_a_private_read(
        ops in proptest::collection::vec(op(), 1..10),
        slots in 1u64..4,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(case(ops, slots))?;
    }
}
