//! 200 executions (successes and failures) leave no zombie, no child and no extra fd behind.

use crate::common;
use common::*;
use mcp_sandbox::Limits;

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_executions_leave_nothing_behind() {
    let catalog = local_catalog();
    // Warm up so lazily opened fds (runtime, epoll) exist before the baseline.
    let _ = run(&catalog, "1").await;
    let fds = open_fds();
    let quick = Limits {
        timeout_ms: 2_000,
        cpu_ms: 200,
        ..Default::default()
    };
    let scripts = [
        "return await mcp.local.echo({ i: 1 })",
        "throw new Error('x')",
        "while (true) {}",
        "let = ;",
        // Cut off by the wall clock while a call is in flight: the runner is killed.
        "await mcp.local.sleep({ ms: 5000 })",
    ];
    for i in 0..200 {
        let code = scripts[i % scripts.len()];
        let limits = if code.contains("sleep") {
            Limits {
                timeout_ms: 100,
                ..quick
            }
        } else {
            quick
        };
        let o = run_with(&catalog, code, limits).await;
        assert_eq!(o.success, i % scripts.len() == 0, "{code}: {o:?}");
    }
    assert_eq!(
        children_left(std::time::Duration::from_secs(2)).await,
        Vec::<u32>::new(),
        "children (or zombies) left behind"
    );
    let after = open_fds();
    assert!(after <= fds, "fds leaked: {fds} before, {after} after");
}
