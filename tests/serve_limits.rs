//! A client of `mcp-sandbox serve` may only lower the operator's limits (the real binary over
//! stdio with a real rmcp client, the fixture server, the real runner): with `timeout_ms: 2000`
//! in the config, `execute_code {timeout_ms: 3600000}` ends at 2 s, and the outcome's
//! `metrics.limits` says the request was capped; a lower request applies.

use crate::common::{assert_not_hung, ms};
use crate::serve_support;
use serde_json::json;
use serve_support::*;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn a_larger_timeout_is_capped_at_the_configured_one() {
    let served = start_with_sandbox(json!({"limits": {"timeout_ms": 2000}}), &[]).await;
    let t = Instant::now();
    let r = served
        .call(
            "execute_code",
            json!({"code": "await mcp.fixture.sleep({ ms: 6000 }); return 1", "timeout_ms": 3_600_000}),
        )
        .await
        .unwrap();
    let took = t.elapsed();
    let o = structured(&r);
    assert_eq!(o["error"]["code"], "EXECUTION_TIMEOUT", "{o}");
    // Ended by the 2 s timeout (the code), not the 6 s sleep (a success) nor the hour asked for.
    assert!(took >= Duration::from_millis(1900), "took {took:?}");
    assert_not_hung(took, ms(30_000), ms(2_500), "the capped timeout");
    assert_eq!(
        o["metrics"]["limits"]["timeout_ms"],
        json!({"requested": 3_600_000, "applied": 2000, "capped": true})
    );
    // `limits` may lower others; asking more memory than the operator's is capped too.
    let r = served
        .call(
            "execute_code",
            json!({"code": "return 1", "timeout_ms": 1000, "limits": {"memory_mb": 100000}}),
        )
        .await
        .unwrap();
    let o = structured(&r);
    assert_eq!(o["result"], json!(1), "{o}");
    assert_eq!(
        o["metrics"]["limits"],
        json!({
            "timeout_ms": {"requested": 1000, "applied": 1000, "capped": false},
            "memory_mb": {"requested": 100000, "applied": 128, "capped": true}
        })
    );
}
