//! A capability's nested execution is part of its caller's execution (issue 25, item 2), over
//! real HTTP with the official Python SDK and a principal's policy limits: the tool calls of
//! the whole tree count against one `max_calls`, its runners spend one `cpu_ms`, and however
//! many capabilities a script calls at once, the runners alive stay within the tree's bound and
//! the gateway's runner cap (counted among this test's own `serve` process's children).

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;
use std::time::{Duration, Instant};

fn save(name: &str, code: &str) -> Value {
    json!({"tool": "save_capability", "arguments": {"name": name, "code": code}})
}

/// Runner processes (not the zygote) that are children of `parent` now.
fn runners_of(parent: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            ppid == parent && state != "Z" && stat.contains(" (sandbox-runner) ")
        })
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_through_capabilities_count_against_the_callers_max_calls() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {
            "three": {"limits": {"max_calls": 3}, "save_capabilities": true}
        }}),
        &[],
    )
    .await;
    let t = create_token(&h.state, "frugal", &["--policy", "three"]);
    let nine = "const out = []; for (let i = 0; i < 9; i++) { try { await mcp.fixture.echo({message: 'x'}); out.push('ok') } catch (e) { out.push(e.code) } } return out";
    let outer = "const r = []; for (let i = 0; i < 3; i++) { try { r.push(await mcp.loop.nine({})) } catch (e) { r.push(e.code) } } return r";
    let r = results(&sdk(
        &url(&h),
        Some(&t),
        &json!([save("loop:nine", nine), {"code": outer}]),
    ));
    let out = &r[1]["out"];
    let mut first = vec![json!("ok"), json!("ok")];
    first.extend(std::iter::repeat_n(json!("LIMIT_EXCEEDED"), 7));
    // Call 1 is the capability, 2 and 3 its first echoes; the 4th call of the tree is refused,
    // and so is every later one, inside the capability or outside.
    assert_eq!(
        out["result"],
        json!([first, "LIMIT_EXCEEDED", "LIMIT_EXCEEDED"]),
        "{out}"
    );
    let ok_echoes = out["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["type"] == json!("tool_end")
                && e["tool"] == json!("fixture:echo")
                && e["success"] == json!(true)
        })
        .count();
    assert_eq!(ok_echoes, 2, "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn capabilities_spend_the_callers_cpu_budget() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {
            "lean": {"limits": {"cpu_ms": 200}, "save_capabilities": true}
        }}),
        &[],
    )
    .await;
    let t = create_token(&h.state, "lean", &["--policy", "lean"]);
    // A fixed amount of work, not a wall-clock loop (on a busy machine 150 ms of wall clock can
    // be far less CPU): 3,000,000 additions, 45-110 ms of CPU on this machine depending on the
    // day's host, well under the 200 ms budget alone, so no single burn can hit it. The
    // script burns until it fails: with one budget for the tree, a few burns use it up; with a
    // budget per capability (the bug this test guards against), all twenty would succeed.
    let burn = "let x = 0; for (let i = 0; i < 3000000; i++) { x += i } return x > 0";
    let outer = "for (let i = 0; i < 20; i++) { await mcp.spin.burn({}) } return 'done'";
    let r = results(&sdk(
        &url(&h),
        Some(&t),
        &json!([save("spin:burn", burn), {"code": outer}]),
    ));
    let out = &r[1]["out"];
    assert_eq!(out["error"]["code"], json!("CPU_LIMIT"), "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used up the 200 ms of CPU time (cpu_ms) they share"),
        "{out}"
    );
    // Whole burns, then the one the tree's budget ended; the script stopped there.
    let ends: Vec<(Value, Value)> = out["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == json!("capability_end"))
        .map(|e| (e["success"].clone(), e["error"]["code"].clone()))
        .collect();
    let whole = ends.len() - 1;
    assert!((1..19).contains(&whole), "{whole} whole burns: {out}");
    assert!(
        ends[..whole]
            .iter()
            .all(|e| *e == (json!(true), Value::Null)),
        "{out}"
    );
    assert_eq!(ends[whole], (json!(false), json!("CPU_LIMIT")), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_capabilities_stay_within_the_trees_and_the_gateways_runner_bounds() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {
            "one": {"max_concurrent": 1, "save_capabilities": true}
        }}),
        &[],
    )
    .await;
    let t = create_token(&h.state, "single", &["--policy", "one"]);
    let r = results(&sdk(
        &url(&h),
        Some(&t),
        &json!([save(
            "slow:nap",
            "await mcp.fixture.sleep({ms: 600}); return 1"
        )]),
    ));
    assert_eq!(r[0]["is_error"], json!(false), "{r:?}");
    let pid = h.pid;
    let idle = runners_of(pid);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                most = most.max(runners_of(pid));
                std::thread::sleep(Duration::from_millis(20));
            }
            most
        })
    };
    let started = Instant::now();
    let code = "const all = await Promise.all(Array.from({length: 12}, () => mcp.slow.nap({}))); return all.length";
    let r = results(&sdk(&url(&h), Some(&t), &json!([{"code": code}])));
    let took = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let most = watcher.join().unwrap();
    assert_eq!(r[0]["out"]["result"], json!(12), "{r:?}");
    // The pool's idle runners, plus the script's own and at most 4 capability runners at once
    // (the tree's bound; the gateway's cap, 4 per core, is larger here). Before the fix the
    // twelve ran at once.
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(
        most <= idle.max(2 * cores) + 1 + mcp_sandbox::context::tree::MAX_NESTED_RUNNERS,
        "{most} runners alive at once (idle: {idle})"
    );
    assert!(most <= idle.max(2 * cores) + 4 * cores, "{most}");
    // Twelve 600 ms naps four at a time take three rounds.
    assert!(took >= Duration::from_millis(1800), "{took:?}");
}
