//! Messages that blame the right thing (issue 47 item 5), through the real `run`: an endless
//! loop that hits `timeout_ms` says so (not "Await every promise you start"); a `Map` in the
//! result is refused with how to convert it (not a silent `{}`); a server that fails to start is
//! reported once; no ANSI colour codes when stderr is not a terminal.

use crate::common;
use common::*;
use serde_json::json;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_timeout_while_nothing_was_pending_blames_the_loop() {
    let out = run_stdin(
        &[
            "--timeout-ms".as_ref(),
            "300".as_ref(),
            "--cpu-ms".as_ref(),
            "20000".as_ref(),
        ],
        "while (true) {}",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: EXECUTION_TIMEOUT: the script ran for 300 ms without waiting on anything (an endless loop?); the runner was killed. Look for a loop whose condition never becomes false, or raise --timeout-ms\n"
    );
    // Waiting on a timer is not a loop: the message stays the one about promises.
    let out = run_stdin(
        &["--timeout-ms".as_ref(), "300".as_ref()],
        "await new Promise((r) => setTimeout(r, 60000)); return 1",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: EXECUTION_TIMEOUT: the execution did not finish within 300 ms; the runner was killed. Await every promise you start, or raise --timeout-ms\n"
    );
}

#[test]
fn a_map_in_the_result_is_refused_with_how_to_convert_it() {
    let out = run_stdin(
        &["--json".as_ref()],
        "const counts = new Map([['a', 1]]); return {counts}",
    );
    assert_eq!(out.status.code(), Some(1));
    let o: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(o["error"]["code"], "RESULT_NOT_SERIALIZABLE");
    assert_eq!(
        o["error"]["message"],
        "the result contains a Map (key \"counts\"), which JSON cannot represent; convert it first: Object.fromEntries(map) for string keys, or [...map] for its [key, value] pairs. Return plain data: objects, arrays, strings, numbers, booleans, null."
    );
    let out = run_stdin(
        &[],
        "return {counts: Object.fromEntries(new Map([['a', 1]])), set: [...new Set([1, 1, 2])]}",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(),
        json!({"counts": {"a": 1}, "set": [1, 2]})
    );
}

#[test]
fn a_server_that_fails_to_start_is_reported_once_without_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"broken": {"command": "/nonexistent/mcp-server"}}}).to_string(),
    )
    .unwrap();
    let reason = "MCP server 'broken' is unavailable: cannot start `/nonexistent/mcp-server`: No such file or directory (os error 2)";
    // Called: the outcome's error says it, and nothing else does.
    let out = run_stdin(
        &["--config".as_ref(), config.as_os_str()],
        "return await mcp.broken.x({})",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("error: SERVER_UNAVAILABLE: {reason}\n")
    );
    // Not called: one warning (after the outcome), with the gateway's log at debug level
    // (the level that printed it a second time, in colour).
    let out = common::cli_stdin(
        &[
            "run".as_ref(),
            "-".as_ref(),
            "--config".as_ref(),
            config.as_os_str(),
        ],
        "if (globalThis.never) await mcp.broken.x({}); return 1",
        &[("MCP_SANDBOX_LOG", "debug")],
    );
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert_eq!(
        err.matches(&format!("mcp-sandbox: warning: {reason}\n"))
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("DEBUG"), "the debug log is on: {err}");
    assert!(!err.contains('\u{1b}'), "colour codes on a pipe: {err:?}");
}
