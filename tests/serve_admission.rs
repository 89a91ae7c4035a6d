//! Admission on arrival in `mcp-sandbox serve --http` (the real binary, raw HTTP, the real
//! runner): with every runner slot busy, oversized requests are refused with `LIMIT_EXCEEDED`
//! at once instead of waiting in the queue (and holding their bytes), and the bytes held by
//! admitted requests are bounded (`--max-queued-bytes`), as is one request's context.

use crate::common::{assert_not_hung, ms};
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use std::time::{Duration, Instant};

/// Runner slots of the default queue on this machine (cores × 4).
fn slots() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) * 4
}

/// Fills every runner slot with a script that waits `ms` on a tool call.
fn fill_slots(h: &HttpServed, session: &str, ms: u64) -> Vec<tokio::task::JoinHandle<Answer>> {
    (0..slots())
        .map(|i| {
            let addr = h.addr.clone();
            let session = session.to_string();
            let code = format!("await mcp.fixture.sleep({{ ms: {ms} }}); return {i}");
            tokio::spawn(async move {
                post(
                    &addr,
                    Some(&session),
                    &execute_body(100 + i as i64, json!({"code": code})),
                )
                .await
            })
        })
        .collect()
}

fn outcome_error(a: &Answer, id: i64) -> Value {
    let r = a.reply(id);
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    r["result"]["structuredContent"]["error"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_requests_behind_busy_slots_are_refused_at_once() {
    // Calls may take 20 s here (the default per-call bound is 10 s).
    let h = start_http_with(json!({"limits": {"call_timeout_ms": 25_000}}), &[]).await;
    let s = open_session(&h.addr).await;
    // Busy for 20 s (the refusals take 6 s on a busy machine, 1.5 s before them to fill the
    // slots): the refusals must all come while every slot is still busy.
    let busy = fill_slots(&h, &s, 20_000);
    // Let the slots fill.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let code = format!("// {}\nreturn 1", "x".repeat(3_900_000));
    // One body, its id swapped per request (building sixty 3.9 MB bodies is slow in a debug build).
    let template = execute_body(0, json!({"code": code})).to_string();
    let ticks0 = serve_support::stat(h.pid).unwrap().3;
    let t = Instant::now();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let watch = {
        let (peak, pid) = (peak.clone(), h.pid);
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_kib_of(pid), std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let sends: Vec<_> = (0..60)
        .map(|i| {
            let addr = h.addr.clone();
            let body = template.replacen("\"id\":0", &format!("\"id\":{i}"), 1);
            // Sixty clients, each with its own session and its own address on the loopback
            // network (127.0.1.i): each has its own share of the bytes of request bodies being
            // read at once (issue 25 item 5), as sixty machines would.
            tokio::spawn(async move {
                let s = open_session(&addr).await;
                let from = std::net::Ipv4Addr::new(127, 0, 1, i as u8 + 1);
                (
                    i,
                    exchange_from(from, &addr, &post_bytes(&addr, Some(&s), &body, &[])).await,
                )
            })
        })
        .collect();
    for send in sends {
        let (i, a) = send.await.unwrap();
        let e = outcome_error(&a, i);
        assert_eq!(e["code"], "LIMIT_EXCEEDED", "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("source limit"),
            "{e}"
        );
    }
    let took = t.elapsed();
    // "At once" is an order: no refusal waited for a slot to free up.
    let freed = busy.iter().filter(|b| b.is_finished()).count();
    assert_eq!(freed, 0, "{freed} busy slots ended before the last refusal");
    watch.abort();
    eprintln!(
        "host CPU ticks during the refusals: {}",
        serve_support::stat(h.pid).unwrap().3 - ticks0
    );
    let peak_mb = peak.load(std::sync::atomic::Ordering::SeqCst) / 1024;
    eprintln!("60 oversized requests refused in {took:?}; host peak RSS {peak_mb} MB");
    assert_not_hung(took, ms(60_000), ms(6_000), "60 refusals");
    assert!(peak_mb < 300, "host peak RSS {peak_mb} MB");
    // The busy executions were not disturbed.
    for b in busy {
        let a = b.await.unwrap();
        assert!(a.body.contains("\"success\":true"), "{a:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn queued_bytes_and_context_are_bounded() {
    let h = start_http(&["--max-queued-bytes", "20000", "--max-context-bytes", "1000"]).await;
    let s = open_session(&h.addr).await;
    // A context over its bound is refused whatever the queue holds.
    let a = post(
        &h.addr,
        Some(&s),
        &execute_body(
            1,
            json!({"code": "return 1", "context": {"big": "y".repeat(2000)}}),
        ),
    )
    .await;
    let e = outcome_error(&a, 1);
    assert_eq!(e["code"], "LIMIT_EXCEEDED");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("--max-context-bytes"),
        "{e}"
    );
    // Busy slots, then requests of 3,000 bytes: the queue takes what fits in 20,000 bytes.
    let busy = fill_slots(&h, &s, 3000);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let code = format!("// {}\nreturn 2", "z".repeat(3000));
    let t = Instant::now();
    let sends: Vec<_> = (0..10)
        .map(|i| {
            let (addr, code) = (h.addr.clone(), code.clone());
            tokio::spawn(async move {
                let s = open_session(&addr).await;
                let a = post(
                    &addr,
                    Some(&s),
                    &execute_body(200 + i, json!({"code": code})),
                )
                .await;
                (i, a, t.elapsed())
            })
        })
        .collect();
    let mut refused = 0;
    let mut ran = 0;
    for send in sends {
        let (i, a, took) = send.await.unwrap();
        let r = a.reply(200 + i);
        if r["result"]["isError"] == json!(true) {
            let e = &r["result"]["structuredContent"]["error"];
            assert_eq!(e["code"], "LIMIT_EXCEEDED", "{e}");
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains("--max-queued-bytes"),
                "{e}"
            );
            assert_not_hung(took, ms(2_000), ms(200), "a refusal");
            refused += 1;
        } else {
            ran += 1;
        }
    }
    assert!(refused >= 4 && ran >= 1, "refused {refused}, ran {ran}");
    for b in busy {
        b.await.unwrap();
    }
}
