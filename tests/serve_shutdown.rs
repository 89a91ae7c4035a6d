//! Host shutdown of `mcp-sandbox serve` (the real binary, a real rmcp client over stdio, the
//! fixture MCP server, the real runner): on SIGINT/SIGTERM it stops taking executions, lets the
//! running ones finish within `--shutdown-grace-ms` (their callers get their answers), kills
//! runners after it (`SANDBOX_UNAVAILABLE` to the caller), shuts the MCP servers down and exits
//! 0, leaving none of its runner or MCP server processes behind (checked in /proc).

use crate::common::{assert_not_hung, ms};
use crate::serve_support;
use serde_json::json;
use serve_support::*;
use std::time::{Duration, Instant};

/// Waits until serve runs the fixture server and at least one runner; returns all its children.
async fn wait_for_children(pid: u32) -> Vec<(u32, String)> {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        let kids = children_of(pid);
        if kids.iter().any(|(_, c)| c == "sandbox-runner")
            // A confined server runs under bubblewrap: serve's child is `bwrap`.
            && kids
                .iter()
                .any(|(_, c)| c.starts_with("fixture-mcp") || c == "bwrap")
        {
            return kids;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("serve never started its runner and fixture server");
}

/// Waits until one of serve's runners has used 50 ms of CPU (it is running the script).
async fn wait_for_busy_runner(pid: u32) {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        let busy = children_of(pid).iter().any(|(p, c)| {
            c == "sandbox-runner" && stat(*p).is_some_and(|(_, _, _, ticks)| ticks >= 5)
        });
        if busy {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no runner started working");
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on our own live child.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

async fn exit_status(served: &mut Served) -> i32 {
    let status = tokio::time::timeout(Duration::from_secs(20), served.child.wait())
        .await
        .expect("serve did not exit within 20 s of the signal")
        .unwrap();
    status.code().unwrap_or(-1)
}

fn assert_gone(kids: &[(u32, String)]) {
    // Killed processes are reaped by serve before it exits; allow the kernel a moment.
    let end = Instant::now() + Duration::from_secs(2);
    let left = loop {
        let left: Vec<_> = kids.iter().filter(|(p, _)| alive(*p)).collect();
        if left.is_empty() || Instant::now() > end {
            break left;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(left.is_empty(), "processes outlived serve: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_while_idle_exits_0_and_leaves_no_process() {
    let mut served = start(&["--shutdown-grace-ms", "2000"]).await;
    let tools = served.client.peer().list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "execute_code"));
    let kids = wait_for_children(served.pid).await;
    let t = Instant::now();
    signal(served.pid, libc::SIGTERM);
    assert_eq!(exit_status(&mut served).await, 0, "{}", served.stderr());
    assert_not_hung(t.elapsed(), ms(5_000), ms(500), "the idle shutdown");
    assert_gone(&kids);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        served.stderr().contains("SIGTERM: shut down cleanly"),
        "{}",
        served.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_kills_an_execution_that_outlives_the_grace_period() {
    let mut served = start(&["--shutdown-grace-ms", "300"]).await;
    let peer = served.client.peer().clone();
    let call = tokio::spawn(async move {
        let mut p = rmcp::model::CallToolRequestParams::new("execute_code");
        p = p.with_arguments(
            json!({"code": "console.log('working'); while (true) {}"})
                .as_object()
                .unwrap()
                .clone(),
        );
        peer.call_tool(p).await
    });
    wait_for_busy_runner(served.pid).await;
    let kids = children_of(served.pid);
    assert!(kids
        .iter()
        .any(|(_, c)| c.starts_with("fixture-mcp") || c == "bwrap"));
    let t = Instant::now();
    signal(served.pid, libc::SIGTERM);
    let result = tokio::time::timeout(Duration::from_secs(15), call)
        .await
        .expect("the caller got no answer")
        .unwrap()
        .expect("the caller got a protocol error instead of the outcome");
    assert!(is_error(&result), "{result:?}");
    let outcome = structured(&result);
    assert_eq!(outcome["error"]["code"], "SANDBOX_UNAVAILABLE", "{outcome}");
    assert!(
        outcome["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{outcome}"
    );
    assert_eq!(outcome["logs"][0]["message"], "working", "{outcome}");
    assert_eq!(exit_status(&mut served).await, 0, "{}", served.stderr());
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(250),
        "grace 300 ms, took {took:?}"
    );
    assert_not_hung(took, ms(8_000), ms(800), "SIGTERM to exit");
    assert_gone(&kids);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_lets_a_running_execution_finish_and_refuses_new_ones() {
    let mut served = start(&["--shutdown-grace-ms", "8000"]).await;
    let peer = served.client.peer().clone();
    let call = tokio::spawn(async move {
        let mut p = rmcp::model::CallToolRequestParams::new("execute_code");
        p = p.with_arguments(
            json!({"code": "const s = await mcp.fixture.sleep({ ms: 50 });
                const end = Date.now() + 1500; while (Date.now() < end) {}
                return 'finished after ' + s"})
            .as_object()
            .unwrap()
            .clone(),
        );
        peer.call_tool(p).await
    });
    wait_for_busy_runner(served.pid).await;
    let kids = children_of(served.pid);
    signal(served.pid, libc::SIGINT);
    // While the running script finishes, a new execution is refused at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let late = served
        .call("execute_code", json!({"code": "return 1"}))
        .await
        .expect("the transport stays open during the grace period");
    assert!(is_error(&late), "{late:?}");
    assert_eq!(
        structured(&late)["error"]["code"],
        "SANDBOX_UNAVAILABLE",
        "{late:?}"
    );
    let result = tokio::time::timeout(Duration::from_secs(15), call)
        .await
        .expect("the caller got no answer")
        .unwrap()
        .expect("the caller got a protocol error instead of the outcome");
    assert!(!is_error(&result), "{result:?}");
    let outcome = structured(&result);
    assert_eq!(outcome["result"], "finished after slept 50 ms", "{outcome}");
    assert_eq!(exit_status(&mut served).await, 0, "{}", served.stderr());
    assert_gone(&kids);
}
