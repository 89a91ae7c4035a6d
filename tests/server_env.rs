//! A spawned stdio MCP server gets a minimal environment (issue 15 item 1): through the real
//! `run` CLI and the real fixture server's `env` tool, a server configured without `env` sees
//! only HOME, LOGNAME, PATH, SHELL, TERM and USER of the host's variables (not the host's
//! secrets), plus its config's `env` and what its `inheritEnv` globs match.

use crate::common;

use common::bin;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

fn server_env(server: Value) -> serde_json::Map<String, Value> {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fixture": server}}).to_string(),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["run", "-", "--json", "--config"])
        .arg(&config)
        .arg("--state")
        .arg(dir.path().join("state.db"))
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("HOME", "/home/tester")
        .env("TERM", "xterm-test")
        .env("SECRET_API_KEY", "do-not-leak")
        .env("AWS_ACCESS_KEY_ID", "AKIA-test")
        .env("AWS_REGION", "eu-test-1")
        .env("NODE_OPTIONS", "--max-old-space-size=64")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"return await mcp.fixture.env()")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let outcome: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(outcome["success"], true, "{outcome}");
    outcome["result"].as_object().unwrap().clone()
}

fn names(env: &serde_json::Map<String, Value>) -> Vec<&str> {
    env.keys().map(String::as_str).collect()
}

#[test]
fn a_server_without_env_sees_only_the_default_variables() {
    let env = server_env(json!({"command": bin("fixture-mcp-server")}));
    for name in names(&env) {
        // MCP_SANDBOX_TENANT: the tenant a (default, tenant-scoped) stdio server's process serves.
        assert!(
            [
                "HOME",
                "LOGNAME",
                "PATH",
                "SHELL",
                "TERM",
                "USER",
                "MCP_SANDBOX_TENANT",
                // Set by the server sandbox: its private /tmp, bubblewrap's --chdir, and the
                // Landlock wrapper's report (what it enforced).
                "TMPDIR",
                "PWD",
                "MCP_SANDBOX_LANDLOCK"
            ]
            .contains(&name),
            "unexpected variable {name} in {env:?}"
        );
    }
    assert_eq!(env["MCP_SANDBOX_TENANT"], "default");
    // A confined server's HOME is its private home inside the sandbox, not the host's.
    assert_eq!(env["HOME"], "/home/server");
    assert_eq!(env["TMPDIR"], "/tmp");
    assert!(
        env["MCP_SANDBOX_LANDLOCK"]
            .as_str()
            .is_some_and(|r| r.starts_with("fully enforced (ruleset abi 6")),
        "{env:?}"
    );
    assert_eq!(env["TERM"], "xterm-test");
    assert!(env.contains_key("PATH"), "{env:?}");
}

#[test]
fn config_env_and_inherit_env_globs_add_to_the_defaults() {
    let env = server_env(json!({
        "command": bin("fixture-mcp-server"),
        "env": {"MEMORY_FILE_PATH": "/tmp/m.json", "TERM": "dumb"},
        "inheritEnv": ["AWS_*", "NODE_OPTIONS"],
    }));
    assert_eq!(env["MEMORY_FILE_PATH"], "/tmp/m.json");
    assert_eq!(env["TERM"], "dumb", "the config's env wins over the host's");
    assert_eq!(env["AWS_ACCESS_KEY_ID"], "AKIA-test");
    assert_eq!(env["AWS_REGION"], "eu-test-1");
    assert_eq!(env["NODE_OPTIONS"], "--max-old-space-size=64");
    assert!(!env.contains_key("SECRET_API_KEY"), "{env:?}");
}

#[test]
fn a_bad_inherit_env_pattern_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"f": {"command": "x", "inheritEnv": ["A=B"]}}}).to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["tools", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("inheritEnv pattern \"A=B\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
