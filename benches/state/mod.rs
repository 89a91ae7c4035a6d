//! The session state's keys of the benchmark (issue 27), run alone with
//! `cargo bench --bench sandbox -- state`:
//!
//! - `state_store_load_us`: one `store(key, value)` of a 1 KiB value followed by `load(key)`, from
//!   500 pairs in one pooled execution (timed inside the script with `performance.now()`): two
//!   round trips to the host and two write transactions on the state file (WAL).
//! - `state_pooled_exec_ms`: `return 1+1` on a pooled runner of a sandbox with session state and
//!   a session on the request, against the same on a sandbox without state, in the same run
//!   (`state_pooled_added_ms`: the p50 difference; the state globals are in every runner's
//!   prelude either way, so `pooled_exec_ms` also measures them).

use super::{bench_limits, percentiles, round, wait_full};
use mcp_sandbox::context::session::{SessionOptions, SessionScope};
use mcp_sandbox::context::RequestContext;
use mcp_sandbox::exec::state::SessionState;
use mcp_sandbox::store::Store;
use mcp_sandbox::{Catalog, ExecRequest, QueueOptions, RunnerCommand, Sandbox};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAIRS: usize = 500;

fn request(code: &str, session: bool) -> ExecRequest {
    let request = RequestContext::default().with_limits(bench_limits());
    ExecRequest {
        request: if session {
            request.with_session(SessionScope::new("default", "local", "bench"))
        } else {
            request
        },
        code: code.into(),
        ..Default::default()
    }
}

/// Milliseconds of `n` pooled `return 1+1` on `sandbox`.
async fn pooled_ms(sandbox: &Sandbox, session: bool, n: usize, pool: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        wait_full(sandbox, pool).await;
        let t = Instant::now();
        let o = sandbox.execute(request("return 1+1", session)).await;
        assert!(o.success, "{o:?}");
        v.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    v
}

pub async fn bench(runner: &RunnerCommand) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("state.db")).expect("state");
    let pool = 4;
    let options = || QueueOptions {
        pool_size: pool,
        ..Default::default()
    };
    let catalog = Arc::new(Catalog::new());
    let plain = Sandbox::new(catalog.clone(), runner.clone(), options());
    let with_state = Sandbox::new(catalog, runner.clone(), options())
        .with_session_state(SessionState::new(store, SessionOptions::default()));

    wait_full(&with_state, pool).await;
    let code = format!(
        "const value = 'x'.repeat(1022); const us = [];
         for (let i = 0; i < {PAIRS}; i++) {{
           const t = performance.now();
           await store('k' + (i % 10), value);
           if ((await load('k' + (i % 10))) !== value) throw new Error('lost');
           us.push((performance.now() - t) * 1000);
         }}
         return us;"
    );
    let o = with_state.execute(request(&code, true)).await;
    assert!(o.success, "state benchmark failed: {o:?}");
    let pairs: Vec<f64> = o
        .result
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();

    // Interleaved in rounds so load on the machine hits both alike.
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..4 {
        without.extend(pooled_ms(&plain, false, 50, pool).await);
        with.extend(pooled_ms(&with_state, true, 50, pool).await);
    }
    plain.shutdown(Duration::from_secs(1)).await;
    with_state.shutdown(Duration::from_secs(1)).await;
    let (without, with) = (percentiles(without), percentiles(with));
    let added = with["p50"].as_f64().unwrap_or(0.0) - without["p50"].as_f64().unwrap_or(0.0);
    json!({
        "state_store_load_us": percentiles(pairs),
        "state_pooled_exec_ms": {"without_state": without, "with_session": with},
        "state_pooled_added_ms": round(added),
    })
}
