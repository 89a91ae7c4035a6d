//! Tool calls from one script run concurrently on the host.

use crate::common;
use common::*;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread")]
async fn ten_parallel_200ms_calls_finish_well_under_a_second() {
    let catalog = fixture_catalog().await;
    let code = "const r = await Promise.all(Array.from({length: 10}, () => mcp.fixture.sleep({ ms: 200 }))); return r.length";
    let t = Instant::now();
    let o = run(&catalog, code).await;
    let elapsed = t.elapsed();
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, serde_json::json!(10));
    // Sequential would be 2 s; generous margin for a loaded CI machine.
    assert!(elapsed.as_millis() < 1_000, "took {elapsed:?}");
    // All ten started before the first ended.
    let first_end = o
        .traces
        .iter()
        .position(|t| t.kind == mcp_sandbox::trace::TraceKind::ToolEnd)
        .unwrap();
    assert_eq!(first_end, 10, "{:?}", o.traces);
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_beyond_the_concurrency_limit_wait_their_turn() {
    let catalog = local_catalog();
    let limits = mcp_sandbox::Limits {
        max_concurrent_calls: 2,
        ..Default::default()
    };
    let code = "const r = await Promise.all([1,2,3,4].map(() => mcp.local.sleep({ ms: 100 }))); return r.length";
    let t = Instant::now();
    let o = run_with(&catalog, code, limits).await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, serde_json::json!(4));
    assert!(
        t.elapsed().as_millis() >= 200,
        "4 calls of 100 ms, 2 at a time, took {:?}",
        t.elapsed()
    );
}
