//! A script waiting on a promise that nothing can settle (empty job queue, no tool call in
//! flight, no pending timer) ends at once with DEADLOCK instead of waiting for the wall
//! clock; one that still has a call in flight waits for it.

use crate::common;
use common::*;
use mcp_sandbox::Limits;
use std::time::{Duration, Instant};

fn limits() -> Limits {
    Limits {
        timeout_ms: 20_000,
        ..Limits::default()
    }
}

#[tokio::test]
async fn a_promise_nothing_can_settle_ends_at_once_with_deadlock() {
    let catalog = local_catalog();
    for script in [
        "await new Promise(() => {})",
        "let resolve; const p = new Promise((r) => { resolve = r; }); await p;",
        "await Promise.all([1, new Promise(() => {})])",
        "const r = await mcp.local.echo({ a: 1 }); await new Promise(() => {}); return r",
    ] {
        let t = Instant::now();
        let o = run_with(&catalog, script, limits()).await;
        let took = t.elapsed();
        let e = o.error.as_ref().expect("must fail");
        assert_eq!(e.code.as_str(), "DEADLOCK", "{script}: {e:?}");
        assert!(
            e.message.contains("no tool call is in flight"),
            "{}",
            e.message
        );
        // The code says it was not the wall clock (20 s here); the bound is a hang guard.
        assert_not_hung(took, ms(10_000), ms(100), script);
    }
}

#[tokio::test]
async fn a_call_in_flight_is_waited_for_before_deadlock() {
    // The call is not awaited, but it is in flight: its answer could still run code that settles
    // the promise, so the runner waits for it and only then reports DEADLOCK.
    let t = Instant::now();
    let o = run_with(
        &local_catalog(),
        "mcp.local.sleep({ ms: 300 }); await new Promise(() => {})",
        limits(),
    )
    .await;
    let took = t.elapsed();
    assert_eq!(code(&o), "DEADLOCK", "{o:?}");
    assert!(took >= Duration::from_millis(300), "took {took:?}");
    assert_not_hung(took, ms(10_000), ms(500), "the deadlock after the call");
    // And a call whose answer settles the promise is not a deadlock.
    let o = run_with(
        &local_catalog(),
        "let done; const p = new Promise((r) => { done = r; });
         mcp.local.sleep({ ms: 50 }).then(() => done(7));
         return await p;",
        limits(),
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, 7);
}
