//! The audit log, host side: records built and committed, the database stopped and restarted.

use super::*;
use crate::exec::audit_queue::MAX_QUEUED_BYTES;
use crate::store::suites::pg_support::PgServer;
use crate::trace::TraceEvent;
use std::time::{Duration, Instant};

#[test]
fn hash_only_auditing_deletes_a_remembered_last_execution() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).unwrap();
    store
        .set_last_execution(&crate::store::LastExecution {
            code: "return 'secret plan'".into(),
            language: Default::default(),
            success: true,
            tool_calls: 0,
            failed_calls: 0,
            ts: 1.0,
        })
        .unwrap();
    let full = AuditOptions {
        code: AuditCode::Full,
        args: AuditArgs::default(),
        record: AuditRecordMode::Off,
        retain_days: None,
        retain_records: None,
        loss_allowed: false,
    };
    Auditor::new(store.clone(), full).unwrap();
    assert!(store.last_execution().unwrap().is_some());
    let hash = AuditOptions {
        code: AuditCode::Hash,
        ..full
    };
    Auditor::new(store.clone(), hash).unwrap();
    assert!(store.last_execution().unwrap().is_none());
}

fn event(kind: TraceKind, id: usize) -> TraceEvent {
    let mut e: TraceEvent = serde_json::from_value(serde_json::json!({
        "type": "tool_start", "tool": "s:t", "trace_id": "", "parent_trace_id": null,
        "ts": 0.0, "success": true, "duration_ms": 1.0
    }))
    .unwrap();
    e.kind = kind;
    e.trace_id = format!("t{id}");
    e
}

#[test]
fn a_record_of_100k_calls_is_built_in_one_linear_pass() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let a = Auditor::new(store, AuditOptions::default()).unwrap();
    let mut traces = Vec::new();
    for i in 0..100_000 {
        traces.push(event(TraceKind::ToolStart, i));
    }
    for i in (0..100_000).rev() {
        traces.push(event(TraceKind::ToolEnd, i));
    }
    traces.push(event(TraceKind::ApprovalGranted, 7));
    let outcome = Outcome {
        traces,
        ..Outcome::failed(ExecError::new(ErrorCode::RuntimeError, "x"))
    };
    let header = a.header(&Caller::default(), "return 1", 0.0);
    let t = std::time::Instant::now();
    let r = a.record_of(header, &outcome, &a.sink());
    // Quadratic, this took minutes; linear, well under a second.
    assert!(
        t.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(r.calls.len(), 100_000);
    assert!(r.calls.iter().all(|c| c.duration_ms == Some(1.0)));
    assert_eq!(r.calls[7].approval.as_deref(), Some("granted by unknown"));
    assert_eq!(r.calls[8].approval, None);
}

#[test]
fn client_strings_are_bounded() {
    let long = "x".repeat(1000);
    let full = bounded(&long, AuditCode::Full);
    assert!(
        full.len() < 300 && full.ends_with("[cut: 1000 bytes in all]"),
        "{full}"
    );
    let hash = bounded(&long, AuditCode::Hash);
    assert_eq!(
        hash,
        format!("sha256:{} [1000 bytes]", sha256_hex(long.as_bytes()))
    );
    assert_eq!(bounded("short", AuditCode::Hash), "short");
}

/// The database down: with `sandbox.audit.required` (the default) the outcome is withheld
/// with SANDBOX_UNAVAILABLE saying the audit store is unreachable; with `required: false`
/// the outcome comes back and its record is queued, not lost; once the server is back, records
/// are written again without reopening the store, the queued one too. A real PostgreSQL
/// server, stopped and restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_down_withholds_or_queues() {
    let server = PgServer::start();
    let store = Store::open(std::path::Path::new(&server.database())).unwrap();
    let required = Auditor::new(store.clone(), AuditOptions::default()).unwrap();
    let lossy = lossy(&store, AuditQueue::default());
    let commit = async |a: &Auditor| {
        let header = a.header(&Caller::default(), "return 1", 0.0);
        let t = Instant::now();
        let out = a.commit(header, ok(), &a.sink()).await;
        assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
        out
    };
    let records = || crate::store::suites::count(&store, "SELECT COUNT(*) FROM audit");
    assert!(commit(&required).await.success);
    assert_eq!(records(), 1);

    server.checkpoint();
    server.stop();
    let out = commit(&required).await;
    let e = out.error.expect("withheld");
    assert_eq!(e.code, ErrorCode::SandboxUnavailable);
    assert!(
        e.message.contains("the audit store is unreachable"),
        "{}",
        e.message
    );
    let lost = records_lost();
    let out = commit(&lossy).await;
    assert!(out.success, "{out:?}");
    assert_eq!((lossy.queued(), records_lost()), (1, lost));

    server.restart();
    let out = commit(&required).await;
    assert!(out.success, "{out:?}");
    written(&lossy).await;
    assert_eq!(records(), 3);
    assert_eq!(records_lost(), lost);
}

fn ok() -> Outcome {
    Outcome {
        success: true,
        result: serde_json::json!(1),
        error: None,
        ..Outcome::failed(ExecError::new(ErrorCode::RuntimeError, ""))
    }
}

/// An OK outcome of one tool call.
fn one_call() -> Outcome {
    Outcome {
        traces: vec![event(TraceKind::ToolStart, 0), event(TraceKind::ToolEnd, 0)],
        ..ok()
    }
}

