//! The real `mcp-sandbox serve` binary over stdio with a real rmcp client: started with the
//! fixture MCP server configured and a state file in a temporary directory.
#![allow(dead_code)]

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

use super::common::bin;

pub struct Served {
    pub child: tokio::process::Child,
    pub pid: u32,
    pub client: RunningService<RoleClient, ()>,
    pub stderr: Arc<Mutex<String>>,
    pub state: PathBuf,
    pub dir: tempfile::TempDir,
}

/// Starts `mcp-sandbox serve --config <fixture> --state <tmp>/state.db ARGS` and connects.
pub async fn start(args: &[&str]) -> Served {
    start_with_sandbox(json!({}), args).await
}

/// Like [`start`], with `sandbox` as the config's `sandbox` section (limits, policy).
pub async fn start_with_sandbox(sandbox: Value, args: &[&str]) -> Served {
    start_with_servers(
        json!({"fixture": {"command": bin("fixture-mcp-server")}}),
        sandbox,
        args,
    )
    .await
}

/// Like [`start_with_sandbox`], with `servers` as the config's `mcpServers`.
pub async fn start_with_servers(servers: Value, sandbox: Value, args: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": servers, "sandbox": sandbox}).to_string(),
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    cmd.arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--state")
        .arg(&state)
        .args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("XDG_DATA_HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let pid = child.id().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let sink = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let client = tokio::time::timeout(Duration::from_secs(30), ().serve((stdout, stdin)))
        .await
        .expect("serve did not initialize within 30 s")
        .expect("MCP initialize failed");
    Served {
        child,
        pid,
        client,
        stderr,
        state,
        dir,
    }
}

impl Served {
    pub async fn call(&self, tool: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        self.client.peer().call_tool(params).await
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// A tool result's structuredContent (panics without one).
pub fn structured(r: &CallToolResult) -> &Value {
    r.structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structuredContent: {r:?}"))
}

pub fn is_error(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

/// The text content of a tool result, joined.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Direct children of `pid` (from /proc) with their command names.
pub fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some((comm, ppid, _, _)) = stat(p) {
            if ppid == pid {
                out.push((p, comm));
            }
        }
    }
    out
}

/// `(comm, ppid, state, utime+stime ticks)` of a process.
pub fn stat(pid: u32) -> Option<(String, u32, char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(") ")?;
    let comm = head.split_once(" (").map(|(_, c)| c)?.to_string();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after `state`.
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((comm, ppid, state, ticks))
}

/// Runs `tests/python/<script>` with the venv's Python (the official MCP SDK), `args` and `envs`;
/// the one JSON line it prints.
pub fn python_json(
    script: &str,
    args: &[&std::ffi::OsStr],
    envs: &[(&str, &std::ffi::OsStr)],
) -> serde_json::Value {
    let root = crate::common::repo_root();
    let py = root.join(".venv/bin/python");
    assert!(
        py.exists(),
        "run scripts/setup.sh (Python venv with the MCP SDK) first"
    );
    let out = std::process::Command::new(py)
        .arg(root.join("tests/python").join(script))
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{script} printed no JSON ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}
pub mod cdp;
pub mod http;
pub mod modern;
pub mod otlp;
pub mod sdk;
pub mod team;
