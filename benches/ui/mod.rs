//! One principal reading the web view while another tenant executes (issue 44 item 2):
//! `cargo bench --bench sandbox -- ui`.
//!
//! `serve --http` (the release binary, a state file, tokens on) with two principals in two
//! tenants: `runner` (tenant `a`) runs `execute_code {return 1+1}`; `poller` (tenant `b`, an
//! operator, so it reads every tenant's records) polls `/ui/api/executions?limit=500` and
//! `/ui/api/executions/ID` from six threads, each on its own connection, as fast as answers come.
//! The audit log holds 1,000 records first, so a list is as heavy as the API allows.
//!
//! - `ui_idle_exec_p50_ms`: the runner's p50 with nobody polling.
//! - `ui_polling_exec_p50_ms`: the same while the poller polls.
//! - `ui_polling_ratio`: the second over the first (nothing asserts it; the target is 2).
//! - `ui_polls_answered` / `ui_polls_refused`: the poller's answers during that time (200 and
//!   `429 UI_RATE_LIMITED`: its per-principal bounds).

use super::gateway::{start_http_on, HttpClient};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const RECORDS: usize = 1000;
const SAMPLES: usize = 300;
const POLLERS: usize = 6;

/// `mcp-sandbox token create NAME --tenant T --policy P --json` on `state`: the token.
fn token(
    bin: &Path,
    state: &Path,
    config: &Path,
    name: &str,
    tenant: &str,
    policy: &str,
) -> String {
    let out = std::process::Command::new(bin)
        .args([
            "token", "create", name, "--tenant", tenant, "--policy", policy, "--json",
        ])
        .arg("--state")
        .arg(state)
        .arg("--config")
        .arg(config)
        .output()
        .expect("token create");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("token JSON");
    v["token"].as_str().expect("token").to_string()
}

/// One GET with `connection: close`: its status.
fn get(addr: std::net::SocketAddr, path: &str, token: &str) -> u16 {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let req = format!(
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {token}\r\nconnection: close\r\n\r\n"
    );
    if s.write_all(req.as_bytes()).is_err() {
        return 0;
    }
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

async fn p50(c: &mut HttpClient) -> f64 {
    let mut ms = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let t = Instant::now();
        c.execute().await;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

pub async fn bench(bin: &Path) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state.db");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {}, "sandbox": {"auth": {"tokens": true},
               "policies": {"plain": {}, "ops": {"operator": true}}}})
        .to_string(),
    )
    .expect("config");
    let runner = token(bin, &state, &config, "runner", "a", "plain");
    let poller = token(bin, &state, &config, "poller", "b", "ops");
    let state_arg = state.clone().into_os_string();
    let config_arg = config.clone().into_os_string();
    let (_gateway, addr) = start_http_on(
        bin,
        &state_arg,
        &["--config".as_ref(), config_arg.as_os_str()],
        dir,
    );
    let mut c = HttpClient::connect_as(addr, Some(runner)).await;
    for _ in 0..RECORDS {
        c.execute().await;
    }
    let idle = p50(&mut c).await;

    let stop = Arc::new(AtomicBool::new(false));
    let (answered, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let threads: Vec<_> = (0..POLLERS)
        .map(|i| {
            let (stop, answered, refused) = (stop.clone(), answered.clone(), refused.clone());
            let poller = poller.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let path = if n.is_multiple_of(2) {
                        "/ui/api/executions?limit=500".to_string()
                    } else {
                        format!(
                            "/ui/api/executions/{}",
                            1 + (n * 7 + i as u64) % RECORDS as u64
                        )
                    };
                    match get(addr, &path, &poller) {
                        200 => answered.fetch_add(1, Ordering::Relaxed),
                        429 => refused.fetch_add(1, Ordering::Relaxed),
                        _ => 0,
                    };
                }
            })
        })
        .collect();
    let polling = p50(&mut c).await;
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({
        "ui_idle_exec_p50_ms": round(idle),
        "ui_polling_exec_p50_ms": round(polling),
        "ui_polling_ratio": round(polling / idle),
        "ui_polls_answered": answered.load(Ordering::Relaxed),
        "ui_polls_refused": refused.load(Ordering::Relaxed),
    })
}
