//! Session handles through the TypeScript SDK v2 client (`@modelcontextprotocol/client`,
//! tests/node/modern_client.mjs) pinned to MCP 2026-07-28, against `serve --http` with tokens
//! (issue 45): the pinned version is what was negotiated; the tools that take `session` say so
//! in their schemas; state, a yielded execution and a forged handle behave as for the Python
//! SDK's client.

use super::session_handles::UNKNOWN;
use crate::common::repo_root;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use serde_json::{json, Value};
use std::path::Path;

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_v2_client_pinned_to_2026_07_28_keeps_state_through_the_handle() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}},
    });
    let g = start_http_state(config, None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let out = tokio::process::Command::new("node")
        .arg(repo_root().join("tests/node/modern_client.mjs"))
        .arg(format!("http://{}/mcp", g.addr))
        .arg(&token)
        .current_dir(repo_root())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["version"], json!("2026-07-28"), "{r}");
    assert_eq!(
        r["tools"],
        json!({"execute_code": true, "wait_execution": true, "cancel_execution": true, "list_state": true,
               "search_tools": false, "save_capability": false, "list_capabilities": false}),
        "{r}"
    );
    let s = &r["steps"];
    let h = s[0]["out"]["session"].as_str().unwrap();
    assert!(h.starts_with("session_"), "{r}");
    assert_eq!(s[1]["out"]["result"], json!(41), "{r}");
    assert_eq!(s[1]["out"]["session"], json!(h), "{r}");
    assert_eq!(s[2]["out"]["result"], Value::Null, "{r}");
    assert_ne!(s[2]["out"]["session"], json!(h), "{r}");
    assert_eq!(
        s[3]["error"]["data"]["code"],
        json!("SESSION_UNKNOWN"),
        "{r}"
    );
    assert!(
        s[3]["error"]["message"].as_str().unwrap().contains(UNKNOWN),
        "{r}"
    );
    assert_eq!(s[4]["out"]["status"], json!("running"), "{r}");
    assert_eq!(s[5]["out"]["result"], json!("late"), "{r}");
}
