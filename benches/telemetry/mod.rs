//! The telemetry key of the benchmark, run alone with `cargo bench --bench sandbox -- telemetry`:
//!
//! - `telemetry_exec_ms`: a pooled execution making one in-process echo call (two spans), on a
//!   sandbox without telemetry (`off`) and on one exporting every span to a local OTLP/HTTP
//!   receiver (`on`, sampler always on, metrics counted too), interleaved in rounds.
//! - `telemetry_added_us`: the p50 difference, in microseconds: what building the spans, queueing
//!   them for the exporter's thread and counting the metrics add to one execution.

use super::{bench_limits, percentiles, round, wait_full};
use mcp_sandbox::config::telemetry::TelemetryConfig;
use mcp_sandbox::context::RequestContext;
use mcp_sandbox::telemetry::Telemetry;
use mcp_sandbox::{
    Catalog, ExecError, ExecRequest, InProcessServer, QueueOptions, RunnerCommand, Sandbox,
};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CODE: &str = "return (await mcp.bench.echo({n: 1})).n";

/// A collector that takes every export and answers 200 (an empty ExportTraceServiceResponse).
async fn receiver() -> String {
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(|_body: axum::body::Bytes| async {
            (
                [("content-type", "application/x-protobuf")],
                Vec::<u8>::new(),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn pooled_ms(sandbox: &Sandbox, n: usize, pool: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        wait_full(sandbox, pool).await;
        let t = Instant::now();
        let o = sandbox
            .execute(ExecRequest {
                request: RequestContext::default().with_limits(bench_limits()),
                code: CODE.into(),
                ..Default::default()
            })
            .await;
        assert!(o.success, "{o:?}");
        v.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    v
}

pub async fn bench(runner: &RunnerCommand) -> Value {
    let pool = 4;
    let mut catalog = Catalog::new();
    catalog
        .add(Arc::new(InProcessServer::new("bench").tool(
            "echo",
            "Returns its arguments",
            json!({"type": "object"}),
            |args| async move { Ok::<Value, ExecError>(args) },
        )))
        .expect("catalog");
    let catalog = Arc::new(catalog);
    let options = || QueueOptions {
        pool_size: pool,
        ..Default::default()
    };
    let config = TelemetryConfig {
        endpoint: Some(receiver().await),
        sampler: Some("always_on".into()),
        ..Default::default()
    };
    let telemetry = Telemetry::new(&config, true)
        .expect("telemetry")
        .expect("telemetry on");
    let off = Sandbox::new(catalog.clone(), runner.clone(), options());
    let on = Sandbox::new(catalog, runner.clone(), options()).with_telemetry(Arc::new(telemetry));
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        without.extend(pooled_ms(&off, 60, pool).await);
        with.extend(pooled_ms(&on, 60, pool).await);
    }
    off.shutdown(Duration::from_secs(1)).await;
    on.shutdown(Duration::from_secs(1)).await;
    let (without, with) = (percentiles(without), percentiles(with));
    let added_ms = with["p50"].as_f64().unwrap_or(0.0) - without["p50"].as_f64().unwrap_or(0.0);
    json!({
        "telemetry_exec_ms": {"off": without, "on": with},
        "telemetry_added_us": round(added_ms * 1000.0),
    })
}
