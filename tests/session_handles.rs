//! MCP 2026-07-28 without sessions (issue 45): the official Python SDK's default `Client`
//! negotiates 2026-07-28 with `serve --http` (asserted) and has no `Mcp-Session-Id`; state,
//! yielded executions and placeholders go on through the session handle the gateway mints, a
//! bad handle gets one answer whatever is wrong with it, and a legacy client on the same
//! gateway keeps its protocol session. The model (which carries the handle) is played by the
//! plan: it drops the handle, swaps it, forges it, or hands it to another principal.

use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use serde_json::{json, Value};
use std::path::Path;

/// Runs `tests/python/modern_client.py` against `url` with these clients and steps.
pub fn drive(url: &str, clients: Value, steps: Value) -> Value {
    let plan = json!({"url": format!("http://{url}/mcp"), "clients": clients, "steps": steps});
    crate::serve_support::sdk::client("modern_client.py", &[plan.to_string().as_ref()])
}

pub const MODERN: &str = "2026-07-28";
pub const UNKNOWN: &str = "`session` is not a session handle of yours that is still open (it may have expired after being idle, or been minted for another principal); call execute_code without `session` to start a new session, and pass the handle its answer names";

fn fixture_config(sandbox: Value) -> Value {
    json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": sandbox,
    })
}

/// The protocol error of step `i`: (code, message, data.code).
pub fn refusal(report: &Value, i: usize) -> (i64, String, String) {
    let e = &report["steps"][i]["error"];
    assert!(e.is_object(), "step {i} was not refused: {report}");
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap().to_string(),
        e["data"]["code"].as_str().unwrap_or_default().to_string(),
    )
}

