//! `cargo bench --bench sandbox` (after `cargo build --release --workspace --bins`): measures the
//! real runner (locked down) and prints JSON, also written to `target/bench/sandbox.json`.
//!
//! - `cold_exec_ms`: a fresh runner executing `return 1+1`, spawn → outcome.
//! - `call_overhead_us`: one tool call round trip to an in-process echo tool, from 5,000
//!   sequential calls in one script (the gap between consecutive `tool_start` events: result sent →
//!   script resumes → next call arrives).
//! - `socketpair_round_trip_us`: no sandbox — two threads bouncing 32 bytes over a Unix
//!   socketpair with blocking reads: the floor this machine sets, in the same run, for any
//!   call that crosses to another process and back (two wake-ups). On a VM it moves with the
//!   host's load; compare `call_overhead_us` with it.
//! - `mcp_call_us`: the same through a real stdio MCP server (the rmcp fixture's `echo`).
//! - `runner_rss_kib`: the largest peak RSS of any runner (getrusage of reaped children).
//! - `runner_pss_kib`: the proportional set size of a pooled runner in the middle of an
//!   execution (it waits in a tool call while the tool reads its `/proc/<pid>/smaps_rollup`):
//!   pages shared with the zygote, the other runners and the page cache are counted once,
//!   divided among the processes that share them.
//! - `pooled_exec_ms`: `return 1+1` on a runner taken from a full pool (each sample waits until
//!   the pool has refilled, so it measures the pooled path, not a drained pool).
//! - `parallel_100_calls_ms`: one pooled execution doing 100 echo calls in one `Promise.all`.
//! - `execs_per_sec`: trivial executions per second with 1, 2 and 8 concurrent submitters through
//!   `Sandbox` (pool on, refills compete for the same 2 cores).
//! - `mcp_direct_call_us` and `mcp_call_added_pct`: the same fixture `echo` called directly with an
//!   rmcp client, and what going through the sandbox adds, in percent of the direct call.
//! - `calls_concurrent_{1k,10k,100k}_ms`: one execution starting N calls at once
//!   (`Promise.all`), through the in-process echo (`in_process`) and the stdio fixture server
//!   (`stdio`), with `per_call_us` = ms / N; the cost is linear when `per_call_us` stays flat.
//!   The stdio 100k run takes ~10 s on this machine; it is the longest step of the benchmark.
//! - `gateway_*`: `mcp-sandbox serve` end to end over HTTP and stdio (see `gateway/mod.rs`),
//!   with `gateway_http_added_ms` / `gateway_stdio_added_ms` (p50 over the pooled execution of
//!   this run; `_paced_` the same with the pool refilled before each request) and `gateway_http_8_clients_pct` (8 HTTP clients' executions/s in percent of the
//!   library's with 8 submitters).
//! - `audit_*` and `audited_*`: the audit log's costs (see `audit/mod.rs`).
//! - `store_postgres_exec_us` and `gateway_pg_execs_per_sec`: the PostgreSQL state store's time
//!   per execution, and executions/s through one and two gateways on one database (see
//!   `pg/mod.rs`; skipped, with `pg_skipped` saying why, without `initdb`).
//! - `ui_*`: another tenant's `execute_code` p50 while a principal polls the web view's list from
//!   six threads, beside its idle p50 (see `ui/mod.rs`).
//! - `policy_check_us`: the host's time to decide one call under 20 conditioned rules (see
//!   `policy/mod.rs`).
//! - `redaction_mb_per_s`: replacing sensitive values by placeholders in a 10 MiB result with
//!   100,000 matches (see `redaction/mod.rs`).
//! - `server_*`: a stdio MCP server's start (spawn → tools listed) and one call through it,
//!   confined against unconfined in the same run (see `servers/mod.rs`).
//! - `state_*`: session state's costs (`store` + `load` of 1 KiB; see `state/mod.rs`).
//! - `telemetry_added_us`: what exporting spans and counting metrics add to one pooled execution
//!   with a tool call, p50 on vs off (see `telemetry/mod.rs`).
//! - `timer_sleep_overhead_us`: what `await new Promise((r) => setTimeout(r, 1))` takes beyond its
//!   1 ms, from 300 sleeps in one execution (timed inside the script with `performance.now()`):
//!   the host-driven `sleep`/`wake` round trip and the tokio timer's rounding up to whole ms.
//!   `SANDBOX_BENCH_QUICK=1` runs only `cold_exec_ms`, `pooled_exec_ms` and this key.
//! - `python`: the Python engine beside JavaScript (benches/python).
//! - `scaling`: `[x, ms]` pairs — time of one execution vs number of sequential calls, vs the size
//!   of a tool result the script receives, and wall time of N executions submitted at once.

