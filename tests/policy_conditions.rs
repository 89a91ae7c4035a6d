//! Rules with conditions on the call's arguments (issue 28 item 1), through `serve` and the
//! official MCP Python SDK client (tests/python/budget_client.py runs calls in one session)
//! against the rmcp fixture server: allow, deny and ask decided per rule on nested fields, lists
//! and numbers; a condition that fails at call time denies (fail closed); a malformed or costly
//! expression is refused when the config is loaded, naming the rule and the position.

use serde_json::{json, Value};

fn serve_calls(sandbox: Value, calls: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::serve_support::sdk::fixture_config(dir.path(), &sandbox);
    let state = dir.path().join("state.db");
    crate::serve_support::sdk::over_stdio("budget_client.py", &config, &state, calls)
}

fn policy() -> Value {
    json!({
        "allow": [
            "fixture:echo",
            "fixture:add",
            {"tool": "fixture:send_mail", "if": "args.to.all(a, a.endsWith('@acme.com'))", "name": "internal-mail"}
        ],
        "deny": [
            {"tool": "fixture:send_mail", "if": "has(args.meta) && args.meta.priority > 5", "name": "no-urgent-mail"}
        ],
        "ask": [
            {"tool": "fixture:add", "if": "args.a > 100"}
        ]
    })
}

/// The script's view of one call: `ok` and the result, or the error code and message.
fn attempt(call: &str) -> Value {
    json!({"code": format!(
        "try {{ return ['ok', await {call}] }} catch (e) {{ return [e.code, e.message] }}"
    )})
}

