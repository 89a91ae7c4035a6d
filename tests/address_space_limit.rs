//! The binary runs under an address-space limit (issue 57 item 5): `mcp-sandbox tools` under
//! `prlimit --as` with as many runtime workers as a 64-core machine gets (glibc's malloc used to
//! reserve 64 MiB of address space per thread's arena, so a worker thread could not be spawned
//! and the runtime panicked), loading an OpenAPI description.

use crate::common;
use common::*;

#[test]
fn tools_runs_under_prlimit_as_with_many_workers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ok.yaml"),
        "openapi: 3.1.0\npaths:\n  /ping:\n    get:\n      operationId: ping\n",
    )
    .unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"api": {"openapi": "ok.yaml", "baseUrl": "https://api.example.com"}}}"#,
    )
    .unwrap();
    let mut child = std::process::Command::new("prlimit")
        .arg("--as=1000000000")
        .arg(bin("mcp-sandbox"))
        .args(["tools", "--config", config.to_str().unwrap()])
        .env("TOKIO_WORKER_THREADS", "64")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux)");
    // It used to hang after the panic: given up (and failed) after a minute.
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("mcp-sandbox tools did not end under prlimit --as");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "api:ping  GET /ping\n"
    );
}
