//! `performance.now()` and `performance.timeOrigin` belong to the execution, not to the zygote
//! (issue 26): a runner forked long after its zygote started reads a small `performance.now()`
//! and a `timeOrigin` that is the wall-clock time of its own start.

use crate::common;
use common::*;
use mcp_sandbox::ExecRequest;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

#[tokio::test(flavor = "multi_thread")]
async fn performance_now_counts_from_the_executions_start() {
    let cmd = runner();
    let catalog = local_catalog();
    let exec = |code: &'static str| {
        let (cmd, catalog) = (&cmd, &catalog);
        async move {
            mcp_sandbox::execute(
                catalog,
                cmd,
                ExecRequest {
                    code: code.into(),
                    ..Default::default()
                },
            )
            .await
        }
    };
    // Starts the zygote.
    let zygote_started = Instant::now();
    assert!(exec("return 1").await.success);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let before = wall_ms();
    let o = exec(
        "const t0 = performance.now(); const spin = Date.now() + 30; while (Date.now() < spin) {}
         return [t0, performance.now(), performance.timeOrigin, Date.now(), typeof performance.now]",
    )
    .await;
    let after = wall_ms();
    assert!(o.success, "{o:?}");
    let r = &o.result;
    let (t0, t1, origin, now) = (
        r[0].as_f64().unwrap(),
        r[1].as_f64().unwrap(),
        r[2].as_f64().unwrap(),
        r[3].as_f64().unwrap(),
    );
    let zygote_age = zygote_started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(
        cmd.zygotes.started(),
        1,
        "the runner was forked from the older zygote"
    );
    // Counted from this execution's start: far below the zygote's age (≥ 600 ms).
    assert!(
        (0.0..200.0).contains(&t0),
        "performance.now() at start {t0} (zygote age {zygote_age} ms)"
    );
    assert!(t1 >= t0 + 29.0, "{t0} → {t1}");
    // The wall-clock time of this execution's start, in milliseconds since the epoch.
    assert!(
        origin >= before - 5.0 && origin <= after,
        "timeOrigin {origin} not in [{before}, {after}]"
    );
    assert!(
        (origin + t1 - now).abs() < 50.0,
        "timeOrigin + now() ≈ Date.now(): {origin} + {t1} vs {now}"
    );
    assert_eq!(r[4], serde_json::json!("function"));
    cmd.zygotes.shutdown();
}
