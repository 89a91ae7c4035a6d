//! Every error code reachable from a script, each produced by a script and asserted; after each
//! failure the same host runs the next execution normally.

use crate::common;
use common::*;
use mcp_sandbox::Limits;
use serde_json::json;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread")]
async fn each_error_code_and_recovery() {
    let catalog = fixture_catalog().await;
    let quick = Limits {
        timeout_ms: 2_000,
        cpu_ms: 500,
        ..Default::default()
    };
    let cases: Vec<(&str, Limits, &str)> = vec![
        ("let = ;", quick, "SYNTAX_ERROR"),
        ("throw new Error('boom')", quick, "RUNTIME_ERROR"),
        // The CPU budget, with the wall clock far away: on a busy machine the script gets less
        // than a core, and 500 ms of CPU can take longer than 2 s of wall time.
        (
            "while (true) {}",
            Limits {
                timeout_ms: 60_000,
                ..quick
            },
            "CPU_LIMIT",
        ),
        (
            "await mcp.local.sleep({ ms: 5000 })",
            Limits {
                timeout_ms: 500,
                ..quick
            },
            "EXECUTION_TIMEOUT",
        ),
        ("await new Promise(() => {})", quick, "DEADLOCK"),
        (
            "const a = []; while (true) a.push(new Array(1e5).fill(1))",
            Limits {
                memory_mb: 32,
                ..quick
            },
            "MEMORY_LIMIT",
        ),
        (
            "function f() { return f() + 1 } return f()",
            quick,
            "RUNTIME_ERROR",
        ),
        ("await mcp.fixture.ech({})", quick, "TOOL_NOT_FOUND"),
        (
            "await mcp.fixture.sleep({ ms: 3000 })",
            Limits {
                call_timeout_ms: 200,
                ..quick
            },
            "TOOL_TIMEOUT",
        ),
        (
            "await mcp.fixture.fail({ message: 'bad' })",
            quick,
            "TOOL_ERROR",
        ),
        ("return { f() {} }", quick, "RESULT_NOT_SERIALIZABLE"),
        (
            "for (let i = 0; i < 5; i++) await mcp.local.echo({})",
            Limits {
                max_calls: 3,
                ..quick
            },
            "LIMIT_EXCEEDED",
        ),
    ];
    for (code, limits, expected) in cases {
        let o = run_with(&catalog, code, limits).await;
        assert_eq!(
            mcp_sandbox::ErrorCode::parse(expected).map(|c| c.as_str()),
            Some(expected)
        );
        assert_eq!(common::code(&o), expected, "script {code:?} gave {o:?}");
        let next = run(&catalog, "return await mcp.local.echo({ ok: 1 })").await;
        assert!(next.success, "after {expected}: {next:?}");
        assert_eq!(next.result, json!({"ok": 1}));
    }
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn error_details_are_useful() {
    let catalog = fixture_catalog().await;
    let o = run(&catalog, "\n\nthrow new TypeError('bad input')").await;
    let e = o.error.unwrap();
    assert_eq!(e.message, "TypeError: bad input");
    assert!(
        e.stack.as_deref().unwrap_or("").contains("script.js:3"),
        "{:?}",
        e.stack
    );

    let o = run(&catalog, "const x = 1;\nconst y = ;").await;
    let e = o.error.unwrap();
    assert!(e.message.contains("line 2"), "{}", e.message);

    let t = Instant::now();
    let o = run(&catalog, "await mcp.fixture.ech({ message: 'x' })").await;
    assert_not_hung(t.elapsed(), ms(5_000), ms(100), "a suggestion");
    let e = o.error.unwrap();
    assert_eq!(
        e.alternatives.as_deref(),
        Some(&["fixture:echo".to_string()][..])
    );
    assert_eq!(e.tool.as_deref(), Some("fixture:ech"));

    let o = run(&catalog, "await mcp.nosuch.tool()").await;
    assert_eq!(common::code(&o), "TOOL_NOT_FOUND");

    // The failing call is traced as failed and the script-level error names the tool.
    let o = run(&catalog, "await mcp.fixture.fail({ message: 'why' })").await;
    let e = o.error.as_ref().unwrap();
    assert_eq!(
        (e.message.as_str(), e.tool.as_deref()),
        ("why", Some("fixture:fail"))
    );
    assert_eq!(o.traces.len(), 2);
    assert_eq!(o.traces[1].success, Some(false));
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tool_is_rejected_fast() {
    let catalog = local_catalog();
    let o = run(&catalog, "const t = Date.now(); try { await mcp.local.nope({}) } catch (e) { return [e.code, Date.now() - t] }").await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result[0], "TOOL_NOT_FOUND");
    assert!(o.result[1].as_f64().unwrap() < 100.0, "{:?}", o.result);
    assert!(
        o.traces.is_empty(),
        "rejected in the runner, never sent: {:?}",
        o.traces
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn timeouts_leave_receipts_for_calls_in_flight() {
    let catalog = local_catalog();
    let limits = Limits {
        timeout_ms: 300,
        ..Default::default()
    };
    let o = run_with(&catalog, "await mcp.local.sleep({ ms: 5000 })", limits).await;
    assert_eq!(common::code(&o), "EXECUTION_TIMEOUT");
    assert_eq!(o.traces.len(), 2);
    let end = &o.traces[1];
    assert_eq!(end.success, Some(false));
    assert_eq!(
        end.error.as_ref().unwrap().code.as_str(),
        "EXECUTION_TIMEOUT"
    );
}
