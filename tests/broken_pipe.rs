//! Every subcommand that prints exits quietly when its output pipe closes (`… | head -c 100`):
//! status 141 (128 + SIGPIPE, as a shell reports it), no panic, no backtrace (issue 12 item 10).

use crate::common;
use common::*;
use std::process::{Command, Stdio};

/// Runs `mcp-sandbox args` with a stdout pipe whose reading end is closed before it starts
/// (closed after the start, a small output could fit in the pipe before the close).
fn closed_stdout(args: &[&str]) -> (i32, String) {
    let (reader, writer) = nix::unistd::pipe().expect("pipe");
    drop(reader);
    let child = Command::new(bin("mcp-sandbox"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_output_pipe_ends_every_printing_subcommand_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), serde_json::json!({}));
    let config = config.to_str().unwrap();
    let state = dir.path().join("state.db");
    let state = state.to_str().unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(&script, "return 'x'.repeat(1000000)").unwrap();
    let script = script.to_str().unwrap();
    let runner = bin("sandbox-runner");
    let runner = runner.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "run", "--json", "--runner", runner, "--state", state, script,
        ],
        vec!["run", "--runner", runner, "--state", state, script],
        vec!["tools", "--config", config],
        vec!["tools", "--json", "--config", config],
        vec!["check", "--runner", runner],
        vec!["graph", "--state", state],
        vec!["capability", "list", "--state", state],
    ];
    for args in cases {
        let (status, stderr) = closed_stdout(&args);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(status, 141, "{args:?}: {stderr}");
    }
}
