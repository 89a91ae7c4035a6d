//! Session bounds of `mcp-sandbox serve --http` (raw HTTP against the real binary): a flood of
//! 20,000 `initialize` requests is refused past the caps (429 per client address, 503 in total,
//! with `Retry-After`) and grows the host by well under 256 MB; a session whose handshake never
//! completes is closed after the handshake timeout and frees its place.

use crate::serve_support;
use serde_json::json;
use serve_support::http::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn an_initialize_flood_is_capped() {
    let h = start_http(&[]).await;
    let before = rss_kib_of(h.pid);
    let (ok, too_many, other) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let t = Instant::now();
    // 20,000 initializations from 32 concurrent clients (about 10 s in a debug build).
    let workers: Vec<_> = (0..32)
        .map(|_| {
            let (addr, ok, too_many, other) =
                (h.addr.clone(), ok.clone(), too_many.clone(), other.clone());
            tokio::spawn(async move {
                let body = initialize_body(1).to_string();
                for _ in 0..625 {
                    let a = exchange(&addr, &post_bytes(&addr, None, &body, &[])).await;
                    match a.status {
                        200 => ok.fetch_add(1, Ordering::SeqCst),
                        429 => {
                            assert_eq!(a.header("retry-after"), Some("5"), "{a:?}");
                            too_many.fetch_add(1, Ordering::SeqCst)
                        }
                        _ => other.fetch_add(1, Ordering::SeqCst),
                    };
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    let grown_mb = rss_kib_of(h.pid).saturating_sub(before) / 1024;
    let (ok, too_many, other) = (
        ok.load(Ordering::SeqCst),
        too_many.load(Ordering::SeqCst),
        other.load(Ordering::SeqCst),
    );
    eprintln!("20,000 initializations in {:?}: {ok} sessions, {too_many} refused (429), host grew {grown_mb} MB", t.elapsed());
    assert_eq!(other, 0);
    // The per-address cap (100 by default) holds (sessions whose handshake is not completed
    // expire after 10 s, which may admit a few more if the flood takes longer).
    assert!((100..=200).contains(&ok), "{ok} sessions admitted");
    assert_eq!(ok + too_many, 20_000);
    assert!(grown_mb < 256, "host grew {grown_mb} MB");
}

#[tokio::test(flavor = "multi_thread")]
async fn incomplete_handshakes_expire_and_free_their_place() {
    let h = start_http(&[
        "--max-sessions-per-client",
        "5",
        "--handshake-timeout-ms",
        "1000",
    ])
    .await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let a = post(&h.addr, None, &initialize_body(1)).await;
        assert_eq!(a.status, 200, "{a:?}");
        ids.push(a.header("mcp-session-id").unwrap().to_string());
    }
    let a = post(&h.addr, None, &initialize_body(1)).await;
    assert_eq!(a.status, 429, "{a:?}");
    assert_eq!(a.header("retry-after"), Some("5"));
    // No notifications/initialized: after the handshake timeout the sessions are gone.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let a = post(
        &h.addr,
        Some(&ids[0]),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(a.status, 404, "an expired session still answers: {a:?}");
    let s = open_session(&h.addr).await;
    // A completed handshake is not expired.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let a = post(
        &h.addr,
        Some(&s),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    assert!(a.reply(3)["result"]["tools"].is_array(), "{a:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_total_cap_answers_503() {
    let h = start_http(&["--max-sessions", "3"]).await;
    for _ in 0..3 {
        open_session(&h.addr).await;
    }
    let a = post(&h.addr, None, &initialize_body(1)).await;
    assert_eq!(a.status, 503, "{a:?}");
    assert_eq!(a.header("retry-after"), Some("5"));
    assert!(a.body.contains("--max-sessions"), "{a:?}");
}
