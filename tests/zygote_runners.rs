//! Runners forked from the sandbox's zygote (issue 18): they are children of the host (so the
//! host kills, watches and reaps them as before) and share the zygote's namespaces; a zygote
//! that is killed or stopped is detected and replaced while executions keep getting structured
//! outcomes; random kills of runners and of the zygote leave no zombie and no leaked fd.

use crate::common;
use common::*;
use mcp_sandbox::exec::runner::SpawnMode;
use mcp_sandbox::{ExecRequest, Limits, QueueOptions, Sandbox, SpawnHook};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn ns(pid: u32, which: &str) -> String {
    std::fs::read_link(format!("/proc/{pid}/ns/{which}"))
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

fn stat(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default()
}

fn ppid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs `code` and records, while the runner is alive, its pid, parent and user namespace.
async fn run_seen(
    cmd: &mcp_sandbox::RunnerCommand,
    code: &str,
) -> (mcp_sandbox::Outcome, (u32, Option<u32>, String)) {
    let seen = Arc::new(Mutex::new((0, None, String::new())));
    let s = seen.clone();
    let hook = SpawnHook::new(move |pid| {
        *s.lock().unwrap() = (pid, ppid(pid), ns(pid, "user"));
    });
    let o = mcp_sandbox::execute(
        &local_catalog(),
        cmd,
        ExecRequest {
            code: code.into(),
            on_spawn: Some(hook),
            ..Default::default()
        },
    )
    .await;
    let seen = seen.lock().unwrap().clone();
    (o, seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn runners_are_forked_from_one_zygote_as_children_of_the_host() {
    let cmd = runner();
    assert_eq!(cmd.effective_spawn(), SpawnMode::Zygote);
    let me = std::process::id();
    let mut users = Vec::new();
    for _ in 0..3 {
        let (o, (pid, parent, user)) = run_seen(&cmd, "return 1 + 1").await;
        assert!(o.success, "{o:?}");
        assert_eq!(o.result, json!(2));
        assert!(pid > 0);
        assert_eq!(
            parent,
            Some(me),
            "CLONE_PARENT: the host is the runner's parent"
        );
        users.push(user);
        // Every layer is verified from /proc of the forked runner.
        for layer in ["seccomp", "no_new_privs", "rlimits", "uid", "namespaces"] {
            let v = &o.metrics.isolation[layer];
            assert!(v.starts_with("enforced"), "{layer}: {v}");
        }
    }
    assert_eq!(cmd.zygotes.started(), 1, "one zygote for all three runners");
    let zygote = cmd.zygotes.pid().expect("a zygote runs");
    assert_eq!(zygote_pids(), vec![zygote]);
    // The namespaces were created once, in the zygote, and are shared by its runners.
    let zns = ns(zygote, "user");
    assert!(!zns.is_empty() && zns != ns(me, "user"));
    assert!(users.iter().all(|u| *u == zns), "{users:?} vs {zns}");
    cmd.zygotes.shutdown();
    assert!(zygote_pids().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn spawn_exec_still_starts_a_process_per_runner_and_no_zygote() {
    let mut cmd = runner();
    cmd.spawn = SpawnMode::Exec;
    // (The hook sees an exec'd runner before its lockdown, so its namespaces are not compared.)
    let (o1, (p1, parent, _)) = run_seen(&cmd, "return 1 + 1").await;
    let (o2, (p2, _, _)) = run_seen(&cmd, "return 2 + 2").await;
    assert_eq!((o1.result, o2.result), (json!(2), json!(4)));
    assert!(p1 > 0 && p2 > 0 && p1 != p2);
    assert_eq!(parent, Some(std::process::id()));
    assert!(o1.metrics.isolation["namespaces"].starts_with("enforced"));
    assert!(zygote_pids().is_empty());
    assert_eq!(cmd.zygotes.started(), 0);
    assert_eq!(cmd.zygotes.pid(), None);
}

/// `zygote` falls back to exec where the zygote cannot start (here: a runner program that does
/// not know `--zygote`, through a wrapper), with the outcome unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn a_runner_wrapped_in_another_program_is_execd() {
    let cmd = fake_runner("echo-call");
    assert_eq!(cmd.effective_spawn(), SpawnMode::Exec);
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid that is our own unreaped child (the zygote), no memory involved.
    assert_eq!(
        unsafe { libc::kill(pid as i32, sig) },
        0,
        "kill({pid}, {sig})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_or_stopped_zygote_is_detected_and_replaced() {
    let cmd = runner();
    let catalog = Arc::new(local_catalog());
    let run = |code: &'static str| {
        let (cmd, catalog) = (cmd.clone(), catalog.clone());
        async move {
            mcp_sandbox::execute(
                &catalog,
                &cmd,
                ExecRequest {
                    code: code.into(),
                    ..Default::default()
                },
            )
            .await
        }
    };
    assert_eq!(run("return 1").await.result, json!(1));
    let first = cmd.zygotes.pid().unwrap();

    // A runner already forked does not depend on its zygote: kill the zygote mid-execution.
    let slow = tokio::spawn(run("await mcp.local.sleep({ ms: 300 }); return 'survived'"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    signal(first, libc::SIGKILL);
    let o = slow.await.unwrap();
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, json!("survived"));

    // Killed: the next execution gets a new zygote and its result.
    let o = run("return 2").await;
    assert_eq!(o.result, json!(2), "{o:?}");
    let second = cmd.zygotes.pid().unwrap();
    assert_ne!(first, second);
    assert_eq!(cmd.zygotes.started(), 2);
    assert!(
        !all_child_pids().contains(&first),
        "the killed zygote was reaped"
    );

    // Stopped: the fork request times out (1 s), the zygote is killed, reaped and replaced.
    signal(second, libc::SIGSTOP);
    let t = Instant::now();
    let o = run("return 3").await;
    let took = t.elapsed();
    assert_eq!(o.result, json!(3), "{o:?}");
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert_not_hung(took, ms(12_000), ms(1_200), "the fork request's timeout");
    let third = cmd.zygotes.pid().unwrap();
    assert!(third != second && third != first);
    assert_eq!(cmd.zygotes.started(), 3);
    assert!(
        !all_child_pids().contains(&second),
        "the stopped zygote was killed and reaped"
    );
    // The runner of `return 3` is reaped in the background once its result arrived.
    assert_eq!(
        children_left(Duration::from_secs(2)).await,
        Vec::<u32>::new()
    );
    cmd.zygotes.shutdown();
}

const RUNS: u64 = 120;

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 120 executions (bounded so the test takes under 30 s here: each SIGSTOP of the zygote costs
/// the 1 s fork timeout), each with one kill at a random moment: three in four SIGKILL the
/// runner, one in six SIGKILLs the zygote and one in twelve SIGSTOPs it. (`random_kills.rs`
/// adds 300 runner kills, also of forked runners.) Outcomes: the result, `RUNNER_CRASHED` (SIGKILL) for a killed runner, or
/// `SANDBOX_UNAVAILABLE` if a fork found no working zygote twice. Afterwards no child but at
/// most one live zygote remains (no zombie) and the fd count is back at its baseline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_kills_of_runners_and_of_the_zygote_leave_nothing_behind() {
    let seed: u64 = std::env::var("RANDOM_KILLS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("RANDOM_KILLS_SEED={seed}");
    let sandbox = Sandbox::new(
        Arc::new(local_catalog()),
        runner(),
        QueueOptions {
            max_running: 4,
            max_queued: RUNS as usize,
            pool_size: 0,
        },
    );
    let script = "let s = 0; for (let i = 0; i < 20000; i++) s += i;
                  const a = await mcp.local.sleep({ ms: 5 }); return s;";
    let o = sandbox
        .execute(ExecRequest {
            code: script.into(),
            ..Default::default()
        })
        .await;
    assert!(o.success, "{o:?}");
    let fds = open_fds();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..RUNS {
        let r = splitmix(seed ^ i);
        let delay = Duration::from_micros(r % 60_000);
        let what = (r >> 32) % 12;
        let handle = Arc::new(RunnerHandle::default());
        let h = handle.clone();
        let zygotes = sandbox.runner().zygotes.clone();
        let hook = SpawnHook::new(move |pid| {
            h.attach(pid);
            let (h, zygotes) = (h.clone(), zygotes.clone());
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                match what {
                    0..=8 => {
                        h.signal(libc::SIGKILL);
                    }
                    w => {
                        if let Some(z) = zygotes.pid() {
                            let sig = if w < 11 { libc::SIGKILL } else { libc::SIGSTOP };
                            // SAFETY: kill(2) on the zygote, our unreaped child while the
                            // lock in `pid()` was held; at worst it has exited since (ESRCH).
                            unsafe { libc::kill(z as i32, sig) };
                        }
                    }
                }
            });
        });
        let s = sandbox.clone();
        let req = ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
                timeout_ms: 10_000,
                ..Default::default()
            }),
            code: script.into(),
            on_spawn: Some(hook),
            ..Default::default()
        };
        tasks.push(tokio::spawn(async move { (s.execute(req).await, handle) }));
    }
    let mut counts = std::collections::BTreeMap::<&str, u32>::new();
    for task in tasks {
        let (o, handle) = task.await.unwrap();
        if o.success {
            assert_eq!(o.result, json!(199990000), "{o:?}");
            *counts.entry("ok").or_default() += 1;
        } else {
            let c = code(&o);
            match c {
                "RUNNER_CRASHED" => {
                    assert_eq!(
                        o.error.as_ref().unwrap().signal,
                        Some(libc::SIGKILL),
                        "{o:?}"
                    )
                }
                "SANDBOX_UNAVAILABLE" => {}
                other => panic!("unexpected {other}: {o:?}"),
            }
            *counts.entry(c).or_default() += 1;
        }
        handle.release();
    }
    let took = t.elapsed();
    eprintln!(
        "{RUNS} runs in {took:?}: {counts:?}; zygotes started: {}",
        sandbox.runner().zygotes.started()
    );
    assert_not_hung(took, ms(120_000), ms(12_000), "the runs");
    // Runners are reaped in the background after their result: give them a moment. A zygote
    // killed after the last fork is reaped when the sandbox next forks or ends (below), so
    // only runners count here.
    let runners = || {
        child_pids()
            .into_iter()
            .filter(|p| !stat(*p).contains("(sandbox-zygote)"))
            .collect::<Vec<_>>()
    };
    let end = Instant::now() + Duration::from_secs(5);
    while !runners().is_empty() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left: Vec<String> = runners()
        .iter()
        .map(|p| format!("{p}: {}", stat(*p)))
        .collect();
    assert!(left.is_empty(), "runners or zombies left: {left:?}");
    assert!(zygote_pids().len() <= 1, "{:?}", zygote_pids());
    assert!(open_fds() <= fds, "fds {} → {}", fds, open_fds());
    sandbox.runner().zygotes.shutdown();
    assert!(all_child_pids().is_empty(), "{:?}", all_child_pids());
}

/// Zygote deaths on their own, many of them: each execution's zygote is killed (SIGKILL) at a
/// random moment — before, during or after its fork. Every execution still gets a structured
/// outcome, and nothing is left behind: no zombie, no extra fd, at most one zygote alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_zygote_kills_leave_nothing_behind() {
    const KILLS: u64 = 300;
    let seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    eprintln!("seed={seed}");
    let sandbox = Sandbox::new(
        Arc::new(local_catalog()),
        runner(),
        QueueOptions {
            max_running: 2,
            max_queued: 4,
            pool_size: 0,
        },
    );
    let warm = sandbox
        .execute(ExecRequest {
            code: "return 1".into(),
            ..Default::default()
        })
        .await;
    assert!(warm.success, "{warm:?}");
    let fds = open_fds();
    let t = Instant::now();
    let mut counts = std::collections::BTreeMap::<String, u32>::new();
    for i in 0..KILLS {
        let delay = Duration::from_micros(splitmix(seed ^ i) % 3_000);
        let zygotes = sandbox.runner().zygotes.clone();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            if let Some(z) = zygotes.pid() {
                // SAFETY: kill(2) on the zygote, our unreaped child while the lock in `pid()`
                // was held; at worst it has exited since (ESRCH).
                unsafe { libc::kill(z as i32, libc::SIGKILL) };
            }
        });
        let o = sandbox
            .execute(ExecRequest {
                code: "return 6 * 7".into(),
                ..Default::default()
            })
            .await;
        killer.join().unwrap();
        let c = if o.success {
            assert_eq!(o.result, json!(42), "{o:?}");
            "ok".to_string()
        } else {
            let c = code(&o).to_string();
            assert!(
                c == "SANDBOX_UNAVAILABLE" || c == "RUNNER_CRASHED",
                "unexpected {c}: {o:?}"
            );
            c
        };
        *counts.entry(c).or_default() += 1;
    }
    eprintln!(
        "{KILLS} zygote kills in {:?}: {counts:?}; zygotes started: {}",
        t.elapsed(),
        sandbox.runner().zygotes.started()
    );
    // The kills did land: most executions found their zygote dead and started another.
    assert!(
        sandbox.runner().zygotes.started() >= KILLS / 2,
        "only {} zygotes started",
        sandbox.runner().zygotes.started()
    );
    // Runners are reaped in the background; a zygote killed after the last fork is reaped when
    // the sandbox next forks or ends.
    let runners = || {
        child_pids()
            .into_iter()
            .filter(|p| !stat(*p).contains("(sandbox-zygote)"))
            .collect::<Vec<_>>()
    };
    let end = Instant::now() + Duration::from_secs(5);
    while !runners().is_empty() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(runners().is_empty(), "left: {:?}", runners());
    assert!(zygote_pids().len() <= 1, "{:?}", zygote_pids());
    assert!(open_fds() <= fds, "fds {} → {}", fds, open_fds());
    sandbox.runner().zygotes.shutdown();
    assert!(all_child_pids().is_empty(), "{:?}", all_child_pids());
}
