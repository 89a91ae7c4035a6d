//! Profiling aid: one execution making N sequential calls to an in-process echo tool.
//! `cargo run --release --example percall -- 20000` (needs target/release/sandbox-runner).
use mcp_sandbox::{Catalog, ExecError, ExecRequest, InProcessServer, Limits, RunnerCommand};
use serde_json::{json, Value};
use std::sync::Arc;

#[tokio::main]
async fn main() {
    // Run on a worker thread, where the I/O driver also runs (no hop to the main thread).
    tokio::spawn(run()).await.expect("run");
}

async fn run() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let mut catalog = Catalog::new();
    catalog
        .add(Arc::new(InProcessServer::new("bench").tool(
            "echo",
            "Returns its arguments",
            json!({"type": "object"}),
            |args| async move { Ok::<Value, ExecError>(args) },
        )))
        .expect("catalog");
    let runner = RunnerCommand::new("target/release/sandbox-runner".into());
    let t = std::time::Instant::now();
    let o = mcp_sandbox::execute(
        &catalog,
        &runner,
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
                max_calls: n + 1,
                timeout_ms: 600_000,
                ..Default::default()
            }),
            code: format!("for (let i = 0; i < {n}; i++) await mcp.bench.echo({{ i }}); return 1"),
            ..Default::default()
        },
    )
    .await;
    println!(
        "{} calls: {:?} ({:.1} µs/call) ok={}",
        n,
        t.elapsed(),
        t.elapsed().as_secs_f64() * 1e6 / n as f64,
        o.success
    );

    // Pooled executions of `return 1+1`, one at a time, each after the pool refilled.
    let sandbox = mcp_sandbox::Sandbox::new(
        Arc::new(catalog),
        runner,
        mcp_sandbox::QueueOptions {
            pool_size: 2,
            ..Default::default()
        },
    );
    let mut ms = Vec::new();
    for _ in 0..200 {
        while sandbox.pool().map(|p| p.idle()).unwrap_or(2) < 2 {
            tokio::time::sleep(std::time::Duration::from_micros(200)).await;
        }
        let t = std::time::Instant::now();
        let o = sandbox
            .execute(ExecRequest {
                code: "return 1+1".into(),
                ..Default::default()
            })
            .await;
        assert!(o.success, "{o:?}");
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    println!("pooled exec p50 {:.3} ms p99 {:.3} ms", ms[100], ms[197]);
}
