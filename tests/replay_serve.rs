//! `serve --audit-record full` records what `execute_code` ran — its context included — and the
//! execution replays after the gateway (and with it the fixture server it started) is gone
//! (issue 62).

use crate::common::replay::replay;
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

#[tokio::test(flavor = "multi_thread")]
async fn an_execution_recorded_by_the_gateway_replays_after_it_stopped() {
    let mut h = start_http(&["--audit-record", "full"]).await;
    let id = open_session(&h.addr).await;
    let a = post(
        &h.addr,
        Some(&id),
        &execute_body(
            2,
            json!({
                "code": "const e = await mcp.fixture.echo({message: who});\nreturn {e, n: Date.now(), r: Math.random()};",
                "context": {"who": "gateway"}
            }),
        ),
    )
    .await;
    assert_eq!(a.reply(2)["result"]["isError"], json!(false), "{a:?}");
    h.child.kill().await.unwrap();
    let state = h.state.clone();
    let records = audit(&state, &[]);
    let execution = records
        .iter()
        .find(|r| r["front"] == "http")
        .unwrap_or_else(|| panic!("{records:?}"));
    let exec_id = execution["execution_id"].as_str().unwrap().to_string();
    let (status, out, err) = replay(&exec_id, &state, &["--json".as_ref()]);
    assert_eq!(status, 0, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["matches"], true, "{answer}");
    assert_eq!(answer["replayed"]["result"]["e"], "gateway", "{answer}");
    assert_eq!(answer["recorded"], answer["replayed"], "{answer}");
}
