//! An approval asked of a 2026-07-28 client through `input_required` is one question on every
//! web view (issue 46 item 1): two `serve --http` gateways on one PostgreSQL database. The
//! official Python SDK's `Client` runs a script on gateway A and gets `input_required`; a
//! teammate allowed to approve answers the same question (the same id as the `inputRequests`
//! key) through gateway B's web view; the client's retry, which carries its own answer
//! ("deny"), finds the question answered — the first answer wins — and gets the outcome.

use crate::pg_support::PgServer;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use crate::session_handles::{drive, MODERN};
use crate::ui_approvals::{answer_as, approval_events, pending};
use serde_json::json;
use std::path::Path;

#[tokio::test(flavor = "multi_thread")]
async fn the_web_view_of_another_gateway_answers_an_input_required_question_first() {
    let pg = PgServer::start();
    let state = pg.database();
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}, "ask": ["fixture:echo"], "policies": {"approvers": {"approve": true}}}
    });
    let a = start_http_state(config.clone(), Some(&state), &[]).await;
    let b = start_http_state(config, Some(&state), &[]).await;
    let st = Path::new(&state);
    let alice = create_token(st, "alice", &["--tenant", "red"]);
    let bob = create_token(st, "bob", &["--tenant", "red", "--policy", "approvers"]);
    let dir = tempfile::tempdir().unwrap();
    let answered = dir.path().join("answered");
    let args = json!({"code": "return await mcp.fixture.echo({message: 'hi'})"});
    let deny = json!({"action": "accept", "content": {"decision": "deny"}});
    let steps = json!([
        {"as": "A", "call_once": "execute_code", "args": args, "keep_state": "s"},
        {"wait_file": answered},
        {"as": "A", "call_once": "execute_code", "args": args, "request_state": "$s", "input_responses": {"$s_key": deny}},
    ]);
    let (addr, clients) = (a.addr.clone(), json!({"A": {"token": alice, "elicit": []}}));
    let run = tokio::task::spawn_blocking(move || drive(&addr, clients, steps));
    // The question, listed through B, answered there.
    let q = pending(&b.addr, &bob, 1).await.remove(0);
    let id = q["id"].as_str().unwrap().to_string();
    let approve = json!({"id": id, "decision": "approve"});
    let (status, body) = answer_as(&b.addr, &bob, &approve, "application/json", "").await;
    assert_eq!(status, 200, "{body}");
    std::fs::write(&answered, "").unwrap();
    let r = run.await.unwrap();
    assert_eq!(r["versions"]["A"], json!(MODERN), "{r}");
    assert_eq!(r["steps"][0]["input_required"]["keys"], json!([id]), "{r}");
    let outcome = &r["steps"][1]["out"];
    assert_eq!(outcome["result"], json!("hi"), "{r}");
    assert_eq!(
        approval_events(outcome),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "web", "token:bob"]),
        ],
        "{r}"
    );
    // Nothing waits any more, on either gateway.
    assert!(pending(&a.addr, &bob, 0).await.is_empty());
}
