//! Exporting never slows or fails an execution: with the collector unreachable (a closed port on
//! 127.0.0.1) and a small export queue, 1,000 executions with a tool call each all succeed in
//! bounded time, and the spans that could not go out are counted (failed exports and drops past
//! the queue) in the metrics.

use crate::common::{free_port, local_catalog, runner};
use mcp_sandbox::config::telemetry::TelemetryConfig;
use mcp_sandbox::telemetry::Telemetry;
use mcp_sandbox::{ExecRequest, QueueOptions, Sandbox};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executions_succeed_while_the_collector_is_down() {
    // Nothing listens there: every export is refused at connect.
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let config = TelemetryConfig {
        endpoint: Some(endpoint),
        max_queue: Some(64),
        ..Default::default()
    };
    let telemetry = Telemetry::new(&config, true)
        .unwrap()
        .expect("telemetry on");
    assert!(telemetry.traces_on());
    let sandbox = Sandbox::new(
        Arc::new(local_catalog()),
        runner(),
        QueueOptions {
            max_running: 4,
            max_queued: 64,
            pool_size: 2,
        },
    )
    .with_telemetry(Arc::new(telemetry));
    let started = Instant::now();
    let mut ok = 0;
    for batch in 0..125 {
        let runs = (0..8).map(|i| {
            let sandbox = sandbox.clone();
            async move {
                sandbox
                    .execute(ExecRequest {
                        code: format!("return (await mcp.local.echo({{n: {}}})).n", batch * 8 + i),
                        ..Default::default()
                    })
                    .await
            }
        });
        for (i, outcome) in futures::future::join_all(runs)
            .await
            .into_iter()
            .enumerate()
        {
            assert!(outcome.success, "{outcome:?}");
            assert_eq!(outcome.result, serde_json::json!(batch * 8 + i));
            ok += 1;
        }
    }
    let took = started.elapsed();
    assert_eq!(ok, 1000);
    assert!(
        took < Duration::from_secs(120),
        "1000 executions took {took:?}"
    );

    // 2,000 spans (execution + call) were offered; none reached a collector. Once the exporter's
    // thread has given up on what it held, every span is counted as failed or dropped.
    let t = sandbox.telemetry().unwrap().clone();
    let deadline = Instant::now() + Duration::from_secs(60);
    let (failed, dropped, exported) = loop {
        let s = t.export_stats().unwrap();
        let counts = (
            s.failed.load(std::sync::atomic::Ordering::Relaxed),
            s.dropped.load(std::sync::atomic::Ordering::Relaxed),
            s.exported.load(std::sync::atomic::Ordering::Relaxed),
        );
        if counts.0 + counts.1 == 2000 || Instant::now() > deadline {
            break counts;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(exported, 0);
    assert_eq!(failed + dropped, 2000, "failed {failed}, dropped {dropped}");
    assert!(
        dropped > 0,
        "a 64-span queue must overflow: failed {failed}"
    );
    let text = sandbox.render_metrics().unwrap();
    assert!(
        text.contains(&format!(
            "mcp_sandbox_telemetry_spans_dropped_total {dropped}"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "mcp_sandbox_telemetry_spans_failed_total {failed}"
        )),
        "{text}"
    );
    assert!(
        text.contains("mcp_sandbox_executions_total{code=\"OK\"} 1000"),
        "{text}"
    );
    sandbox.shutdown(Duration::from_secs(5)).await;
}
