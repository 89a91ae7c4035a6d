//! Every process the host made dies with it, at once (issue 26): a SIGKILLed `run` or `serve`,
//! with runners forked by the zygote or exec'd, leaves no runner, zygote, pooled runner, MCP
//! server or server's child (a grandchild of the host) alive 2 s later.
//!
//! Other tests run at the same time, so the processes are found by a marker only this test's
//! host can have made: every binary it starts (the runner, the fixture server, `sleep`) is a
//! copy in a fresh temporary directory, whose path is in each process's command line (a forked
//! runner has the zygote's).

use crate::common;
use crate::serve_support;
use common::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Live processes (not zombies) whose command line contains `marker`.
fn marked(marker: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        if rest.starts_with('Z') || rest.starts_with('X') {
            continue;
        }
        let comm = head.split_once(" (").map(|(_, c)| c).unwrap_or("");
        out.push((pid, comm.to_string()));
    }
    out
}

/// Waits up to `within` for no marked process to remain; returns those left.
fn left_after(marker: &str, within: Duration) -> Vec<(u32, String)> {
    let end = Instant::now() + within;
    loop {
        let left = marked(marker);
        if left.is_empty() || Instant::now() >= end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn copy_in(dir: &Path, name: &str, from: &Path) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn seed() -> u64 {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    eprintln!("HOST_DEATH_SEED={s}");
    s
}

fn sigkill(child: &mut Child) {
    // SAFETY: kill(2) on our own unreaped child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
}

/// `run` of a script spinning at 100 % CPU, SIGKILLed at a random moment (before, while or
/// after its runner starts), in both spawn modes.
#[test]
fn a_killed_run_leaves_no_runner_or_zygote() {
    let seed = seed();
    for (i, mode) in ["zygote", "exec", "zygote", "exec", "zygote", "exec"]
        .iter()
        .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().to_str().unwrap().to_string();
        let runner = copy_in(dir.path(), "sandbox-runner", &bin("sandbox-runner"));
        let script = dir.path().join("spin.js");
        std::fs::write(&script, "while (true) {}").unwrap();
        let config = dir.path().join("mcp.json");
        std::fs::write(&config, json!({"mcpServers": {}}).to_string()).unwrap();
        let mut host = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
            .args([
                "run",
                "--timeout-ms",
                "60000",
                "--cpu-ms",
                "60000",
                "--spawn",
                mode,
            ])
            .arg("--runner")
            .arg(&runner)
            .arg("--config")
            .arg(&config)
            .arg("--state")
            .arg(dir.path().join("state.db"))
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let delay = Duration::from_millis(splitmix(seed ^ i as u64) % 400);
        std::thread::sleep(delay);
        let before = marked(&marker);
        sigkill(&mut host);
        let left = left_after(&marker, Duration::from_secs(2));
        assert!(
            left.is_empty(),
            "--spawn {mode}, killed after {delay:?} (alive then: {before:?}): left {left:?}"
        );
    }
}

/// A gateway under load — runners spinning, a pool of runners waiting, a zygote, a stdio MCP
/// server started through a shell that left a child of its own (like `npx` → `node`) —
/// SIGKILLed, in both spawn modes.
#[test]
fn a_killed_gateway_under_load_leaves_nothing_behind() {
    let seed = seed();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (i, mode) in ["zygote", "exec"].iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().to_str().unwrap().to_string();
        let runner = copy_in(dir.path(), "sandbox-runner", &bin("sandbox-runner"));
        let server = copy_in(dir.path(), "fixture-mcp-server", &bin("fixture-mcp-server"));
        let sleep = copy_in(dir.path(), "sleep", Path::new("/bin/sleep"));
        let config = dir.path().join("mcp.json");
        // The shell starts a long `sleep` in the background (in the server's process group),
        // then becomes the server: the sleep is the host's grandchild and ignores stdin.
        std::fs::write(
            &config,
            json!({"mcpServers": {"fixture": {"command": "sh",
                "args": ["-c", "\"$1\" 600 & exec \"$0\"", server, sleep]}}})
            .to_string(),
        )
        .unwrap();
        let mut host = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
            .args(["serve", "--http", "127.0.0.1:0", "--spawn", mode])
            .arg("--runner")
            .arg(&runner)
            .arg("--config")
            .arg(&config)
            .arg("--state")
            .arg(dir.path().join("state.db"))
            .env("XDG_DATA_HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(host.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("serve ended before printing its address")
                .unwrap();
            if let Some(url) = line.strip_prefix("mcp-sandbox: serving MCP over HTTP at http://") {
                break url.trim_end_matches("/mcp").to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        rt.block_on(async {
            let session = serve_support::http::open_session(&addr).await;
            for id in 0..3 {
                let (addr, session) = (addr.clone(), session.clone());
                tokio::spawn(async move {
                    let body = serve_support::http::execute_body(
                        10 + id,
                        json!({"code": "await mcp.fixture.echo({message: 'x'}); while (true) {}"}),
                    );
                    serve_support::http::post(&addr, Some(&session), &body).await
                });
            }
            let delay = 150 + splitmix(seed ^ i as u64) % 400;
            tokio::time::sleep(Duration::from_millis(delay)).await;
        });
        let before = marked(&marker);
        let kinds = |ps: &[(u32, String)]| {
            let mut k: Vec<String> = ps.iter().map(|p| p.1.clone()).collect();
            k.sort();
            k.dedup();
            k
        };
        // The load is there: runners (pooled and busy), the server and its child.
        let seen = kinds(&before);
        for expected in ["sandbox-runner", "fixture-mcp-ser", "sleep"] {
            assert!(
                seen.iter().any(|k| k == expected),
                "--spawn {mode}: {before:?}"
            );
        }
        sigkill(&mut host);
        let left = left_after(&marker, Duration::from_secs(2));
        assert!(
            left.is_empty(),
            "--spawn {mode}: alive before the kill {before:?}; left after 2 s {left:?}"
        );
    }
}
