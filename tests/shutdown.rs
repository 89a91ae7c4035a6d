//! Host shutdown: on SIGINT/SIGTERM `mcp-sandbox run` stops taking work, lets the running
//! execution finish within the grace period, kills the runner after it, shuts the MCP servers
//! down and exits 0, leaving no runner or server process behind (checked in the process table).
//! The same `Sandbox::shutdown` refuses new and queued executions at once.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, Limits, QueueOptions, Sandbox};
use serde_json::json;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Direct children of `pid` (from /proc), with their command names.
fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let comm = head
            .split_once(" (")
            .map(|(_, c)| c)
            .unwrap_or("")
            .to_string();
        let ppid: u32 = rest
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if ppid == pid {
            out.push((p, comm));
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok()
}

struct Host {
    child: std::process::Child,
    dir: tempfile::TempDir,
}

fn start_host(script: &str, grace_ms: u64) -> Host {
    let servers = json!({"fixture": {"command": bin("fixture-mcp-server")}});
    start_host_with_servers(script, grace_ms, &[], servers)
}

fn start_host_with_servers(
    script: &str,
    grace_ms: u64,
    flags: &[&str],
    servers: serde_json::Value,
) -> Host {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, json!({ "mcpServers": servers }).to_string()).unwrap();
    let file = dir.path().join("script.js");
    std::fs::write(&file, script).unwrap();
    let child = Command::new(bin("mcp-sandbox"))
        .arg("run")
        .arg(&file)
        .arg("--config")
        .arg(&config)
        .arg("--json")
        .arg("--shutdown-grace-ms")
        .arg(grace_ms.to_string())
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Host { child, dir }
}

