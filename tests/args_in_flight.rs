//! The arguments of open calls are bounded (32 MiB, `budget::ARGS_IN_FLIGHT_BYTES`): a runner
//! sending 100 calls of 900 KiB to a slow tool at once (90 MiB) is not read further until calls
//! finish — back-pressure, so the runner waits and every call still completes (issue 13 item 1).
//! Takes ~9 s: three waves of calls that each sleep 3 s, long enough that a host without the
//! bound would have read far more than 37 frames meanwhile.
//! Library API with the in-process `local.sleep` (a slow tool that accepts any arguments).

use crate::common;
use common::*;
use mcp_sandbox::trace::TraceKind;
use mcp_sandbox::{ExecRequest, Limits};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_in_flight_are_bounded_by_back_pressure() {
    let catalog = local_catalog();
    let before = peak_rss_kib();
    let o = mcp_sandbox::execute(
        &catalog,
        &fake_runner("slow-big-args"),
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
                max_concurrent_calls: 100,
                ..Default::default()
            }),
            code: "1".into(),
            ..Default::default()
        },
    )
    .await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result, serde_json::json!(100));
    // The most calls open at once, from the host's own trace events.
    let mut events: Vec<(f64, i32)> = o
        .traces
        .iter()
        .map(|e| match e.kind {
            TraceKind::ToolStart => (e.ts, 1),
            _ => (e.ts, -1),
        })
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut open, mut most) = (0, 0);
    for (_, d) in events {
        open += d;
        most = most.max(open);
    }
    // 32 MiB / ~900 KiB: at most 37 calls open at once (36 under the budget, plus the one frame
    // that crossed it). Without the bound, every call read during the 3 s sleeps is open.
    assert!((20..=37).contains(&most), "{most} calls were open at once");
    let grew = peak_rss_kib().saturating_sub(before);
    eprintln!("at most {most} calls open at once; peak RSS grew {grew} KiB");
    assert!(grew < 128 * 1024, "peak RSS grew {grew} KiB");
}
