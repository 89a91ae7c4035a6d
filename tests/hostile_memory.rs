//! Hostile runners cannot grow the host's memory: a flood of tiny frames for two seconds, a 4 GiB
//! length prefix and 100,000-deep JSON leave the peak RSS (VmHWM) of this process within a small
//! bound, end in `EXECUTION_TIMEOUT`/`PROTOCOL_ERROR` with the runner killed and reaped, and
//! never panic. One test in this file, so no other test moves the numbers.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, Limits};
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_runners_keep_host_memory_bounded() {
    let catalog = local_catalog();
    let run_fake = |mode: &'static str, timeout_ms: u64| {
        let catalog = catalog.clone();
        async move {
            let t = Instant::now();
            let o = mcp_sandbox::execute(
                &catalog,
                &fake_runner(mode),
                ExecRequest {
                    request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
                        timeout_ms,
                        ..Default::default()
                    }),
                    code: "1".into(),
                    ..Default::default()
                },
            )
            .await;
            (o, t.elapsed())
        }
    };
    // Warm up the runtime and allocator.
    let _ = run_fake("echo-call", 5_000).await;
    let peak = peak_rss_kib();

    let (o, took) = run_fake("huge-length", 5_000).await;
    assert_eq!(code(&o), "PROTOCOL_ERROR", "{o:?}");
    assert!(o.error.unwrap().message.contains("frame"));
    assert_not_hung(took, ms(4_000), ms(200), "the huge length");
    let after_huge = peak_rss_kib();

    let (o, _) = run_fake("deep-json", 5_000).await;
    assert_eq!(code(&o), "PROTOCOL_ERROR", "{o:?}");

    let (o, took) = run_fake("flood", 2_000).await;
    assert_eq!(code(&o), "EXECUTION_TIMEOUT", "{o:?}");
    assert_not_hung(took, ms(30_000), ms(2_500), "the flood");
    let truncated = o.logs.last().unwrap();
    assert!(
        truncated.message.contains("log limit reached"),
        "{truncated:?}"
    );
    drop(o);
    let after_flood = peak_rss_kib();

    eprintln!("peak RSS: start {peak} KiB, after huge-length {after_huge} KiB, after 2 s of flood {after_flood} KiB");
    // 4 GiB announced: nothing like it is allocated.
    assert!(
        after_huge <= peak + 8 * 1024,
        "huge-length grew the peak to {after_huge} KiB"
    );
    // The flood's logs are capped at 1 MiB (+ per-line overhead); frames are decoded and dropped.
    assert!(
        after_flood <= peak + 16 * 1024,
        "flood grew the peak to {after_flood} KiB"
    );
    assert_eq!(
        children_left(std::time::Duration::from_secs(2)).await,
        Vec::<u32>::new(),
        "a hostile runner survived"
    );
}
