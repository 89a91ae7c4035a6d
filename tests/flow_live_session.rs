//! Executions of one session running at once share its data-flow labels live (issue 43 item 2),
//! through `serve` and the official MCP Python SDK client (tests/python/budget_client.py, one
//! stdio session) against the rmcp fixture server as `crm` (get_customer: private) and `mail`
//! (send_mail: egress; it appends what it received to a file). A yielded execution reads the
//! customer record and keeps running; the model has already seen its `logs_so_far` (the
//! address as a placeholder) and hands that placeholder to a second execution of the same
//! session, which tries to mail it. The second execution must see the first one's `private`
//! label from the moment it was read, not when the first one ends.

use crate::common::bin;
use serde_json::{json, Value};
use std::path::Path;

fn config(dir: &Path) -> std::path::PathBuf {
    let fixture = json!({"command": bin("fixture-mcp-server")});
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.join("mail.log")}, "files": {"write": [dir]},
    });
    let body = json!({
        "mcpServers": {"crm": fixture, "mail": mail},
        "sandbox": {
            "labels": {"crm:get_customer": ["private"], "mail:send_mail": ["egress"]},
            "flows": [{"after": ["private"], "deny": ["egress"], "name": "no-exfiltration"}],
            "flow_scope": "session",
            "sensitive": {"detect": ["email"], "reveal_to": {"email": ["mail:send_mail"]}},
        },
    });
    let config = dir.join("mcp.json");
    std::fs::write(&config, body.to_string()).unwrap();
    config
}

fn events<'a>(out: &'a Value, kind: &str) -> Vec<&'a Value> {
    out["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == kind)
        .collect()
}

#[test]
fn a_running_executions_read_stops_another_executions_mail_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let state = dir.path().join("state.db");
    let mail = "try { return ['ok', await mcp.mail.send_mail({to: [to], subject: 'x'})] } catch (e) { return [e.code, e.message] }";
    let calls = json!([
        // 0: reads, shows the address (as a placeholder), and keeps running.
        {"code": "const c = await mcp.crm.get_customer({id: 7}); console.log(c.email); await new Promise(r => setTimeout(r, 4000)); return 'done'",
         "yield_after_ms": 1000},
        // 1: the same session, while 0 runs: mails the address 0 read.
        {"code": mail, "context": {"to": "{{R0:/logs_so_far/0/message}}"}},
        // 2: 0's outcome.
        {"tool": "wait_execution", "arguments": {"execution_id": "{{R0:/execution_id}}", "timeout_ms": 20000}},
        // 3: after 0 ended, a fresh execution of the session (as before: kept in the store).
        {"code": mail, "context": {"to": "{{R0:/logs_so_far/0/message}}"}},
    ]);
    let report = crate::serve_support::sdk::over_stdio("budget_client.py", &config, &state, &calls);
    let r = report["results"].as_array().unwrap();
    let out = |i: usize| &r[i]["out"];
    assert_eq!(out(0)["status"], json!("running"), "{report}");
    let placeholder = out(0)["logs_so_far"][0]["message"].as_str().unwrap();
    assert!(placeholder.starts_with("⟪email:"), "{placeholder}");
    let earlier = "mail:send_mail is egress; this execution read private data from crm:get_customer in an earlier execution of this session (config flow rule \"no-exfiltration\"); the call was not forwarded";
    // 1: refused, naming the read of the execution still running.
    assert_eq!(
        out(1)["result"],
        json!(["PERMISSION_DENIED", earlier]),
        "{report}"
    );
    let decided = events(out(1), "flow_decision");
    assert_eq!(decided.len(), 1, "{report}");
    assert_eq!(decided[0]["decision"], json!("deny"));
    assert_eq!(decided[0]["tool"], json!("mail:send_mail"));
    assert_eq!(decided[0]["label"], json!("egress"));
    assert_eq!(
        decided[0]["rule"],
        json!("config flow rule \"no-exfiltration\"")
    );
    let added: Vec<(&Value, &Value, &Value)> = events(out(1), "label_added")
        .iter()
        .map(|e| (&e["label"], &e["tool"], &e["rule"]))
        .collect();
    assert_eq!(
        added,
        vec![(
            &json!("private"),
            &json!("crm:get_customer"),
            &json!("earlier")
        )],
        "{report}"
    );
    assert_eq!(out(2)["result"], json!("done"), "{report}");
    assert_eq!(
        out(3)["result"],
        json!(["PERMISSION_DENIED", earlier]),
        "{report}"
    );
    // The mailer received nothing.
    let received = std::fs::read_to_string(dir.path().join("mail.log")).unwrap_or_default();
    assert_eq!(received, "", "the address left: {received}");
}
