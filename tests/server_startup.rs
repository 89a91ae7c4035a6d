//! A configured server that hangs at start does not hold every run (issue 12 item 7): through
//! the real `run` CLI, only the servers a script can reach are started, in parallel, each within
//! its `startupTimeoutMs`; a server that did not start fails only the calls to it, with
//! `SERVER_UNAVAILABLE` and the reason (catchable), and leaves no process behind.

use crate::common;

use common::{assert_not_hung, bin, ms, run_stdin};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn run(config: Value, script: &str) -> (Value, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let started = Instant::now();
    let state = dir.path().join("state.db");
    let out = run_stdin(
        &[
            "--json".as_ref(),
            "--config".as_ref(),
            path.as_ref(),
            "--state".as_ref(),
            state.as_ref(),
        ],
        script,
    );
    let outcome = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (outcome, started.elapsed())
}

/// `sleep 60` never answers `initialize`: a server that hangs at start.
fn config(hang_timeout_ms: Option<u64>, marker: &str) -> Value {
    let marker = format!("{}-{marker}", std::process::id());
    let mut hang = json!({"command": "sleep", "args": ["60"], "env": {"HANG_TEST_MARKER": marker}});
    if let Some(ms) = hang_timeout_ms {
        hang["startupTimeoutMs"] = json!(ms);
    }
    json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}, "hang": hang}})
}

#[test]
fn a_hanging_server_the_script_never_calls_is_not_started() {
    // Default start-up timeout (10 s): the run must not wait for it at all.
    let (outcome, took) = run(
        config(None, "unused"),
        "return (await mcp.fixture.add({a: 2, b: 3})).sum",
    );
    assert_eq!(outcome["result"], 5, "{outcome}");
    assert_not_hung(took, ms(5_000), ms(500), "the run");
}

#[test]
fn a_server_that_does_not_start_fails_only_its_calls() {
    let script = "let code, message;\n\
                  try { await mcp.hang.anything({}) } catch (e) { code = e.code; message = e.message }\n\
                  return {code, message, sum: (await mcp.fixture.add({a: 1, b: 2})).sum}";
    let (outcome, took) = run(config(Some(300), "fails"), script);
    assert_eq!(outcome["success"], true, "{outcome}");
    let r = &outcome["result"];
    assert_eq!(r["code"], "SERVER_UNAVAILABLE", "{outcome}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("MCP server 'hang' is unavailable")
            && message.contains("did not finish starting within 300 ms"),
        "{message}"
    );
    assert_eq!(r["sum"], 3);
    assert_not_hung(took, ms(10_000), ms(1_000), "the run");
    // Uncaught, the call's code is the outcome's.
    let (outcome, _) = run(config(Some(300), "uncaught"), "await mcp.hang.anything({})");
    assert_eq!(outcome["error"]["code"], "SERVER_UNAVAILABLE", "{outcome}");
    // The server that did not start was killed with its process group.
    let left = common::processes_left(
        &format!("HANG_TEST_MARKER={}-fails", std::process::id()),
        Duration::from_secs(1),
    );
    assert!(left.is_empty(), "still alive: {left:?}");
}

#[test]
fn dynamic_access_starts_every_server_in_parallel() {
    // `mcp[name]` can reach any server: both start, the hanging one within its 300 ms.
    let (outcome, took) = run(
        config(Some(300), "dynamic"),
        "const names = Object.keys(mcp).sort(); try { await mcp['ha' + 'ng'].x() } catch (e) { return [names, e.code] }",
    );
    assert_eq!(
        outcome["result"],
        json!([["fixture", "hang"], "SERVER_UNAVAILABLE"]),
        "{outcome}"
    );
    assert_not_hung(took, ms(10_000), ms(1_000), "the run");
}
