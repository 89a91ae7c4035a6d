//! Approvals through `input_required` with the TypeScript SDK v2 client
//! (`@modelcontextprotocol/client`, tests/node/modern_approval.mjs) pinned to MCP 2026-07-28
//! and declaring elicitation (issue 46 item 1): its handler is called once per question, its
//! driver retries the call, and a call it approves reaches the server while one it denies does
//! not.

use crate::common::repo_root;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use crate::ui_approvals::approval_events;
use serde_json::{json, Value};
use std::path::Path;

async fn node(addr: &str, token: &str, code: &str, decisions: &[&str]) -> Value {
    let out = tokio::process::Command::new("node")
        .arg(repo_root().join("tests/node/modern_approval.mjs"))
        .arg(format!("http://{addr}/mcp"))
        .args([token, code])
        .args(decisions)
        .current_dir(repo_root())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_v2_client_answers_approvals_that_come_as_input_required() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}, "ask": ["fixture:echo"]},
    });
    let g = start_http_state(config, None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let both = "const a = await mcp.fixture.echo({message: 'a'}); \
                let b; try { b = await mcp.fixture.echo({message: 'b'}) } catch (e) { b = e.code } \
                return [a, b]";
    let r = node(&g.addr, &token, both, &["approve once", "deny"]).await;
    assert_eq!(r["version"], json!("2026-07-28"), "{r}");
    assert_eq!(r["out"]["result"], json!(["a", "PERMISSION_DENIED"]), "{r}");
    let asked = r["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{r}");
    assert!(asked[0].as_str().unwrap().contains("\"a\""), "{r}");
    assert!(asked[1].as_str().unwrap().contains("\"b\""), "{r}");
    assert_eq!(
        approval_events(&r["out"]),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "input_required", "token:ci"]),
            json!(["approval_requested", null, null]),
            json!(["approval_denied", "input_required", "token:ci"]),
        ],
        "{r}"
    );
}
