//! Issue 44 item 7, a hostile MCP server's names and words, through the real `serve --http`:
//! a tool whose name holds a control character is left out of the catalog when the server is
//! listed, with a warning naming it escaped (before, a script that called it was killed with an
//! uncatchable `PROTOCOL_ERROR` blaming the runner; now it is an unknown tool, `TOOL_NOT_FOUND`,
//! which the script can catch); a CR in the server's stderr reaches the gateway's log escaped,
//! so it cannot overwrite or forge a log line; a server that fails to start is reported in
//! words, without Rust type names.

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;

const SCRIPT: &str = r#"
let code = null;
try { await mcp.hostile["ring\x07bell"]({message: 'x'}) } catch (e) { code = e.code }
const broken = await mcp.broken.echo({message: 'x'}).then(() => 'ran', (e) => e.code + ': ' + e.message);
return [code, await mcp.hostile.echo({message: 'ok'}), Object.keys(mcp.hostile).some((k) => k.startsWith('ring')), broken]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_servers_names_and_stderr_are_kept_out_or_escaped() {
    let fixture = crate::common::bin("fixture-mcp-server");
    let h = start_http_config(
        json!({"mcpServers": {
            "hostile": {"command": fixture, "args": ["--hostile-names"]},
            "broken": {"command": fixture, "args": ["--fail-start"]}
        }}),
        &[],
    )
    .await;
    let s = open_session(&h.addr).await;
    let a = post(
        &h.addr,
        Some(&s),
        &execute_body(2, json!({ "code": SCRIPT })),
    )
    .await;
    let out: Value = a.reply(2)["result"]["structuredContent"].clone();
    assert_eq!(out["error"], Value::Null, "{out}");
    let r = &out["result"];
    assert_eq!(r[0], json!("TOOL_NOT_FOUND"), "{out}");
    assert_eq!(r[1], json!("ok"), "{out}");
    assert_eq!(r[2], json!(false), "{out}");
    let broken = r[3].as_str().unwrap();
    assert!(broken.starts_with("SERVER_UNAVAILABLE: "), "{broken}");
    assert!(
        broken.contains("failing at start as asked (--fail-start)"),
        "{broken}"
    );
    for rust in ["Transport [", "mcp_sandbox::", "tokio::", "rmcp::"] {
        assert!(!broken.contains(rust), "{rust} in {broken}");
    }
    let log = h.stderr();
    assert!(
        log.contains("the server lists a tool named \"ring\\x07bell\"; it is left out of the catalog because it holds a control character"),
        "{log}"
    );
    assert!(log.contains("one\\rFORGED-LOG-LINE"), "{log}");
    assert!(!log.contains('\r'), "a raw CR in the log: {log:?}");
    assert!(!log.contains('\u{7}'), "a raw BEL in the log: {log:?}");
}
