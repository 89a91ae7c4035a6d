//! A stdio server's answer over the MCP client's 16 MiB line limit (issue 12 item 6, host part):
//! rmcp would drop the line and the call would wait its whole call timeout. The host's line
//! guard fails the call at once with `LIMIT_EXCEEDED` naming the size and the limit, and the
//! next call to that server (restarted, a new process) succeeds.

use crate::common;
use common::*;

const SCRIPT: &str = r#"
const before = await mcp.fixture.pid_ns({});
let code = null, message = null;
const t0 = Date.now();
try { await mcp.fixture.big({ bytes: 17 * 1024 * 1024 }) } catch (e) { code = e.code; message = e.message }
const ms = Date.now() - t0;
const after = await mcp.fixture.pid_ns({});
return { code, message, ms, before, after, small: (await mcp.fixture.big({ bytes: 10 })).length };
"#;

#[test]
fn an_answer_over_the_line_limit_fails_at_once_and_the_server_restarts() {
    let dir = tempfile::tempdir().unwrap();
    // Confined (the default): the server tells who it is with `pid_ns` ({pid, ns, start}), as
    // the pid it sees is one of its own PID namespace, the same small number every time.
    let config = fixture_config_file(dir.path(), serde_json::json!({}));
    let script = dir.path().join("s.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let state = dir.path().join("state.db");
    let runner = bin("sandbox-runner");
    let run = cli_run(&[
        "run",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
        // Far above the result limit of the call, so the limit hit is the line limit.
        "--max-tool-result-bytes",
        "100000000",
        "--call-timeout-ms",
        "20000",
        script.to_str().unwrap(),
    ]);
    let o = run.outcome();
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    assert_eq!(r["code"], "LIMIT_EXCEEDED", "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("MCP server 'fixture' sent an answer of ")
            && message.contains("over the 16777216-byte message limit of its MCP client"),
        "{message}"
    );
    // The exact size of the JSON-RPC line: 17 MiB of text plus its envelope.
    let size: u64 = message
        .split("sent an answer of ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in {message}"));
    assert!(
        (17 * 1024 * 1024..17 * 1024 * 1024 + 200).contains(&size),
        "{size}"
    );
    // At once, not after the 20 s call timeout (generous margin for a debug build).
    assert!(r["ms"].as_u64().unwrap() < 8000, "{r}");
    // Another process: a later start (the kernel may give the new PID namespace the freed
    // one's number, and the pid inside it is the same).
    assert!(r["before"]["start"].is_u64(), "{r}");
    assert_ne!(r["before"], r["after"], "the server was restarted: {r}");
    assert_eq!(r["small"], 10, "{r}");
}
