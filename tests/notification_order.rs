//! What an MCP server says before its answer reaches the execution before the answer: log
//! messages sent right before a result are in the outcome's logs, every time, in order, even
//! when the script returns at once (the host waits only for notifications that arrived before
//! the answer; see `tools::catalog::notification_order`).

use crate::common;
use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn logs_sent_right_before_an_answer_are_in_the_outcome_every_time() {
    let catalog = fixture_catalog().await;
    for round in 0..20 {
        // No pause between the messages and the answer; the script returns at once.
        let o = run(
            &catalog,
            "return await mcp.fixture.chatty({ steps: 25, pause_ms: 0 })",
        )
        .await;
        assert!(o.success, "round {round}: {o:?}");
        assert_eq!(o.result, json!("done"));
        let logs = serde_json::to_value(&o.logs).unwrap();
        assert_eq!(logs, json!(chatty_logs(25)), "round {round}");
    }
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_without_notifications_arrive_in_order_and_add_no_logs() {
    // 200 calls in one execution, each answered without notifications (nothing to wait for).
    let catalog = fixture_catalog().await;
    let o = run(
        &catalog,
        "const out = []; for (let i = 0; i < 200; i++) out.push(await mcp.fixture.echo({ message: String(i) })); return out.join(',')",
    )
    .await;
    assert!(o.success, "{o:?}");
    let expected: Vec<String> = (0..200).map(|i| i.to_string()).collect();
    assert_eq!(o.result, json!(expected.join(",")));
    assert!(o.logs.is_empty(), "{:?}", o.logs);
    catalog.shutdown().await;
}