/// The calls of the test: `server:tool` and its arguments, as JSON.
const CALLS: &[(&str, &str)] = &[
    (
        "fixture:send_mail",
        r#"{"to": ["ann@acme.com"], "subject": "hi"}"#,
    ),
    (
        "fixture:send_mail",
        r#"{"to": ["ann@acme.com", "eve@evil.example"], "subject": "hi"}"#,
    ),
    (
        "fixture:send_mail",
        r#"{"to": ["ann@acme.com"], "subject": "hi", "meta": {"priority": 9}}"#,
    ),
    (
        "fixture:send_mail",
        r#"{"to": ["ann@acme.com"], "subject": "hi", "meta": {"priority": "high"}}"#,
    ),
    ("fixture:add", r#"{"a": 1, "b": 2}"#),
    ("fixture:add", r#"{"a": 150, "b": 2}"#),
    ("fixture:echo", r#"{"message": "plain"}"#),
];

/// `policy explain` of one call under `sandbox`: its JSON answer.
fn explain(sandbox: &Value, tool: &str, args: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        // The rules name the fixture: a rule naming a server not configured is a config error.
        json!({"mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}}, "sandbox": sandbox}).to_string(),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["policy", "explain", "--json", "--config"])
        .arg(&config)
        .arg("--call")
        .arg(format!("{tool} {args}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn conditions_allow_deny_and_ask_per_rule_and_fail_closed() {
    let calls: Vec<Value> = CALLS
        .iter()
        .map(|(tool, args)| {
            let (server, name) = tool.split_once(':').unwrap();
            attempt(&format!("mcp.{server}.{name}({args})"))
        })
        .collect();
    let calls = Value::Array(calls);
    let report = serve_calls(policy(), &calls);
    let r = report["results"].as_array().unwrap();
    let result = |i: usize| r[i]["out"]["result"].clone();
    assert_eq!(
        result(0),
        json!(["ok", {"sent": true, "to": ["ann@acme.com"], "subject": "hi"}]),
        "{report}"
    );
    // A list element outside the organisation: no allow rule holds.
    assert_eq!(result(1)[0], json!("PERMISSION_DENIED"), "{report}");
    assert_eq!(
        result(1)[1],
        json!("fixture:send_mail is allowed by the config only when its arguments satisfy rule \"internal-mail\" (allow \"fixture:send_mail\" if args.to.all(a, a.endsWith('@acme.com'))); these do not; the call was not forwarded")
    );
    // A nested number over the bound: the named deny rule.
    assert_eq!(result(2)[0], json!("PERMISSION_DENIED"), "{report}");
    assert_eq!(
        result(2)[1],
        json!("fixture:send_mail is denied by the config rule \"no-urgent-mail\" (deny \"fixture:send_mail\" if has(args.meta) && args.meta.priority > 5); the call was not forwarded")
    );
    // A condition that cannot be evaluated (a string compared with a number) denies.
    assert_eq!(result(3)[0], json!("PERMISSION_DENIED"), "{report}");
    let why = result(3)[1].as_str().unwrap().to_string();
    assert!(
        why.starts_with("fixture:send_mail was refused: the condition of the rule \"no-urgent-mail\" could not be evaluated on its arguments (")
            && why.contains("fail closed"),
        "{why}"
    );
    // Ask only above the bound: below it the call runs without a question; above it the
    // question goes to the client, which cannot answer (no elicitation): denied.
    assert_eq!(result(4), json!(["ok", {"sum": 3}]), "{report}");
    assert_eq!(result(5)[0], json!("PERMISSION_DENIED"), "{report}");
    let traces = r[5]["out"]["traces"].as_array().unwrap();
    let asked = traces
        .iter()
        .find(|t| t["type"] == "approval_requested")
        .unwrap_or_else(|| panic!("no approval_requested in {traces:?}"));
    assert_eq!(
        asked["rule"],
        json!(
            "config rule \"ask fixture:add if args.a > 100\" (ask \"fixture:add\" if args.a > 100)"
        )
    );
    assert!(r[4]["out"]["traces"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["type"] != "approval_requested"));
    assert_eq!(result(6), json!(["ok", "plain"]), "{report}");
    // Denied calls never reached the server: only the allowed mail is in the traces as a call.
    let mails: usize = r
        .iter()
        .map(|a| {
            a["out"]["traces"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| {
                    t["type"] == "tool_end"
                        && t["tool"] == "fixture:send_mail"
                        && t["success"] == true
                })
                .count()
        })
        .sum();
    assert_eq!(mails, 1, "{report}");

    // `policy explain` decides every call as the gateway did, with the same reason.
    for (i, (tool, args)) in CALLS.iter().enumerate() {
        let e = explain(&policy(), tool, args);
        let expected = match (result(i)[0].as_str().unwrap(), i) {
            (_, 5) => "ask",
            ("ok", _) => "allow",
            ("PERMISSION_DENIED", _) => "deny",
            (other, _) => panic!("unexpected {other}"),
        };
        assert_eq!(e["decision"], json!(expected), "{tool} {args}: {e}");
        if expected == "deny" {
            let gateway = result(i)[1].as_str().unwrap().to_string();
            assert_eq!(
                format!("{}; the call was not forwarded", e["why"].as_str().unwrap()),
                gateway
            );
        }
        if expected == "ask" {
            assert_eq!(
                e["why"],
                json!(format!(
                    "it waits for approval: {}",
                    asked["rule"].as_str().unwrap()
                ))
            );
        }
    }
}

/// `run --config` with a bad rule: exit 2, the rule and the position named.
fn load_error(rule: Value) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {}, "sandbox": {"deny": [rule]}}).to_string(),
    )
    .unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(&script, "return 1").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["run", "--config"])
        .arg(&config)
        .arg(&script)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn malformed_and_costly_conditions_are_refused_at_load() {
    let (status, err) =
        load_error(json!({"tool": "fixture:add", "if": "args.a >", "name": "half"}));
    assert_eq!(status, 2, "{err}");
    assert!(
        err.contains(
            "rule \"half\": the condition `if` is not valid CEL over `args`: at line:column 1:"
        ),
        "{err}"
    );
    let (status, err) = load_error(
        json!({"tool": "fixture:add", "if": "args.xs.all(x, args.ys.exists(y, x == y))", "name": "square"}),
    );
    assert_eq!(status, 2, "{err}");
    assert!(
        err.contains("rule \"square\"") && err.contains("nested inside another"),
        "{err}"
    );
    let (status, err) = load_error(json!({"tool": "fixture:add", "if": "env.HOME == ''"}));
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("the only variable is `args`"), "{err}");
    let (status, err) = load_error(json!({"tool": "fixture:add", "when": "true"}));
    assert_eq!(status, 2, "{err}");
}
