//! `mcp-sandbox check` on this machine: every layer enforced, uid ≠ 0, and the kernel's view of
//! the running runner (Seccomp 2, NoNewPrivs 1, no capabilities).

use crate::common;
use common::*;
use serde_json::Value;
use std::process::Command;

#[test]
fn check_reports_every_layer_enforced_with_the_kernel_view() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["check", "--json", "--require-isolation", "all"])
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    for layer in [
        "fds",
        "uid",
        "namespaces",
        "empty_root",
        "landlock",
        "rlimits",
        "no_new_privs",
        "seccomp",
    ] {
        let state = r["layers"][layer].as_str().unwrap_or("missing");
        assert!(state.starts_with("enforced"), "{layer}: {state}");
    }
    assert_eq!(r["seccomp"], "2");
    assert_eq!(r["no_new_privs"], "1");
    assert_eq!(r["cap_eff"], "0000000000000000");
    assert_eq!(r["cap_prm"], "0000000000000000");
    let uid = r["uid"].as_str().unwrap();
    assert!(
        uid.split_whitespace().all(|u| u == "65534"),
        "uid line {uid}"
    );
    assert!(r["landlock_abi"].as_i64().unwrap() >= 1);
    assert_eq!(r["ok"], true);

    let human = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .arg("check")
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(0));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("Seccomp: 2  NoNewPrivs: 1"), "{text}");
    assert!(text.contains("ok: every layer is enforced"), "{text}");
}

#[test]
fn check_fails_clearly_without_a_runner() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["check", "--runner", "/nonexistent/sandbox-runner"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist"), "{err}");
}
