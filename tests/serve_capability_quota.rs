//! Capability storage quotas in `mcp-sandbox serve` (the real binary over stdio, a real rmcp
//! client, real SQLite): code over the per-capability limit (256 KiB by default) and saves past
//! the total quota are refused with `LIMIT_EXCEEDED` naming the limit, the state file stays
//! bounded, and only the newest versions of a name are kept.

use crate::serve_support;
use serde_json::json;
use serve_support::*;

#[tokio::test(flavor = "multi_thread")]
async fn code_over_the_default_limit_is_refused() {
    let served = start(&[]).await;
    let code = format!("// {}\nreturn 1", "x".repeat(300 * 1024));
    let r = served
        .call("save_capability", json!({"name": "big:one", "code": code}))
        .await
        .unwrap();
    assert!(is_error(&r));
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "LIMIT_EXCEEDED", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("at most 262144 bytes (capability code limit"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn saves_past_the_total_quota_are_refused_and_the_store_stays_bounded() {
    let served = start(&[
        "--capability-max-code-bytes",
        "1100000",
        "--capability-store-bytes",
        "16777216",
    ])
    .await;
    let (mut saved, mut refused) = (0, 0);
    for i in 0..80 {
        let code = format!("// {i} {}\nreturn 1", "x".repeat(1024 * 1024));
        let r = served
            .call(
                "save_capability",
                json!({"name": format!("bulk:c{i}"), "code": code}),
            )
            .await
            .unwrap();
        if is_error(&r) {
            let e = &structured(&r)["error"];
            assert_eq!(e["code"], "LIMIT_EXCEEDED", "{e}");
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains("capability store quota"),
                "{e}"
            );
            refused += 1;
        } else {
            saved += 1;
        }
    }
    assert_eq!((saved, refused), (15, 65));
    let size = std::fs::metadata(&served.state).unwrap().len();
    assert!(size < 20 * 1024 * 1024, "state file is {size} bytes");
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_newest_versions_are_kept() {
    let served = start(&["--capability-max-versions", "20"]).await;
    for v in 1..=25 {
        let r = served
            .call(
                "save_capability",
                json!({"name": "ver:x", "code": format!("return {v}")}),
            )
            .await
            .unwrap();
        assert!(!is_error(&r), "{r:?}");
        assert_eq!(structured(&r)["version"], json!(v));
    }
    let store = mcp_sandbox::store::Store::open(&served.state).unwrap();
    let versions: Vec<i64> = store
        .capability_versions("ver:x")
        .unwrap()
        .iter()
        .map(|c| c.version)
        .collect();
    assert_eq!(versions.len(), 20, "{versions:?}");
    assert_eq!(versions.iter().min(), Some(&6), "{versions:?}");
}
