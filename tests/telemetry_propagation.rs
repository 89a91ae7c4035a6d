//! W3C trace context across the gateway: a `traceparent` the official Python SDK client sends in
//! `execute_code`'s `_meta` parents the execution's span, and the rmcp fixture server finds the
//! tool call span's `traceparent` in the `_meta` of the call it receives (it logs each `_meta`),
//! so a server that traces joins the same trace.

use crate::common::bin;
use crate::serve_support::otlp::{hex, Collector};
use serde_json::{json, Value};
use std::time::Duration;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";

/// One `execute_code` of `fixture.echo` through `serve` over stdio (the official Python SDK),
/// its request's `_meta` holding a `traceparent`; the fixture server logs each call's `_meta`.
/// Returns the client's report and the path of that log.
async fn echo_over_stdio(dir: &std::path::Path, sandbox: Value) -> (Value, std::path::PathBuf) {
    let log = dir.join("meta.jsonl");
    let config = dir.join("mcp.json");
    let body = json!({
        "mcpServers": {"fixture": {
            "command": bin("fixture-mcp-server"),
            "env": {"FIXTURE_META_LOG": log}, "files": {"write": [log.parent().unwrap()]},
        }},
        "sandbox": sandbox,
    });
    std::fs::write(&config, body.to_string()).unwrap();
    let calls = json!([{
        "code": "return await mcp.fixture.echo({message: 'hi'})",
        "_meta": {"traceparent": format!("00-{TRACE}-{PARENT}-01")},
    }]);
    let state = dir.join("state.db");
    let report = tokio::task::spawn_blocking(move || {
        crate::serve_support::sdk::over_stdio("budget_client.py", &config, &state, &calls)
    })
    .await
    .unwrap();
    (report, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traceparent_flows_from_the_client_through_the_gateway_to_the_server() {
    let collector = Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (report, log) = echo_over_stdio(
        dir.path(),
        json!({"telemetry": {"endpoint": collector.endpoint}}),
    )
    .await;
    let out = &report["results"][0]["out"];
    assert_eq!(out["result"], json!("hi"), "{report}");

    let spans = collector.wait_for(2, Duration::from_secs(15)).await;
    let names: Vec<&str> = spans.iter().map(|s| s.span.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let exec = spans
        .iter()
        .find(|s| s.span.name == "execute_code")
        .unwrap();
    let call = spans
        .iter()
        .find(|s| s.span.name == "tools/call fixture:echo")
        .unwrap();
    assert_eq!(hex(&exec.span.trace_id), TRACE);
    assert_eq!(hex(&exec.span.parent_span_id), PARENT);
    assert_eq!(hex(&call.span.trace_id), TRACE);
    assert_eq!(call.span.parent_span_id, exec.span.span_id);

    // The server received the call's span as its parent.
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["tool"], "echo");
    assert_eq!(
        lines[0]["_meta"]["traceparent"],
        json!(format!("00-{TRACE}-{}-01", hex(&call.span.span_id))),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_telemetry_no_traceparent_is_sent_downstream() {
    let dir = tempfile::tempdir().unwrap();
    let (report, log) = echo_over_stdio(dir.path(), json!({})).await;
    assert_eq!(
        report["results"][0]["out"]["result"],
        json!("hi"),
        "{report}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let line: Value = serde_json::from_str(text.trim()).unwrap();
    assert!(line["_meta"].get("traceparent").is_none(), "{line}");
}

/// Over streamable HTTP, a client that cannot set `_meta` may send the W3C `traceparent` header
/// on the POST instead: the execution's span joins that trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traceparent_header_on_the_http_request_parents_the_execution() {
    use crate::serve_support::http::{exchange, execute_body, open_session, post_bytes};
    let collector = Collector::start().await;
    let served = crate::serve_support::http::start_http_with(
        json!({"telemetry": {"endpoint": collector.endpoint}}),
        &[],
    )
    .await;
    let session = open_session(&served.addr).await;
    let body = execute_body(
        2,
        json!({"code": "return await mcp.fixture.echo({message: 'hi'})"}),
    );
    let header = format!("00-{TRACE}-{PARENT}-01");
    let request = post_bytes(
        &served.addr,
        Some(&session),
        &body.to_string(),
        &[("traceparent", &header)],
    );
    let answer = exchange(&served.addr, &request).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.reply(2)["result"]["structuredContent"]["result"],
        json!("hi"),
        "{answer:?}"
    );

    let spans = collector.wait_for(2, Duration::from_secs(15)).await;
    let exec = spans
        .iter()
        .find(|s| s.span.name == "execute_code")
        .expect("an execute_code span");
    let call = spans
        .iter()
        .find(|s| s.span.name == "tools/call fixture:echo")
        .expect("the call's span");
    assert_eq!(hex(&exec.span.trace_id), TRACE);
    assert_eq!(hex(&exec.span.parent_span_id), PARENT);
    assert_eq!(call.span.parent_span_id, exec.span.span_id);
}
