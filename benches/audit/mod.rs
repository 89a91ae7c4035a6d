//! The audit's keys of the benchmark (issue 25), run alone with
//! `cargo bench --bench sandbox -- audit`:
//!
//! - `audit_record_100k_calls_ms`: building the audit record of one execution that made
//!   100,000 tool calls (its traces: 100,000 starts, then their ends), and
//!   `audit_commit_100k_calls_ms`: writing that record to a state file.
//! - `audit_write_ahead_us`: committing one write-ahead record (the cost added before an
//!   execution's first tool call).
//! - `audited_pooled_exec_ms` and `audited_mcp_call_exec_ms`: `return 1+1` on a pooled runner,
//!   and a pooled execution making one call to the stdio fixture's `echo`, with the audit off
//!   and on (write-ahead record + completed record) in the same run; `added_ms` is the p50
//!   difference. The audit chain (issue 62) is on in both `on` runs: `added_ms` is the audit
//!   write's added time per execution with the chain.
//! - `audit_chain_links_us`: the chain's own work for one execution, computing the head and end
//!   links (canonical JSON + SHA-256) of a one-call record; `audit_append_one_call_us`:
//!   appending a one-call record whole, its links included.
//! - `recorded_mcp_call_exec_ms`: the same one-call execution audited with `--audit-record full`
//!   (issue 62: the recorder, the seed, the clock frame and the recording in the record) beside
//!   the audited one; `added_ms` is the recording's added time per execution (p50).

