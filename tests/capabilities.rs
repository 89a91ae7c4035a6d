//! Capabilities callable as tools: resolution before spawning, fresh runners, nested traces,
//! depth and cycle limits, argument schemas. Real runner, real fixture MCP server, real SQLite.

use crate::common;
use crate::common::{assert_not_hung, ms};

use mcp_sandbox::exec::capability::Capabilities;
use mcp_sandbox::store::{NewCapability, Store};
use mcp_sandbox::trace::{TraceEvent, TraceKind};
use mcp_sandbox::{Catalog, ExecRequest, Limits, Outcome, RunnerCommand};
use serde_json::json;
use std::time::Instant;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    (dir, s)
}

fn save(store: &Store, name: &str, code: &str) {
    store
        .save_capability(&NewCapability {
            name: name.into(),
            code: code.into(),
            ..Default::default()
        })
        .unwrap();
}

async fn run_caps(caps: &Capabilities, catalog: &Catalog, code: &str) -> Outcome {
    caps.execute(
        catalog,
        ExecRequest {
            code: code.into(),
            ..Default::default()
        },
    )
    .await
}

fn kinds(traces: &[TraceEvent]) -> Vec<(TraceKind, &str)> {
    traces.iter().map(|e| (e.kind, e.tool.as_str())).collect()
}

/// A runner that does not exist: any execution that reaches spawning fails with
/// SANDBOX_UNAVAILABLE, so another error proves nothing was spawned.
fn no_runner() -> RunnerCommand {
    RunnerCommand::new("/nonexistent/sandbox-runner".into())
}

#[tokio::test]
async fn math_sum_is_callable_as_a_tool_and_traced_as_a_capability() {
    let (_d, store) = store();
    save(
        &store,
        "math:sum",
        "return [1,2,3,4,5].reduce((a, n) => a + n, 0)",
    );
    let caps = Capabilities::new(store, common::runner());
    let o = run_caps(
        &caps,
        &common::local_catalog(),
        "return await mcp.math.sum()",
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!(15));
    assert_eq!(
        kinds(&o.traces),
        [
            (TraceKind::CapabilityStart, "math:sum"),
            (TraceKind::CapabilityEnd, "math:sum")
        ]
    );
    let (start, end) = (&o.traces[0], &o.traces[1]);
    assert_eq!(start.trace_id, end.trace_id);
    assert_eq!(
        (start.parent_trace_id.as_ref(), end.parent_trace_id.as_ref()),
        (None, None)
    );
    assert_eq!(end.success, Some(true));
    assert_eq!(o.metrics.tool_calls, 1);
}

#[tokio::test]
async fn a_capability_calling_two_mcp_tools_has_them_as_children() {
    let (_d, store) = store();
    save(
        &store,
        "fx:pair",
        "const e = await mcp.fixture.echo({ message: args.word }); \
         const s = await mcp.fixture.add({ a: args.n, b: 2 }); return [e, s.sum]",
    );
    let caps = Capabilities::new(store, common::runner());
    let catalog = common::fixture_catalog().await;
    let o = run_caps(
        &caps,
        &catalog,
        "const r = await mcp.fx.pair({ word: 'hi', n: 40 }); return r",
    )
    .await;
    catalog.shutdown().await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!(["hi", 42]));
    assert_eq!(
        kinds(&o.traces),
        [
            (TraceKind::CapabilityStart, "fx:pair"),
            (TraceKind::ToolStart, "fixture:echo"),
            (TraceKind::ToolEnd, "fixture:echo"),
            (TraceKind::ToolStart, "fixture:add"),
            (TraceKind::ToolEnd, "fixture:add"),
            (TraceKind::CapabilityEnd, "fx:pair"),
        ]
    );
    let cap_id = o.traces[0].trace_id.clone();
    assert_eq!(o.traces[0].parent_trace_id, None);
    assert_eq!(o.traces[5].parent_trace_id, None);
    for child in &o.traces[1..5] {
        assert_eq!(
            child.parent_trace_id.as_deref(),
            Some(cap_id.as_str()),
            "{child:?}"
        );
    }
    assert!(o.traces[1..5]
        .iter()
        .filter(|e| e.kind == TraceKind::ToolEnd)
        .all(|e| e.success == Some(true)));
}

