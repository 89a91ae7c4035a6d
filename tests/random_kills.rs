//! 300 executions, each SIGKILLed at a random moment (before `ready`, mid-JS, mid-call, after the
//! result): every outcome is a correct result or a structured `RUNNER_CRASHED`, nothing hangs
//! (the test has its own deadline), no zombie stays, and the fd count returns to its baseline.
//! The kill goes through a pidfd taken in the spawn hook, so it can never hit a recycled pid.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, Limits, QueueOptions, Sandbox, SpawnHook};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const RUNS: u64 = 300;
/// The whole test must end well within this.
const DEADLINE: Duration = Duration::from_secs(120);

/// A tiny deterministic generator (splitmix64), seeded per run so failures can be replayed.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const SCRIPT: &str = "
    console.log('start');
    let s = 0;
    for (let i = 0; i < 20000; i++) s += i;
    const a = await mcp.local.echo({ s });
    const [b] = await Promise.all([mcp.local.sleep({ ms: 5 }), mcp.local.echo({ x: 1 })]);
    return { s: a.s, b };
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_runners_killed_at_random_moments() {
    let seed: u64 = std::env::var("RANDOM_KILLS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("RANDOM_KILLS_SEED={seed}");
    let sandbox = Sandbox::new(
        Arc::new(local_catalog()),
        runner(),
        QueueOptions {
            max_running: 6,
            max_queued: RUNS as usize,
            pool_size: 0,
        },
    );
    let _ = sandbox
        .execute(ExecRequest {
            code: SCRIPT.into(),
            ..Default::default()
        })
        .await;
    let fds = open_fds();
    let expected = json!({"s": 199990000, "b": {"slept": 5}});
    let work = async {
        let mut tasks = Vec::new();
        for i in 0..RUNS {
            // 0..150 ms: a run takes ~40-100 ms here (debug build, 2 cores), so kills land at every stage and some miss.
            let delay = Duration::from_micros(splitmix(seed ^ i) % 150_000);
            let handle = Arc::new(RunnerHandle::default());
            let h = handle.clone();
            let hook = SpawnHook::new(move |pid| {
                h.attach(pid);
                let h = h.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    h.signal(libc::SIGKILL);
                });
            });
            let req = ExecRequest {
                request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
                    timeout_ms: 10_000,
                    ..Default::default()
                }),
                code: SCRIPT.into(),
                on_spawn: Some(hook),
                ..Default::default()
            };
            let s = sandbox.clone();
            tasks.push(tokio::spawn(async move {
                let o = s.execute(req).await;
                (o, handle)
            }));
        }
        let (mut ok, mut crashed) = (0, 0);
        let mut stages = std::collections::BTreeMap::<String, u32>::new();
        for t in tasks {
            let (o, handle) = t.await.unwrap();
            if o.success {
                assert_eq!(o.result, expected, "{o:?}");
                ok += 1;
            } else {
                assert_eq!(code(&o), "RUNNER_CRASHED", "{o:?}");
                let e = o.error.as_ref().unwrap();
                assert_eq!(e.signal, Some(libc::SIGKILL), "{o:?}");
                // Every call that started has its end.
                let starts = o
                    .traces
                    .iter()
                    .filter(|t| t.kind == mcp_sandbox::trace::TraceKind::ToolStart)
                    .count();
                assert_eq!(starts, tool_ends(&o).len(), "{o:?}");
                let stage = e.message.rsplit_once('(').map(|(_, s)| s).unwrap_or("");
                *stages
                    .entry(stage.trim_end_matches(')').to_string())
                    .or_default() += 1;
                crashed += 1;
            }
            handle.release();
        }
        eprintln!("kills by stage: {stages:?}");
        (ok, crashed)
    };
    let (ok, crashed) = tokio::time::timeout(DEADLINE, work)
        .await
        .expect("the executions did not all finish before the deadline (a hang)");
    eprintln!("{ok} finished, {crashed} killed");
    assert_eq!(ok + crashed, RUNS);
    assert!(crashed > 0, "no kill landed; the delays are too long");
    // The kill threads may still be sleeping (150 ms) and runners are reaped in the background.
    assert_eq!(
        children_left(Duration::from_secs(2)).await,
        Vec::<u32>::new(),
        "zombies or runners left"
    );
    let after = open_fds();
    assert!(after <= fds, "fds leaked: {fds} before, {after} after");
}