use super::{percentiles, pooled, release_bin, round, wait_full};
use mcp_sandbox::config::Config;
use mcp_sandbox::exec::audit::{AuditOptions, AuditRecordMode, Auditor};
use mcp_sandbox::store::audit_chain::{extend, Part, Stored, GENESIS};
use mcp_sandbox::store::Store;
use mcp_sandbox::tools::catalog::start_mcp_servers;
use mcp_sandbox::trace::{TraceEvent, TraceKind};
use mcp_sandbox::{Catalog, Outcome, QueueOptions, RunnerCommand, Sandbox};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn event(kind: TraceKind, i: usize) -> TraceEvent {
    TraceEvent {
        kind,
        tool: "fixture:echo".into(),
        trace_id: format!("{i:016x}"),
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

fn outcome_of(calls: usize) -> Outcome {
    let mut traces = Vec::with_capacity(2 * calls);
    traces.extend((0..calls).map(|i| event(TraceKind::ToolStart, i)));
    traces.extend((0..calls).map(|i| event(TraceKind::ToolEnd, i)));
    Outcome {
        success: true,
        result: json!(1),
        error: None,
        logs: Vec::new(),
        traces,
        metrics: Default::default(),
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// p50 over `n` pooled executions of `code` on `sandbox`.
async fn pooled_p50(sandbox: &Sandbox, code: &str, n: usize, pool: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        wait_full(sandbox, pool).await;
        let t = Instant::now();
        pooled(sandbox, code).await;
        v.push(ms(t));
    }
    v
}

fn p50(v: &Value) -> f64 {
    v["p50"].as_f64().unwrap_or(0.0)
}

pub async fn bench(runner: &RunnerCommand) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("state.db")).expect("state");
    let auditor = Auditor::new(store.clone(), AuditOptions::default()).expect("auditor");
    let caller = mcp_sandbox::context::principal::Caller::default();

    // The record of 100,000 calls: built, then committed.
    let outcome = outcome_of(100_000);
    let (mut build, mut commit) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let header = auditor.header(&caller, "return 1", 0.0);
        let t = Instant::now();
        let record = auditor.record_of(header, &outcome, &auditor.sink());
        build.push(ms(t));
        let t = Instant::now();
        store.append_audit(&record).expect("append");
        commit.push(ms(t));
    }
    // One write-ahead record.
    let mut ahead = Vec::new();
    for _ in 0..500 {
        let header = auditor.header(&caller, "return await mcp.fixture.echo({})", 0.0);
        let t = Instant::now();
        store.begin_audit(&header).expect("begin");
        ahead.push(t.elapsed().as_secs_f64() * 1e6);
    }

    // The chain: one execution's two links, and a whole one-call record appended.
    let (mut links, mut append) = (Vec::new(), Vec::new());
    for _ in 0..500 {
        let header = auditor.header(&caller, "return await mcp.fixture.echo({})", 0.0);
        let record = auditor.record_of(header, &outcome_of(1), &auditor.sink());
        let detail = serde_json::to_string(&record.detail).ok();
        let stored = Stored {
            id: 1,
            execution_id: Some("5f0c1f7e-6d0a-4c53-9f3e-0d7f8f1f2a3b"),
            ts: record.ts,
            principal: &record.principal,
            tenant: &record.tenant,
            client: record.client.as_deref(),
            front: &record.front,
            code: record.code.as_deref(),
            code_sha256: &record.code_sha256,
            code_bytes: Some(40),
            outcome: &record.outcome,
            duration_ms: record.duration_ms,
            labels: None,
            detail: detail.as_deref(),
            calls: &record.calls,
        };
        let t = Instant::now();
        let done = extend(
            "local",
            (0, GENESIS.to_string()),
            &[(Part::Head, stored), (Part::End, stored)],
        );
        links.push(t.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(done);
        let t = Instant::now();
        store.append_audit(&record).expect("append");
        append.push(t.elapsed().as_secs_f64() * 1e6);
    }

    // Pooled executions with the audit off and on, in the same run.
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
        mcp.add(s).expect("catalog");
    }
    let mcp = Arc::new(mcp);
    let pool = 4;
    let options = || QueueOptions {
        pool_size: pool,
        ..Default::default()
    };
    let off = Sandbox::new(mcp.clone(), runner.clone(), options());
    let on = Sandbox::new(mcp.clone(), runner.clone(), options()).with_audit(auditor.clone());
    let recording = AuditOptions {
        record: AuditRecordMode::Full,
        ..AuditOptions::default()
    };
    let recorded = Sandbox::new(mcp.clone(), runner.clone(), options())
        .with_audit(Auditor::new(store.clone(), recording).expect("auditor"));
    let call = "return await mcp.fixture.echo({ message: 'x' })";
    let n = 200;
    // Interleaved in rounds so load on the machine hits both alike.
    let (mut exec_off, mut exec_on, mut call_off, mut call_on, mut call_rec) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..4 {
        exec_off.extend(pooled_p50(&off, "return 1+1", n / 4, pool).await);
        exec_on.extend(pooled_p50(&on, "return 1+1", n / 4, pool).await);
        call_off.extend(pooled_p50(&off, call, n / 4, pool).await);
        call_on.extend(pooled_p50(&on, call, n / 4, pool).await);
        call_rec.extend(pooled_p50(&recorded, call, n / 4, pool).await);
    }
    recorded.shutdown(Duration::from_secs(1)).await;
    off.shutdown(Duration::from_secs(1)).await;
    on.shutdown(Duration::from_secs(1)).await;
    let (exec_off, exec_on) = (percentiles(exec_off), percentiles(exec_on));
    let (call_off, call_on) = (percentiles(call_off), percentiles(call_on));
    let call_rec = percentiles(call_rec);
    json!({
        "audit_record_100k_calls_ms": percentiles(build),
        "audit_commit_100k_calls_ms": percentiles(commit),
        "audit_write_ahead_us": percentiles(ahead),
        "audit_chain_links_us": percentiles(links),
        "audit_append_one_call_us": percentiles(append),
        "audited_pooled_exec_ms": {
            "off": exec_off.clone(),
            "on": exec_on.clone(),
            "added_ms": round(p50(&exec_on) - p50(&exec_off)),
        },
        "audited_mcp_call_exec_ms": {
            "off": call_off.clone(),
            "on": call_on.clone(),
            "added_ms": round(p50(&call_on) - p50(&call_off)),
        },
        "recorded_mcp_call_exec_ms": {
            "audited": call_on.clone(),
            "recorded": call_rec.clone(),
            "added_ms": round(p50(&call_rec) - p50(&call_on)),
        },
    })
}
