//! The real `mcp-sandbox` binary: outputs, `--json` shape, traces, exit codes 0/1/2.

use crate::common;
use common::*;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn cli(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    cmd.args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        // `run` learns into the state file: keep it out of the real data directory.
        .env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join(format!("mcp-sandbox-cli-tests-{}", std::process::id())),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        // A usage error may end the process before it reads its input.
        if let Err(e) = input.write_all(s.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn fixture_config_file(dir: &std::path::Path) -> String {
    let path = dir.join("mcp.json");
    let text =
        serde_json::json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}});
    std::fs::write(&path, text.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn result_on_stdout_logs_on_stderr_exit_0() {
    let out = cli(
        &["run", "-"],
        Some("console.log('hello'); return {a: [1, 2]}"),
    );
    assert_eq!(out.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result, serde_json::json!({"a": [1, 2]}));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "[log] hello\n");
}

#[test]
fn json_outcome_has_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path());
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        "console.warn('w'); return await mcp.fixture.echo({ message: who })",
    )
    .unwrap();
    let out = cli(
        &[
            "run",
            script.to_str().unwrap(),
            "--config",
            &config,
            "--context",
            r#"{"who": "ctx"}"#,
            "--json",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = o.as_object().unwrap().keys().map(String::as_str).collect();
    // In the order the outcome is built and documented (objects keep their key order).
    assert_eq!(
        keys,
        ["success", "result", "error", "logs", "traces", "metrics"]
    );
    assert_eq!(o["success"], true);
    assert_eq!(o["result"], "ctx");
    assert_eq!(o["error"], Value::Null);
    assert_eq!(
        o["logs"],
        serde_json::json!([{"level": "warn", "message": "w"}])
    );
    assert_eq!(o["metrics"]["tool_calls"], 1);
    assert_eq!(o["traces"][0]["type"], "tool_start");
    assert_eq!(o["traces"][1]["type"], "tool_end");
    assert_eq!(o["traces"][1]["tool"], "fixture:echo");
}

#[test]
fn failures_exit_1_with_the_error() {
    let out = cli(&["run", "-", "--json"], Some("await mcp.nothing.here()"));
    assert_eq!(out.status.code(), Some(1));
    let o: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(o["success"], false);
    assert_eq!(o["error"]["code"], "TOOL_NOT_FOUND");

    let out = cli(&["run", "-"], Some("throw new Error('nope')"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: RUNTIME_ERROR: Error: nope"));
    assert!(out.stdout.is_empty());
}

#[test]
fn mermaid_trace_is_a_sequence_diagram() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path());
    let out = cli(
        &["run", "-", "--config", &config, "--trace", "mermaid"],
        Some("await mcp.fixture.echo({message: 'a'}); return 1"),
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("sequenceDiagram\n"), "{err}");
    assert!(
        err.contains("S->>H: echo\n    H->>srv_fixture: echo\n"),
        "{err}"
    );
    assert!(err.contains("srv_fixture-->>H: ok ("), "{err}");
}

#[test]
fn usage_and_configuration_errors_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad_config = dir.path().join("bad.json");
    std::fs::write(&bad_config, "{not json").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "/definitely/not/here.js"], "cannot read script"),
        (
            vec!["run", "-", "--config", bad_config.to_str().unwrap()],
            "is not valid",
        ),
        (
            vec!["run", "-", "--config", "/no/such/config.json"],
            "cannot read config",
        ),
        (
            vec!["run", "-", "--context", "[1]"],
            "--context must be a JSON object",
        ),
        (
            vec!["run", "-", "--context", "{"],
            "--context is not valid JSON",
        ),
        (vec!["run", "-", "--memory-mb", "0"], "memory_mb"),
        (
            vec!["run", "-", "--require-isolation", "bogus"],
            "unknown layer",
        ),
        (vec!["run", "-", "--no-such-flag"], "unexpected argument"),
    ];
    for (args, needle) in cases {
        let out = cli(&args, Some("1"));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
