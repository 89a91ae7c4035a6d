//! The PostgreSQL state store's keys of the benchmark (issue 31), run alone with
//! `cargo bench --bench sandbox -- pg`. A server of the benchmark's own is started on a
//! temporary directory (`tests/pg_support`: `initdb`, a Unix socket, `fsync` and
//! `synchronous_commit` off, as the tests run it); without `initdb` the keys are skipped and
//! `pg_skipped` says why.
//!
//! - `store_postgres_exec_us`: the store's time for one execution with one tool call on
//!   PostgreSQL, as a gateway spends it: the audit's write-ahead record, its completion, and the
//!   learning write (graph counts of the call and the last execution), called in turn through
//!   `Store` from one thread (each a transaction and a round trip on a pooled connection).
//! - `gateway_pg_execs_per_sec`: executions per second (one tool call each, to the stdio fixture
//!   server, audit on) through `serve --http` gateways on one database: `1`: 8 HTTP clients on one
//!   gateway; `2`: the same 8 clients spread over two gateways; `ratio_2_to_1`. On a 2-core
//!   machine two gateways share the cores that one used alone: the point is that the shared
//!   store is no bottleneck (the ratio stays near 1), not that two are faster.

use super::gateway::{spread_throughput, start_http_on};
use super::{percentiles, release_bin, round};
use mcp_sandbox::exec::audit::{AuditOptions, Auditor};
use mcp_sandbox::store::Store;
use mcp_sandbox::trace::{TraceEvent, TraceKind};
use mcp_sandbox::Outcome;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

#[allow(dead_code, clippy::all)]
#[path = "../../tests/pg_support/mod.rs"]
mod pg_support;

/// Executions of the store's own measurement.
const STORE_EXECUTIONS: usize = 1000;
/// HTTP clients of the throughput measurement, on one gateway or spread over two.
const CLIENTS: usize = 8;
/// How long each throughput measurement runs.
const WINDOW: Duration = Duration::from_secs(3);
const SCRIPT: &str = "return await mcp.fixture.echo({message: 'x'})";

fn event(kind: TraceKind) -> TraceEvent {
    TraceEvent {
        kind,
        tool: "fixture:echo".into(),
        trace_id: "0000000000000001".into(),
        parent_trace_id: None,
        ts: 0.0,
        success: Some(true),
        duration_ms: Some(0.1),
        error: None,
        by: None,
        rule: None,
        transport: None,
        key: None,
        bytes: None,
        label: None,
        decision: None,
        approver: None,
    }
}

/// Microseconds of the store's writes for each of `n` executions with one tool call.
fn store_per_execution(store: &Store, n: usize) -> Vec<f64> {
    let auditor = Auditor::new(store.clone(), AuditOptions::default()).expect("auditor");
    let caller = mcp_sandbox::context::principal::Caller::default();
    let outcome = Outcome {
        success: true,
        result: json!("x"),
        error: None,
        logs: Vec::new(),
        traces: vec![event(TraceKind::ToolStart), event(TraceKind::ToolEnd)],
        metrics: Default::default(),
    };
    let mut us = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let header = auditor.header(&caller, SCRIPT, 0.0);
        let record = auditor.record_of(header.clone(), &outcome, &auditor.sink());
        let t = Instant::now();
        let id = store.begin_audit(&header).expect("write-ahead record");
        store.complete_audit(id, &record).expect("completion");
        store
            .record_execution(&outcome, Some((SCRIPT, Default::default())))
            .expect("learning write");
        // The first tenth warms the pool and the server's caches.
        if i >= n / 10 {
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    us
}

pub async fn bench() -> Value {
    if let Some(why) = pg_support::unavailable() {
        eprintln!("PostgreSQL keys skipped: {why}");
        return json!({ "pg_skipped": why });
    }
    let server = tokio::task::spawn_blocking(pg_support::PgServer::start)
        .await
        .expect("PostgreSQL server");
    let url = server.database();
    let store_url = url.clone();
    let store_us = tokio::task::spawn_blocking(move || {
        let store = Store::open(Path::new(&store_url)).expect("PostgreSQL store");
        store_per_execution(&store, STORE_EXECUTIONS)
    })
    .await
    .expect("store measurement");

    // Two gateways on another database of the same server.
    let url = server.database();
    let bin = release_bin("mcp-sandbox");
    let fixture = release_bin("fixture-mcp-server");
    let mut gateways = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("mcp.json");
        std::fs::write(
            &config,
            // The clients are one principal: a fair share as large as all of them.
            json!({"mcpServers": {"fixture": {"command": fixture}},
                   "sandbox": {"fair_share": {"per_principal": 4096, "per_tenant": 4096}}})
            .to_string(),
        )
        .expect("config");
        let args = [OsStr::new("--config"), config.as_os_str()];
        gateways.push(start_http_on(&bin, OsStr::new(&url), &args, dir));
    }
    let addrs: Vec<_> = gateways.iter().map(|(_, a)| *a).collect();
    let one = spread_throughput(&addrs[..1], CLIENTS, SCRIPT, json!("x"), 20, WINDOW).await;
    let two = spread_throughput(&addrs, CLIENTS, SCRIPT, json!("x"), 20, WINDOW).await;
    drop(gateways);
    drop(server);
    json!({
        "store_postgres_exec_us": percentiles(store_us),
        "gateway_pg_execs_per_sec": {
            "1": one.round(),
            "2": two.round(),
            "ratio_2_to_1": round(two / one),
            "clients": CLIENTS,
        },
    })
}
