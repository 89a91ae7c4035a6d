//! A script calls two tools of a real MCP server (the rmcp fixture) and one in-process tool: the
//! result is right and the six trace events come in order with matching ids.

use crate::common;
use common::*;
use mcp_sandbox::trace::TraceKind;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn two_mcp_tools_and_one_in_process_tool() {
    let catalog = fixture_catalog().await;
    let code = r#"
        const said = await mcp.fixture.echo({ message: "hello" });
        const sum = await mcp.fixture.add({ a: 2, b: 3 });
        const back = await mcp.local.echo({ n: 7 });
        return { said, sum, back };
    "#;
    let o = run(&catalog, code).await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        o.result,
        json!({"said": "hello", "sum": {"sum": 5}, "back": {"n": 7}})
    );
    assert_eq!(o.metrics.tool_calls, 3);

    let kinds: Vec<(TraceKind, &str)> =
        o.traces.iter().map(|t| (t.kind, t.tool.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (TraceKind::ToolStart, "fixture:echo"),
            (TraceKind::ToolEnd, "fixture:echo"),
            (TraceKind::ToolStart, "fixture:add"),
            (TraceKind::ToolEnd, "fixture:add"),
            (TraceKind::ToolStart, "local:echo"),
            (TraceKind::ToolEnd, "local:echo"),
        ]
    );
    for pair in o.traces.chunks(2) {
        let (start, end) = (&pair[0], &pair[1]);
        assert_eq!(start.trace_id, end.trace_id);
        assert_eq!(start.parent_trace_id, None);
        assert_eq!(end.success, Some(true));
        let d = end.duration_ms.unwrap();
        assert!(d > 0.0 && d < 5_000.0, "implausible duration {d}");
        assert!(end.ts >= start.ts);
        assert!(
            (end.ts - start.ts - d).abs() < 50.0,
            "ts and duration disagree"
        );
    }
    let ids: std::collections::HashSet<_> = o.traces.iter().map(|t| &t.trace_id).collect();
    assert_eq!(ids.len(), 3, "one trace id per call");
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_results_follow_the_design_mapping() {
    let catalog = fixture_catalog().await;
    // text-only → string; structuredContent → object; isError → TOOL_ERROR, catchable.
    let code = r#"
        const text = await mcp.fixture.echo({ message: "t" });
        const structured = await mcp.fixture.add({ a: 1, b: 1 });
        let caught;
        try { await mcp.fixture.fail({ message: "nope" }); } catch (e) { caught = [e.code, e.message, e.tool]; }
        return { text, structured, caught };
    "#;
    let o = run(&catalog, code).await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        o.result,
        json!({"text": "t", "structured": {"sum": 2}, "caught": ["TOOL_ERROR", "nope", "fixture:fail"]})
    );
    let failed = o
        .traces
        .iter()
        .find(|t| t.kind == TraceKind::ToolEnd && t.tool == "fixture:fail")
        .unwrap();
    assert_eq!(failed.success, Some(false));
    assert_eq!(failed.error.as_ref().unwrap().code.as_str(), "TOOL_ERROR");
    catalog.shutdown().await;
}
