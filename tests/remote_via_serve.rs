//! A remote MCP server (the reference `everything` server in its streamableHttp mode) reached
//! through `mcp-sandbox serve` by the official MCP Python SDK as the upstream client: discovery
//! (search_tools declarations), calls, schema validation, policy and traces (with the
//! transport) work as for a stdio server.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::process::Command;

#[test]
fn the_python_sdk_calls_a_remote_server_through_serve() {
    let ev = Everything::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {"ev": {"url": ev.url(), "type": "http"}},
            "sandbox": {"deny": ["ev:get-env"], "state": "state.db"}
        })
        .to_string(),
    )
    .unwrap();
    let py = repo_root().join(".venv/bin/python");
    assert!(py.exists(), "run scripts/setup.sh (Python venv) first");
    let out = Command::new(py)
        .arg(repo_root().join("tests/python/remote_via_serve.py"))
        .arg(bin("mcp-sandbox"))
        .arg(&config)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    let search = lines[0]["search"].as_str().unwrap();
    assert!(search.contains("\"get-sum\""), "{search}");
    // The call went to the remote server, traced with its transport.
    assert_eq!(lines[1]["success"], true, "{}", lines[1]);
    assert_eq!(
        lines[1]["result"], "The sum of 2 and 3 is 5.",
        "{}",
        lines[1]
    );
    let traces = lines[1]["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 2, "{}", lines[1]);
    for t in traces {
        assert_eq!(t["tool"], "ev:get-sum");
        assert_eq!(t["transport"], "http");
    }
    // Validation against the remote tool's schema, and the policy, at the host's door.
    assert_eq!(lines[2]["result"], "INVALID_ARGUMENTS", "{}", lines[2]);
    assert_eq!(lines[3]["result"], "PERMISSION_DENIED", "{}", lines[3]);
}
