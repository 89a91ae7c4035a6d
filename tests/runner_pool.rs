//! The pool of pre-started runners: single use, refilled, dead runners never handed out, no
//! state across executions, and 0 disables it.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, QueueOptions, Sandbox};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn sandbox(pool_size: usize) -> Sandbox {
    Sandbox::new(
        Arc::new(local_catalog()),
        runner(),
        QueueOptions {
            pool_size,
            ..Default::default()
        },
    )
}

async fn wait_for_idle(s: &Sandbox, n: usize) {
    let t = Instant::now();
    while s.pool().map(|p| p.idle()).unwrap_or(0) < n {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "pool did not refill to {n}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn req(code: &str) -> ExecRequest {
    ExecRequest {
        code: code.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pooled_runners_are_single_use_and_refilled() {
    let s = sandbox(2);
    wait_for_idle(&s, 2).await;
    let before = s.pool().unwrap().idle_pids();
    let o = s
        .execute(req(
            "globalThis.leak = 41; return await mcp.local.echo({ n: 1 })",
        ))
        .await;
    assert!(o.success, "{o:?}");
    wait_for_idle(&s, 2).await;
    let after = s.pool().unwrap().idle_pids();
    let reused: Vec<_> = before.iter().filter(|p| after.contains(p)).collect();
    assert_eq!(
        reused.len(),
        1,
        "exactly one pooled runner was used and replaced: {before:?} → {after:?}"
    );
    // Nothing from the previous script is visible in the next one.
    let o = s.execute(req("typeof leak")).await;
    assert_eq!(o.result, json!("undefined"));
    s.pool().unwrap().drain().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_that_died_while_idle_is_never_handed_out() {
    let s = sandbox(2);
    wait_for_idle(&s, 2).await;
    for pid in s.pool().unwrap().idle_pids() {
        // SAFETY: kill(2) on a pid we own (a pooled child of this process); no memory is touched.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let o = s.execute(req("return 1 + 1")).await;
    assert!(o.success, "a dead pooled runner was handed out: {o:?}");
    assert_eq!(o.result, json!(2));
    wait_for_idle(&s, 2).await;
    s.pool().unwrap().drain().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn executions_needing_bigger_backstops_get_a_fresh_runner() {
    let s = sandbox(1);
    wait_for_idle(&s, 1).await;
    let pooled = s.pool().unwrap().idle_pids();
    let mut r = req("return 'big'");
    r.request.limits.memory_mb = 1024;
    let o = s.execute(r).await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        s.pool().unwrap().idle_pids(),
        pooled,
        "the small pooled runner stays for later"
    );
    s.pool().unwrap().drain().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn size_zero_disables_the_pool() {
    let s = sandbox(0);
    assert!(s.pool().is_none());
    let o = s.execute(req("return 3")).await;
    assert_eq!(o.result, json!(3));
}
