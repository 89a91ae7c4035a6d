//! `execute_code` as a task (issue 46 item 4): a client whose MCP 2026-07-28 requests declare
//! the tasks extension (raw JSON-RPC over HTTP, tests/python/raw_tasks.py: no SDK has a task
//! API yet) gets a task at once; `tasks/get` gives `working` with the calls done, then
//! `completed` with the outcome (repeatable); `tasks/cancel` cancels another; a changed task
//! id and another principal's get one answer, `TASK_UNKNOWN`. A client without the extension
//! (the Python SDK's) keeps getting the outcome itself.

use crate::common::repo_root;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use crate::session_handles::{drive, out};
use serde_json::{json, Value};
use std::path::Path;

fn raw(addr: &str, token: &str, plan: Value) -> Vec<Value> {
    let out = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .arg(repo_root().join("tests/python/raw_tasks.py"))
        .arg(format!("http://{addr}/mcp"))
        .arg(token)
        .arg(plan.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

fn unknown(answer: &Value) -> bool {
    answer["error"]["code"] == -32602 && answer["error"]["data"]["code"] == "TASK_UNKNOWN"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_polled_to_its_outcome_and_another_is_cancelled() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}},
    });
    let g = start_http_state(config, None, &[]).await;
    let alice = create_token(Path::new(&g.state), "alice", &[]);
    let bob = create_token(Path::new(&g.state), "bob", &[]);
    let slow = "await new Promise(r => setTimeout(r, 2000)); return await mcp.fixture.echo({message: 'done'})";
    let call = |code: &str| json!({"method": "tools/call", "params": {"name": "execute_code", "arguments": {"code": code}}});
    let get = |v: &str| json!({"method": "tasks/get", "params": {"taskId": v}});
    let ended = json!(["completed", "failed", "cancelled"]);
    let plan = json!([
        {"method": "tools/call", "params": call(slow)["params"], "keep": "t"},
        get("$t"),
        {"method": "tasks/get", "params": {"taskId": "$t"}, "until": ended},
        get("$t"),
        get("$~t"),
        {"method": "tools/call", "params": call("while (true) {}")["params"], "keep": "c"},
        {"method": "tasks/cancel", "params": {"taskId": "$c"}},
        get("$c"),
    ]);
    let a = raw(&g.addr, &alice, plan);
    assert_eq!(a[0]["resultType"], json!("task"), "{a:?}");
    assert_eq!(a[0]["status"], json!("working"), "{a:?}");
    assert_eq!(a[0]["pollIntervalMs"], json!(250), "{a:?}");
    // Polled at once: still working (the script sleeps 2 s first), nothing called yet.
    assert_eq!(a[1]["status"], json!("working"), "{a:?}");
    assert_eq!(
        a[1]["statusMessage"],
        json!("0 tool calls done, 0 in flight"),
        "{a:?}"
    );
    assert_eq!(a[2]["status"], json!("completed"), "{a:?}");
    let result = &a[2]["result"]["structuredContent"];
    assert_eq!(result["result"], json!("done"), "{a:?}");
    assert!(
        result["session"].as_str().unwrap().starts_with("session_"),
        "{a:?}"
    );
    // Read again: the same outcome.
    assert_eq!(a[3]["result"], a[2]["result"], "{a:?}");
    assert_eq!(a[3]["createdAt"], a[0]["createdAt"], "{a:?}");
    assert!(unknown(&a[4]), "a changed id: {a:?}");
    assert_eq!(a[5]["resultType"], json!("task"), "{a:?}");
    assert!(a[6].get("error").is_none(), "{a:?}");
    assert_eq!(a[7]["status"], json!("cancelled"), "{a:?}");
    // Another principal, with alice's task id.
    let id = a[0]["taskId"].as_str().unwrap();
    let b = raw(
        &g.addr,
        &bob,
        json!([get(id), {"method": "tasks/cancel", "params": {"taskId": id}}]),
    );
    assert!(unknown(&b[0]) && unknown(&b[1]), "{b:?}");
    // A client without the tasks extension gets the outcome itself.
    let steps = json!([{"as": "M", "call": "execute_code", "args": {"code": slow}}]);
    let r = drive(&g.addr, json!({"M": {"token": alice}}), steps);
    assert_eq!(out(&r, 0)["result"], json!("done"), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_that_asks_is_input_required_until_tasks_update_answers() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}, "ask": ["fixture:echo"]},
    });
    let g = start_http_state(config, None, &[]).await;
    let alice = create_token(Path::new(&g.state), "alice", &[]);
    let code = "return await mcp.fixture.echo({message: 'asked'})";
    let approve = json!({"action": "accept", "content": {"decision": "approve once"}});
    let plan = json!([
        {"method": "tools/call", "params": {"name": "execute_code", "arguments": {"code": code}}, "keep": "t"},
        {"method": "tasks/get", "params": {"taskId": "$t"}, "until": ["input_required"], "keep_key": "q"},
        {"method": "tasks/update", "params": {"taskId": "$t", "inputResponses": {"$q": approve}}},
        {"method": "tasks/get", "params": {"taskId": "$t"}, "until": ["completed", "failed", "cancelled"]},
    ]);
    let a = raw(&g.addr, &alice, plan);
    assert_eq!(a[1]["status"], json!("input_required"), "{a:?}");
    let asked = a[1]["inputRequests"].as_object().unwrap();
    assert_eq!(asked.len(), 1, "{a:?}");
    let request = asked.values().next().unwrap();
    assert_eq!(request["method"], json!("elicitation/create"), "{a:?}");
    assert!(
        request["params"]["message"]
            .as_str()
            .unwrap()
            .contains("fixture:echo"),
        "{a:?}"
    );
    assert!(a[2].get("error").is_none(), "{a:?}");
    assert_eq!(a[3]["status"], json!("completed"), "{a:?}");
    let outcome = &a[3]["result"]["structuredContent"];
    assert_eq!(outcome["result"], json!("asked"), "{a:?}");
    assert_eq!(
        crate::ui_approvals::approval_events(outcome),
        vec![
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "input_required", "token:alice"]),
        ]
    );
}
