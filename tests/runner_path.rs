//! A relative runner path (`--runner target/debug/sandbox-runner` or the same in
//! `MCP_SANDBOX_RUNNER`) is taken from the host's current directory, not from the runner's
//! working directory `/` (it used to end in RUNNER_CRASHED SIGABRT); a relative path that names
//! nothing is SANDBOX_UNAVAILABLE with the absolute path it looked at.

use crate::common;
use common::*;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The directory to run from and the runner's path relative to it: the repository root when
/// the build is under it (the usual layout), else the target directory.
fn relative_runner() -> (PathBuf, PathBuf) {
    let runner = bin("sandbox-runner");
    let root = repo_root();
    if let Ok(rel) = runner.strip_prefix(&root) {
        return (root, rel.to_path_buf());
    }
    let target = runner
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let rel = runner.strip_prefix(&target).unwrap().to_path_buf();
    (target, rel)
}

fn run_in(dir: &Path, args: &[&str], env_runner: Option<&Path>, stdin: &str) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    cmd.current_dir(dir)
        .args(args)
        .arg("--state")
        .arg(state.path().join("state.db"))
        .env_remove("MCP_SANDBOX_RUNNER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(r) = env_runner {
        cmd.env("MCP_SANDBOX_RUNNER", r);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn outcome(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON outcome ({e}); stdout {:?} stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn relative_runner_flag_is_taken_from_the_current_directory() {
    let (dir, rel) = relative_runner();
    assert!(rel.is_relative());
    let out = run_in(
        &dir,
        &["run", "-", "--json", "--runner", rel.to_str().unwrap()],
        None,
        "return [1, 2, 3].map(n => n * 2)",
    );
    let o = outcome(&out);
    assert_eq!(o["success"], true, "{o}");
    assert_eq!(o["result"], serde_json::json!([2, 4, 6]));
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn relative_runner_env_var_is_taken_from_the_current_directory() {
    let (dir, rel) = relative_runner();
    let out = run_in(&dir, &["run", "-", "--json"], Some(&rel), "return 'ok'");
    let o = outcome(&out);
    assert_eq!(o["success"], true, "{o}");
    assert_eq!(o["result"], "ok");
}

#[test]
fn a_missing_relative_runner_is_sandbox_unavailable_with_its_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let out = run_in(
        &dir,
        &["run", "-", "--json", "--runner", "no/such/sandbox-runner"],
        None,
        "return 1",
    );
    let o = outcome(&out);
    assert_eq!(o["error"]["code"], "SANDBOX_UNAVAILABLE", "{o}");
    let message = o["error"]["message"].as_str().unwrap();
    let expected = dir.join("no/such/sandbox-runner");
    assert!(
        message.starts_with(&format!(
            "runner program {} does not exist or is not a file",
            expected.display()
        )),
        "{message}"
    );
    assert_eq!(out.status.code(), Some(1));
}
