//! Issue 63 item 3: a stdio server that fails to start is reported with what it said first, not
//! only its last lines. Node with a missing script prints `Error: Cannot find module '…'`, then
//! a stack, `code: 'MODULE_NOT_FOUND'` and `Node.js v20…`: the excerpt keeps the first lines
//! (the decisive one) and the last, through the real CLI and a real `node`.

use crate::common::*;
use serde_json::json;

#[test]
fn a_missing_node_script_is_reported_with_nodes_own_first_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"broken": {"command": "node", "args": ["/nonexistent/server.js"]}}})
            .to_string(),
    )
    .unwrap();
    let state = dir.path().join("state.db");
    // `tools` reports the server that did not start.
    let out = cli_run(&["tools", "--config", config.to_str().unwrap()]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status, 0, "{all}");
    assert!(
        all.contains("Error: Cannot find module '/nonexistent/server.js'"),
        "{all}"
    );
    // The last lines are still there too.
    assert!(all.contains("MODULE_NOT_FOUND"), "{all}");
    assert!(all.contains("Node.js v"), "{all}");

    // A script calling it fails with SERVER_UNAVAILABLE that says the same.
    let out = run_stdin(
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
        ],
        "return await mcp.broken.anything({})",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("SERVER_UNAVAILABLE"), "{stderr}");
    assert!(
        stderr.contains("its stderr said: node:internal/modules/cjs/loader"),
        "{stderr}"
    );
    assert!(
        stderr.contains("| Error: Cannot find module '/nonexistent/server.js' |"),
        "{stderr}"
    );
}
