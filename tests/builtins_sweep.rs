//! Every built-in the runner exposes works inside a fully locked-down runner: none of them may
//! need a system call the seccomp filter forbids (that would end the run as RUNNER_CRASHED with
//! SIGSYS). Local time is UTC: the runner fixes the zone before its lockdown.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, Limits, Outcome};

const SWEEP: &str = include_str!("scripts/builtins_sweep.js");

/// Runs `code` in the real runner, requiring every isolation layer (not only the default ones).
async fn locked_down(code: &str) -> Outcome {
    let o = mcp_sandbox::execute(
        &local_catalog(),
        &runner(),
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(Limits::default()),
            code: code.to_string(),
            require_layers: ["fds", "uid", "namespaces", "empty_root", "landlock"]
                .map(String::from)
                .to_vec(),
            ..Default::default()
        },
    )
    .await;
    if let Some(e) = &o.error {
        assert_ne!(
            e.code.as_str(),
            "SANDBOX_UNAVAILABLE",
            "this machine cannot lock the runner down fully: {e:?}"
        );
    }
    o
}

#[tokio::test]
async fn local_time_dates_do_not_crash_the_runner_and_are_utc() {
    let o = locked_down(
        "const d = new Date(2024, 0, 1, 12, 30);
         return [d.getHours(), new Date().getTimezoneOffset(), new Date(0).toString(),
                 d.toLocaleString(), d.getTimezoneOffset(), new Date(2021, 5, 1).toTimeString()];",
    )
    .await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result[0], 12);
    assert_eq!(o.result[1], 0);
    assert_eq!(o.result[2], "Thu Jan 01 1970 00:00:00 GMT+0000");
    assert_eq!(o.result[4], 0);
    assert!(
        o.result[5]
            .as_str()
            .unwrap()
            .starts_with("00:00:00 GMT+0000"),
        "{}",
        o.result[5]
    );
}

#[tokio::test]
async fn every_built_in_runs_in_a_locked_down_runner() {
    let o = locked_down(SWEEP).await;
    assert!(
        o.success,
        "a built-in broke the runner: {:?}",
        o.error.as_ref().map(|e| (&e.code, &e.message, e.signal))
    );
    let ran = o.result["ran"].as_u64().unwrap();
    assert!(ran > 500, "the sweep ran only {ran} checks: {}", o.result);
    assert_eq!(o.result["tz"], 0, "{}", o.result);
    assert_eq!(o.result["hours"], 12, "{}", o.result);
    // The checks that throw are the expected TypeErrors/RangeErrors of the engine, not crashes;
    // most built-ins must simply work.
    let threw = o.result["threw"].as_u64().unwrap();
    assert!(threw < 20, "{}", o.result);
}
