//! The runner cannot forge the outcome (issue 13 item 5): codes only the host can know
//! (`TOOL_TIMEOUT`, `PERMISSION_DENIED`, …) and tools named in an error must match what the host
//! saw in this execution, or the outcome is `PROTOCOL_ERROR`. A script that re-throws an error
//! the host really gave it keeps that error's code.

use crate::common;
use common::*;

fn run(
    dir: &std::path::Path,
    runner: &std::path::Path,
    code: &str,
    flags: &[&str],
) -> serde_json::Value {
    let config = fixture_config_file(dir, serde_json::json!({}));
    let script = dir.join("s.js");
    std::fs::write(&script, code).unwrap();
    let state = dir.join("state.db");
    let mut args = vec![
        "run",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    args.push(script.to_str().unwrap());
    cli_run(&args).outcome()
}

#[test]
fn host_only_codes_claimed_by_the_runner_are_protocol_errors() {
    for (mode, claim) in [
        ("forge-timeout", "it claimed TOOL_TIMEOUT for fixture:echo, but the host answered no call to it with TOOL_TIMEOUT"),
        ("forge-cpu", "it claimed CPU_LIMIT for fixture:echo, a tool this execution never routed"),
        ("forge-denied", "it claimed PERMISSION_DENIED, but the host answered no call with PERMISSION_DENIED"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_keep, runner) = fake_runner_program(mode);
        let o = run(dir.path(), &runner, "1", &[]);
        assert_eq!(o["error"]["code"], "PROTOCOL_ERROR", "{mode}: {o}");
        let message = o["error"]["message"].as_str().unwrap();
        assert!(message.contains(claim), "{mode}: {message}");
    }
}

#[test]
fn errors_the_host_really_gave_survive_a_rethrow() {
    let dir = tempfile::tempdir().unwrap();
    let runner = bin("sandbox-runner");
    let o = run(
        dir.path(),
        &runner,
        "try { await mcp.fixture.sleep({ ms: 3000 }) } catch (e) { throw e }",
        &["--call-timeout-ms", "200"],
    );
    assert_eq!(o["error"]["code"], "TOOL_TIMEOUT", "{o}");
    assert_eq!(o["error"]["tool"], "fixture:sleep", "{o}");
    // The runner's own checks: an unknown name, and the call count.
    let o = run(
        dir.path(),
        &runner,
        "const t = 'ech'; await mcp.fixture[t]({})",
        &[],
    );
    assert_eq!(o["error"]["code"], "TOOL_NOT_FOUND", "{o}");
    let o = run(
        dir.path(),
        &runner,
        "for (let i = 0; i < 3; i++) await mcp.fixture.echo({ message: 'x' })",
        &["--max-calls", "1"],
    );
    assert_eq!(o["error"]["code"], "LIMIT_EXCEEDED", "{o}");
}
