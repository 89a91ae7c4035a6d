//! The JS CPU budget holds everywhere: in the script's own code, in an endless chain of promise
//! jobs, and — through the kernel's CPU-time rlimit, the backstop — in one long native operation
//! the engine cannot interrupt. Each ends with CPU_LIMIT, never with the wall clock or as a crash.

use crate::common;
use common::*;
use mcp_sandbox::Limits;
use std::time::Instant;

fn limits(cpu_ms: u64, memory_mb: u64) -> Limits {
    Limits {
        cpu_ms,
        memory_mb,
        timeout_ms: 20_000,
        ..Limits::default()
    }
}

#[tokio::test]
async fn endless_promise_job_chains_hit_the_cpu_limit_not_the_wall_clock() {
    let catalog = local_catalog();
    // Chains whose heap stays flat: only the CPU budget can end them.
    for script in [
        "const f = () => { Promise.resolve().then(f) }; f(); await new Promise(() => {})",
        "const f = async () => { await null; f(); }; f(); await new Promise(() => {})",
        "const f = () => queueMicrotask(f); f(); await new Promise(() => {})",
        "const f = () => { Promise.resolve().then(f) }; f(); return 1",
    ] {
        let t = Instant::now();
        let o = run_with(&catalog, script, limits(300, 128)).await;
        let took = t.elapsed();
        assert_eq!(code(&o), "CPU_LIMIT", "{script}: {:?}", o.error);
        // 300 ms of CPU: the code says which budget ended it; far below the 20 s wall clock.
        assert_not_hung(took, ms(30_000), ms(2_000), script);
    }
}

#[tokio::test]
async fn a_growing_promise_chain_hits_a_budget_not_the_wall_clock() {
    let catalog = local_catalog();
    // The issue's script: each `then(f)` adopts the next promise, so the chain also grows the
    // heap; which budget it meets first depends on the build's speed (a debug runner meets the
    // 800 ms CPU budget, a release runner the 128 MiB heap). Either way it ends by a budget,
    // never at the wall clock (as it did) or as DEADLOCK (the job that ran out of memory is
    // dropped by QuickJS and the queue drains).
    let issue = "const f = () => Promise.resolve().then(f); f(); await new Promise(() => {})";
    let t = Instant::now();
    let o = run_with(&catalog, issue, limits(800, 128)).await;
    assert!(
        ["CPU_LIMIT", "MEMORY_LIMIT"].contains(&code(&o)),
        "{:?}",
        o.error
    );
    assert_not_hung(t.elapsed(), ms(40_000), ms(4_000), "the growing chain");
}

#[tokio::test]
async fn the_kernel_cpu_rlimit_backstop_is_reported_as_cpu_limit() {
    // One typed-array sort of 64 Mi doubles (~7 s of CPU in a release build) is a single native call: QuickJS's interrupt handler
    // never runs inside it, so only the kernel's RLIMIT_CPU (soft limit ceil(cpu_ms/1000)+1 s =
    // 2 s here) stops it, with SIGXCPU. Bounded by that limit: ~2 s of CPU. The budget (1 s)
    // leaves the filling loops room on a loaded machine (at 200 ms they were sometimes stopped by
    // the interrupt handler first, before the sort began).
    let code = "const n = 1 << 16, reps = 1024;
        const small = new Float64Array(n);
        for (let i = 0; i < n; i++) small[i] = (i * 7919) % 1000003;
        const big = new Float64Array(n * reps);
        for (let r = 0; r < reps; r++) big.set(small, r * n);
        big.sort(); big.reverse(); big.sort();
        return big[0];";
    let o = run_with(&local_catalog(), code, limits(1000, 1024)).await;
    let e = o.error.as_ref().expect("the sort must be stopped");
    assert_eq!(e.code.as_str(), "CPU_LIMIT", "{e:?}");
    assert_eq!(e.signal, Some(libc::SIGXCPU), "{e:?}");
    assert!(e.message.contains("--cpu-ms"), "{}", e.message);
}
