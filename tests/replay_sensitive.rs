//! With sensitive values on (`sandbox.sensitive`), a recording keeps what the rest of the audit
//! record keeps: the session's placeholders, never the real values (issue 62) — in the tool
//! results, in the arguments the script sent on (the real email, resolved at send time), and in
//! the recorded outcome; the execution still replays over the placeholders.

use crate::common::bin;
use crate::common::replay::{first_execution_id, replay};
use crate::serve_support::team::cli;
use serde_json::{json, Value};

const REAL: [&str; 2] = ["ada7@example.com", "4111 1111 1111 1111"];

#[test]
fn a_recording_keeps_placeholders_where_the_audit_log_does() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {"crm": {"command": bin("fixture-mcp-server")}},
            "sandbox": {"sensitive": {"detect": ["email", "card"]}},
        })
        .to_string(),
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        "const c = await mcp.crm.get_customer({id: 7});\nconst sent = await mcp.crm.echo({message: c.email});\nreturn {email: c.email, card: c.card, sent};\n",
    )
    .unwrap();
    let (status, out, err) = cli(&[
        "run".as_ref(),
        script.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
        "--audit-record".as_ref(),
        "full".as_ref(),
    ]);
    assert_eq!(status, 0, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert!(
        shown["email"].as_str().unwrap().starts_with("⟪email:"),
        "{shown}"
    );

    let c = rusqlite::Connection::open(&state).unwrap();
    let detail: String = c
        .query_row("SELECT detail FROM audit", [], |r| r.get(0))
        .unwrap();
    drop(c);
    for real in REAL {
        assert!(!detail.contains(real), "the record holds {real}: {detail}");
    }
    let recording = &serde_json::from_str::<Value>(&detail).unwrap()["recording"];
    let calls = recording["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{recording}");
    let email = calls[0]["result"]["email"].as_str().unwrap().to_string();
    assert!(email.starts_with("⟪email:"), "{recording}");
    assert_eq!(calls[1]["args"], json!({"message": email}), "{recording}");
    assert_eq!(recording["outcome"]["result"], shown, "{recording}");

    let id = first_execution_id(&state);
    let (status, out, err) = replay(&id, &state, &["--json".as_ref()]);
    assert_eq!(status, 0, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["matches"], true, "{answer}");
    for real in REAL {
        assert!(!out.contains(real), "replay printed {real}");
    }
}
