//! Runner death at every stage: `RUNNER_CRASHED` with the signal or exit status, the logs and
//! traces received before the death, a `tool_end` receipt for every call in flight, the outcome
//! soon after the death (not at a timeout), MCP requests cancelled with `notifications/cancelled`, and a host
//! that serves the next execution normally. The real runner is killed from the host (a pidfd
//! from the spawn hook, signalled by in-process tools at a precise stage); stages the real runner
//! cannot be stopped at precisely use fake runners that kill themselves there.

use crate::common;
use common::*;
use mcp_sandbox::{Catalog, ExecRequest, Limits, Outcome};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What "promptly" means in a test: the outcome comes from the death, not from a timeout (the
/// execution's wall clock is 30 s and the per-call timeout 10 s by default). Idle, the outcome
/// comes 0.3–6 ms after the death; under two CPU burners one took 235 ms. How fast it is on an
/// idle machine is the benchmark's to measure, not a test's to assert.
const DEATH_TO_OUTCOME: Duration = Duration::from_secs(3);
const DEATH_TO_OUTCOME_IDLE: Duration = Duration::from_millis(10);

async fn catalog_with(handle: Arc<RunnerHandle>) -> Catalog {
    let mut c = fixture_catalog().await;
    c.add(Arc::new(fault_server(handle))).unwrap();
    c
}

fn crashed_by(o: &Outcome, sig: i32) {
    assert_eq!(code(o), "RUNNER_CRASHED", "{o:?}");
    let e = o.error.as_ref().unwrap();
    assert_eq!(e.signal, Some(sig), "{o:?}");
    assert_eq!(e.exit_status, None);
}

/// The outcome came within the bound after the runner was signalled.
fn promptly(handle: &RunnerHandle, returned: Instant) {
    let killed = handle.signalled_at().expect("the runner was signalled");
    let took = returned.saturating_duration_since(killed);
    assert_not_hung(
        took,
        DEATH_TO_OUTCOME,
        DEATH_TO_OUTCOME_IDLE,
        "the outcome after the runner's death",
    );
}

async fn next_execution_works(catalog: &Catalog) {
    let o = run(
        catalog,
        "return [await mcp.local.echo({ n: 1 }), await mcp.fixture.add({ a: 2, b: 3 })]",
    )
    .await;
    assert!(o.success, "the next execution failed: {o:?}");
    assert_eq!(o.result, json!([{"n": 1}, {"sum": 5}]));
}

async fn with_fake(catalog: &Catalog, mode: &str) -> Outcome {
    mcp_sandbox::execute(
        catalog,
        &fake_runner(mode),
        ExecRequest {
            code: "1".into(),
            ..Default::default()
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_before_ready() {
    let (handle, _) = RunnerHandle::hook();
    let catalog = catalog_with(handle).await;
    let (handle, hook) = RunnerHandle::hook();
    let h = handle.clone();
    let hook_then_kill = mcp_sandbox::SpawnHook::new(move |pid| {
        (hook.0)(pid);
        assert!(h.signal(libc::SIGKILL));
    });
    // An exec'd runner: one forked from the zygote is locked down and `ready` within tens of
    // microseconds, usually before the hook's kill lands, so "before ready" is reached reliably
    // only on the exec path (the zygote path is covered by zygote_runners and random_kills).
    let mut exec = runner();
    exec.spawn = mcp_sandbox::exec::runner::SpawnMode::Exec;
    let o = mcp_sandbox::execute(
        &catalog,
        &exec,
        ExecRequest {
            code: "return 1".into(),
            on_spawn: Some(hook_then_kill),
            ..Default::default()
        },
    )
    .await;
    promptly(&handle, Instant::now());
    crashed_by(&o, libc::SIGKILL);
    assert!(
        o.error
            .as_ref()
            .unwrap()
            .message
            .contains("before it was ready"),
        "{o:?}"
    );
    next_execution_works(&catalog).await;
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_while_waiting_for_execute() {
    let catalog = fixture_catalog().await;
    let o = with_fake(&catalog, "ready-then-sigkill").await;
    crashed_by(&o, libc::SIGKILL);
    next_execution_works(&catalog).await;
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_mid_js_keeps_logs_and_traces() {
    let (handle, hook) = RunnerHandle::hook();
    let catalog = catalog_with(handle.clone()).await;
    let code = "console.log('started'); await mcp.faults.kill({ delay_ms: 150 }); \
                console.log('looping'); while (true) {}";
    let o = run_hooked(&catalog, code, Limits::default(), hook).await;
    promptly(&handle, Instant::now());
    crashed_by(&o, libc::SIGKILL);
    let logs: Vec<&str> = o.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(logs, ["started", "looping"]);
    assert_eq!(
        tool_ends(&o),
        [("faults:kill".to_string(), "ok".to_string())]
    );
    assert!(o
        .error
        .unwrap()
        .message
        .contains("while running the script"));
    next_execution_works(&catalog).await;
    catalog.shutdown().await;
}

/// Kills the runner while `n` fixture calls are in flight; returns the outcome.
async fn killed_with_calls_in_flight(
    catalog: &Catalog,
    handle: &Arc<RunnerHandle>,
    n: usize,
) -> Outcome {
    let (h, hook) = RunnerHandle::hook();
    // Route the fault tools' signals to this execution's runner.
    let forward = handle.clone();
    let hook = mcp_sandbox::SpawnHook::new(move |pid| {
        (hook.0)(pid);
        forward.attach(pid);
    });
    let code = format!(
        "console.log('calling'); \
         const slow = Array.from({{ length: {n} }}, () => mcp.fixture.sleep({{ ms: 400 }})); \
         await mcp.faults.kill({{ delay_ms: 150 }}); \
         return await Promise.all(slow);"
    );
    let o = run_hooked(catalog, &code, Limits::default(), hook).await;
    promptly(handle, Instant::now());
    drop(h);
    o
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_with_one_and_many_calls_in_flight() {
    let handle = Arc::new(RunnerHandle::default());
    let catalog = catalog_with(handle.clone()).await;
    let mut cancelled = 0;
    for n in [1usize, 8] {
        let o = killed_with_calls_in_flight(&catalog, &handle, n).await;
        crashed_by(&o, libc::SIGKILL);
        assert_eq!(o.logs[0].message, "calling");
        let ends = tool_ends(&o);
        let receipts = ends
            .iter()
            .filter(|(t, c)| t == "fixture:sleep" && c == "RUNNER_CRASHED")
            .count();
        assert_eq!(
            receipts, n,
            "one RUNNER_CRASHED receipt per call in flight: {ends:?}"
        );
        let starts = o
            .traces
            .iter()
            .filter(|t| t.kind == mcp_sandbox::trace::TraceKind::ToolStart)
            .count();
        assert_eq!(starts, n + 1, "every start has its end");
        assert_eq!(ends.len(), n + 1);
        // The MCP requests were cancelled: the fixture counted one notifications/cancelled each.
        cancelled += n;
        let o = run(
            &catalog,
            &format!("return await mcp.fixture.cancelled({{ wait_for: {cancelled} }})"),
        )
        .await;
        assert_eq!(o.result, json!(cancelled.to_string()), "{o:?}");
    }
    // The late answers (the sleeps end 400 ms after they started) are dropped: nothing breaks.
    tokio::time::sleep(Duration::from_millis(400)).await;
    next_execution_works(&catalog).await;
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_sending_its_result() {
    // Issue 18 item 2: the execution is over once a valid `execution_complete` has arrived; a
    // death after it is logged, not RUNNER_CRASHED (it used to be).
    let catalog = fixture_catalog().await;
    let o = with_fake(&catalog, "complete-then-sigkill").await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!(42));
    assert!(o.error.is_none(), "{o:?}");
    assert_eq!(o.logs[0].message, "finishing");
    next_execution_works(&catalog).await;
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exiting_non_zero_on_its_own_with_a_call_in_flight() {
    let catalog = fixture_catalog().await;
    let o = with_fake(&catalog, "call-then-exit").await;
    assert_eq!(code(&o), "RUNNER_CRASHED", "{o:?}");
    let e = o.error.as_ref().unwrap();
    assert_eq!((e.exit_status, e.signal), (Some(9), None));
    assert!(e.message.contains("exited with status 9"), "{e:?}");
    assert_eq!(o.logs[0].message, "before the exit");
    assert_eq!(
        tool_ends(&o),
        [("fixture:sleep".to_string(), "RUNNER_CRASHED".to_string())]
    );
    let o = run(
        &catalog,
        "return await mcp.fixture.cancelled({ wait_for: 1 })",
    )
    .await;
    assert_eq!(
        o.result,
        json!("1"),
        "the abandoned call was cancelled: {o:?}"
    );
    next_execution_works(&catalog).await;
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigstop_still_ends_at_the_wall_clock_with_sigkill() {
    let (handle, hook) = RunnerHandle::hook();
    let catalog = catalog_with(handle.clone()).await;
    let limits = Limits {
        timeout_ms: 800,
        ..Default::default()
    };
    let t = Instant::now();
    let script =
        "console.log('stopping'); await mcp.faults.stop({ delay_ms: 50 }); while (true) {}";
    let o = run_hooked(&catalog, script, limits, hook).await;
    let took = t.elapsed();
    assert_eq!(code(&o), "EXECUTION_TIMEOUT", "{o:?}");
    assert_eq!(o.logs[0].message, "stopping");
    assert!(took >= Duration::from_millis(800), "{took:?}");
    assert_not_hung(took, ms(10_000), ms(1_000), "the wall clock");
    // The stopped runner was killed and reaped: its pid is no longer a child of this process.
    assert!(
        !child_pids().contains(&handle.pid()),
        "the stopped runner is still there"
    );
    assert!(!handle.signal(0), "the stopped runner still exists");
    next_execution_works(&catalog).await;
    catalog.shutdown().await;
}