/// Waits until the host runs both a runner and the MCP server; returns their pids.
/// The host's runner and server processes, once both run. Not the host's `sandbox-reaper`: it
/// kills the servers' process groups when the host dies, so it outlives the host by design
/// until it has done that (tests/host_death.rs checks that nothing is left within 2 s).
fn wait_for_runner(host: &Host) -> Vec<u32> {
    let pid = host.child.id();
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        let kids = children_of(pid);
        if kids.iter().any(|(_, c)| c == "sandbox-runner")
            // A confined server runs under bubblewrap: the host's child is `bwrap`.
            && kids
                .iter()
                .any(|(_, c)| c.starts_with("fixture-mcp") || c == "bwrap")
        {
            return kids
                .into_iter()
                .filter(|(_, c)| c != "sandbox-reaper")
                .map(|(p, _)| p)
                .collect();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the host never started its runner and server");
}

fn signal_and_wait(host: Host, sig: i32) -> (i32, serde_json::Value, String, Duration) {
    // SAFETY: kill(2) on our own live child.
    assert_eq!(unsafe { libc::kill(host.child.id() as i32, sig) }, 0);
    let t = Instant::now();
    let out = host.child.wait_with_output().unwrap();
    let took = t.elapsed();
    drop(host.dir);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let outcome = serde_json::from_str(stdout.trim()).unwrap_or(json!(null));
    (
        out.status.code().unwrap_or(-1),
        outcome,
        String::from_utf8_lossy(&out.stderr).to_string(),
        took,
    )
}

#[test]
fn sigterm_kills_a_runner_that_outlives_the_grace_period() {
    // `run` starts only the servers a script names: this one names the fixture (never calls it)
    // so that the server is running when the signal comes.
    let host = start_host(
        "if (false) await mcp.fixture.echo({}); console.log('working'); while (true) {}",
        300,
    );
    let kids = wait_for_runner(&host);
    let (status, outcome, stderr, took) = signal_and_wait(host, libc::SIGTERM);
    assert_eq!(status, 0, "stderr: {stderr}");
    assert_eq!(outcome["error"]["code"], "SANDBOX_UNAVAILABLE", "{outcome}");
    assert!(
        outcome["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{outcome}"
    );
    assert_eq!(
        outcome["logs"][0]["message"], "working",
        "logs are kept: {outcome}"
    );
    assert!(stderr.contains("SIGTERM: shut down cleanly"), "{stderr}");
    assert!(
        took >= Duration::from_millis(250),
        "grace 300 ms, took {took:?}"
    );
    assert_not_hung(took, ms(5_000), ms(500), "SIGTERM to exit");
    for pid in kids {
        assert!(!alive(pid), "process {pid} outlived the host");
    }
}

#[test]
fn sigterm_during_a_storm_of_calls_ends_run_within_the_grace() {
    // Issue 25 item 14: with a thousand calls traced, `run` still honours SIGTERM at once (the
    // grace, then exit), and the outcome it prints keeps what was done. The signal comes once the
    // server has seen 1,001 calls (it logs each to a file), however long the machine took to make
    // them: the calls are sequential, so by then at least 1,000 had ended and were traced.
    let dir = tempfile::tempdir().unwrap();
    let calls_log = dir.path().join("calls.log");
    let host = start_host_with_servers(
        "for (let i = 0; i < 1000000; i++) await mcp.fixture.echo({message: 'x'}); return 'never'",
        300,
        &["--max-calls", "1000000"],
        json!({"fixture": {
            "command": bin("fixture-mcp-server"),
            "env": {"FIXTURE_META_LOG": calls_log}, "files": {"write": [calls_log.parent().unwrap()]},
        }}),
    );
    let kids = wait_for_runner(&host);
    let seen = || {
        std::fs::read_to_string(&calls_log)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let started = Instant::now();
    while seen() < 1001 {
        assert_still_waiting(started.elapsed(), ms(60_000), ms(1_500), "1,001 calls");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_not_hung(started.elapsed(), ms(60_000), ms(1_500), "1,001 calls");
    let (status, outcome, stderr, took) = signal_and_wait(host, libc::SIGTERM);
    assert_eq!(status, 0, "stderr: {stderr}");
    assert_eq!(outcome["error"]["code"], "SANDBOX_UNAVAILABLE", "{outcome}");
    let calls = outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_end")
        .count();
    assert!(calls >= 1000, "only {calls} calls were traced");
    assert!(stderr.contains("SIGTERM: shut down cleanly"), "{stderr}");
    // The 300 ms grace, then exit: a hang guard on the time from the signal to the exit.
    assert_not_hung(took, ms(5_000), ms(500), "SIGTERM to exit");
    for pid in kids {
        assert!(!alive(pid), "process {pid} outlived the host");
    }
}

#[test]
fn sigint_lets_the_running_execution_finish_within_the_grace_period() {
    let host = start_host(
        "const r = await mcp.fixture.sleep({ ms: 400 }); return r;",
        5_000,
    );
    let kids = wait_for_runner(&host);
    let (status, outcome, stderr, took) = signal_and_wait(host, libc::SIGINT);
    assert_eq!(status, 0, "stderr: {stderr}");
    assert_eq!(outcome["success"], true, "{outcome}");
    assert_eq!(outcome["result"], "slept 400 ms");
    assert_not_hung(took, ms(5_000), ms(500), "SIGINT to exit");
    for pid in kids {
        assert!(!alive(pid), "process {pid} outlived the host");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_refuses_new_and_queued_work_and_kills_late_runners() {
    let catalog = Arc::new(fixture_catalog().await);
    let sandbox = Sandbox::new(
        catalog.clone(),
        runner(),
        QueueOptions {
            max_running: 1,
            max_queued: 4,
            pool_size: 0,
        },
    );
    let req = |code: &str| ExecRequest {
        request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
            timeout_ms: 20_000,
            ..Default::default()
        }),
        code: code.into(),
        ..Default::default()
    };
    let running = tokio::spawn({
        let s = sandbox.clone();
        let r = req("console.log('in'); while (true) {}");
        async move { s.execute(r).await }
    });
    while sandbox.in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let queued = tokio::spawn({
        let s = sandbox.clone();
        let r = req("return 1");
        async move { s.execute(r).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t = Instant::now();
    sandbox.shutdown(Duration::from_millis(200)).await;
    assert_not_hung(t.elapsed(), ms(3_000), ms(300), "shutdown");
    let running = running.await.unwrap();
    assert_eq!(code(&running), "SANDBOX_UNAVAILABLE", "{running:?}");
    assert_eq!(running.logs[0].message, "in");
    let queued = queued.await.unwrap();
    assert_eq!(code(&queued), "SANDBOX_UNAVAILABLE", "{queued:?}");
    let late = sandbox.execute(req("return 1")).await;
    assert_eq!(code(&late), "SANDBOX_UNAVAILABLE");
    assert!(late.error.unwrap().message.contains("shutting down"));
    assert_eq!(sandbox.in_flight(), 0);
    // The MCP server was shut down with the sandbox.
    let o = mcp_sandbox::execute(
        &catalog,
        &runner(),
        req("return await mcp.fixture.echo({ message: 'x' })"),
    )
    .await;
    assert_eq!(code(&o), "TOOL_ERROR", "{o:?}");
}
