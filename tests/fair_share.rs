//! One principal cannot starve the others (issue 56 item 1), with the default configuration:
//! alice floods `serve --http` with 1,000 `execute_code` tasks (MCP 2026-07-28, raw requests)
//! whose scripts wait on a fixture call that never ends by itself. Only her fair share is
//! admitted (running or queued); the rest are refused at once with `LIMIT_EXCEEDED` naming
//! the cap and who may raise it. Bob's `return 1` then waits for a runner slot behind her
//! queued executions; when one of her running tasks is cancelled, the freed slot goes to bob
//! (the principals are served in turn), not to her next queued execution: bob's execution
//! completes while all her others are still working. Order, not time: on a first-come queue
//! bob would wait for her whole queue (and, with 1,000 queued, be refused as "busy").

use crate::common::assert_not_hung;
use crate::serve_support::http::{exchange, start_http_state};
use crate::serve_support::modern::{call, execute};
use crate::serve_support::team::create_token;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// The default share of one principal (`sandbox.fair_share.per_principal`).
const SHARE: usize = 32;
const FLOOD: usize = 1000;

async fn get(addr: &str, token: &str, task: &str) -> Value {
    call(addr, token, "tasks/get", json!({"taskId": task}), true).await
}

/// `mcp_sandbox_executions_queued` from `/metrics`.
async fn queued(addr: &str, token: &str) -> u64 {
    let req = format!(
        "GET /metrics HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\nconnection: close\r\n\r\n"
    );
    let a = exchange(addr, req.as_bytes()).await;
    a.body
        .lines()
        .find_map(|l| l.strip_prefix("mcp_sandbox_executions_queued "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no queue gauge: {a:?}")) as u64
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_tasks_gets_its_share_and_another_principal_is_served_in_turn() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}, "limits": {"timeout_ms": 600000, "call_timeout_ms": 600000}},
    });
    let g = start_http_state(config, None, &[]).await;
    let alice = create_token(Path::new(&g.state), "alice", &[]);
    let bob = create_token(Path::new(&g.state), "bob", &[]);
    let addr = g.addr.clone();
    // The flood, 16 requests at a time.
    let flood = "await mcp.fixture.sleep({ms: 600000}); return 'flood'";
    let mut answers = Vec::new();
    for _ in 0..FLOOD / 16 + 1 {
        let n = (FLOOD - answers.len()).min(16);
        if n == 0 {
            break;
        }
        let batch = (0..n).map(|_| execute(&addr, &alice, flood, true));
        answers.extend(futures::future::join_all(batch).await);
    }
    assert_eq!(answers.len(), FLOOD);
    let tasks: Vec<String> = answers
        .iter()
        .filter(|a| a["resultType"] == "task")
        .map(|a| a["taskId"].as_str().unwrap().to_string())
        .collect();
    let refused: Vec<&Value> = answers
        .iter()
        .filter(|a| a["resultType"] != "task")
        .collect();
    assert_eq!(
        tasks.len(),
        SHARE,
        "her share is admitted: {:?}",
        refused.first()
    );
    assert_eq!(refused.len(), FLOOD - SHARE);
    for r in &refused {
        let error = &r["structuredContent"]["error"];
        assert_eq!(r["isError"], json!(true), "{r}");
        assert_eq!(error["code"], json!("LIMIT_EXCEEDED"), "{r}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("token:alice has 32 executions running or queued")
                && message.contains("its cap is 32 (sandbox.fair_share.per_principal")
                && message.contains("the gateway's operator may raise the cap"),
            "{message}"
        );
        assert!(
            r["structuredContent"].get("session").is_none(),
            "no handle for a refusal: {r}"
        );
    }
    // Wait until every runner slot holds one of her executions (its call in flight).
    let slots = 4 * std::thread::available_parallelism().map_or(2, |n| n.get());
    let start = Instant::now();
    let running: Vec<String> = loop {
        let mut running = Vec::new();
        for t in &tasks {
            if get(&addr, &alice, t).await["statusMessage"] == "0 tool calls done, 1 in flight" {
                running.push(t.clone());
            }
        }
        if running.len() == slots.min(SHARE) {
            break running;
        }
        assert_not_hung(
            start.elapsed(),
            Duration::from_secs(120),
            Duration::from_secs(10),
            "the flood's first executions starting",
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let waiting = (SHARE - running.len()) as u64;
    assert_eq!(queued(&addr, &bob).await, waiting);
    // Bob's execution, queued behind hers.
    let (bob_addr, bob_token) = (addr.clone(), bob.clone());
    let bob_run =
        tokio::spawn(async move { execute(&bob_addr, &bob_token, "return 1", false).await });
    let start = Instant::now();
    while queued(&addr, &bob).await != waiting + 1 {
        assert_not_hung(
            start.elapsed(),
            Duration::from_secs(60),
            Duration::from_secs(2),
            "bob's execution reaching the queue",
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // One of her running tasks ends: its slot goes to bob, not to her next one.
    let cancelled = call(
        &addr,
        &alice,
        "tasks/cancel",
        json!({"taskId": running[0]}),
        true,
    )
    .await;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let started = Instant::now();
    let bob_answer = tokio::time::timeout(Duration::from_secs(120), bob_run)
        .await
        .expect("bob's execution was not served in its turn")
        .unwrap();
    assert_not_hung(
        started.elapsed(),
        Duration::from_secs(120),
        Duration::from_secs(3),
        "bob's execution",
    );
    assert_eq!(
        bob_answer["structuredContent"]["success"],
        json!(true),
        "{bob_answer}"
    );
    assert_eq!(
        bob_answer["structuredContent"]["result"],
        json!(1),
        "{bob_answer}"
    );
    // Every other execution of hers is still working: bob went before all her queued ones.
    assert_eq!(
        get(&addr, &alice, &running[0]).await["status"],
        json!("cancelled")
    );
    for t in &tasks[..] {
        if *t == running[0] {
            continue;
        }
        let status = get(&addr, &alice, t).await;
        assert_eq!(status["status"], json!("working"), "{status}");
    }
}
