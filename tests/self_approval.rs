//! `"approve_own_calls": false` holds on every channel (issue 56 item 4), not only on the web
//! view: alice, whose policy says so, runs a call an `ask` rule holds through an MCP 2026-07-28
//! client that declares elicitation (raw requests). As a task, the question is never offered to
//! her (`tasks/get` stays `working`, never `input_required`) and her `tasks/update` answering it
//! anyway is refused; as a plain call, her request gets no `input_required` (so no
//! `requestState` to answer in a retry). Bob, an approver of her tenant, answers on the web
//! view, and the trace names him.

use crate::serve_support::http::start_http_with;
use crate::serve_support::modern::{call, execute};
use crate::serve_support::team::create_token;
use crate::ui_approvals::{alices_echo_question, answer_as, approval_events, pending};
use serde_json::json;

const CODE: &str = "return await mcp.fixture.echo({message: 'hi'})";

#[tokio::test(flavor = "multi_thread")]
async fn a_principal_that_may_not_approve_its_own_calls_cannot_through_its_client() {
    let h = start_http_with(
        json!({
            "auth": {},
            "ask": ["fixture:echo"],
            "policies": {"no_self": {"approve_own_calls": false}, "approvers": {"approve": true}},
        }),
        &[],
    )
    .await;
    let alice = create_token(
        &h.state,
        "alice",
        &["--tenant", "red", "--policy", "no_self"],
    );
    let bob = create_token(
        &h.state,
        "bob",
        &["--tenant", "red", "--policy", "approvers"],
    );
    let addr = h.addr.clone();

    // As a task: the question waits on the web view, not in the task.
    let task = execute(&addr, &alice, CODE, true).await;
    assert_eq!(task["resultType"], json!("task"), "{task}");
    let id = task["taskId"].as_str().unwrap().to_string();
    let q = pending(&addr, &bob, 1).await.remove(0);
    let question = alices_echo_question(&q);
    let get = |addr: String, token: String, id: String| async move {
        call(&addr, &token, "tasks/get", json!({"taskId": id}), true).await
    };
    let status = get(addr.clone(), alice.clone(), id.clone()).await;
    assert_eq!(
        status["status"],
        json!("working"),
        "not offered to her: {status}"
    );
    // Answering it anyway, by the question's id.
    let approve = json!({"action": "accept", "content": {"decision": "approve once"}});
    let update = json!({"taskId": id, "inputResponses": {question.clone(): approve}});
    let refused = call(&addr, &alice, "tasks/update", update, true).await;
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    assert_eq!(
        pending(&addr, &bob, 1).await[0]["id"],
        json!(question),
        "still waiting"
    );
    let (status, body) = answer_as(
        &addr,
        &bob,
        &json!({"id": question, "decision": "approve"}),
        "application/json",
        "",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let start = std::time::Instant::now();
    let done = loop {
        let s = get(addr.clone(), alice.clone(), id.clone()).await;
        if s["status"] != "working" {
            break s;
        }
        crate::common::assert_not_hung(
            start.elapsed(),
            std::time::Duration::from_secs(60),
            std::time::Duration::from_secs(2),
            "the approved task ending",
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], json!("completed"), "{done}");
    let outcome = &done["result"]["structuredContent"];
    assert_eq!(outcome["result"], json!("hi"), "{done}");
    assert_eq!(
        approval_events(outcome),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "web", "token:bob"]),
        ]
    );

    // As a plain call: no `input_required` (no requestState to retry with); bob answers.
    let (a, t) = (addr.clone(), alice.clone());
    let plain = tokio::spawn(async move { execute(&a, &t, CODE, false).await });
    let q = pending(&addr, &bob, 1).await.remove(0);
    let question = alices_echo_question(&q);
    let (status, body) = answer_as(
        &addr,
        &bob,
        &json!({"id": question, "decision": "approve"}),
        "application/json",
        "",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer = plain.await.unwrap();
    assert!(answer.get("requestState").is_none(), "{answer}");
    assert_eq!(
        answer["structuredContent"]["result"],
        json!("hi"),
        "{answer}"
    );
    assert_eq!(
        approval_events(&answer["structuredContent"]),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "web", "token:bob"]),
        ]
    );
}
