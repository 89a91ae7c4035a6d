//! Approvals for MCP 2026-07-28 clients through `input_required` (issue 46 item 1): the official
//! Python SDK's default `Client` negotiates 2026-07-28 with `serve --http` (asserted) and
//! declares elicitation in each request's `_meta`; a call an `ask` rule matches makes
//! `execute_code` answer `input_required` with the approval form, and the SDK's retry carrying
//! the answer resumes the parked execution. The client is played as a hostile party too: it
//! tampers with `requestState`, replays it, hands it to another principal, or never retries.

use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use crate::session_handles::{drive, out, refusal, MODERN};
use crate::ui_approvals::approval_events;
use serde_json::{json, Value};
use std::path::Path;

fn config(extra: Value) -> Value {
    let mut sandbox = json!({"auth": {}, "ask": ["fixture:echo"]});
    if let (Some(s), Some(e)) = (sandbox.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": sandbox,
    })
}

fn approve(decision: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision}})
}

/// The `tool_end` events of an outcome: `[tool, success, error code]`.
fn tool_ends(outcome: &Value) -> Vec<Value> {
    outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "tool_end")
        .map(|t| json!([t["tool"], t["success"], t["error"]["code"]]))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_is_approved_or_declined_through_input_required() {
    let g = start_http_state(config(json!({})), None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let clients = json!({
        "Y": {"token": token, "elicit": ["approve once"]},
        "N": {"token": token, "elicit": ["deny"]},
    });
    let echo = "return await mcp.fixture.echo({message: 'hi'})";
    let caught = "try { return await mcp.fixture.echo({message: 'no'}) } catch (e) { return [e.code, e.message] }";
    let steps = json!([
        {"as": "Y", "call": "execute_code", "args": {"code": echo}},
        {"as": "N", "call": "execute_code", "args": {"code": caught}},
    ]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"], json!({"Y": MODERN, "N": MODERN}), "{r}");
    // Approved: the callback was called once, with the question; the call reached the server.
    let yes = out(&r, 0);
    assert_eq!(yes["result"], json!("hi"), "{r}");
    let asked = r["elicited"]["Y"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{r}");
    assert!(
        asked[0]
            .as_str()
            .unwrap()
            .starts_with("The script wants to call fixture:echo (asked by the config rule ask"),
        "{r}"
    );
    assert!(asked[0].as_str().unwrap().contains("\"hi\""), "{r}");
    assert_eq!(
        approval_events(yes),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "input_required", "token:ci"]),
        ],
        "{r}"
    );
    assert_eq!(tool_ends(yes), vec![json!(["fixture:echo", true, null])]);
    assert!(
        yes["session"].as_str().unwrap().starts_with("session_"),
        "{r}"
    );
    // Declined: PERMISSION_DENIED in the script, the server never called.
    let no = out(&r, 1);
    assert_eq!(no["result"][0], json!("PERMISSION_DENIED"), "{r}");
    assert_eq!(
        no["result"][1],
        json!("fixture:echo was denied by the person asked (input_required, token:ci); the call was not forwarded"),
        "{r}"
    );
    assert_eq!(r["elicited"]["N"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(
        tool_ends(no),
        vec![json!(["fixture:echo", false, "PERMISSION_DENIED"])]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_asks_in_one_promise_all_both_reach_the_person() {
    let g = start_http_state(config(json!({})), None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let clients = json!({"M": {"token": token, "elicit": ["approve once", "approve once"]}});
    let both = "return await Promise.all([mcp.fixture.echo({message: 'a'}), mcp.fixture.echo({message: 'b'})])";
    let steps = json!([{"as": "M", "call": "execute_code", "args": {"code": both}}]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"]["M"], json!(MODERN), "{r}");
    assert_eq!(out(&r, 0)["result"], json!(["a", "b"]), "{r}");
    let asked: Vec<String> = r["elicited"]["M"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    assert_eq!(asked.len(), 2, "{r}");
    // One question each, in either order.
    let a = asked.iter().filter(|m| m.contains("\"a\"")).count();
    let b = asked.iter().filter(|m| m.contains("\"b\"")).count();
    assert_eq!((a, b), (1, 1), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_replayed_or_handed_over_request_state_resumes_nothing() {
    let g = start_http_state(config(json!({})), None, &[]).await;
    let alice = create_token(Path::new(&g.state), "alice", &[]);
    let bob = create_token(Path::new(&g.state), "bob", &[]);
    // Both declare elicitation (the plan answers by hand).
    let clients = json!({"A": {"token": alice, "elicit": []}, "B": {"token": bob, "elicit": []}});
    let code = "const one = await mcp.fixture.echo({message: 'one'}); const two = await mcp.fixture.echo({message: 'two'}); return [one, two]";
    let args = json!({"code": code});
    let yes = approve("approve once");
    let steps = json!([
        {"as": "A", "call_once": "execute_code", "args": args, "keep_state": "s1"},
        // 1: one character changed.
        {"as": "A", "call_once": "execute_code", "args": args, "request_state": "$~s1", "input_responses": {"$s1_key": yes}},
        // 2: another principal's retry with alice's state.
        {"as": "B", "call_once": "execute_code", "args": args, "request_state": "$s1", "input_responses": {"$s1_key": yes}},
        // 3: alice's own: the first question is answered, the second asked.
        {"as": "A", "call_once": "execute_code", "args": args, "request_state": "$s1", "input_responses": {"$s1_key": yes}, "keep_state": "s2"},
        // 4: the first state again.
        {"as": "A", "call_once": "execute_code", "args": args, "request_state": "$s1", "input_responses": {"$s1_key": yes}},
        // 5: a state without its answer.
        {"as": "A", "call_once": "execute_code", "args": args, "request_state": "$s2", "input_responses": {}},
        // 6: the second answered.
        {"as": "A", "call_once": "execute_code", "args": args, "request_state": "$s2", "input_responses": {"$s2_key": yes}},
    ]);
    let r = drive(&g.addr, clients, steps);
    let asked = |i: usize| {
        r["steps"][i]["input_required"]["messages"][0]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(asked(0).contains("\"one\""), "{r}");
    let invalid = refusal(&r, 1);
    assert_eq!(
        (invalid.0, invalid.2.as_str()),
        (-32602, "REQUEST_STATE_INVALID"),
        "{r}"
    );
    assert!(invalid.1.starts_with("requestState is not valid"), "{r}");
    assert_eq!(
        refusal(&r, 2),
        invalid,
        "another principal gets the same answer: {r}"
    );
    // Neither resumed anything: the first question was still open for alice's own retry.
    assert!(asked(3).contains("\"two\""), "{r}");
    let (code4, message4, data4) = refusal(&r, 4);
    assert_eq!(
        (code4, data4.as_str()),
        (-32602, "REQUEST_STATE_USED"),
        "{r}"
    );
    assert!(message4.contains("nothing was answered or resumed"), "{r}");
    let (code5, message5, _) = refusal(&r, 5);
    assert_eq!(code5, -32602, "{r}");
    assert!(message5.contains("inputResponses has no answer for"), "{r}");
    let done = &r["steps"][6]["out"];
    assert_eq!(done["result"], json!(["one", "two"]), "{r}");
    assert_eq!(
        approval_events(done),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "input_required", "token:alice"]),
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "input_required", "token:alice"]),
        ],
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_retries_leaves_the_question_to_time_out() {
    let args = ["--approval-timeout-ms", "300"];
    let g = start_http_state(config(json!({})), None, &args).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let caught = "try { return await mcp.fixture.echo({message: 'x'}) } catch (e) { return [e.code, e.message] }";
    let a = json!({"code": caught});
    let steps = json!([
        {"as": "M", "call_once": "execute_code", "args": a, "keep_state": "s"},
        {"sleep": 1500},
        // The retry after the timeout gets the outcome (the question is gone, not replayed).
        {"as": "M", "call_once": "execute_code", "args": a, "request_state": "$s", "input_responses": {"$s_key": approve("approve once")}},
    ]);
    let r = drive(&g.addr, json!({"M": {"token": token, "elicit": []}}), steps);
    assert!(r["steps"][0]["input_required"].is_object(), "{r}");
    // (a sleep is not a step of the report)
    let outcome = &r["steps"][1]["out"];
    assert_eq!(outcome["result"][0], json!("PERMISSION_DENIED"), "{r}");
    assert_eq!(
        outcome["result"][1],
        json!("fixture:echo was not approved in time: nobody answered within 300 ms (--approval-timeout-ms); the call was not forwarded"),
        "{r}"
    );
    assert_eq!(
        approval_events(outcome),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_denied", "timeout", null]),
        ],
        "{r}"
    );
}
