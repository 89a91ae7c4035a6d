//! The web view's reads cannot slow the executions (issue 44 item 2): they go through a handle
//! of their own on the state store (`Store::reader`: its own SQLite connection, its own
//! PostgreSQL pool), so an audit record is written while a long read holds the read connection;
//! each principal has at most 2 reads in flight (a third is refused at once with `429
//! UI_RATE_LIMITED` saying what to do); the list pages by a keyset cursor (`before`, `next`).
//!
//! The API is driven in process (the real router on a real state file): holding the read
//! connection is the one thing a client cannot do from outside at a chosen moment.

use axum::body::Body;
use axum::http::Request;
use mcp_sandbox::front::ui::{router_on, UiAccess};
use mcp_sandbox::store::audit::{AuditCall, AuditRecord};
use mcp_sandbox::store::Store;
use serde_json::{json, Value};
use std::sync::mpsc;
use std::time::Duration;
use tower::ServiceExt;

fn record(tool: &str) -> AuditRecord {
    AuditRecord {
        id: 0,
        execution_id: None,
        ts: 1.0,
        principal: "local".into(),
        tenant: "default".into(),
        client: None,
        front: "run".into(),
        code: Some("return 1".into()),
        code_sha256: "00".into(),
        code_bytes: Some(8),
        outcome: "OK".into(),
        duration_ms: 1.0,
        labels: Vec::new(),
        detail: None,
        write_key: None,
        calls: vec![AuditCall {
            kind: "tool".into(),
            tool: tool.into(),
            args_sha256: None,
            args: None,
            error: None,
            duration_ms: Some(1.0),
            approval: None,
        }],
    }
}

/// `GET path` on the API: (status, `Retry-After`, body as JSON).
async fn get(api: &axum::Router, path: &str) -> (u16, Option<String>, Value) {
    let req = Request::get(path)
        .header("host", "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    let resp = api.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, retry, serde_json::from_slice(&body).unwrap())
}

fn ids(v: &Value) -> Vec<i64> {
    v["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_i64().unwrap())
        .collect()
}

/// Holds `reader`'s connection, inside an open read transaction, until `release` is sent.
fn hold(reader: &Store) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (release, wait) = mpsc::channel::<()>();
    let (held_tx, held) = mpsc::channel::<()>();
    let reader = reader.clone();
    let thread = std::thread::spawn(move || {
        reader
            .with(|c| {
                c.execute_batch("BEGIN")?;
                let _: i64 = c.query_row("SELECT COUNT(*) FROM audit", [], |r| r.get(0))?;
                held_tx.send(()).unwrap();
                wait.recv().unwrap();
                c.execute_batch("ROLLBACK")?;
                Ok(())
            })
            .unwrap();
    });
    held.recv().unwrap();
    (release, thread)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_pages_by_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).unwrap();
    let ids_written: Vec<i64> = ["s:a", "s:b", "s:c"]
        .iter()
        .map(|t| store.append_audit(&record(t)).unwrap())
        .collect();
    let (_, api) = router_on(store.reader().unwrap(), UiAccess::Local);
    let (status, _, first) = get(&api, "/ui/api/executions?limit=2").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(ids(&first), [ids_written[2], ids_written[1]]);
    assert_eq!(first["next"], json!(ids_written[1]));
    assert_eq!(first["executions"][0]["tools"], json!(["s:c"]));
    assert_eq!(first["executions"][0]["calls"], json!(1));
    assert!(first["executions"][0].get("code").is_none(), "{first}");
    let (_, _, second) = get(
        &api,
        &format!("/ui/api/executions?limit=2&before={}", ids_written[1]),
    )
    .await;
    assert_eq!(ids(&second), [ids_written[0]]);
    assert_eq!(second["next"], Value::Null);
    let (status, _, bad) = get(&api, "/ui/api/executions?before=x").await;
    assert_eq!(status, 400);
    assert_eq!(
        bad["error"]["message"],
        "before must be a positive number: the `next` of the page before"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_completes_while_a_read_holds_the_read_connection() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).unwrap();
    store.append_audit(&record("s:a")).unwrap();
    let reader = store.reader().unwrap();
    let (release, thread) = hold(&reader);
    // The execution path's audit write, while the read connection is held mid-transaction: it
    // is not the same connection, so it does not wait (the bound is 10x anything idle).
    let writer = store.clone();
    let written = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::task::spawn_blocking(move || writer.append_audit(&record("s:b"))),
    )
    .await
    .expect("the audit write waited behind the read connection")
    .unwrap();
    assert!(written.is_ok(), "{written:?}");
    // The read handle refuses writes.
    release.send(()).unwrap();
    thread.join().unwrap();
    let refused = reader.append_audit(&record("s:c")).unwrap_err();
    assert!(refused.to_string().contains("readonly"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_past_its_reads_in_flight_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).unwrap();
    store.append_audit(&record("s:a")).unwrap();
    let reader = store.reader().unwrap();
    let (_, api) = router_on(reader.clone(), UiAccess::Local);
    let (release, thread) = hold(&reader);
    // Two reads wait for the held connection: the principal's bound.
    let waiting: Vec<_> = ["/ui/api/executions", "/ui/api/executions/1"]
        .into_iter()
        .map(|path| {
            let api = api.clone();
            tokio::spawn(async move { get(&api, path).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, retry, body) = tokio::time::timeout(
        Duration::from_secs(10),
        get(&api, "/ui/api/executions?limit=500"),
    )
    .await
    .expect("the third read was not refused at once");
    assert_eq!((status, retry.as_deref()), (429, Some("1")), "{body}");
    assert_eq!(
        body,
        json!({"error": {"code": "UI_RATE_LIMITED", "message": "this principal already has 2 web-view reads in flight (the bound per principal); wait for their answers before asking again"}})
    );
    release.send(()).unwrap();
    thread.join().unwrap();
    for w in waiting {
        let (status, _, body) = w.await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
    // Their slots are back.
    let (status, _, _) = get(&api, "/ui/api/executions").await;
    assert_eq!(status, 200);
}
