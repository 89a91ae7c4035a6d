//! `timer_sleep_overhead_us` (issue 26: host-driven timers) and the quick mode
//! (`SANDBOX_BENCH_QUICK=1`: cold, pooled and the timer key only).

use super::{exec, percentiles, pooled, release_bin, wait_full};
use mcp_sandbox::{Catalog, InProcessServer, QueueOptions, RunnerCommand, Sandbox};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

/// `timer_sleep_overhead_us`: 300 sleeps of 1 ms in one execution, each minus its 1 ms.
pub async fn timer_sleep_overhead(catalog: &Catalog, runner: &RunnerCommand) -> Value {
    let o = exec(
        catalog,
        runner,
        "const out = [];
         for (let i = 0; i < 300; i++) {
           const t = performance.now();
           await new Promise((r) => setTimeout(r, 1));
           out.push((performance.now() - t) * 1000 - 1000);
         }
         return out;",
    )
    .await;
    let xs: Vec<f64> = o
        .result
        .as_array()
        .expect("an array of samples")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    percentiles(xs)
}

/// `SANDBOX_BENCH_QUICK=1`: only `cold_exec_ms`, `pooled_exec_ms` and `timer_sleep_overhead_us`
/// (100 samples each), to compare a change quickly without the full run.
pub async fn quick() -> Value {
    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
    let mut local = Catalog::new();
    local
        .add(Arc::new(InProcessServer::new("bench")))
        .expect("catalog");
    let local = Arc::new(local);
    for _ in 0..20 {
        exec(&local, &runner, "return 1+1").await;
    }
    let mut cold = Vec::new();
    for _ in 0..100 {
        let t = Instant::now();
        exec(&local, &runner, "return 1+1").await;
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let pool_size = 4;
    let sandbox = Sandbox::new(
        local.clone(),
        runner.clone(),
        QueueOptions {
            pool_size,
            ..Default::default()
        },
    );
    let mut pooled_ms = Vec::new();
    for _ in 0..100 {
        wait_full(&sandbox, pool_size).await;
        let t = Instant::now();
        pooled(&sandbox, "return 1+1").await;
        pooled_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    if let Some(p) = sandbox.pool() {
        p.drain().await;
    }
    json!({
        "cold_exec_ms": percentiles(cold),
        "pooled_exec_ms": percentiles(pooled_ms),
        "timer_sleep_overhead_us": timer_sleep_overhead(&local, &runner).await,
        "runner_bytes": std::fs::metadata(release_bin("sandbox-runner")).map(|m| m.len()).unwrap_or(0),
    })
}
