//! An OpenAPI description is loaded off the async workers (issue 57 item 4), proved by order,
//! not by time. The gateway (`serve`, one async worker: `TOKIO_WORKER_THREADS=1`) starts two
//! servers: an OpenAPI entry whose spec is a named pipe the test has not written yet, and the
//! rmcp fixture server behind `tee`, which copies what the gateway sends it to a file. The
//! fixture's start (its `initialize`, then the gateway's `tools/list`: async work) completes
//! while the spec's load is still blocked reading the pipe; only then does the test write the
//! spec, the load finishes, and the gateway serves a client (the official MCP Python SDK):
//! `return 1+1` and the spec's tool found by `search_tools`. The read is the first step of the
//! load's blocking job (parsing, resolving and describing follow in the same job). On main the
//! spec was read on the task that starts every server: the fixture never got its `tools/list`
//! until the pipe was written.

use crate::common::bin;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[test]
fn a_blocked_spec_load_holds_no_async_worker() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let fifo = d.join("spec.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let sent = d.join("fixture-stdin.log");
    let config = d.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "api": {"openapi": "spec.json", "baseUrl": "https://api.example.com", "startupTimeoutMs": 120_000},
            // Confined as every stdio server: the log's directory is the one it may write.
            "fixture": {"command": "sh", "args": ["-c", "tee -a \"$0\" | exec \"$1\"", sent, bin("fixture-mcp-server")],
                        "files": {"write": [d]}}
        }})
        .to_string(),
    )
    .unwrap();
    let calls = json!([
        {"code": "return 1+1"},
        {"tool": "search_tools", "arguments": {"query": "ping"}}
    ]);
    let client = {
        let (config, state) = (config.clone(), d.join("state.db"));
        std::thread::spawn(move || {
            let exe = bin("mcp-sandbox");
            let runner = bin("sandbox-runner");
            let calls = calls.to_string();
            crate::serve_support::python_json(
                "budget_client.py",
                &[
                    "stdio".as_ref(),
                    exe.as_os_str(),
                    config.as_os_str(),
                    state.as_os_str(),
                    calls.as_ref(),
                ],
                &[
                    ("MCP_SANDBOX_RUNNER", runner.as_os_str()),
                    ("TOKIO_WORKER_THREADS", "1".as_ref()),
                ],
            )
        })
    };
    // Wait (a guard against a hang, not a measure) for the gateway's tools/list to the fixture.
    let guard = Instant::now() + Duration::from_secs(90);
    let listed = loop {
        let seen = std::fs::read_to_string(&sent).unwrap_or_default();
        if seen.contains("\"tools/list\"") {
            break true;
        }
        if Instant::now() > guard {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Only now is the spec written: its load could not have finished before.
    let spec = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {
        "/ping": {"get": {"operationId": "ping", "summary": "Ping the service"}}
    }});
    std::fs::write(&fifo, spec.to_string()).unwrap();
    let report: Value = client.join().unwrap();
    assert!(
        listed,
        "the fixture server's start did not complete while the OpenAPI spec was being read: the load held the gateway's async work"
    );
    let results = &report["results"];
    assert_eq!(results[0]["out"]["result"], json!(2), "{report}");
    assert_eq!(results[1]["out"]["tools"][0], "api:ping", "{report}");
}