#[tokio::test]
async fn nested_capabilities_work_to_depth_3_and_fail_at_depth_4() {
    let (_d, store) = store();
    save(&store, "n:l4", "return 'l4'");
    save(&store, "n:l3", "return ['l3', await mcp.n.l4()]");
    save(&store, "n:l2", "return ['l2', await mcp.n.l3()]");
    save(&store, "n:l1", "return ['l1', await mcp.n.l2()]");
    save(&store, "n:b", "return 'b' + args.x");
    save(&store, "n:a", "return 'a' + await mcp.n.b({ x: args.x })");
    let caps = Capabilities::new(store, common::runner());
    let catalog = common::local_catalog();

    // Depth 2: script → n:a → n:b, with the tree of parents.
    let o = run_caps(&caps, &catalog, "return await mcp.n.a({ x: 1 })").await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!("ab1"));
    assert_eq!(
        kinds(&o.traces),
        [
            (TraceKind::CapabilityStart, "n:a"),
            (TraceKind::CapabilityStart, "n:b"),
            (TraceKind::CapabilityEnd, "n:b"),
            (TraceKind::CapabilityEnd, "n:a"),
        ]
    );
    assert_eq!(
        o.traces[1].parent_trace_id.as_deref(),
        Some(o.traces[0].trace_id.as_str())
    );

    // Depth 3 (the default limit): script → l2 → l3 → l4.
    let o = run_caps(&caps, &catalog, "return await mcp.n.l2()").await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!(["l2", ["l3", "l4"]]));

    // Depth 4 fails before anything runs.
    let caps_no_spawn = Capabilities::new(caps.store.clone(), no_runner());
    let o = run_caps(&caps_no_spawn, &catalog, "return await mcp.n.l1()").await;
    assert_eq!(common::code(&o), "CAPABILITY_DEPTH");
    let e = o.error.unwrap();
    assert_eq!(
        e.message,
        "capabilities nest 4 deep (n:l1 → n:l2 → n:l3 → n:l4); the limit is 3"
    );
    assert!(o.traces.is_empty());
}

#[tokio::test]
async fn a_cycle_fails_at_once_before_spawning() {
    let (_d, store) = store();
    save(&store, "cyc:a", "return await mcp.cyc.b()");
    save(&store, "cyc:b", "return await mcp.cyc.a()");
    save(&store, "cyc:self", "return await mcp.cyc.self()");
    let caps = Capabilities::new(store, no_runner());
    let catalog = common::local_catalog();
    let t = Instant::now();
    let o = run_caps(&caps, &catalog, "return await mcp.cyc.a()").await;
    let took = t.elapsed();
    assert_eq!(common::code(&o), "CAPABILITY_CYCLE");
    assert_eq!(
        o.error.as_ref().unwrap().message,
        "capability cycle: cyc:a → cyc:b → cyc:a; a capability cannot call itself, directly or through others"
    );
    // Before spawning: a runner start would fail (`no_runner`), the code would not be the cycle's.
    assert_not_hung(took, ms(2_000), ms(20), "the cycle check");
    let o = run_caps(&caps, &catalog, "return await mcp.cyc.self()").await;
    assert_eq!(common::code(&o), "CAPABILITY_CYCLE");
}

#[tokio::test]
async fn unknown_names_fail_before_spawning_with_suggestions() {
    let (_d, store) = store();
    save(&store, "math:sum", "return 1");
    let caps = Capabilities::new(store, no_runner());
    let catalog = common::local_catalog();
    for (code, alternatives) in [
        ("await mcp.math.summ()", json!(["math:sum"])),
        ("await mcp.local.ecco({})", json!(["local:echo"])),
        ("await mcp['nothing']['here']()", json!([])),
    ] {
        let o = run_caps(&caps, &catalog, code).await;
        assert_eq!(common::code(&o), "TOOL_NOT_FOUND", "{code}: {o:?}");
        let e = o.error.unwrap();
        assert_eq!(json!(e.alternatives.unwrap()), alternatives, "{code}");
    }
    // Nothing unknown: it reaches spawning (and this runner does not exist).
    let o = run_caps(&caps, &catalog, "return await mcp.local.echo({})").await;
    assert_eq!(common::code(&o), "SANDBOX_UNAVAILABLE");
}

