//! `mcp-sandbox serve` with the official MCP Python SDK (mcp 2.3.0 in .venv, installed by
//! scripts/setup.sh) as the client, over stdio and streamable HTTP: list tools, execute_code
//! against the reference filesystem server, failing scripts (is_error + code), TypeScript input,
//! policy, search_tools, and a configured server that fails at start (reported, others work).
//! The checks themselves are in tests/python/serve_client.py.

use crate::common;
use common::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Setup {
    _dir: tempfile::TempDir,
    data: PathBuf,
    config: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().canonicalize().unwrap();
    std::fs::write(data.join("notes.txt"), "alpha\nbeta\ngamma").unwrap();
    let bin_dir = repo_root().join("node_modules/.bin");
    let config = data.join("mcp.json");
    let text = json!({
        "mcpServers": {
            "filesystem": {"command": bin_dir.join("mcp-server-filesystem"), "args": [&data], "files": {"write": [&data]}},
            "broken": {"command": bin("fixture-mcp-server"), "args": ["--fail-start"]},
            "missing": {"command": "/nonexistent/mcp-server"}
        },
        // The state file (learning) stays in the temporary directory.
        "sandbox": {"deny": ["filesystem:write_*"], "state": "state.db"}
    });
    std::fs::write(&config, text.to_string()).unwrap();
    Setup {
        _dir: dir,
        data,
        config,
    }
}

fn python(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let py = repo_root().join(".venv/bin/python");
    assert!(
        py.exists(),
        "run scripts/setup.sh (Python venv with mcp==2.3.0) first"
    );
    Command::new(py)
        .arg(repo_root().join("tests/python/serve_client.py"))
        .args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap()
}

fn assert_ok(out: &std::process::Output, mode: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(&format!("OK {mode}")),
        "python client failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn python_sdk_over_stdio() {
    let s = setup();
    let exe = Path::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    let out = python(&[
        "stdio".as_ref(),
        exe.as_os_str(),
        s.config.as_os_str(),
        s.data.as_os_str(),
    ]);
    assert_ok(&out, "stdio");
}

#[test]
fn python_sdk_over_http() {
    let s = setup();
    let mut server = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(&s.config)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = server.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("mcp-sandbox: serving MCP over HTTP at ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(60));
    let out = url
        .as_ref()
        .ok()
        .map(|url| python(&["http".as_ref(), url.as_ref(), s.data.as_os_str()]));
    let _ = server.kill();
    let _ = server.wait();
    let url = url.expect("serve --http did not print its address");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert_ok(&out.unwrap(), "http");
}

#[test]
fn http_refuses_non_loopback_addresses_unless_told() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["serve", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--http 0.0.0.0:0 is not a loopback address")
            && err.contains("--http-allow-remote"),
        "{err}"
    );
}
