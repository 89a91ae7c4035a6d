//! `Origin` validation of `mcp-sandbox serve --http` (raw HTTP against the real binary): a
//! foreign origin gets 403, loopback origins pass on a loopback address, configured origins
//! (`--allow-origin`) pass, and requests without `Origin` (non-browser clients) pass.

use crate::serve_support;
use serve_support::http::*;

async fn initialize_with(addr: &str, origin: Option<&str>) -> Answer {
    let extra: Vec<(&str, &str)> = origin.map(|o| ("origin", o)).into_iter().collect();
    exchange(
        addr,
        &post_bytes(addr, None, &initialize_body(1).to_string(), &extra),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn foreign_origins_get_403_and_others_pass() {
    let h = start_http(&["--allow-origin", "https://app.example:443"]).await;
    let a = initialize_with(&h.addr, Some("http://evil.example")).await;
    assert_eq!(a.status, 403, "{a:?}");
    let a = initialize_with(&h.addr, Some("http://evil.example:8080")).await;
    assert_eq!(a.status, 403, "{a:?}");
    for ok in [
        None,
        Some("http://localhost:5173"),
        Some("http://127.0.0.1:9"),
        Some("https://app.example"),
    ] {
        let a = initialize_with(&h.addr, ok).await;
        assert_eq!(a.status, 200, "origin {ok:?}: {a:?}");
        assert!(a.header("mcp-session-id").is_some(), "{a:?}");
    }
}
