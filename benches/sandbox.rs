//! `cargo bench --bench sandbox` (after `cargo build --release --workspace --bins`): measures the
//! real runner (locked down) and prints JSON, also written to `target/bench/sandbox.json`.
//!
//! - `cold_exec_ms`: a fresh runner executing `return 1+1`, spawn → outcome.
//! - `call_overhead_us`: one tool call round trip to an in-process echo tool, from 5,000
//!   sequential calls in one script (the gap between consecutive `tool_start` events: result sent →
//!   script resumes → next call arrives).
//! - `mcp_call_us`: the same through a real stdio MCP server (the rmcp fixture's `echo`).
//! - `runner_rss_kib`: the largest peak RSS of any runner (getrusage of reaped children).

use mcp_sandbox::catalog::start_mcp_servers;
use mcp_sandbox::config::Config;
use mcp_sandbox::trace::TraceKind;
use mcp_sandbox::{
    Catalog, ExecError, ExecRequest, InProcessServer, Limits, Outcome, RunnerCommand,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn release_bin(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let p = target.join("release").join(name);
    if !p.exists() {
        eprintln!(
            "{} is missing: run `cargo build --release --workspace --bins` first",
            p.display()
        );
        std::process::exit(2);
    }
    p
}

fn percentiles(mut xs: Vec<f64>) -> Value {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    json!({"p50": round(at(0.50)), "p99": round(at(0.99)), "n": xs.len()})
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

async fn exec(catalog: &Catalog, runner: &RunnerCommand, code: &str) -> Outcome {
    let limits = Limits {
        max_calls: 100_000,
        timeout_ms: 600_000,
        cpu_ms: 600_000,
        ..Default::default()
    };
    let o = mcp_sandbox::execute(
        catalog,
        runner,
        ExecRequest {
            code: code.into(),
            limits,
            ..Default::default()
        },
    )
    .await;
    assert!(o.success, "benchmark script failed: {o:?}");
    o
}

/// Microseconds between consecutive `tool_start` events.
fn call_gaps_us(o: &Outcome) -> Vec<f64> {
    let starts: Vec<f64> = o
        .traces
        .iter()
        .filter(|t| t.kind == TraceKind::ToolStart)
        .map(|t| t.ts)
        .collect();
    starts.windows(2).map(|w| (w[1] - w[0]) * 1000.0).collect()
}

fn children_max_rss_kib() -> i64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru.ru_maxrss
    }
}

async fn bench() -> Value {
    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
    let mut local = Catalog::new();
    local
        .add(Arc::new(InProcessServer::new("bench").tool(
            "echo",
            "Returns its arguments",
            json!({"type": "object"}),
            |args| async move { Ok::<Value, ExecError>(args) },
        )))
        .expect("catalog");

    // Warm-up: page cache, dynamic loader.
    for _ in 0..20 {
        exec(&local, &runner, "return 1+1").await;
    }
    let mut cold = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        exec(&local, &runner, "return 1+1").await;
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let rss = children_max_rss_kib();

    let calls = "for (let i = 0; i < 5000; i++) await mcp.bench.echo({ i }); return 1";
    let o = exec(&local, &runner, calls).await;
    let overhead = call_gaps_us(&o);

    let fixture = release_bin("fixture-mcp-server");
    let config = Config::parse(
        &json!({"mcpServers": {"fixture": {"command": fixture}}}).to_string(),
        Path::new("/"),
    )
    .expect("config");
    let (servers, failed) = start_mcp_servers(&config, Duration::from_secs(20)).await;
    assert!(failed.is_empty(), "{failed:?}");
    let mut mcp = Catalog::new();
    for s in servers {
        mcp.add(Arc::new(s)).expect("catalog");
    }
    let calls = "for (let i = 0; i < 2000; i++) await mcp.fixture.echo({ message: 'x' }); return 1";
    let o = exec(&mcp, &runner, calls).await;
    let mcp_gaps = call_gaps_us(&o);
    mcp.shutdown().await;

    json!({
        "cold_exec_ms": percentiles(cold),
        "call_overhead_us": percentiles(overhead),
        "mcp_call_us": percentiles(mcp_gaps),
        "runner_rss_kib": rss,
        "machine": {
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        },
    })
}

fn main() {
    // `cargo bench` passes `--bench`; any filter arguments are ignored.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let report = rt.block_on(bench());
    let text = serde_json::to_string_pretty(&report).expect("json");
    println!("{text}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("sandbox.json"), text + "\n");
    }
}
