//! Remote MCP servers over streamable HTTP (issue 17 item 1): the reference `everything` server
//! from npm in its `streamableHttp` mode, started by the test on a free local port, called from
//! `run` and from `serve` like a stdio server (traces, policy, TypeScript declarations); killed
//! and restarted on its port between calls (the call while it is down fails fast with
//! `SERVER_UNAVAILABLE` and the reason, the next one succeeds after a reconnect); an unreachable
//! server fails only its own calls; a call over its call timeout ends with `TOOL_TIMEOUT` and the
//! connection stays usable; `"type": "sse"` is refused with a clear config error.

use crate::common;
use crate::serve_support;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

fn write_config(dir: &Path, servers: Value, sandbox: Value) -> std::path::PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(
        &path,
        json!({"mcpServers": servers, "sandbox": sandbox}).to_string(),
    )
    .unwrap();
    path
}

fn run_json(dir: &Path, config: &Path, script: &str) -> CliRun {
    let file = dir.join("s.js");
    std::fs::write(&file, script).unwrap();
    let state = dir.join("state.db");
    cli_run_script(&["--trace", "json"], config, &state, &file)
}

#[test]
fn run_calls_a_remote_server_with_traces_policy_and_declarations() {
    let ev = Everything::start();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"ev": {"url": ev.url(), "type": "http"}}),
        json!({"deny": ["ev:get-env"]}),
    );
    let run = run_json(
        dir.path(),
        &config,
        r#"
const sum = await mcp.ev["get-sum"]({ a: 2, b: 3 });
let bad = null, denied = null;
try { await mcp.ev["get-sum"]({ a: "two" }) } catch (e) { bad = e.code }
try { await mcp.ev["get-env"]({}) } catch (e) { denied = e.code }
return { sum, bad, denied };
"#,
    );
    let o = run.outcome();
    assert_eq!(o["success"], true, "{o}");
    assert_eq!(
        o["result"],
        json!({"sum": "The sum of 2 and 3 is 5.", "bad": "INVALID_ARGUMENTS", "denied": "PERMISSION_DENIED"}),
        "{o}"
    );
    let tools: Vec<&str> = o["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "tool_end")
        .map(|t| t["tool"].as_str().unwrap())
        .collect();
    assert!(tools.starts_with(&["ev:get-sum"]), "{o}");
    // The transport is in the trace of every remote call (start and end).
    let remote: Vec<&Value> = o["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["tool"] == "ev:get-sum")
        .collect();
    assert_eq!(remote.len(), 4, "{o}");
    assert!(remote.iter().all(|t| t["transport"] == "http"), "{o}");

    let ts = cli_run(&[
        "tools",
        "--typescript",
        "--config",
        config.to_str().unwrap(),
    ]);
    let ts = String::from_utf8_lossy(&ts.stdout);
    assert!(ts.contains("\"get-sum\""), "{ts}");
}

#[test]
fn an_unreachable_server_fails_only_its_calls_fast_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = write_config(
        dir.path(),
        json!({
            "down": {"url": format!("http://127.0.0.1:{port}/mcp")},
            "nowhere": {"url": "http://no-such-host.invalid/mcp"},
            "fixture": {"command": bin("fixture-mcp-server")}
        }),
        json!({}),
    );
    let started = Instant::now();
    let run = run_json(
        dir.path(),
        &config,
        r#"
const out = {};
for (const s of ["down", "nowhere"]) {
  try { await mcp[s].anything({}) } catch (e) { out[s] = { code: e.code, message: e.message } }
}
out.pid = typeof (await mcp.fixture.pid({}));
return out;
"#,
    );
    let o = run.outcome();
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    assert_eq!(r["pid"], "string", "{r}");
    assert_eq!(r["down"]["code"], "SERVER_UNAVAILABLE", "{r}");
    let down = r["down"]["message"].as_str().unwrap();
    assert!(
        down.contains("MCP server 'down' is unavailable") && down.contains("Connection refused"),
        "{down}"
    );
    assert_eq!(r["nowhere"]["code"], "SERVER_UNAVAILABLE", "{r}");
    let nowhere = r["nowhere"]["message"].as_str().unwrap();
    assert!(nowhere.contains("dns error"), "{nowhere}");
    assert_not_hung(started.elapsed(), ms(8_000), ms(800), "both failures");
}

#[test]
fn sse_is_refused_with_a_clear_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"old": {"url": "http://127.0.0.1:1/sse", "type": "sse"}}),
        json!({}),
    );
    let run = run_json(dir.path(), &config, "return 1");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status, 0);
    assert!(
        stderr.contains("transport 'sse' (the older HTTP+SSE transport) is not supported"),
        "{stderr}"
    );
    let both = write_config(
        dir.path(),
        json!({"x": {"url": "http://127.0.0.1:1/mcp", "command": "y"}}),
        json!({}),
    );
    let run = run_json(dir.path(), &both, "return 1");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("command and url are mutually exclusive"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reconnects_after_the_remote_server_restarts() {
    let mut ev = Everything::start();
    let port = ev.port;
    let served =
        serve_support::start_with_servers(json!({"ev": {"url": ev.url()}}), json!({}), &[]).await;
    let code = r#"return await mcp.ev.echo({ message: "hi" })"#;
    let r = served
        .call("execute_code", json!({"code": code}))
        .await
        .unwrap();
    let out = serve_support::structured(&r);
    assert_eq!(out["success"], true, "{out}");
    assert_eq!(out["result"], "Echo: hi", "{out}");

    ev.kill();
    let started = Instant::now();
    let r = served
        .call("execute_code", json!({"code": code}))
        .await
        .unwrap();
    let out = serve_support::structured(&r);
    assert_eq!(out["success"], false, "{out}");
    assert_eq!(out["error"]["code"], "SERVER_UNAVAILABLE", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("Connection refused"), "{message}");
    assert_not_hung(
        started.elapsed(),
        ms(5_000),
        ms(500),
        "the refused connection",
    );

    let _ev = Everything::start_on(port);
    // The back-off after the failure is short (see docs/failure-behaviour.md); wait it out.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let r = served
        .call("execute_code", json!({"code": code}))
        .await
        .unwrap();
    let out = serve_support::structured(&r);
    assert_eq!(out["success"], true, "{out}");
    assert_eq!(out["result"], "Echo: hi", "{out}");
}

#[test]
fn a_remote_call_over_its_timeout_ends_and_the_next_call_works() {
    let ev = Everything::start();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"ev": {"url": ev.url()}}), json!({}));
    let file = dir.path().join("s.js");
    std::fs::write(
        &file,
        r#"
let code = null;
const t0 = Date.now();
try { await mcp.ev["trigger-long-running-operation"]({ duration: 20, steps: 4 }) } catch (e) { code = e.code }
const ms = Date.now() - t0;
return { code, ms, sum: await mcp.ev["get-sum"]({ a: 1, b: 1 }) };
"#,
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let o = cli_run_script(&["--call-timeout-ms", "500"], &config, &state, &file).outcome();
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    assert_eq!(r["code"], "TOOL_TIMEOUT", "{r}");
    assert!(r["ms"].as_u64().unwrap() < 5000, "{r}");
    assert_eq!(r["sum"], "The sum of 1 and 1 is 2.", "{r}");
}
