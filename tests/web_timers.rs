//! `setTimeout` / `setInterval` in the locked-down runner: the host drives them (`sleep` /
//! `wake` frames), they count as wall time, a pending timer is not a DEADLOCK, their number is
//! bounded, and a timer past the wall clock ends with EXECUTION_TIMEOUT.

use crate::common;
use common::*;
use mcp_sandbox::Limits;
use serde_json::json;
use std::time::{Duration, Instant};

fn limits(timeout_ms: u64) -> Limits {
    Limits {
        timeout_ms,
        ..Limits::default()
    }
}

#[tokio::test]
async fn a_sleep_of_200_ms_takes_200_ms_of_wall_time() {
    let t = Instant::now();
    let o = run_with(
        &local_catalog(),
        "const t0 = Date.now();
         await new Promise((r) => setTimeout(r, 200));
         return Date.now() - t0;",
        limits(10_000),
    )
    .await;
    let took = t.elapsed();
    assert!(o.success, "{o:?}");
    let inside = o.result.as_u64().expect("a number");
    assert!(inside >= 200, "the script saw {inside} ms");
    assert!(took >= Duration::from_millis(200), "took {took:?}");
    assert_not_hung(took, ms(3_000), ms(300), "a 200 ms timer");
    // Waiting is wall time, not CPU time: the execution's wall time covers the sleep.
    assert!(o.metrics.duration_ms >= 200.0, "{:?}", o.metrics);
}

#[tokio::test]
async fn timers_run_in_order_with_their_arguments() {
    let o = run_with(
        &local_catalog(),
        "const seen = [];
         setTimeout((a, b) => seen.push(`late ${a}${b}`), 30, 'x', 'y');
         setTimeout(() => seen.push('early'), 5);
         setTimeout(() => seen.push('zero'));
         const dropped = setTimeout(() => seen.push('cleared'), 10);
         clearTimeout(dropped);
         await new Promise((r) => setTimeout(r, 60));
         return seen;",
        limits(10_000),
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!(["zero", "early", "late xy"]));
}

#[tokio::test]
async fn an_interval_cleared_after_three_ticks_stops() {
    let o = run_with(
        &local_catalog(),
        "let ticks = 0;
         await new Promise((done) => {
           const id = setInterval(() => {
             ticks += 1;
             if (ticks === 3) { clearInterval(id); setTimeout(done, 50); }
           }, 10);
         });
         return ticks;",
        limits(10_000),
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, 3);
}

#[tokio::test]
async fn timers_and_tool_calls_wait_together() {
    // A call in flight and a timer: whichever is due first wakes the runner.
    let o = run_with(
        &local_catalog(),
        "const order = [];
         const call = mcp.local.sleep({ ms: 150 }).then(() => order.push('call'));
         const timer = new Promise((r) => setTimeout(r, 20)).then(() => order.push('timer'));
         await Promise.all([call, timer]);
         return order;",
        limits(10_000),
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!(["timer", "call"]));
}

#[tokio::test]
async fn pending_timers_are_bounded() {
    let o = run_with(
        &local_catalog(),
        "for (let i = 0; i < 10000; i++) setTimeout(() => {}, 1000000);
         try { setTimeout(() => {}, 1); } catch (e) { return [e.code, e.message]; }
         return 'no limit';",
        limits(10_000),
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result[0], "LIMIT_EXCEEDED", "{o:?}");
    assert!(
        o.result[1].as_str().unwrap().contains("10000 timers"),
        "{o:?}"
    );
    // Uncaught, it ends the script with that code.
    let o = run_with(
        &local_catalog(),
        "for (let i = 0; i < 10001; i++) setTimeout(() => {}, 1000000);",
        limits(10_000),
    )
    .await;
    assert_eq!(code(&o), "LIMIT_EXCEEDED", "{o:?}");
}

#[tokio::test]
async fn a_timer_past_the_wall_clock_ends_with_execution_timeout() {
    let t = Instant::now();
    let o = run_with(
        &local_catalog(),
        "await new Promise((r) => setTimeout(r, 60000)); return 'woke'",
        limits(500),
    )
    .await;
    assert_eq!(code(&o), "EXECUTION_TIMEOUT", "{o:?}");
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(500), "took {took:?}");
    assert_not_hung(took, ms(6_000), ms(600), "the 500 ms wall clock");
}

#[tokio::test]
async fn a_pending_timer_is_not_a_deadlock_but_nothing_left_is() {
    // The timer settles the promise: no DEADLOCK.
    let o = run_with(
        &local_catalog(),
        "let go; const p = new Promise((r) => { go = r; }); setTimeout(() => go(5), 20); return await p;",
        limits(10_000),
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, 5);
    // A timer that settles nothing: once it ran, nothing can settle the promise.
    let t = Instant::now();
    let o = run_with(
        &local_catalog(),
        "setTimeout(() => {}, 30); await new Promise(() => {});",
        limits(20_000),
    )
    .await;
    assert_eq!(code(&o), "DEADLOCK", "{o:?}");
    assert_not_hung(
        t.elapsed(),
        ms(3_000),
        ms(150),
        "the deadlock after the timer",
    );
}

#[tokio::test]
async fn an_error_thrown_by_a_timer_ends_the_script() {
    let o = run_with(
        &local_catalog(),
        "setTimeout(() => { throw new RangeError('from a timer'); }, 5);
         await new Promise((r) => setTimeout(r, 100));
         return 'not reached';",
        limits(10_000),
    )
    .await;
    assert_eq!(code(&o), "RUNTIME_ERROR", "{o:?}");
    let e = o.error.unwrap();
    assert!(e.message.contains("RangeError: from a timer"), "{e:?}");
}

#[tokio::test]
async fn a_busy_interval_counts_against_the_cpu_budget() {
    let o = run_with(
        &local_catalog(),
        "setInterval(() => { const t = Date.now(); while (Date.now() - t < 20) {} }, 0);
         await new Promise(() => {});",
        Limits {
            timeout_ms: 20_000,
            cpu_ms: 300,
            ..Limits::default()
        },
    )
    .await;
    assert_eq!(code(&o), "CPU_LIMIT", "{o:?}");
}

#[tokio::test]
async fn abort_signal_timeout_uses_the_timers() {
    let o = run_with(
        &local_catalog(),
        "const s = AbortSignal.timeout(20);
         const before = s.aborted;
         await new Promise((r) => s.addEventListener('abort', r));
         return [before, s.aborted, s.reason.name, s.reason instanceof DOMException];",
        limits(10_000),
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!([false, true, "TimeoutError", true]));
}
