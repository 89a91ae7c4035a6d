//! MCP server faults: a server that dies mid-call (it exits, or is SIGKILLed from outside) fails
//! that call with `TOOL_ERROR` naming the server, the other servers keep working, and the server
//! is restarted for later calls. A server's `notifications/tools/list_changed` makes the next
//! execution see the new tool list.

use crate::common;
use common::*;
use mcp_sandbox::Catalog;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Two fixture servers, `fixture` and `other`, plus the in-process `local`.
async fn two_servers() -> Catalog {
    let mut c = mcp_catalog(
        json!({
            // Both confined (the default): the tests find the fixture's process on the host
            // from its `pid_ns` answer (tests/common/server_process.rs).
            "fixture": {"command": bin("fixture-mcp-server"), "args": []},
            "other": {"command": bin("fixture-mcp-server"), "args": ["--name", "other"]},
        }),
        Duration::from_secs(20),
    )
    .await;
    c.add(Arc::new(local_server())).unwrap();
    c
}

/// The host pid of the process that answers `mcp.fixture` now (it is confined: the pid it
/// sees is one of its own PID namespace, so it says who it is and the test finds it).
async fn fixture_pid(catalog: &Catalog) -> u32 {
    let o = run(catalog, "return await mcp.fixture.pid_ns({})").await;
    assert!(o.success, "{o:?}");
    server_process(&o.result)
        .unwrap_or_else(|| panic!("no live process on the host is {}", o.result))
}

const SETTLED: &str = "
    const [dead, alive] = await Promise.allSettled([CALL, mcp.other.echo({ message: 'still here' })]);
    return { code: dead.reason.code, message: dead.reason.message, tool: dead.reason.tool, alive: alive.value };
";

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_exits_mid_call_is_reported_and_restarted() {
    let catalog = two_servers().await;
    let before = fixture_pid(&catalog).await;
    let o = run(&catalog, &SETTLED.replace("CALL", "mcp.fixture.crash({})")).await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result["code"], "TOOL_ERROR");
    assert_eq!(o.result["tool"], "fixture:crash");
    assert_eq!(o.result["alive"], "still here");
    let message = o.result["message"].as_str().unwrap();
    assert!(
        message.starts_with("MCP server 'fixture' died during the call"),
        "{message}"
    );
    assert!(
        message.contains("crash requested"),
        "stderr tail: {message}"
    );
    assert!(message.contains("restarted for the next call"), "{message}");
    // Later calls go to a new process.
    let after = fixture_pid(&catalog).await;
    assert_ne!(before, after, "the server was not restarted");
    let o = run(&catalog, "return await mcp.fixture.count({})").await;
    assert_eq!(o.result, json!("1"), "a fresh process counts from 1: {o:?}");
    catalog.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_from_outside_mid_call_is_reported_and_restarted() {
    let catalog = two_servers().await;
    let pid = fixture_pid(&catalog).await;
    // What the catalog started and must reap: the `bwrap` above the server.
    let child = my_child_above(pid).expect("the server runs under a child of this process");
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        // SAFETY: kill(2) on the pid of a live descendant (its parent, bubblewrap's init in
        // the server's PID namespace, reaps it only after it ended).
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let o = run(
        &catalog,
        &SETTLED.replace("CALL", "mcp.fixture.sleep({ ms: 5000 })"),
    )
    .await;
    killer.await.unwrap();
    assert!(o.success, "{o:?}");
    assert_eq!(o.result["code"], "TOOL_ERROR");
    assert_eq!(o.result["alive"], "still here");
    let message = o.result["message"].as_str().unwrap();
    assert!(
        message.contains("MCP server 'fixture' died during the call"),
        "{message}"
    );
    let o = run(&catalog, "return await mcp.fixture.add({ a: 1, b: 2 })").await;
    assert_eq!(o.result, json!({"sum": 3}), "{o:?}");
    assert_ne!(fixture_pid(&catalog).await, pid);
    // The dead server and the bwrap above it were reaped (no zombie), and shutdown ends the
    // new one.
    assert!(
        !child_pids().contains(&child),
        "the killed server's bwrap {child} is a zombie"
    );
    assert!(
        process_gone(pid, Duration::from_secs(5)),
        "the killed server {pid} is still there"
    );
    let new_pid = fixture_pid(&catalog).await;
    let new_child = my_child_above(new_pid).expect("the new server's bwrap");
    catalog.shutdown().await;
    assert!(
        !child_pids().contains(&new_child),
        "shutdown left the server's bwrap {new_child} running"
    );
    assert!(
        process_gone(new_pid, Duration::from_secs(5)),
        "shutdown left the server {new_pid} running"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_tool_list_is_seen_by_the_next_execution() {
    let catalog = fixture_catalog().await;
    let has_late = |c: &Catalog| {
        c.tools()
            .iter()
            .any(|t| t.qualified() == "fixture:late_tool")
    };
    assert!(!has_late(&catalog));
    let o = run(&catalog, "return await mcp.fixture.late_tool({})").await;
    assert_eq!(code(&o), "TOOL_NOT_FOUND", "{o:?}");
    let o = run(&catalog, "return await mcp.fixture.list_changed({})").await;
    assert_eq!(o.result, json!("ok"), "{o:?}");
    assert!(has_late(&catalog), "the catalog did not re-read the list");
    let o = run(&catalog, "return await mcp.fixture.late_tool({})").await;
    assert_eq!(o.result, json!("late"), "{o:?}");
    catalog.shutdown().await;
}
