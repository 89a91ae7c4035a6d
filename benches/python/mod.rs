//! `python`: the Python engine (monty) beside JavaScript (QuickJS) on the same runner, measured in
//! the same run, each as its p50/p99 and as a ratio of Python's p50 to JavaScript's:
//! - `cold_exec_ms`: a fresh runner (forked from the zygote) running `1 + 1`;
//! - `pooled_exec_ms`: the same on a runner from a full pool of 4;
//! - `one_call_ms`: a pooled execution making one tool call;
//! - `gather_100_calls_ms`: a pooled execution making 100 calls at once (`asyncio.gather` /
//!   `Promise.all`);
//! - `runner_pss_kib`: the proportional set size of a pooled runner in the middle of a call;
//! - `runner_binary_bytes`: the size of the release `sandbox-runner` (both engines are in it).

use super::{percentiles, release_bin, wait_full};
use mcp_sandbox::exec::runner::RunnerCommand;
use mcp_sandbox::{Catalog, ExecRequest, QueueOptions, Sandbox};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

const JS: [&str; 4] = [
    "return 1 + 1",
    "return await mcp.bench.echo({x: 1})",
    "const r = await Promise.all(Array.from({length: 100}, (_, i) => mcp.bench.echo({i}))); return r.length",
    "return await mcp.bench.pss({})",
];
const PY: [&str; 4] = [
    "1 + 1",
    "await mcp.bench.echo(x=1)",
    "import asyncio\nr = await asyncio.gather(*[mcp.bench.echo(i=i) for i in range(100)])\nlen(r)",
    "await mcp.bench.pss()",
];

fn request(code: &str, language: sandbox_runner::protocol::Language) -> ExecRequest {
    let mut req = super::request(code);
    req.language = language;
    req
}

/// Where an execution runs: a sandbox's pool, or a fresh runner.
enum On<'a> {
    Pool(&'a Sandbox),
    Fresh(&'a Catalog, &'a RunnerCommand),
}

async fn timed(on: &On<'_>, code: &str, language: sandbox_runner::protocol::Language) -> f64 {
    let t = Instant::now();
    let req = request(code, language);
    let o = match on {
        On::Pool(sandbox) => sandbox.execute(req).await,
        On::Fresh(catalog, runner) => mcp_sandbox::execute(catalog, runner, req).await,
    };
    assert!(o.success, "benchmark script failed: {o:?}");
    t.elapsed().as_secs_f64() * 1000.0
}

fn p50(v: &Value) -> f64 {
    v["p50"].as_f64().unwrap_or(f64::NAN)
}

pub async fn bench() -> Value {
    use sandbox_runner::protocol::Language::{Javascript, Python};
    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
    let current = Arc::new(AtomicU32::new(0));
    let mut catalog = Catalog::new();
    catalog
        .add(Arc::new(super::bench_server(current.clone())))
        .expect("catalog");
    let pool_size = 4;
    let pooled = Sandbox::new(
        Arc::new(catalog.clone()),
        runner.clone(),
        QueueOptions {
            pool_size,
            ..Default::default()
        },
    );
    let mut out = serde_json::Map::new();
    let mut ratios = serde_json::Map::new();
    for (key, i, n, pool) in [
        ("cold_exec_ms", 0, 200, false),
        ("pooled_exec_ms", 0, 200, true),
        ("one_call_ms", 1, 200, true),
        ("gather_100_calls_ms", 2, 100, true),
    ] {
        let mut both = serde_json::Map::new();
        for (lang, language, code) in [("javascript", Javascript, JS[i]), ("python", Python, PY[i])]
        {
            let on = if pool {
                On::Pool(&pooled)
            } else {
                On::Fresh(&catalog, &runner)
            };
            for _ in 0..10 {
                timed(&on, code, language).await;
            }
            let mut ms = Vec::with_capacity(n);
            for _ in 0..n {
                if pool {
                    wait_full(&pooled, pool_size).await;
                }
                ms.push(timed(&on, code, language).await);
            }
            both.insert(lang.into(), percentiles(ms));
        }
        let ratio = p50(&both["python"]) / p50(&both["javascript"]);
        ratios.insert(key.into(), json!(super::round(ratio)));
        out.insert(key.into(), Value::Object(both));
    }
    let mut pss = serde_json::Map::new();
    for (lang, language) in [("javascript", Javascript), ("python", Python)] {
        let mut kib = Vec::new();
        for _ in 0..30 {
            wait_full(&pooled, pool_size).await;
            let seen = current.clone();
            let mut req = request(if language == Python { PY[3] } else { JS[3] }, language);
            req.on_spawn = Some(mcp_sandbox::SpawnHook::new(move |pid| {
                seen.store(pid, Ordering::SeqCst)
            }));
            let o = pooled.execute(req).await;
            assert!(o.success, "benchmark script failed: {o:?}");
            kib.push(
                o.result
                    .as_f64()
                    .expect("the runner's PSS (is /proc readable?)"),
            );
        }
        pss.insert(lang.into(), percentiles(kib));
    }
    ratios.insert(
        "runner_pss_kib".into(),
        json!(super::round(p50(&pss["python"]) / p50(&pss["javascript"]))),
    );
    out.insert("runner_pss_kib".into(), Value::Object(pss));
    out.insert("python_to_javascript_p50".into(), Value::Object(ratios));
    let size = std::fs::metadata(release_bin("sandbox-runner")).map_or(0, |m| m.len());
    out.insert("runner_binary_bytes".into(), json!(size));
    json!({ "python": out })
}
