//! The tool graph after a sequence of real executions (real runner, in-process tools, SQLite):
//! stats and edges exactly as docs/learning.md specifies, including failures and aborted runs.

use crate::common;

use mcp_sandbox::exec::capability::Capabilities;
use mcp_sandbox::exec::learning::record;
use mcp_sandbox::store::{NewCapability, Store};
use mcp_sandbox::{Catalog, ErrorCode, ExecError, ExecRequest, InProcessServer, Limits};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

fn catalog() -> Catalog {
    let ok = |name: &str| {
        let name = name.to_string();
        move |_args: Value| {
            let name = name.clone();
            async move { Ok::<Value, ExecError>(json!(name)) }
        }
    };
    let mut c = Catalog::new();
    c.add(Arc::new(
        InProcessServer::new("fs")
            .tool("read", "reads", json!({"type": "object"}), ok("read"))
            .tool(
                "fail",
                "always fails",
                json!({"type": "object"}),
                |_| async {
                    Err::<Value, ExecError>(ExecError::new(ErrorCode::ToolError, "it failed"))
                },
            ),
    ))
    .unwrap();
    c.add(Arc::new(InProcessServer::new("memory").tool(
        "store",
        "stores",
        json!({"type": "object"}),
        ok("store"),
    )))
    .unwrap();
    c.add(Arc::new(common::local_server())).unwrap();
    c
}

async fn exec(caps: &Capabilities, catalog: &Catalog, code: &str, limits: Limits) -> String {
    let o = caps
        .execute(
            catalog,
            ExecRequest {
                request: mcp_sandbox::context::RequestContext::default().with_limits(limits),
                code: code.into(),
                ..Default::default()
            },
        )
        .await;
    record(&caps.store, &o, Some((code, Default::default()))).await;
    o.error.map(|e| e.code.to_string()).unwrap_or_default()
}

/// `(calls, successes, failures)` by tool, and edge counts by `a -> b`.
type Stats = BTreeMap<String, (i64, i64, i64)>;

fn snapshot(store: &Store) -> (Stats, BTreeMap<String, i64>) {
    let g = store.graph(None).unwrap();
    (
        g.tools
            .iter()
            .map(|t| (t.tool.clone(), (t.calls, t.successes, t.failures)))
            .collect(),
        g.edges
            .iter()
            .map(|e| (format!("{} -> {}", e.source, e.target), e.count))
            .collect(),
    )
}

fn map<V: Clone>(items: &[(&str, V)]) -> BTreeMap<String, V> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[tokio::test]
async fn stats_and_edges_after_a_sequence_of_executions() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).unwrap();
    let caps = Capabilities::new(store.clone(), common::runner());
    let catalog = catalog();
    let quick = Limits::default();

    // 1. One execution calling fs:read then memory:store, twice: the edge count is 2.
    let code = "await mcp.fs.read({}); await mcp.memory.store({}); \
                await mcp.fs.read({}); await mcp.memory.store({});";
    assert_eq!(exec(&caps, &catalog, code, quick).await, "");
    let (tools, edges) = snapshot(&store);
    assert_eq!(
        tools,
        map(&[("fs:read", (2, 2, 0)), ("memory:store", (2, 2, 0))])
    );
    assert_eq!(
        edges,
        map(&[
            ("fs:read -> memory:store", 2),
            ("memory:store -> fs:read", 1)
        ])
    );

    // 2. A failed call counts as a failure and is skipped: read → store links over it.
    let code = "await mcp.fs.read({}); try { await mcp.fs.fail({}) } catch (e) {} \
                await mcp.memory.store({});";
    assert_eq!(exec(&caps, &catalog, code, quick).await, "");

    // 3. A timed-out execution records its failures only: the read that succeeded before the
    //    timeout is not counted, the cut-off sleep is a failure.
    let code = "await mcp.fs.read({}); await mcp.local.sleep({ ms: 10000 });";
    let short = Limits {
        timeout_ms: 700,
        ..Limits::default()
    };
    assert_eq!(
        exec(&caps, &catalog, code, short).await,
        "EXECUTION_TIMEOUT"
    );

    // 4. A script that throws after its calls still records them (they succeeded).
    let code = "await mcp.memory.store({}); await mcp.fs.read({}); throw new Error('late');";
    assert_eq!(exec(&caps, &catalog, code, quick).await, "RUNTIME_ERROR");

    // 5. Failing before spawning (unknown tool) records nothing.
    assert_eq!(
        exec(&caps, &catalog, "await mcp.fs.nope()", quick).await,
        "TOOL_NOT_FOUND"
    );

    let (tools, edges) = snapshot(&store);
    assert_eq!(
        tools,
        map(&[
            ("fs:fail", (1, 0, 1)),
            ("fs:read", (4, 4, 0)),
            ("local:sleep", (1, 0, 1)),
            ("memory:store", (4, 4, 0)),
        ])
    );
    assert_eq!(
        edges,
        map(&[
            ("fs:read -> memory:store", 3),
            ("memory:store -> fs:read", 2)
        ])
    );

    let next = store.next_tools("fs:read").unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!((next[0].tool.as_str(), next[0].count), ("memory:store", 3));
    assert_eq!(next[0].probability, 1.0);
    let related = store.related_tools(&["memory:store".to_string()]).unwrap();
    assert_eq!(related, vec![("fs:read".to_string(), 1.0)]);
    let g = store.graph(Some("fs:fail")).unwrap();
    assert_eq!(g.tools.len(), 1);
    assert!(g.edges.is_empty());
}

#[tokio::test]
async fn a_capabilitys_calls_form_their_own_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).unwrap();
    store
        .save_capability(&NewCapability {
            name: "kb:save".into(),
            code: "await mcp.fs.read({}); await mcp.memory.store({}); return 1".into(),
            ..Default::default()
        })
        .unwrap();
    let caps = Capabilities::new(store.clone(), common::runner());
    let catalog = catalog();
    let code = "await mcp.local.echo({}); await mcp.kb.save(); await mcp.fs.read({});";
    assert_eq!(exec(&caps, &catalog, code, Limits::default()).await, "");
    let (tools, edges) = snapshot(&store);
    assert_eq!(
        tools,
        map(&[
            ("fs:read", (2, 2, 0)),
            ("kb:save", (1, 1, 0)),
            ("local:echo", (1, 1, 0)),
            ("memory:store", (1, 1, 0)),
        ])
    );
    // The script's sequence: echo → kb:save → read; inside kb:save: read → store. No edge
    // crosses from one sequence into the other.
    assert_eq!(
        edges,
        map(&[
            ("fs:read -> memory:store", 1),
            ("kb:save -> fs:read", 1),
            ("local:echo -> kb:save", 1),
        ])
    );
}