#[tokio::test]
async fn arguments_are_validated_against_the_schema() {
    let (_d, store) = store();
    store
        .save_capability(&NewCapability {
            name: "math:double".into(),
            code: "return args.n * 2".into(),
            description: Some("Doubles n".into()),
            input_schema: Some(json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            })),
            ..Default::default()
        })
        .unwrap();
    let caps = Capabilities::new(store, common::runner());
    let catalog = common::local_catalog();
    let o = run_caps(
        &caps,
        &catalog,
        "const ok = await mcp.math.double({ n: 21 }); \
         let bad; try { await mcp.math.double({ n: 'x' }) } catch (e) { bad = [e.code, e.message] } \
         return [ok, bad]",
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result[0], json!(42));
    assert_eq!(o.result[1][0], json!("INVALID_ARGUMENTS"));
    let msg = o.result[1][1].as_str().unwrap();
    assert!(
        // Checked at the host's door (the same check as for MCP tools) before the capability runs.
        msg.starts_with("arguments of math:double do not match its inputSchema: /n: "),
        "{msg}"
    );
}

#[tokio::test]
async fn a_capability_is_bounded_by_its_callers_time_and_failures_propagate() {
    let (_d, store) = store();
    save(&store, "slow:loop", "while (true) {}");
    save(&store, "bad:throw", "throw new Error('broken inside')");
    let caps = Capabilities::new(store, common::runner());
    let catalog = common::local_catalog();
    let t = Instant::now();
    let o = caps
        .execute(
            &catalog,
            ExecRequest {
                request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
                    timeout_ms: 60_000,
                    call_timeout_ms: 1000,
                    cpu_ms: 60_000,
                    ..Limits::default()
                }),
                code: "try { await mcp.slow.loop() } catch (e) { return e.code }".into(),
                ..Default::default()
            },
        )
        .await;
    // The capability got at most the caller's per-call time, ended as TOOL_TIMEOUT for the
    // caller, and the caller went on (had it the caller's 60 s, the bound below would catch it).
    assert_not_hung(
        t.elapsed(),
        ms(20_000),
        ms(1_500),
        "a capability's call timeout",
    );
    assert_eq!(o.result, json!("TOOL_TIMEOUT"), "{o:?}");
    let o = run_caps(
        &caps,
        &catalog,
        "try { await mcp.bad.throw() } catch (e) { return [e.code, e.message] }",
    )
    .await;
    assert_eq!(o.result[0], json!("RUNTIME_ERROR"), "{o:?}");
    assert!(o.result[1]
        .as_str()
        .unwrap()
        .starts_with("capability bad:throw failed: "));
    assert_eq!(o.traces[1].kind, TraceKind::CapabilityEnd);
    assert_eq!(o.traces[1].success, Some(false));
}

#[tokio::test]
async fn the_sandbox_front_door_resolves_capabilities_and_learns() {
    let (_d, store) = store();
    save(
        &store,
        "math:sum",
        "return [1,2,3,4,5].reduce((a, n) => a + n, 0)",
    );
    let sandbox = mcp_sandbox::Sandbox::new(
        std::sync::Arc::new(common::local_catalog()),
        common::runner(),
        mcp_sandbox::QueueOptions {
            pool_size: 0,
            ..Default::default()
        },
    )
    .with_learning(Capabilities::new(store.clone(), common::runner()));
    let o = sandbox
        .execute(ExecRequest {
            code: "await mcp.local.echo({}); return await mcp.math.sum()".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(o.result, json!(15), "{o:?}");
    let g = store.graph(None).unwrap();
    assert_eq!(g.edges.len(), 1);
    assert_eq!(
        (
            g.edges[0].source.as_str(),
            g.edges[0].target.as_str(),
            g.edges[0].count
        ),
        ("local:echo", "math:sum", 1)
    );
    // `serve` does not set the CLI's last execution.
    assert!(store.last_execution().unwrap().is_none());
}
