//! Over the queue bound (`max_running` + `max_queued`) the excess gets `LIMIT_EXCEEDED` at once,
//! not a place in a growing queue.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, QueueOptions, Sandbox};
use std::sync::Arc;
use std::time::Instant;

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
            let o = s.execute(req).await;
            (o, Instant::now())
        }));
    }
    // "At once" is an order, not a speed: every refusal came before the first admitted
    // execution ended, so none waited for a place to free up.
    let (mut ok, mut refused) = (0, 0);
    let (mut first_done, mut last_refused) = (None::<Instant>, None::<Instant>);
    for t in tasks {
        let (o, at) = t.await.unwrap();
        if o.success {
            ok += 1;
            first_done = Some(first_done.map_or(at, |f| f.min(at)));
        } else {
            assert_eq!(code(&o), "LIMIT_EXCEEDED", "{o:?}");
            assert!(o.error.unwrap().message.contains("busy"));
            refused += 1;
            last_refused = Some(last_refused.map_or(at, |l| l.max(at)));
        }
    }
    let (first_done, last_refused) = (first_done.unwrap(), last_refused.unwrap());
    assert!(
        last_refused < first_done,
        "a refusal came {:?} after the first execution ended",
        last_refused - first_done
    );
    assert_eq!((ok, refused), (12, 88));
}
