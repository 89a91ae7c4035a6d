//! OpenTelemetry spans of one execution, received by a real OTLP/HTTP receiver in the test and
//! decoded with the opentelemetry-proto types: `mcp-sandbox run` (started with `TRACEPARENT`) of
//! a script with two tool calls and one capability that makes a call of its own gives exactly
//! the expected span tree, with parent links and attributes, and never an argument's value.

use crate::common::{bin, cli_stdin};
use crate::serve_support::otlp::{attrs, hex, Collector, Received};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

const KIND_INTERNAL: i32 = 1;
const KIND_SERVER: i32 = 2;
const KIND_CLIENT: i32 = 3;

fn span_named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    spans.iter().filter(|s| s.span.name == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execution_exports_its_span_tree() {
    let collector = Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let body = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
        "sandbox": {"telemetry": {"endpoint": collector.endpoint, "service_name": "telemetry-test"}},
    });
    std::fs::write(&config, body.to_string()).unwrap();
    let state = dir.path().join("state.db");
    let (config, state) = (config.as_os_str(), state.as_os_str());
    let saved = cli_stdin(
        &[
            "capability".as_ref(),
            "save".as_ref(),
            "tele:inner".as_ref(),
            "--file".as_ref(),
            "-".as_ref(),
            "--state".as_ref(),
            state,
        ],
        "return (await mcp.fixture.add({a: 2, b: 3})).sum",
        &[],
    );
    assert!(saved.status.success(), "{saved:?}");
    let script = "await mcp.fixture.echo({message: 'secret-argument'});\n\
                  await mcp.fixture.add({a: 1, b: 2});\n\
                  return await mcp.tele.inner();";
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let out = cli_stdin(
        &[
            "run".as_ref(),
            "-".as_ref(),
            "--json".as_ref(),
            "--config".as_ref(),
            config,
            "--state".as_ref(),
            state,
        ],
        script,
        &[
            ("TRACEPARENT", traceparent.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(outcome["result"], json!(5), "{outcome}");

    collector.wait_for(5, Duration::from_secs(15)).await;
    // A moment more: nothing else may arrive.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let spans = collector.wait_for(6, Duration::ZERO).await;
    let names: Vec<&str> = spans.iter().map(|s| s.span.name.as_str()).collect();
    assert_eq!(spans.len(), 5, "{names:?}");
    assert!(collector
        .content_types
        .lock()
        .unwrap()
        .iter()
        .all(|c| c == "application/x-protobuf"));
    for s in &spans {
        assert_eq!(hex(&s.span.trace_id), TRACE, "{}", s.span.name);
        assert_eq!(s.resource["service.name"], "telemetry-test");
        // Arguments are never exported, in no attribute and no event.
        let all = format!("{:?}", s.span);
        assert!(!all.contains("secret-argument"), "{all}");
    }

    let exec = span_named(&spans, "execute_code");
    assert_eq!(exec.len(), 1, "{names:?}");
    let exec = &exec[0].span;
    assert_eq!(hex(&exec.parent_span_id), PARENT);
    assert_eq!(exec.kind, KIND_SERVER);
    let a = attrs(&exec.attributes);
    assert_eq!(a["mcp_sandbox.outcome.code"], "OK");
    assert_eq!(
        a["mcp_sandbox.tool_calls"],
        outcome["metrics"]["tool_calls"].to_string()
    );
    assert_eq!(a["mcp_sandbox.front"], "run");
    assert_eq!(a["mcp_sandbox.tenant"], "default");
    assert!(a.contains_key("mcp_sandbox.limit.timeout_ms"), "{a:?}");
    assert!(a.contains_key("mcp_sandbox.limit.max_calls"), "{a:?}");
    assert!(!a.contains_key("error.type"), "{a:?}");
    assert!(
        !a.contains_key("enduser.id"),
        "a local run has no principal: {a:?}"
    );
    let iso: Vec<&String> = a
        .keys()
        .filter(|k| k.starts_with("mcp_sandbox.isolation."))
        .collect();
    assert!(!iso.is_empty(), "{a:?}");
    // The runner's host pid is on the span, and never in the outcome the client gets.
    let pid: u32 = a["mcp_sandbox.runner.pid"].parse().unwrap();
    assert!(pid > 1, "{a:?}");
    assert_eq!(outcome["metrics"].get("runner_pid"), None, "{outcome}");
    assert!(!outcome.to_string().contains(&pid.to_string()), "{outcome}");
    assert_eq!(exec.status.as_ref().map(|s| s.code), Some(1), "status OK");

    let exec_id = exec.span_id.clone();
    let echo = span_named(&spans, "tools/call fixture:echo");
    let adds = span_named(&spans, "tools/call fixture:add");
    let cap = span_named(&spans, "capability tele:inner");
    assert_eq!((echo.len(), adds.len(), cap.len()), (1, 2, 1), "{names:?}");
    let cap = &cap[0].span;
    assert_eq!(cap.parent_span_id, exec_id);
    assert_eq!(cap.kind, KIND_INTERNAL);
    assert_eq!(echo[0].span.parent_span_id, exec_id);
    // One `add` is the script's, the other the capability's own call beneath it.
    let mut parents: Vec<_> = adds.iter().map(|s| s.span.parent_span_id.clone()).collect();
    parents.sort();
    let mut expected = vec![exec_id.clone(), cap.span_id.clone()];
    expected.sort();
    assert_eq!(parents, expected);
    for call in echo.iter().chain(&adds) {
        let s = &call.span;
        assert_eq!(s.kind, KIND_CLIENT);
        let a: BTreeMap<String, String> = attrs(&s.attributes);
        let tool = s.name.rsplit(':').next().unwrap();
        assert_eq!(a["gen_ai.tool.name"], tool);
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["mcp.method.name"], "tools/call");
        assert_eq!(a["mcp_sandbox.server"], "fixture");
        assert_eq!(a["mcp_sandbox.success"], "true");
        assert!(!a.contains_key("error.type"));
        // The arguments' size as JSON, never their value.
        let args = if tool == "echo" {
            json!({"message": "secret-argument"})
        } else {
            json!({"a": 1, "b": 2})
        };
        assert_eq!(
            a["mcp_sandbox.arguments.bytes"],
            args.to_string().len().to_string(),
            "{}",
            s.name
        );
        // Within the execution's time.
        assert!(s.start_time_unix_nano >= exec.start_time_unix_nano);
        assert!(s.end_time_unix_nano <= exec.end_time_unix_nano);
        assert!(s.start_time_unix_nano <= s.end_time_unix_nano);
    }
}
