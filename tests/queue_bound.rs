//! Over the queue bound (`max_running` + `max_queued`) the excess gets `LIMIT_EXCEEDED` at once,
//! not a place in a growing queue.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, QueueOptions, Sandbox};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_queue_bound_the_excess_is_refused_at_once() {
    let sandbox = Sandbox::new(
        Arc::new(local_catalog()),
        runner(),
        QueueOptions {
            max_running: 2,
            max_queued: 10,
            pool_size: 0,
        },
    );
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let s = sandbox.clone();
        let req = ExecRequest {
            code: "await mcp.local.sleep({ ms: 300 }); return 'ok'".into(),
            ..Default::default()
        };
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let o = s.execute(req).await;
            (o, t.elapsed())
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for t in tasks {
        let (o, took) = t.await.unwrap();
        if o.success {
            ok += 1;
        } else {
            assert_eq!(code(&o), "LIMIT_EXCEEDED", "{o:?}");
            assert!(o.error.unwrap().message.contains("busy"));
            assert!(took < Duration::from_millis(100), "refused after {took:?}");
            refused += 1;
        }
    }
    assert_eq!((ok, refused), (12, 88));
}
