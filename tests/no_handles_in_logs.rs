//! No session handle, task id or `requestState` in any log (issue 56 item 8): `serve --http`
//! with `MCP_SANDBOX_LOG=debug,rmcp=trace` (the MCP library's debug output included) runs an
//! MCP 2026-07-28 client's task that asks a question (`input_required`, so a `requestState`
//! and a task id travel) and a plain call that mints a handle; none of them, nor the handle a
//! task id carries, appears in what the gateway logged.

use crate::serve_support::http::start_http_state_env;
use crate::serve_support::modern::{call, execute};
use crate::serve_support::team::create_token;
use serde_json::json;
use std::path::Path;

#[tokio::test(flavor = "multi_thread")]
async fn debug_logs_hold_no_handle_task_id_or_request_state() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}, "ask": ["fixture:echo"]},
    });
    let g = start_http_state_env(
        config,
        None,
        &[],
        &[("MCP_SANDBOX_LOG", "debug,rmcp=trace")],
    )
    .await;
    let alice = create_token(Path::new(&g.state), "alice", &[]);
    let plain = execute(&g.addr, &alice, "return 1", false).await;
    let handle = plain["structuredContent"]["session"]
        .as_str()
        .unwrap()
        .to_string();
    // A plain call that asks: `input_required` with its requestState.
    let asked = execute(
        &g.addr,
        &alice,
        "return await mcp.fixture.echo({message: 'hi'})",
        false,
    )
    .await;
    let state = asked["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{asked}"))
        .to_string();
    // A task: its id, polled.
    let slow = "await new Promise(r => setTimeout(r, 500)); return 2";
    let task = execute(&g.addr, &alice, slow, true).await;
    let id = task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{task}"))
        .to_string();
    let done = call(&g.addr, &alice, "tasks/get", json!({"taskId": id}), true).await;
    assert!(done.get("error").is_none(), "{done}");
    // Whatever the gateway wrote by now (its stderr is read line by line as it comes).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let log = g.stderr();
    for (what, secret) in [
        ("handle", &handle),
        ("requestState", &state),
        ("task id", &id),
    ] {
        assert!(
            !log.contains(secret.as_str()),
            "the {what} is in the log: {log}"
        );
    }
    // Nor the handle's random part, nor any task id's payload in clear.
    let random = handle.trim_start_matches("session_");
    assert!(!log.contains(random), "{log}");
    assert!(
        !id.contains(random) && !state.contains(random),
        "a token carries the handle in clear"
    );
}
