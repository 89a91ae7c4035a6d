//! Cancellation in `mcp-sandbox serve` (the real binary, the fixture MCP server, the real
//! runner): `notifications/cancelled` for a running execute_code (stdio, rmcp client; and raw
//! HTTP), and a DELETE of its HTTP session, kill its runner within 3 s, cancel its open MCP call
//! (the fixture server counts the `notifications/cancelled` it receives) and record the outcome
//! as `CANCELLED`. Losing the connection alone is not a cancellation.

use crate::serve_support;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use serve_support::http::*;
use serve_support::*;
use std::time::{Duration, Instant};

/// Works ~200 ms of CPU (so its runner is recognisable), then waits on a 20 s tool call.
const BUSY_THEN_WAIT: &str =
    "let x = 0; for (let i = 0; i < 3e6; i++) x += i; await mcp.fixture.sleep({ ms: 20000 }); return x";

/// Runners of `pid` that have used at least 30 ms of CPU: those running a script (pooled ones
/// have used none).
pub(crate) fn busy_runners(pid: u32) -> Vec<u32> {
    children_of(pid)
        .into_iter()
        .filter(|(p, c)| c == "sandbox-runner" && stat(*p).is_some_and(|(_, _, _, t)| t >= 3))
        .map(|(p, _)| p)
        .collect()
}

/// Waits until `n` runners have done their CPU work and wait on their tool call (their CPU time
/// stopped growing for 300 ms).
pub(crate) async fn wait_busy(pid: u32, n: usize) -> Vec<u32> {
    let end = Instant::now() + Duration::from_secs(8);
    loop {
        let busy = busy_runners(pid);
        if busy.len() >= n {
            let ticks = |ps: &[u32]| {
                ps.iter()
                    .map(|p| stat(*p).map_or(0, |s| s.3))
                    .collect::<Vec<_>>()
            };
            let before = ticks(&busy);
            tokio::time::sleep(Duration::from_millis(300)).await;
            if ticks(&busy) == before {
                return busy;
            }
            continue;
        }
        assert!(
            Instant::now() < end,
            "{n} runners never got busy: {busy:?} {:?}",
            children_of(pid)
                .iter()
                .map(|(p, c)| (c.clone(), stat(*p)))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Asserts the runners die within 3 s of `since`.
pub(crate) async fn assert_gone_within_3s(runners: &[u32], since: Instant) {
    while runners.iter().any(|p| alive(*p)) {
        assert!(
            since.elapsed() < Duration::from_secs(3),
            "runners still alive 3 s after the cancellation: {runners:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_cancelled_requests_kill_their_runners_and_cancel_their_calls() {
    let served = start(&[]).await;
    let mut calls = Vec::new();
    for _ in 0..2 {
        let peer = served.client.peer().clone();
        let params = CallToolRequestParams::new("execute_code")
            .with_arguments(json!({"code": BUSY_THEN_WAIT}).as_object().unwrap().clone());
        // rmcp's call_tool_once sends notifications/cancelled when its future is dropped.
        calls.push(tokio::spawn(
            async move { peer.call_tool_once(params).await },
        ));
    }
    let runners = wait_busy(served.pid, 2).await;
    let t = Instant::now();
    for c in &calls {
        c.abort();
    }
    assert_gone_within_3s(&runners, t).await;
    // The fixture server received one notifications/cancelled per open call.
    let r = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.fixture.cancelled({ wait_for: 2 })"}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&r)["result"], json!("2"), "{r:?}");
}

async fn start_two(
    h: &HttpServed,
    session: &str,
) -> (Vec<tokio::task::JoinHandle<Answer>>, Vec<u32>) {
    let mut posts = Vec::new();
    for id in [11, 12] {
        let addr = h.addr.clone();
        let session = session.to_string();
        posts.push(tokio::spawn(async move {
            post(
                &addr,
                Some(&session),
                &execute_body(id, json!({"code": BUSY_THEN_WAIT})),
            )
            .await
        }));
    }
    let runners = wait_busy(h.pid, 2).await;
    (posts, runners)
}

async fn cancellations_seen(h: &HttpServed, n: usize) {
    let s = open_session(&h.addr).await;
    let code = format!("return await mcp.fixture.cancelled({{ wait_for: {n} }})");
    let a = post(&h.addr, Some(&s), &execute_body(5, json!({"code": code}))).await;
    let reply = a.reply(5);
    assert_eq!(
        reply["result"]["structuredContent"]["result"],
        json!(n.to_string()),
        "{reply}"
    );
    // Each cancelled execution's outcome was recorded with its own code.
    let end = Instant::now() + Duration::from_secs(3);
    while h.stderr().matches("execute_code CANCELLED").count() < 2 {
        assert!(
            Instant::now() < end,
            "no CANCELLED outcomes logged: {}",
            h.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn http_cancelled_notifications_kill_their_runners() {
    let h = start_http(&[]).await;
    let s = open_session(&h.addr).await;
    let (_posts, runners) = start_two(&h, &s).await;
    let t = Instant::now();
    for id in [11, 12] {
        let a = post(
            &h.addr,
            Some(&s),
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}}),
        )
        .await;
        assert_eq!(a.status, 202, "{a:?}");
    }
    assert_gone_within_3s(&runners, t).await;
    cancellations_seen(&h, 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_deleting_the_session_kills_its_runners() {
    let h = start_http(&[]).await;
    let s = open_session(&h.addr).await;
    let (_posts, runners) = start_two(&h, &s).await;
    let t = Instant::now();
    let a = delete(&h.addr, &s).await;
    assert!(a.status == 200 || a.status == 202, "{a:?}");
    assert_gone_within_3s(&runners, t).await;
    cancellations_seen(&h, 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn losing_the_connection_is_not_a_cancellation() {
    let h = start_http(&[]).await;
    let s = open_session(&h.addr).await;
    let code = "let x = 0; for (let i = 0; i < 3e6; i++) x += i; await mcp.fixture.sleep({ ms: 1500 }); return x";
    let bytes = post_bytes(
        &h.addr,
        Some(&s),
        &execute_body(3, json!({"code": code})).to_string(),
        &[],
    );
    {
        use tokio::io::AsyncWriteExt;
        let mut c = tokio::net::TcpStream::connect(&h.addr).await.unwrap();
        c.write_all(&bytes).await.unwrap();
        let runners = wait_busy(h.pid, 1).await;
        drop(c);
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(
            runners.iter().all(|p| alive(*p)),
            "the runner was killed when the connection closed"
        );
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!h.stderr().contains("CANCELLED"), "{}", h.stderr());
}
