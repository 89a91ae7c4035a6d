//! Load: 1,000 executions submitted at once through `Sandbox` (fast, slow, crashing, looping) all
//! finish with the right outcome; fds, threads, child processes and RSS return to their baseline
//! afterwards. (The only test in this file, so nothing else moves the baseline.)

use crate::common;
use common::*;
use mcp_sandbox::{
    Catalog, ExecError, ExecRequest, InProcessServer, Limits, Outcome, QueueOptions, Sandbox,
    SpawnHook,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Runners = Arc<Mutex<HashMap<u64, Arc<RunnerHandle>>>>;

/// `local.*` plus `crash.kill {token}`: SIGKILLs the runner of the execution with that token.
fn catalog(runners: Runners) -> Catalog {
    let mut c = local_catalog();
    let crash = InProcessServer::new("crash").tool(
        "kill",
        "SIGKILLs the caller's runner",
        json!({"type": "object"}),
        move |args: Value| {
            let runners = runners.clone();
            async move {
                let token = args["token"].as_u64().unwrap_or(u64::MAX);
                let handle = runners.lock().unwrap().get(&token).cloned();
                if let Some(h) = handle {
                    h.signal(libc::SIGKILL);
                }
                Ok::<Value, ExecError>(json!("killed"))
            }
        },
    );
    c.add(Arc::new(crash)).unwrap();
    c
}

fn request(i: u64, runners: &Runners) -> ExecRequest {
    let limits = Limits {
        timeout_ms: 20_000,
        cpu_ms: 50,
        ..Default::default()
    };
    let code = match i % 4 {
        0 => format!("return (await mcp.local.echo({{ i: {i} }})).i"),
        1 => format!("await mcp.local.sleep({{ ms: 100 }}); return {i}"),
        2 => format!("await mcp.crash.kill({{ token: {i} }}); while (true) {{}}"),
        _ => "while (true) {}".to_string(),
    };
    let handle = Arc::new(RunnerHandle::default());
    runners.lock().unwrap().insert(i, handle.clone());
    ExecRequest {
        request: mcp_sandbox::context::RequestContext::default().with_limits(limits),
        code,
        on_spawn: Some(SpawnHook::new(move |pid| handle.attach(pid))),
        ..Default::default()
    }
}

fn check(i: u64, o: &Outcome) {
    match i % 4 {
        0 | 1 => {
            assert!(o.success, "{i}: {o:?}");
            assert_eq!(o.result, json!(i));
        }
        2 => {
            assert_eq!(code(o), "RUNNER_CRASHED", "{i}: {o:?}");
            assert_eq!(o.error.as_ref().unwrap().signal, Some(libc::SIGKILL));
        }
        _ => assert_eq!(code(o), "CPU_LIMIT", "{i}: {o:?}"),
    }
}

struct Usage {
    fds: usize,
    threads: u64,
    children: usize,
    rss_kib: u64,
}

fn usage() -> Usage {
    Usage {
        fds: open_fds(),
        threads: threads(),
        children: child_pids().len(),
        rss_kib: rss_kib(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_executions_at_once_then_back_to_baseline() {
    let runners: Runners = Arc::default();
    let sandbox = Sandbox::new(
        Arc::new(catalog(runners.clone())),
        runner(),
        QueueOptions {
            max_running: 8,
            max_queued: 1_000,
            pool_size: 0,
        },
    );
    // Warm up every path so lazily created fds, threads and allocator arenas exist.
    for i in 0..8 {
        let o = sandbox.execute(request(i, &runners)).await;
        check(i, &o);
    }
    runners.lock().unwrap().clear();
    let before = usage();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..1_000u64 {
        let s = sandbox.clone();
        let req = request(i, &runners);
        tasks.push(tokio::spawn(async move { (i, s.execute(req).await) }));
    }
    let mut max_inflight = 0;
    for t in tasks {
        max_inflight = max_inflight.max(sandbox.in_flight());
        let (i, o) = t.await.unwrap();
        check(i, &o);
    }
    let took = t.elapsed();
    runners.lock().unwrap().clear();
    assert_eq!(sandbox.in_flight(), 0);
    // Threads may linger briefly (tokio's blocking pool); give them time to go. Runners are
    // killed and reaped in the background once their result has arrived (issue 18).
    let end = Instant::now() + Duration::from_secs(15);
    let mut after = usage();
    while (after.threads > before.threads || after.fds > before.fds || after.children > 0)
        && Instant::now() < end
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = usage();
    }
    eprintln!(
        "1000 executions in {took:?}; fds {}→{}, threads {}→{}, children {}→{}, RSS {}→{} KiB",
        before.fds,
        after.fds,
        before.threads,
        after.threads,
        before.children,
        after.children,
        before.rss_kib,
        after.rss_kib
    );
    assert_eq!(after.children, 0, "runners left behind: {:?}", child_pids());
    assert!(
        zygote_pids().len() <= 1,
        "one zygote per sandbox: {:?}",
        zygote_pids()
    );
    assert!(after.fds <= before.fds, "fds leaked");
    assert!(after.threads <= before.threads, "threads leaked");
    // Outcomes are dropped; what the allocator keeps must stay small (not 1,000 outcomes' worth).
    assert!(
        after.rss_kib <= before.rss_kib + 32 * 1024,
        "RSS grew by {} KiB",
        after.rss_kib.saturating_sub(before.rss_kib)
    );
}