mod audit;
mod gateway;
mod only;
mod pg;
mod policy;
mod python;
mod redaction;
mod servers;
mod state;
mod telemetry;
mod timers;
mod ui;

use mcp_sandbox::config::Config;
use mcp_sandbox::tools::catalog::start_mcp_servers;
use mcp_sandbox::trace::TraceKind;
use mcp_sandbox::{
    Catalog, ExecError, ExecRequest, InProcessServer, Limits, Outcome, QueueOptions, RunnerCommand,
    Sandbox,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn release_bin(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let p = target.join("release").join(name);
    if !p.exists() {
        eprintln!(
            "{} is missing: run `cargo build --release --workspace --bins` first",
            p.display()
        );
        std::process::exit(2);
    }
    p
}

fn percentiles(mut xs: Vec<f64>) -> Value {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    json!({"p50": round(at(0.50)), "p99": round(at(0.99)), "n": xs.len()})
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Limits roomy enough for every benchmark script, with the default backstops (so pooled
/// runners fit).
fn bench_limits() -> Limits {
    Limits {
        max_calls: 100_000,
        timeout_ms: 600_000,
        // The result-size scaling goes up to an 8 MiB string (8 MiB + 2 bytes of JSON).
        max_tool_result_bytes: 16 * 1024 * 1024,
        ..Default::default()
    }
}

fn request(code: &str) -> ExecRequest {
    ExecRequest {
        request: mcp_sandbox::context::RequestContext::default().with_limits(bench_limits()),
        code: code.into(),
        ..Default::default()
    }
}

async fn exec(catalog: &Catalog, runner: &RunnerCommand, code: &str) -> Outcome {
    let o = mcp_sandbox::execute(catalog, runner, request(code)).await;
    assert!(o.success, "benchmark script failed: {o:?}");
    o
}

async fn pooled(sandbox: &Sandbox, code: &str) -> Outcome {
    let o = sandbox.execute(request(code)).await;
    assert!(o.success, "benchmark script failed: {o:?}");
    o
}

async fn wait_full(sandbox: &Sandbox, n: usize) {
    while sandbox.pool().map(|p| p.idle()).unwrap_or(n) < n {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

/// Milliseconds of `n` pooled `return 1+1`, each on a runner from a full pool.
async fn pooled_samples(sandbox: &Sandbox, pool_size: usize, n: usize) -> Vec<f64> {
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        wait_full(sandbox, pool_size).await;
        let t = Instant::now();
        pooled(sandbox, "return 1+1").await;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms
}

/// The pooled execution's p50 (ms) on a sandbox of its own (pool of 4, no tools).
async fn pooled_p50(runner: &RunnerCommand) -> f64 {
    let options = QueueOptions {
        pool_size: 4,
        ..Default::default()
    };
    let sandbox = Sandbox::new(Arc::new(Catalog::new()), runner.clone(), options);
    let mut ms = pooled_samples(&sandbox, 4, 300).await;
    if let Some(p) = sandbox.pool() {
        p.drain().await;
    }
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn ms_since(t: Instant) -> f64 {
    round(t.elapsed().as_secs_f64() * 1000.0)
}

/// Microseconds between consecutive `tool_start` events.
fn call_gaps_us(o: &Outcome) -> Vec<f64> {
    let starts: Vec<f64> = o
        .traces
        .iter()
        .filter(|t| t.kind == TraceKind::ToolStart)
        .map(|t| t.ts)
        .collect();
    starts.windows(2).map(|w| (w[1] - w[0]) * 1000.0).collect()
}

/// `Pss:` of `/proc/<pid>/smaps_rollup`, in KiB.
fn pss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Round trips of 32 bytes between two threads over a socketpair, in µs each.
fn socketpair_round_trips(n: usize) -> Vec<f64> {
    use std::io::{Read, Write};
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 32];
        while b.read_exact(&mut buf).is_ok() {
            if b.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let mut buf = [0u8; 32];
    let mut us = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        a.write_all(&buf).expect("ping");
        a.read_exact(&mut buf).expect("pong");
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    drop(a);
    let _ = echo.join();
    us
}

fn children_max_rss_kib() -> i64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru.ru_maxrss
    }
}

/// The in-process server `bench`: `echo` (its arguments back), `pss` (the PSS of the runner whose
/// pid `current` holds), `blob` (a string of `bytes` bytes).
fn bench_server(current: Arc<std::sync::atomic::AtomicU32>) -> InProcessServer {
    let seen = current;
    InProcessServer::new("bench")
        .tool(
            "echo",
            "Returns its arguments",
            json!({"type": "object"}),
            |args| async move { Ok::<Value, ExecError>(args) },
        )
        .tool(
            "pss",
            "The PSS in KiB of the runner that calls it",
            json!({"type": "object"}),
            move |_| {
                let pid = seen.load(std::sync::atomic::Ordering::SeqCst);
                async move { Ok::<Value, ExecError>(json!(pss_kib(pid))) }
            },
        )
        .tool(
            "blob",
            "Returns a string of `bytes` bytes",
            json!({"type": "object"}),
            |args| async move {
                let n = args["bytes"].as_u64().unwrap_or(0) as usize;
                Ok::<Value, ExecError>(Value::String("x".repeat(n)))
            },
        )
}

async fn bench() -> Value {
    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
    // The pid of the runner of the current execution (set by its spawn hook), for `pss`.
    let current = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let seen = current.clone();
    let mut local = Catalog::new();
    local.add(Arc::new(bench_server(seen))).expect("catalog");
    let local = Arc::new(local);

    // Warm-up: page cache, dynamic loader.
    for _ in 0..20 {
        exec(&local, &runner, "return 1+1").await;
    }
    let mut cold = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        exec(&local, &runner, "return 1+1").await;
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let rss = children_max_rss_kib();

    // Today's path for comparison: a new process per runner (fork of the host, exec, full
    // lockdown, new namespaces).
    let mut exec_runner = runner.clone();
    exec_runner.spawn = mcp_sandbox::exec::runner::SpawnMode::Exec;
    exec_runner.zygotes = Default::default();
    for _ in 0..20 {
        exec(&local, &exec_runner, "return 1+1").await;
    }
    let mut exec_cold = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        exec(&local, &exec_runner, "return 1+1").await;
        exec_cold.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    // The fork alone: zygote request → forked runner locked down, `ready`, verified in /proc.
    let mut fork_ms = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let r = mcp_sandbox::exec::runner::start(&runner, &bench_limits(), deadline, None)
            .await
            .expect("forked runner");
        fork_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        mcp_sandbox::exec::runner::retire(r);
    }

    let floor = socketpair_round_trips(20_000);
    let calls = "for (let i = 0; i < 5000; i++) await mcp.bench.echo({ i }); return 1";
    let o = exec(&local, &runner, calls).await;
    let overhead = call_gaps_us(&o);

    let fixture = release_bin("fixture-mcp-server");
    let config = Config::parse(
        &json!({"mcpServers": {"fixture": {"command": fixture}}}).to_string(),
        Path::new("/"),
    )
    .expect("config");
    let (servers, failed) = start_mcp_servers(&config, Duration::from_secs(20)).await;
    assert!(failed.is_empty(), "{failed:?}");
    let mut mcp = Catalog::new();
    for s in servers {
        mcp.add(s).expect("catalog");
    }
    let calls = "for (let i = 0; i < 2000; i++) await mcp.fixture.echo({ message: 'x' }); return 1";
    let o = exec(&mcp, &runner, calls).await;
    let mcp_gaps = call_gaps_us(&o);
    // The same call made directly with an rmcp client, no sandbox.
    let direct = {
        let provider = mcp.provider("fixture").expect("fixture provider").clone();
        let ctx = mcp_sandbox::CallContext::new(
            String::new(),
            std::time::Instant::now() + Duration::from_secs(600),
        );
        let mut v = Vec::new();
        for _ in 0..2000 {
            let t = Instant::now();
            provider
                .call("echo", json!({"message": "x"}), &ctx)
                .await
                .expect("direct call");
            v.push(t.elapsed().as_secs_f64() * 1e6);
        }
        v
    };
    let concurrent = concurrent_calls(&local, &mcp, &runner).await;
    mcp.shutdown().await;

    // Pooled executions.
    let pool_size = 4;
    let sandbox = Sandbox::new(
        local.clone(),
        runner.clone(),
        QueueOptions {
            pool_size,
            ..Default::default()
        },
    );
    let pooled_ms = pooled_samples(&sandbox, pool_size, 300).await;
    let mut pss = Vec::new();
    for _ in 0..50 {
        wait_full(&sandbox, pool_size).await;
        let seen = current.clone();
        let mut req = request("return await mcp.bench.pss({})");
        req.on_spawn = Some(mcp_sandbox::SpawnHook::new(move |pid| {
            seen.store(pid, std::sync::atomic::Ordering::SeqCst)
        }));
        let o = sandbox.execute(req).await;
        assert!(o.success, "benchmark script failed: {o:?}");
        let kib = o
            .result
            .as_f64()
            .expect("the runner's PSS (is /proc readable?)");
        pss.push(kib);
    }
    let mut parallel = Vec::new();
    for _ in 0..100 {
        wait_full(&sandbox, pool_size).await;
        let t = Instant::now();
        let o = pooled(
            &sandbox,
            "const r = await Promise.all(Array.from({length: 100}, (_, i) => mcp.bench.echo({ i }))); return r.length",
        )
        .await;
        assert_eq!(o.result, json!(100));
        parallel.push(t.elapsed().as_secs_f64() * 1000.0);
    }

    // Throughput with 1, 2 and 8 concurrent submitters, 2 s each.
    let mut eps = serde_json::Map::new();
    for submitters in [1usize, 2, 8] {
        wait_full(&sandbox, pool_size).await;
        let t = Instant::now();
        let window = Duration::from_secs(2);
        let tasks: Vec<_> = (0..submitters)
            .map(|_| {
                let s = sandbox.clone();
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while t.elapsed() < window {
                        pooled(&s, "return 1").await;
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let mut total = 0;
        for task in tasks {
            total += task.await.expect("submitter");
        }
        let rate = total as f64 / t.elapsed().as_secs_f64();
        eps.insert(submitters.to_string(), json!(rate.round()));
    }

    // How cost grows.
    let mut by_calls = Vec::new();
    for n in [1u64, 10, 100, 1_000, 10_000] {
        let t = Instant::now();
        pooled(
            &sandbox,
            &format!("for (let i = 0; i < {n}; i++) await mcp.bench.echo({{ i }}); return 1"),
        )
        .await;
        by_calls.push(json!([n, ms_since(t)]));
    }
    let mut by_size = Vec::new();
    for kib in [1u64, 16, 256, 1024, 8192] {
        let bytes = kib * 1024;
        wait_full(&sandbox, pool_size).await;
        let t = Instant::now();
        let o = pooled(
            &sandbox,
            &format!("return (await mcp.bench.blob({{ bytes: {bytes} }})).length"),
        )
        .await;
        assert_eq!(o.result, json!(bytes));
        by_size.push(json!([bytes, ms_since(t)]));
    }
    // 64 executions submitted at once, repeated.
    let mut c64 = Vec::new();
    for _ in 0..20 {
        wait_full(&sandbox, pool_size).await;
        let t = Instant::now();
        let runs: Vec<_> = (0..64)
            .map(|_| {
                let s = sandbox.clone();
                tokio::spawn(async move { pooled(&s, "return 1").await })
            })
            .collect();
        for r in runs {
            r.await.expect("execution");
        }
        c64.push(ms_since(t));
    }
    let mut by_concurrency = Vec::new();
    for n in [1usize, 4, 16, 64] {
        wait_full(&sandbox, pool_size).await;
        let t = Instant::now();
        let runs: Vec<_> = (0..n)
            .map(|_| {
                let s = sandbox.clone();
                tokio::spawn(
                    async move { pooled(&s, "return await mcp.bench.echo({ x: 1 })").await },
                )
            })
            .collect();
        for r in runs {
            r.await.expect("execution");
        }
        by_concurrency.push(json!([n, ms_since(t)]));
    }
    if let Some(p) = sandbox.pool() {
        p.drain().await;
    }

    let median = |v: &Vec<f64>| {
        let mut v = v.clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let added_pct = (median(&mcp_gaps) - median(&direct)) / median(&direct) * 100.0;

    let pooled_p50 = median(&pooled_ms);
    let library_8 = eps["8"].as_f64();
    let gateway = gateway::bench(&release_bin("mcp-sandbox"), Some(pooled_p50), library_8).await;

    let mut report = json!({
        "cold_exec_ms": percentiles(cold),
        "exec_spawned_cold_ms": percentiles(exec_cold),
        "zygote_fork_ms": percentiles(fork_ms),
        "concurrent_64_ms": percentiles(c64),
        "call_overhead_us": percentiles(overhead),
        "socketpair_round_trip_us": percentiles(floor),
        "mcp_call_us": percentiles(mcp_gaps),
        "runner_rss_kib": rss,
        "runner_pss_kib": percentiles(pss),
        "pooled_exec_ms": percentiles(pooled_ms),
        "parallel_100_calls_ms": percentiles(parallel),
        "execs_per_sec": eps,
        "mcp_direct_call_us": percentiles(direct),
        "mcp_call_added_pct": round(added_pct),
        "calls_concurrent": concurrent,
        "timer_sleep_overhead_us": timers::timer_sleep_overhead(&local, &runner).await,
        "scaling": {
            "calls": by_calls,
            "result_bytes": by_size,
            "concurrent_execs": by_concurrency,
        },
        "machine": {
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        },
    });
    let parts = [
        gateway,
        audit::bench(&runner).await,
        state::bench(&runner).await,
        telemetry::bench(&runner).await,
        ui::bench(&release_bin("mcp-sandbox")).await,
        policy::bench(),
        python::bench().await,
        redaction::bench().await,
        pg::bench().await,
        servers::bench().await,
    ];
    for part in parts {
        if let (Value::Object(r), Value::Object(a)) = (&mut report, part) {
            r.extend(a);
        }
    }
    report
}

/// One execution starting `n` calls at once: enough heap for `n` pending promises, and a wall
/// clock that bounds the benchmark.
async fn concurrent_once(catalog: &Catalog, runner: &RunnerCommand, call: &str, n: u64) -> f64 {
    let code = format!(
        "const ps = []; for (let i = 0; i < {n}; i++) ps.push({call}); return (await Promise.all(ps)).length"
    );
    let req = ExecRequest {
        request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
            max_calls: 1_000_000,
            memory_mb: 1024,
            timeout_ms: 120_000,
            ..Default::default()
        }),
        code,
        ..Default::default()
    };
    let t = Instant::now();
    let o = mcp_sandbox::execute(catalog, runner, req).await;
    assert!(o.success, "{n} concurrent calls failed: {:?}", o.error);
    assert_eq!(o.result, json!(n));
    ms_since(t)
}

/// `calls_concurrent_{1k,10k,100k}_ms` through the in-process echo and the stdio fixture.
async fn concurrent_calls(local: &Catalog, mcp: &Catalog, runner: &RunnerCommand) -> Value {
    let mut out = serde_json::Map::new();
    for (n, name) in [(1_000u64, "1k"), (10_000, "10k"), (100_000, "100k")] {
        let in_process = concurrent_once(local, runner, "mcp.bench.echo({ i })", n).await;
        let stdio = concurrent_once(mcp, runner, "mcp.fixture.echo({ message: 'x' })", n).await;
        out.insert(
            format!("calls_concurrent_{name}_ms"),
            json!({
                "in_process": round(in_process),
                "stdio": round(stdio),
                "in_process_per_call_us": round(in_process * 1000.0 / n as f64),
                "stdio_per_call_us": round(stdio * 1000.0 / n as f64),
            }),
        );
    }
    Value::Object(out)
}

fn main() {
    // `cargo bench` passes `--bench`. `gateway`, `audit`, `state`, `policy`, `redaction`, `telemetry`, `ui` or `pg` as an argument measures only those
    // keys (printed, not written to target/bench); other filter arguments are ignored.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Some(report) = only::run(&rt) {
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
        return;
    }
    // On a runtime worker, like `Sandbox::execute` runs sessions (no hop to block_on's thread).
    if std::env::var_os("SANDBOX_BENCH_QUICK").is_some() {
        let report = rt
            .block_on(async { tokio::spawn(timers::quick()).await })
            .expect("benchmark task");
        println!("{report:#}");
        return;
    }
    let report = rt
        .block_on(async { tokio::spawn(bench()).await })
        .expect("benchmark task");
    let text = serde_json::to_string_pretty(&report).expect("json");
    println!("{text}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("sandbox.json"), text + "\n");
    }
}
