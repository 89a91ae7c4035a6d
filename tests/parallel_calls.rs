//! Tool calls from one script run concurrently on the host.

use crate::common;
use common::*;
use mcp_sandbox::trace::TraceKind::{ToolEnd, ToolStart};
use std::time::Instant;

#[tokio::test(flavor = "multi_thread")]
async fn ten_parallel_calls_to_one_server_overlap() {
    // The first call sleeps 1 s, the nine after it 100 ms. Run at once, the first ends last; one
    // at a time (the host or its MCP client waiting for an answer before it sends the next
    // request), it would end first. What is checked is the order, not how long it took.
    let catalog = fixture_catalog().await;
    let code = "const r = await Promise.all([mcp.fixture.sleep({ ms: 1000 }), \
                ...Array.from({length: 9}, () => mcp.fixture.sleep({ ms: 100 }))]); return r";
    let t = Instant::now();
    let o = run(&catalog, code).await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result[0], serde_json::json!("slept 1000 ms"), "{o:?}");
    assert_eq!(o.result[9], serde_json::json!("slept 100 ms"), "{o:?}");
    // All ten started before the first ended.
    let first_end = o.traces.iter().position(|t| t.kind == ToolEnd).unwrap();
    assert_eq!(first_end, 10, "{:?}", o.traces);
    // The first started (the 1 s sleep) ended last, after the nine sent behind it.
    assert_eq!(o.traces[0].kind, ToolStart, "{:?}", o.traces);
    let last = o.traces.iter().rev().find(|t| t.kind == ToolEnd).unwrap();
    assert_eq!(last.trace_id, o.traces[0].trace_id, "{:?}", o.traces);
    // Hang guard only (one at a time would be 1.9 s, which the order above already catches).
    assert_not_hung(t.elapsed(), ms(12_000), ms(1_200), "ten parallel calls");
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
