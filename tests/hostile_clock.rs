//! The clock frame of a recorded execution is bounded (issue 62): the host takes one only from
//! a runner it asked to record or replay, and at most 10,000 values; otherwise the runner is
//! breaking the protocol (`PROTOCOL_ERROR`, naming what it did).

use crate::common;
use common::*;
use mcp_sandbox::ExecRequest;
use std::sync::Arc;

async fn with_fake(mode: &str, recorded: bool) -> mcp_sandbox::Outcome {
    let catalog = fixture_catalog().await;
    let o = mcp_sandbox::execute(
        &catalog,
        &fake_runner(mode),
        ExecRequest {
            code: "1".into(),
            record: recorded.then(|| Arc::new(mcp_sandbox::exec::recording::Recorder::record())),
            ..Default::default()
        },
    )
    .await;
    catalog.shutdown().await;
    o
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clock_frame_unasked_or_over_its_bound_is_a_protocol_error() {
    let o = with_fake("clock-flood", false).await;
    assert_eq!(code(&o), "PROTOCOL_ERROR", "{o:?}");
    assert!(
        o.error
            .as_ref()
            .unwrap()
            .message
            .contains("a clock frame in an execution that is neither recorded nor replayed"),
        "{o:?}"
    );
    let o = with_fake("clock-flood", true).await;
    assert_eq!(code(&o), "PROTOCOL_ERROR", "{o:?}");
    assert!(
        o.error
            .as_ref()
            .unwrap()
            .message
            .contains("the runner reported 10001 clock values; at most 10000 may be reported"),
        "{o:?}"
    );
}
