//! The host owns the whole process tree of its MCP servers (issue 12 item 4, issue 15 item 3):
//! through the real `run` CLI with the real fixture MCP server, started directly and through a
//! wrapper process (`sh -c`, which stays the server's parent as `npx` does for `node`), runs
//! that abandon a call or let it hit `--call-timeout-ms` leave no process of theirs alive
//! (found by walking /proc for a marker in their environment); and when the runner dies during
//! a long call, the outcome is on stdout within 200 ms of the kill, before the servers close.

use crate::common;
use crate::serve_support;

use common::{assert_not_hung, bin, ms};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn config(dir: &Path, marker: &str, wrapped: bool) -> std::path::PathBuf {
    let server = bin("fixture-mcp-server").to_string_lossy().into_owned();
    let entry = if wrapped {
        // `; true` keeps sh alive as the server's parent (no exec): a wrapper, like npx.
        json!({"command": "sh", "args": ["-c", format!("'{server}'; true")],
               "env": {"TREE_TEST_MARKER": marker}})
    } else {
        json!({"command": server, "env": {"TREE_TEST_MARKER": marker}})
    };
    let path = dir.join(format!("mcp-{wrapped}.json"));
    std::fs::write(&path, json!({"mcpServers": {"fixture": entry}}).to_string()).unwrap();
    path
}

fn run_cmd(config: &Path, dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    cmd.args(["run", "-", "--json", "--config"])
        .arg(config)
        .arg("--state")
        .arg(dir.join("state.db"))
        .args(extra)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn abandoned_and_timed_out_calls_leave_no_server_process() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = [
        // Abandoned: the script returns while the call is in flight.
        (
            "abandoned",
            "mcp.fixture.sleep({ms: 60000}); await mcp.fixture.echo({message: 'x'}); return 1",
            vec![],
        ),
        // Timed out: the call hits --call-timeout-ms.
        (
            "timed out",
            "try { await mcp.fixture.sleep({ms: 60000}) } catch (e) { return e.code }",
            vec!["--call-timeout-ms", "300"],
        ),
    ];
    for wrapped in [false, true] {
        for (what, script, extra) in &scripts {
            let marker = format!(
                "{}-{wrapped}-{}",
                std::process::id(),
                what.replace(' ', "_")
            );
            let config = config(dir.path(), &marker, wrapped);
            let started = Instant::now();
            let mut child = run_cmd(&config, dir.path(), extra).spawn().unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(script.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            let took = started.elapsed();
            let outcome: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|_| panic!("{what}: {}", String::from_utf8_lossy(&out.stderr)));
            assert_eq!(
                outcome["success"], true,
                "{what} wrapped={wrapped}: {outcome}"
            );
            if *what == "timed out" {
                assert_eq!(outcome["result"], "TOOL_TIMEOUT", "{outcome}");
            }
            // The host has exited: nothing it started may still run.
            let left = common::processes_left(
                &format!("TREE_TEST_MARKER={marker}"),
                Duration::from_secs(1),
            );
            assert!(
                left.is_empty(),
                "{what} (wrapped={wrapped}): still alive after the host exited: {left:?}"
            );
            // The shutdown is bounded: well under the 60 s the calls would have taken.
            assert_not_hung(took, ms(10_000), ms(1_000), what);
        }
    }
}

#[test]
fn outcome_of_a_runner_killed_during_a_long_call_is_printed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for wrapped in [false, true] {
        let marker = format!("{}-{wrapped}-killed", std::process::id());
        let config = config(dir.path(), &marker, wrapped);
        let mut child = run_cmd(&config, dir.path(), &[]).spawn().unwrap();
        let host = child.id();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"await mcp.fixture.sleep({ms: 60000}); return 1")
            .unwrap();
        // The runner is the host's child named sandbox-runner under seccomp (a zygote that has
        // not renamed itself yet has the same name but no seccomp filter); wait until it is up,
        // then give the call time to reach the server.
        let deadline = Instant::now() + Duration::from_secs(20);
        let runner = loop {
            let found = serve_support::children_of(host)
                .into_iter()
                .find(|(pid, comm)| {
                    comm.starts_with("sandbox-runner")
                        && std::fs::read_to_string(format!("/proc/{pid}/status"))
                            .is_ok_and(|s| s.lines().any(|l| l == "Seccomp:\t2"))
                });
            if let Some((pid, _)) = found {
                break pid;
            }
            assert!(Instant::now() < deadline, "no runner appeared");
            std::thread::sleep(Duration::from_millis(10));
        };
        std::thread::sleep(Duration::from_millis(500));
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let killed = Instant::now();
        // SAFETY: sending a signal to a pid we just found as our grandchild.
        assert_eq!(unsafe { libc::kill(runner as i32, libc::SIGKILL) }, 0);
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let after_kill = killed.elapsed();
        println!("wrapped={wrapped}: outcome {after_kill:?} after the runner's kill");
        let outcome: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("{line:?}"));
        assert_eq!(outcome["error"]["code"], "RUNNER_CRASHED", "{outcome}");
        assert!(
            after_kill < Duration::from_millis(200),
            "wrapped={wrapped}: the outcome came {after_kill:?} after the runner's death"
        );
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(1));
        let left = common::processes_left(
            &format!("TREE_TEST_MARKER={marker}"),
            Duration::from_secs(1),
        );
        assert!(left.is_empty(), "still alive: {left:?}");
    }
}
