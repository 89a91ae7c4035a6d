//! The learning queue against a real PostgreSQL server, stopped and restarted.

use super::*;
use crate::error::ExecError;
use crate::store::suites::pg_support::PgServer;
use serde_json::json;
use std::time::Instant;

/// An outcome of one successful call of `s:t`.
fn one_call() -> Outcome {
    let event = |kind: &str, extra: serde_json::Value| {
        let mut e = json!({"type": kind, "tool": "s:t", "trace_id": "c1", "parent_trace_id": null, "ts": 1.0});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value::<TraceEvent>(e).unwrap()
    };
    Outcome {
        success: true,
        error: None,
        traces: vec![
            event("tool_start", json!({})),
            event("tool_end", json!({"success": true, "duration_ms": 1.0})),
        ],
        ..Outcome::failed(ExecError::new(ErrorCode::RuntimeError, ""))
    }
}

fn calls(store: &Store) -> i64 {
    let g = store.graph(None).unwrap();
    g.tools
        .iter()
        .find(|t| t.tool == "s:t")
        .map_or(0, |t| t.calls)
}

/// Written at once while the store is up; queued without waiting while it is down, the oldest
/// dropped and counted past the bound; written from the queue once it is back, with no reopen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_queued_while_the_database_is_down_and_resume() {
    let server = PgServer::start();
    let store = Store::open(std::path::Path::new(&server.database())).unwrap();
    let queue = LearningQueue::bounded(3, MAX_QUEUED_BYTES);
    queue.record(&store, &one_call(), None).await;
    assert_eq!(calls(&store), 1);

    server.checkpoint();
    server.stop();
    let lost = writes_lost();
    for _ in 0..5 {
        let t = Instant::now();
        queue.record(&store, &one_call(), None).await;
        assert!(
            t.elapsed() <= WAIT_FOR_WRITE + Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
    }
    // Five queued into three places: the two oldest dropped and counted.
    assert_eq!(queue.queued(), 3);
    assert_eq!(writes_lost() - lost, 2);

    server.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    while queue.queued() > 0 || calls(&store) < 4 {
        assert!(
            Instant::now() < deadline,
            "queue {} calls {}",
            queue.queued(),
            calls(&store)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(calls(&store), 4);
    // Direct writes again: the record is in the store when `record` returns.
    queue.record(&store, &one_call(), None).await;
    assert_eq!(calls(&store), 5);
    assert_eq!(writes_lost() - lost, 2);
}

/// What is still queued when the host stops (the store down) is dropped and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_at_shutdown_counts_what_is_left() {
    let server = PgServer::start();
    let store = Store::open(std::path::Path::new(&server.database())).unwrap();
    server.stop();
    let queue = LearningQueue::default();
    let lost = writes_lost();
    for _ in 0..3 {
        queue.record(&store, &one_call(), None).await;
    }
    let t = Instant::now();
    queue.drain(Duration::from_millis(300)).await;
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(queue.queued(), 0);
    assert_eq!(writes_lost() - lost, 3);
}
