//! Values nested up to 1,000 levels cross the sandbox boundary both ways (results and tool
//! arguments runner → host, tool results host → runner); deeper ones are refused with
//! LIMIT_EXCEEDED naming the depth and where — never PROTOCOL_ERROR, which means a broken runner.

use crate::common;
use common::*;
use mcp_sandbox::{Catalog, ExecError, InProcessServer};
use serde_json::{json, Value};
use std::sync::Arc;

/// `[[…[1]…]]` nested `n` levels, built without recursion.
fn nested(n: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..n {
        v = Value::Array(vec![v]);
    }
    v
}

/// `local.echo` plus `deep.make {depth}`, which returns a value nested `depth` levels.
fn catalog() -> Catalog {
    let mut c = local_catalog();
    let deep = InProcessServer::new("deep").tool(
        "make",
        "Returns [[…1…]] nested `depth` levels",
        json!({"type": "object"}),
        |args| async move {
            Ok::<Value, ExecError>(nested(args["depth"].as_u64().unwrap_or(0) as usize))
        },
    );
    c.add(Arc::new(deep)).unwrap();
    c
}

const DEPTH_OF: &str =
    "const depth = (v) => { let d = 0; while (Array.isArray(v)) { v = v[0]; d++; } return d; };
    const nest = (n) => { let v = 1; for (let i = 0; i < n; i++) v = [v]; return v; };";

#[tokio::test]
async fn results_nest_to_1000_levels_and_deeper_is_limit_exceeded() {
    let c = catalog();
    let o = run(&c, &format!("{DEPTH_OF} return nest(1000)")).await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result, nested(1000));
    let o = run(&c, &format!("{DEPTH_OF} return nest(1001)")).await;
    let e = o.error.expect("too deep");
    assert_eq!(e.code.as_str(), "LIMIT_EXCEEDED", "{e:?}");
    assert!(
        e.message.contains("result is nested 1001 levels deep"),
        "{}",
        e.message
    );
    assert!(e.message.contains("1000"), "{}", e.message);
}

#[tokio::test]
async fn tool_arguments_and_tool_results_nest_to_1000_levels_both_ways() {
    let c = catalog();
    // Arguments {v: <999 levels>} are 1,000 deep; echo sends them back into the script.
    let o = run(
        &c,
        &format!(
            "{DEPTH_OF} const r = await mcp.local.echo({{ v: nest(999) }}); return depth(r.v)"
        ),
    )
    .await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result, 999);
    // One more level: refused in the script, catchable, with the depth and the tool named.
    let o = run(
        &c,
        &format!(
            "{DEPTH_OF} try {{ await mcp.local.echo({{ v: nest(1000) }}); return 'sent' }}
             catch (e) {{ return [e.code, e.message, e.tool] }}"
        ),
    )
    .await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result[0], "LIMIT_EXCEEDED");
    assert!(
        o.result[1]
            .as_str()
            .unwrap()
            .contains("nested 1001 levels deep"),
        "{}",
        o.result
    );
    assert_eq!(o.result[2], "local:echo");
    // A tool result of 1,000 levels reaches the script; 1,001 levels fails that call only.
    let o = run(
        &c,
        &format!("{DEPTH_OF} return depth(await mcp.deep.make({{ depth: 1000 }}))"),
    )
    .await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result, 1000);
    let o = run(
        &c,
        "try { await mcp.deep.make({ depth: 1001 }); return 'received' }
         catch (e) { return [e.code, e.message] }",
    )
    .await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result[0], "LIMIT_EXCEEDED", "{}", o.result);
    assert!(
        o.result[1]
            .as_str()
            .unwrap()
            .contains("deep:make is nested 1001 levels deep"),
        "{}",
        o.result
    );
}