/// `mcp-sandbox ARGS --state STATE`, whose stdout is JSON (`audit --json`, `labels … --json`).
pub fn cli_json(state: &Path, args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(args)
        .arg("--state")
        .arg(state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn out(report: &Value, i: usize) -> &Value {
    let s = &report["steps"][i];
    assert!(s.get("error").is_none(), "step {i} failed: {report}");
    &s["out"]
}

#[tokio::test(flavor = "multi_thread")]
async fn state_lives_in_the_handle_and_a_legacy_client_keeps_its_session() {
    let g = start_http_state(fixture_config(json!({"auth": {}})), None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let clients = json!({
        "M": {"token": token, "mode": "auto"},
        "L": {"token": token, "mode": "legacy"},
    });
    let steps = json!([
        // 0: a new session; its answer names the handle.
        {"as": "M", "call": "execute_code", "args": {"code": "await store('k', 41); return 'kept'"}, "keep": {"h": "session"}},
        // 1: through the handle, the value is there, and the answer names the same handle.
        {"as": "M", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
        // 2: without it, a new session that does not see it.
        {"as": "M", "call": "execute_code", "args": {"code": "return [await load('k'), await keys()]"}, "keep": {"h2": "session"}},
        // 3: list_state of the handle.
        {"as": "M", "call": "list_state", "args": {"session": "$h"}},
        // 4: list_state without one: nothing names the session.
        {"as": "M", "call": "list_state", "args": {}},
        // 5, 6: the legacy client of the same principal: its own session, as before.
        {"as": "L", "call": "execute_code", "args": {"code": "return [await load('k'), (await store('k', 1), await load('k'))]"}},
        {"as": "L", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
        // 7: the handle's value is untouched by the legacy session.
        {"as": "M", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
    ]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"]["M"], json!(MODERN), "{r}");
    assert_ne!(r["versions"]["L"], json!(MODERN), "{r}");

    let h = out(&r, 0)["session"].as_str().unwrap().to_string();
    assert!(
        h.starts_with("session_") && h.len() == 8 + 64,
        "an opaque handle of 256 random bits: {h}"
    );
    assert!(
        r["steps"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&format!("session: {h} (pass it as `session`")),
        "{r}"
    );
    assert_eq!(out(&r, 1)["result"], json!(41), "{r}");
    assert_eq!(out(&r, 1)["session"], json!(h), "{r}");
    assert_eq!(out(&r, 2)["result"], json!([null, []]), "{r}");
    let h2 = out(&r, 2)["session"].as_str().unwrap();
    assert_ne!(h2, h, "{r}");
    let keys: Vec<&str> = out(&r, 3)["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["k"], "{r}");
    let (code, message, data) = refusal(&r, 4);
    assert_eq!((code, data.as_str()), (-32602, "SESSION_REQUIRED"), "{r}");
    assert_eq!(message, "list_state: pass `session`, the session handle an execute_code answer gave you: this request has no MCP session (protocol 2026-07-28), so nothing else names the session it belongs to");

    assert_eq!(out(&r, 5)["result"], json!([null, 1]), "{r}");
    assert!(
        out(&r, 5).get("session").is_none(),
        "a legacy answer names no handle: {r}"
    );
    let (code, _, data) = refusal(&r, 6);
    assert_eq!((code, data.as_str()), (-32602, "SESSION_NOT_NEEDED"), "{r}");
    assert_eq!(out(&r, 7)["result"], json!(41), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principals_a_forged_a_malformed_and_an_expired_handle_get_one_answer() {
    let sandbox = json!({"auth": {}, "session": {"ttl_ms": 1500}});
    let g = start_http_state(fixture_config(sandbox), None, &[]).await;
    let a = create_token(Path::new(&g.state), "a", &[]);
    let b = create_token(Path::new(&g.state), "b", &[]);
    let clients = json!({"A": {"token": a}, "B": {"token": b}});
    let forged = format!("session_{}", "0".repeat(64));
    let steps = json!([
        {"as": "A", "call": "execute_code", "args": {"code": "await store('k', 'a secret'); return 1"}, "keep": {"h": "session"}},
        // 1: B holds A's handle (the model handed it over).
        {"as": "B", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
        {"as": "B", "call": "list_state", "args": {"session": "$h"}},
        // 3, 4: made up, malformed.
        {"as": "A", "call": "execute_code", "args": {"code": "return 1", "session": forged}},
        {"as": "A", "call": "execute_code", "args": {"code": "return 1", "session": "session_../../etc"}},
        // 5: still A's, and alive.
        {"as": "A", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
        {"sleep": 2200},
        // 6: idle past the TTL.
        {"as": "A", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
    ]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"]["A"], json!(MODERN), "{r}");
    for i in [1, 2, 3, 4, 6] {
        assert_eq!(
            refusal(&r, i),
            (-32602, UNKNOWN.to_string(), "SESSION_UNKNOWN".to_string()),
            "step {i}: {r}"
        );
    }
    assert_eq!(out(&r, 5)["result"], json!("a secret"), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_yielded_execution_is_waited_on_and_cancelled_through_its_handle() {
    let g = start_http_state(fixture_config(json!({"auth": {}})), None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let clients = json!({"M": {"token": token}});
    let slow = "await new Promise(r => setTimeout(r, 600)); return 'late'";
    let steps = json!([
        {"as": "M", "call": "execute_code", "args": {"code": slow, "yield_after_ms": 50}, "keep": {"h": "session", "e": "execution_id"}},
        // 1: without the handle nothing names the session.
        {"as": "M", "call": "wait_execution", "args": {"execution_id": "$e"}},
        // 2: through another session's handle the execution is not there.
        {"as": "M", "call": "execute_code", "args": {"code": "return 0"}, "keep": {"other": "session"}},
        {"as": "M", "call": "wait_execution", "args": {"execution_id": "$e", "session": "$other", "timeout_ms": 0}},
        // 4: through its own.
        {"as": "M", "call": "wait_execution", "args": {"execution_id": "$e", "session": "$h", "timeout_ms": 20000}},
        // 5, 6: another one, cancelled through the handle.
        {"as": "M", "call": "execute_code", "args": {"code": "while (true) {}", "yield_after_ms": 50, "session": "$h"}, "keep": {"e2": "execution_id"}},
        {"as": "M", "call": "cancel_execution", "args": {"execution_id": "$e2", "session": "$h"}},
    ]);
    let r = drive(&g.addr, clients, steps);
    let h = out(&r, 0)["session"].as_str().unwrap().to_string();
    assert_eq!(out(&r, 0)["status"], json!("running"), "{r}");
    assert_eq!(refusal(&r, 1).2, "SESSION_REQUIRED", "{r}");
    let (_, message, _) = refusal(&r, 3);
    assert!(message.contains("no such execution"), "{r}");
    assert_eq!(out(&r, 4)["result"], json!("late"), "{r}");
    assert_eq!(out(&r, 4)["session"], json!(h), "{r}");
    assert_eq!(out(&r, 5)["status"], json!("running"), "{r}");
    assert_eq!(out(&r, 5)["session"], json!(h), "{r}");
    assert_eq!(out(&r, 6)["error"]["code"], json!("CANCELLED"), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_of_a_2026_client_that_nobody_can_answer_is_refused_at_once_saying_why() {
    let sandbox = json!({"auth": {}, "ask": ["fixture:echo"]});
    let g = start_http_state(fixture_config(sandbox), None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let code = "try { return await mcp.fixture.echo({message: 'x'}) } catch (e) { return [e.code, e.message] }";
    let steps =
        json!([{"as": "M", "call": "execute_code", "args": {"code": code, "timeout_ms": 20000}}]);
    let started = std::time::Instant::now();
    let r = drive(&g.addr, json!({"M": {"token": token}}), steps);
    let result = &out(&r, 0)["result"];
    assert_eq!(result[0], json!("PERMISSION_DENIED"), "{r}");
    assert!(
        result[1]
            .as_str()
            .unwrap()
            .contains("nobody can approve: the MCP client did not declare the elicitation capability in its request's _meta"),
        "{r}"
    );
    // Not a wait for the 20 s timeout (a hang guard: the refusal takes milliseconds).
    crate::common::assert_not_hung(
        started.elapsed(),
        std::time::Duration::from_secs(15),
        std::time::Duration::from_secs(1),
        "the refusal",
    );
}