/// An auditor with `sandbox.audit.required: false` and `queue`.
fn lossy(store: &Store, queue: AuditQueue) -> Auditor {
    let options = AuditOptions {
        loss_allowed: true,
        ..AuditOptions::default()
    };
    Auditor::new(store.clone(), options)
        .unwrap()
        .with_queue(queue)
}

/// Waits until `a`'s queue is written (at most 15 s: the backoff is at most 5 s).
async fn written(a: &Auditor) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while a.queued() > 0 {
        assert!(Instant::now() < deadline, "{} still queued", a.queued());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The arguments of the one call of [`one_call`], as its sink notes them.
fn args() -> serde_json::Value {
    serde_json::json!({"a": 1})
}

/// Commits the execution of `return {n}` (one call, [`args`] noted) with `a`, its write-ahead
/// record tried first; returns at once (the store down or not) with the outcome.
async fn commit_nth(a: &Auditor, n: u32) {
    let header = a.header(&Caller::default(), &format!("return {n}"), f64::from(n));
    let sink = a.start(header.clone());
    sink.before_call().await.unwrap();
    sink.note("t0", Some(&args()));
    let out = a.commit(header, one_call(), &sink).await;
    assert!(out.success, "{out:?}");
}

/// The codes of the log's records in id order, and how many calls the log holds; every record
/// is OK, with its one call and the digest of its arguments.
fn log(store: &Store) -> (Vec<String>, i64) {
    let all = store
        .query_audit(&crate::store::audit::AuditFilter {
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    let digest = sha256_hex(&serde_json::to_vec(&args()).unwrap());
    for r in &all {
        assert_eq!(r.outcome, "OK", "{r:?}");
        assert_eq!(r.calls.len(), 1, "{r:?}");
        assert_eq!(r.calls[0].args_sha256.as_deref(), Some(&*digest), "{r:?}");
    }
    let codes = all
        .iter()
        .map(|r| r.code.clone().unwrap_or_default())
        .collect();
    let calls = crate::store::suites::count(store, "SELECT COUNT(*) FROM audit_calls");
    (codes, calls)
}

fn codes(ns: &[u32]) -> Vec<String> {
    ns.iter().map(|n| format!("return {n}")).collect()
}

/// `sandbox.audit.required: false` with the database down: the outcomes come back at once and
/// their records are queued, not lost — a completion of a write-ahead record committed before
/// the stop, and whole appends (no write-ahead is tried while records are queued); once the
/// server is back they are written from the queue in order, each exactly once, and direct
/// writes resume. Past the queue's bound the oldest are dropped and counted; what is left at
/// shutdown's drain is counted too. A real PostgreSQL server, stopped and restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_down_queues_the_records_and_writes_them_in_order() {
    let server = PgServer::start();
    let store = Store::open(std::path::Path::new(&server.database())).unwrap();
    let lossy = lossy(&store, AuditQueue::bounded(3, MAX_QUEUED_BYTES));
    // The first execution's write-ahead record is committed; then the database stops.
    let first = lossy.header(&Caller::default(), "return 1", 1.0);
    let sink = lossy.start(first.clone());
    sink.before_call().await.unwrap();
    let first_id = sink.written_ahead().expect("a write-ahead record");

    server.checkpoint();
    server.stop();
    let lost = records_lost();
    let t = Instant::now();
    sink.note("t0", Some(&args()));
    assert!(lossy.commit(first, one_call(), &sink).await.success);
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    let t = Instant::now();
    for n in [2, 3] {
        let header = lossy.header(&Caller::default(), &format!("return {n}"), f64::from(n));
        let sink = lossy.start(header.clone());
        sink.before_call().await.unwrap();
        assert_eq!(sink.written_ahead(), None);
        sink.note("t0", Some(&args()));
        assert!(lossy.commit(header, one_call(), &sink).await.success);
    }
    // Queued without a try: no wait on the store.
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!((lossy.queued(), records_lost()), (3, lost));

    server.restart();
    written(&lossy).await;
    assert_eq!(log(&store), (codes(&[1, 2, 3]), 3));
    let completed = store.audit_record(first_id).unwrap().expect("the first");
    assert_eq!(completed.code.as_deref(), Some("return 1"));
    // Direct again: written before the outcome is handed back.
    commit_nth(&lossy, 4).await;
    assert_eq!(lossy.queued(), 0);
    assert_eq!(log(&store), (codes(&[1, 2, 3, 4]), 4));
    assert_eq!(records_lost(), lost);

    // Five records into three places: two of the oldest dropped and counted (the one being
    // retried at that instant keeps its place: 5, 6 or 7 is kept, with the two newest).
    server.checkpoint();
    server.stop();
    for n in 5..=9 {
        commit_nth(&lossy, n).await;
    }
    assert_eq!((lossy.queued(), records_lost()), (3, lost + 2));
    server.restart();
    written(&lossy).await;
    let (logged, calls) = log(&store);
    let kept = [5, 6, 7]
        .into_iter()
        .find(|n| logged == codes(&[1, 2, 3, 4, *n, 8, 9]));
    assert!(kept.is_some(), "{logged:?}");
    assert_eq!(calls, 7);
    assert_eq!(records_lost(), lost + 2);

    // At shutdown, what the store still does not take after the grace period is counted.
    server.checkpoint();
    server.stop();
    for n in 10..=11 {
        commit_nth(&lossy, n).await;
    }
    let t = Instant::now();
    lossy.drain(Duration::from_millis(300)).await;
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!((lossy.queued(), records_lost()), (0, lost + 4));
}
