//! Fake runners (tests/fixtures fake-runner) that speak garbage, oversized lengths, unknown ids
//! and other protocol violations: the host answers PROTOCOL_ERROR (or a timeout), kills them,
//! never panics, and keeps working.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, Limits};
use std::time::Instant;

async fn with_fake(mode: &str, limits: Limits) -> mcp_sandbox::Outcome {
    let catalog = fixture_catalog().await;
    let o = mcp_sandbox::execute(
        &catalog,
        &fake_runner(mode),
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(limits),
            code: "1".into(),
            ..Default::default()
        },
    )
    .await;
    catalog.shutdown().await;
    o
}

#[tokio::test(flavor = "multi_thread")]
async fn protocol_violations_end_in_protocol_error() {
    let limits = Limits {
        timeout_ms: 30_000,
        ..Default::default()
    };
    for mode in [
        "garbage",
        "huge-length",
        "truncated",
        "invalid-utf8",
        "deep-json",
        "unknown-id",
        "reuse-id",
        "wrong-protocol",
    ] {
        let t = Instant::now();
        let o = with_fake(mode, limits).await;
        assert_eq!(code(&o), "PROTOCOL_ERROR", "{mode}: {o:?}");
        // It should not need the 30 s timeout (which would end it as EXECUTION_TIMEOUT).
        assert_not_hung(t.elapsed(), ms(20_000), ms(500), mode);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_required_layers_are_refused() {
    let o = with_fake("missing-layers", Limits::default()).await;
    assert_eq!(code(&o), "SANDBOX_UNAVAILABLE");
    assert!(o
        .error
        .unwrap()
        .message
        .contains("seccomp (unavailable: test)"));
}

#[tokio::test(flavor = "multi_thread")]
async fn silence_and_floods_end_at_the_wall_clock() {
    for mode in ["silent", "sleep-before-ready", "flood"] {
        let limits = Limits {
            timeout_ms: 500,
            ..Default::default()
        };
        let t = Instant::now();
        let o = with_fake(mode, limits).await;
        assert_eq!(code(&o), "EXECUTION_TIMEOUT", "{mode}: {o:?}");
        assert_not_hung(t.elapsed(), ms(10_000), ms(1_000), mode);
        assert!(
            o.logs.len() < 40_000,
            "{mode}: the log budget bounds memory ({} lines)",
            o.logs.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn early_exits_are_runner_crashes_with_the_status() {
    let o = with_fake("exit-before-ready", Limits::default()).await;
    assert_eq!(code(&o), "RUNNER_CRASHED");
    assert_eq!(o.error.unwrap().exit_status, Some(7));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_well_behaved_fake_shows_the_host_follows_the_protocol() {
    let o = with_fake("echo-call", Limits::default()).await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, serde_json::json!("hi"));
    assert_eq!(o.traces.len(), 2);
}

/// Issue 18 item 2: once a valid `execution_complete` has been checked the execution is over;
/// what the runner sends or does afterwards (a call, hanging instead of exiting) is not read:
/// the runner is killed and reaped in the background. Both used to end in PROTOCOL_ERROR (the
/// hang only after a 1 s grace).
#[tokio::test(flavor = "multi_thread")]
async fn after_a_valid_result_nothing_the_runner_does_changes_the_outcome() {
    for (mode, result) in [("call-after-complete", 1), ("complete-then-hang", 42)] {
        let catalog = fixture_catalog().await;
        let t = Instant::now();
        let o = mcp_sandbox::execute(
            &catalog,
            &fake_runner(mode),
            ExecRequest {
                code: "1".into(),
                ..Default::default()
            },
        )
        .await;
        let took = t.elapsed();
        catalog.shutdown().await;
        assert!(o.success, "{mode}: {o:?}");
        assert_eq!(o.result, serde_json::json!(result), "{mode}");
        assert!(
            o.traces.is_empty(),
            "{mode}: the late call is not read: {o:?}"
        );
        // The host must not wait for the runner to exit: `complete-then-hang` never exits (it is
        // killed in the background). Waiting for it would take the wall clock; the 1 s grace
        // the host once gave it would also exceed this bound, which is still 10× the idle time.
        assert_not_hung(took, ms(700), ms(70), mode);
    }
}
