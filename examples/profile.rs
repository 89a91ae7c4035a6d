//! Profiling aid: runs one hot path in a loop so `perf record` sees only it.
//!
//! `cargo run --release --example profile -- <mode> [n]` (needs `target/release/sandbox-runner`
//! and, for `mcp`, `target/release/fixture-mcp-server`), e.g.
//! `perf record -a -g -- target/release/examples/profile pooled 5000`.
//!
//! - `calls N`: one execution making N sequential calls to an in-process echo tool;
//! - `pooled N`: N pooled executions of `return 1+1`, each after the pool refilled;
//! - `cold N`: N executions on a freshly forked runner (no pool);
//! - `parallel N`: one execution awaiting N rounds of 100 calls in one `Promise.all` to the
//!   in-process echo (the batched path: the calls of a round cross the socket together);
//! - `mcp N`: one execution making N sequential calls to the rmcp fixture's `echo` over stdio;
//! - `observe N`: the host's `/proc` isolation check (`exec::isolation::observe`), of itself.
use mcp_sandbox::config::Config;
use mcp_sandbox::tools::catalog::start_mcp_servers;
use mcp_sandbox::{Catalog, ExecError, ExecRequest, InProcessServer, Limits, RunnerCommand};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    // Run on a worker thread, where the I/O driver also runs (no hop to the main thread).
    tokio::spawn(run()).await.expect("run");
}

fn request(code: String, max_calls: u64) -> ExecRequest {
    ExecRequest {
        request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
            max_calls,
            timeout_ms: 600_000,
            ..Default::default()
        }),
        code,
        ..Default::default()
    }
}

fn release(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/release")
        .join(name)
}

fn report(what: &str, mut us: Vec<f64>) {
    us.sort_by(f64::total_cmp);
    let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize];
    println!(
        "{what}: n {} p50 {:.1} µs p99 {:.1} µs",
        us.len(),
        at(0.5),
        at(0.99)
    );
}

/// Splits each call's cycle at its traces: `tool_start` → `tool_end` is the host and the
/// provider; `tool_end` → the next `tool_start` is the answer's way to the runner, the script,
/// and the next call's way back.
fn split(what: &str, o: &mcp_sandbox::Outcome) {
    use mcp_sandbox::trace::TraceKind;
    let ts: Vec<(TraceKind, f64)> = o
        .traces
        .iter()
        .filter(|t| matches!(t.kind, TraceKind::ToolStart | TraceKind::ToolEnd))
        .map(|t| (t.kind, t.ts * 1000.0))
        .collect();
    let (mut provider, mut runner) = (Vec::new(), Vec::new());
    for w in ts.windows(2) {
        match (w[0].0, w[1].0) {
            (TraceKind::ToolStart, TraceKind::ToolEnd) => provider.push(w[1].1 - w[0].1),
            (TraceKind::ToolEnd, TraceKind::ToolStart) => runner.push(w[1].1 - w[0].1),
            _ => {}
        }
    }
    report(&format!("{what}: tool_start → tool_end"), provider);
    report(&format!("{what}: tool_end → next tool_start"), runner);
}

async fn run() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().cloned().unwrap_or_else(|| "calls".into());
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5_000);
    let mut catalog = Catalog::new();
    catalog
        .add(Arc::new(InProcessServer::new("bench").tool(
            "echo",
            "Returns its arguments",
            json!({"type": "object"}),
            |args| async move { Ok::<Value, ExecError>(args) },
        )))
        .expect("catalog");
    let mut runner = RunnerCommand::new(release("sandbox-runner"));
    if std::env::var("PROFILE_SPAWN").as_deref() == Ok("exec") {
        runner.spawn = mcp_sandbox::exec::runner::SpawnMode::Exec;
    }
    match mode.as_str() {
        "calls" => {
            let t = Instant::now();
            let code =
                format!("for (let i = 0; i < {n}; i++) await mcp.bench.echo({{ i }}); return 1");
            let o = mcp_sandbox::execute(&catalog, &runner, request(code, n + 1)).await;
            assert!(o.success, "{o:?}");
            println!(
                "{n} calls: {:.1} µs/call",
                t.elapsed().as_secs_f64() * 1e6 / n as f64
            );
            split("call", &o);
        }
        "parallel" => {
            let t = Instant::now();
            let code = format!(
                "for (let r = 0; r < {n}; r++) await Promise.all(Array.from({{length: 100}}, (_, i) => mcp.bench.echo({{ i }}))); return 1"
            );
            let o = mcp_sandbox::execute(&catalog, &runner, request(code, n * 100 + 1)).await;
            assert!(o.success, "{o:?}");
            println!(
                "{n} rounds of 100 calls in one Promise.all: {:.2} µs/call",
                t.elapsed().as_secs_f64() * 1e6 / (n * 100) as f64
            );
        }
        "mcp" => {
            let config = Config::parse(
                &json!({"mcpServers": {"fixture": {"command": release("fixture-mcp-server")}}})
                    .to_string(),
                std::path::Path::new("/"),
            )
            .expect("config");
            let (servers, failed) = start_mcp_servers(&config, Duration::from_secs(20)).await;
            assert!(failed.is_empty(), "{failed:?}");
            let mut mcp = Catalog::new();
            for s in servers {
                mcp.add(s).expect("catalog");
            }
            let t = Instant::now();
            let code =
                format!("for (let i = 0; i < {n}; i++) await mcp.fixture.echo({{ message: 'x' }}); return 1");
            let o = mcp_sandbox::execute(&mcp, &runner, request(code, n + 1)).await;
            assert!(o.success, "{o:?}");
            println!(
                "{n} MCP calls: {:.1} µs/call",
                t.elapsed().as_secs_f64() * 1e6 / n as f64
            );
            split("MCP call", &o);
            mcp.shutdown().await;
        }
        "cold" => {
            let mut us = Vec::new();
            for _ in 0..n {
                let t = Instant::now();
                let o =
                    mcp_sandbox::execute(&catalog, &runner, request("return 1+1".into(), 1)).await;
                assert!(o.success, "{o:?}");
                us.push(t.elapsed().as_secs_f64() * 1e6);
            }
            report("cold execution", us);
        }
        "pooled" => {
            let sandbox = mcp_sandbox::Sandbox::new(
                Arc::new(catalog),
                runner,
                mcp_sandbox::QueueOptions {
                    pool_size: 2,
                    ..Default::default()
                },
            );
            let mut us = Vec::new();
            for _ in 0..n {
                while sandbox.pool().map(|p| p.idle()).unwrap_or(2) < 2 {
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
                let t = Instant::now();
                let o = sandbox.execute(request("return 1+1".into(), 1)).await;
                assert!(o.success, "{o:?}");
                for l in &o.logs {
                    eprintln!("{}", l.message);
                }
                us.push(t.elapsed().as_secs_f64() * 1e6);
            }
            report("pooled execution", us);
        }
        "observe" => {
            // The host's /proc check of a runner, here of this process.
            let pid = std::process::id();
            let mut us = Vec::new();
            for _ in 0..n {
                let t = Instant::now();
                std::hint::black_box(mcp_sandbox::exec::isolation::observe(pid));
                us.push(t.elapsed().as_secs_f64() * 1e6);
            }
            report("isolation::observe", us);
        }
        other => {
            eprintln!("unknown mode {other:?}: calls | parallel | pooled | cold | mcp | observe");
            std::process::exit(2);
        }
    }
}
