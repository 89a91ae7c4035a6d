//! The state file shared by several host processes: no lost update, and a host killed with
//! SIGKILL in the middle of a learning write leaves a database that opens and passes
//! `PRAGMA integrity_check`.
//!
//! The writer processes are this test executable run again with `MCP_SANDBOX_TEST_WRITER` set
//! (the `writer_process` test below): real separate processes using the library's real write
//! path, so they can write many times per second. One test uses real `mcp-sandbox run`
//! processes too.

use crate::common;

use mcp_sandbox::exec::outcome::{Metrics, Outcome};
use mcp_sandbox::store::Store;
use mcp_sandbox::trace::{TraceEvent, TraceKind};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WRITER_ENV: &str = "MCP_SANDBOX_TEST_WRITER";

/// An outcome whose traces are the successful calls `t0, t1, …, t(n-1)` in order.
fn chain_outcome(n: usize) -> Outcome {
    let mut traces = Vec::new();
    for i in 0..n {
        let id = format!("id{i}");
        for kind in [TraceKind::ToolStart, TraceKind::ToolEnd] {
            traces.push(TraceEvent {
                kind,
                tool: format!("w:t{i}"),
                trace_id: id.clone(),
                parent_trace_id: None,
                ts: 0.0,
                success: (kind == TraceKind::ToolEnd).then_some(true),
                duration_ms: (kind == TraceKind::ToolEnd).then_some(1.0),
                error: None,
                by: None,
                rule: None,
                transport: None,
                key: None,
                bytes: None,
                label: None,
                decision: None,
                approver: None,
            });
        }
    }
    Outcome {
        success: true,
        result: Value::Null,
        error: None,
        logs: Vec::new(),
        traces,
        metrics: Metrics::default(),
    }
}

/// Run only as a child of the tests below: writes `ITERATIONS` executions of a chain of
/// `CHAIN` calls, each in its own transaction, then exits.
#[test]
#[ignore = "a helper process for the other tests"]
fn writer_process() {
    let Ok(path) = std::env::var(WRITER_ENV) else {
        return;
    };
    let iterations: usize = std::env::var("ITERATIONS").unwrap().parse().unwrap();
    let chain: usize = std::env::var("CHAIN").unwrap().parse().unwrap();
    let store = Store::open(Path::new(&path)).unwrap();
    let outcome = chain_outcome(chain);
    println!("writer ready");
    for _ in 0..iterations {
        store.record_execution(&outcome, None).unwrap();
    }
}

fn spawn_writer(path: &Path, iterations: usize, chain: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            // The test's name inside the one integration binary: `store_concurrency::writer_process`.
            &format!(
                "{}::writer_process",
                module_path!()
                    .split_once("::")
                    .map_or(module_path!(), |(_, m)| m)
            ),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WRITER_ENV, path)
        .env("ITERATIONS", iterations.to_string())
        .env("CHAIN", chain.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn edge_counts(store: &Store) -> Vec<i64> {
    store
        .graph(None)
        .unwrap()
        .edges
        .iter()
        .map(|e| e.count)
        .collect()
}

#[test]
fn two_writer_processes_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    Store::open(&path).unwrap();
    let (iterations, chain) = (150, 5);
    let a = spawn_writer(&path, iterations, chain);
    let b = spawn_writer(&path, iterations, chain);
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "writer failed: {out:?}");
    }
    let store = Store::open(&path).unwrap();
    let expected = 2 * iterations as i64;
    assert_eq!(edge_counts(&store), vec![expected; chain - 1]);
    let g = store.graph(None).unwrap();
    assert!(g
        .tools
        .iter()
        .all(|t| t.calls == expected && t.successes == expected));
    store.integrity_check().unwrap();
}

#[test]
fn sigkill_in_the_middle_of_a_write_leaves_a_sound_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    Store::open(&path).unwrap();
    // Long transactions (400 calls each), so the kill very likely lands inside one.
    let mut child = spawn_writer(&path, 1_000_000, 400);
    // The harness prints its own lines first; keep the pipe open until the kill.
    use std::io::BufRead;
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("writer ready") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the writer exited early"
        );
    }
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: kill(2) on our own child's pid; no memory is involved.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    assert_eq!(rc, 0);
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));

    let store = Store::open(&path).unwrap();
    store.integrity_check().unwrap();
    // Every committed execution is whole: all 399 edges have the same count.
    let counts = edge_counts(&store);
    assert_eq!(counts.len(), 399, "some writes must have committed");
    assert!(counts.iter().all(|c| *c == counts[0]), "{counts:?}");
    // And the file is still writable.
    store.record_execution(&chain_outcome(2), None).unwrap();
}

fn cli_run(state: &PathBuf, config: &Path, code: &str) -> Child {
    let mut child = Command::new(common::bin("mcp-sandbox"))
        .args(["run", "-", "--state"])
        .arg(state)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(code.as_bytes())
        .unwrap();
    child
}

#[test]
fn two_mcp_sandbox_processes_share_one_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.db");
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fixture": {"command": common::bin("fixture-mcp-server")}}})
            .to_string(),
    )
    .unwrap();
    let code = "await mcp.fixture.echo({message: 'a'}); await mcp.fixture.add({a: 1, b: 2});";
    let rounds = 8;
    let started = Instant::now();
    let loops: Vec<_> = (0..2)
        .map(|_| {
            let (state, config) = (state.clone(), config.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let out = cli_run(&state, &config, code).wait_with_output().unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for l in loops {
        l.join().unwrap();
    }
    let store = Store::open(&state).unwrap();
    let g = store.graph(None).unwrap();
    assert_eq!(g.edges.len(), 1);
    assert_eq!(
        (
            g.edges[0].source.as_str(),
            g.edges[0].target.as_str(),
            g.edges[0].count
        ),
        ("fixture:echo", "fixture:add", 2 * rounds)
    );
    eprintln!("{} runs in {:?}", 2 * rounds, started.elapsed());
}
