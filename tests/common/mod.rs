//! Shared helpers for the integration tests: locating the real binaries built by
//! `cargo build --workspace`, and building catalogs with real MCP servers.
#![allow(dead_code)]

use mcp_sandbox::catalog::start_mcp_servers;
use mcp_sandbox::config::Config;
use mcp_sandbox::{
    Catalog, ExecError, ExecRequest, InProcessServer, Limits, Outcome, RunnerCommand,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A binary of the workspace, next to the test executable's parent (`target/debug`).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` before the tests (scripts/test.sh does)",
        path.display()
    );
    path
}

pub fn runner() -> RunnerCommand {
    RunnerCommand::new(bin("sandbox-runner"))
}

/// A fake runner (tests/fixtures) in the given mode.
pub fn fake_runner(mode: &str) -> RunnerCommand {
    let mut r = RunnerCommand::new(bin("fake-runner"));
    r.prefix_args = vec![mode.to_string()];
    r
}

/// In-process tools: `local.echo` (returns its arguments), `local.sleep {ms}`.
pub fn local_server() -> InProcessServer {
    InProcessServer::new("local")
        .tool(
            "echo",
            "Returns its arguments",
            json!({"type": "object"}),
            |args| async move { Ok::<Value, ExecError>(args) },
        )
        .tool(
            "sleep",
            "Sleeps ms milliseconds",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
            |args| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<Value, ExecError>(json!({"slept": ms}))
            },
        )
}

/// The fixture rmcp server as `mcp.fixture`.
pub fn fixture_config() -> Config {
    let text =
        json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}}});
    Config::parse(&text.to_string(), &repo_root()).expect("fixture config")
}

/// A catalog with the fixture MCP server and the in-process `local` server.
pub async fn fixture_catalog() -> Catalog {
    let (servers, failed) = start_mcp_servers(&fixture_config(), Duration::from_secs(20)).await;
    assert!(
        failed.is_empty(),
        "fixture server failed to start: {failed:?}"
    );
    let mut c = Catalog::new();
    for s in servers {
        c.add(Arc::new(s)).unwrap();
    }
    c.add(Arc::new(local_server())).unwrap();
    c
}

pub fn local_catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(Arc::new(local_server())).unwrap();
    c
}

pub async fn run_with(catalog: &Catalog, code: &str, limits: Limits) -> Outcome {
    mcp_sandbox::execute(
        catalog,
        &runner(),
        ExecRequest {
            code: code.to_string(),
            limits,
            ..Default::default()
        },
    )
    .await
}

pub async fn run(catalog: &Catalog, code: &str) -> Outcome {
    run_with(catalog, code, Limits::default()).await
}

/// The error code of a failed outcome, or a panic with the outcome.
pub fn code(o: &Outcome) -> &'static str {
    match &o.error {
        Some(e) => e.code.as_str(),
        None => panic!("expected a failure, got {o:?}"),
    }
}

/// Children of this process that have not been reaped (zombies) or still run.
pub fn child_pids() -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...
            let after = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
            let ppid: u32 = after
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            if ppid == me {
                out.push(pid);
            }
        }
    }
    out
}

pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}
