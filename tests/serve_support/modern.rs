//! Raw MCP 2026-07-28 requests over HTTP (no `initialize`, no session id): the client's
//! capabilities ride in each request's `_meta`, as tests/python/raw_tasks.py sends them, so a
//! test can send hundreds of them from Rust without a process per request.
#![allow(dead_code)]

use super::http::{exchange, Answer};
use serde_json::{json, Value};

/// What the client declares: elicitation, and the tasks extension when `tasks`.
pub fn meta(tasks: bool) -> Value {
    let mut caps = json!({"elicitation": {"form": {}}});
    if tasks {
        caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// The bytes of one 2026-07-28 request `method` with `params` (their `_meta` set to [`meta`]).
pub fn request_bytes(
    addr: &str,
    token: &str,
    id: u64,
    method: &str,
    params: &Value,
    tasks: bool,
) -> Vec<u8> {
    let mut params = params.clone();
    params["_meta"] = meta(tasks);
    let name = match method {
        "tools/call" => params["name"].as_str().map(str::to_string),
        m if m.starts_with("tasks/") => params["taskId"].as_str().map(str::to_string),
        _ => None,
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\nauthorization: Bearer {token}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if let Some(n) = name {
        head.push_str(&format!("mcp-name: {n}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// The JSON-RPC message of an answer (the last `data:` of an event stream, or the body).
pub fn message(answer: &Answer) -> Value {
    let datas: Vec<&str> = answer
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    let text = datas.last().copied().unwrap_or(answer.body.as_str());
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

/// One request; its `result`, or `{"error": …}`.
pub async fn call(addr: &str, token: &str, method: &str, params: Value, tasks: bool) -> Value {
    let a = exchange(addr, &request_bytes(addr, token, 1, method, &params, tasks)).await;
    let m = message(&a);
    match m.get("result") {
        Some(r) => r.clone(),
        None => json!({"error": m["error"], "status": a.status}),
    }
}

/// `execute_code` with `code`.
pub async fn execute(addr: &str, token: &str, code: &str, tasks: bool) -> Value {
    let params = json!({"name": "execute_code", "arguments": {"code": code}});
    call(addr, token, "tools/call", params, tasks).await
}
