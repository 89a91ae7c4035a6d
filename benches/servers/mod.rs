//! A confined stdio MCP server against the same server unconfined (issue 59), run alone with
//! `cargo bench --bench sandbox -- servers`:
//!
//! - `server_start_{confined,unconfined}_ms`: spawn → `initialize` answered → tools listed, what
//!   the gateway pays to start one server process (`start_mcp_servers` with one entry; the
//!   bubblewrap probe and the seccomp compile are paid once per gateway process, in the
//!   warm-up), for the rmcp fixture server (`fixture-mcp-server`). Confined and unconfined
//!   starts alternate (which goes first alternates too), so the machine's load hits both alike.
//! - `server_start_added_ms`: confined p50 − unconfined p50.
//! - `server_call_{confined,unconfined}_us`: one `echo` call through the started server's client
//!   (no script: the gateway's own path to a server), 400 each, in alternating blocks of 50.
//! - `server_confine_prepare_us`: the gateway's own part of a confined start, before bubblewrap
//!   runs (`confine::command`: the install roots, the private directories, the pids cgroup, the
//!   seccomp memfd, the argv), 50 times.
//! - `server_start_memory_{confined,unconfined}_ms`: the npm reference memory server (Node), 10
//!   starts each, when node and its package are there (else `server_memory_skipped` says why).
//!
//! The private homes go to a temporary state directory of the benchmark's own.

use super::{percentiles, release_bin, round};
use mcp_sandbox::config::Config;
use mcp_sandbox::tools::catalog::start_mcp_servers;
use mcp_sandbox::{CallContext, ToolProvider};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const STARTS: usize = 30;
const CALLS: usize = 400;
const CALL_BLOCK: usize = 50;
const MEMORY_STARTS: usize = 10;

fn config(command: &Path, args: &[&str], confine: bool) -> Config {
    let entry = json!({"command": command, "args": args, "confine": confine});
    Config::parse(
        &json!({"mcpServers": {"s": entry}}).to_string(),
        Path::new("/"),
    )
    .expect("benchmark config")
}

/// One start, in ms, and the started server.
async fn start(config: &Config) -> (f64, Arc<dyn ToolProvider>) {
    let t = Instant::now();
    let (mut servers, failed) = start_mcp_servers(config, Duration::from_secs(30)).await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(failed.is_empty(), "server start failed: {failed:?}");
    (ms, servers.pop().expect("one server"))
}

/// `n` starts of each config, alternating, in ms: (confined, unconfined).
async fn starts(confined: &Config, open: &Config, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        for first in [i % 2 == 0, i % 2 != 0] {
            let (ms, server) = start(if first { confined } else { open }).await;
            server.shutdown().await;
            if first { &mut a } else { &mut b }.push(ms);
        }
    }
    (a, b)
}

async fn calls(server: &Arc<dyn ToolProvider>, n: usize, into: &mut Vec<f64>) {
    let ctx = CallContext::new(String::new(), Instant::now() + Duration::from_secs(600));
    for _ in 0..n {
        let t = Instant::now();
        server
            .call("echo", json!({"message": "x"}), &ctx)
            .await
            .expect("echo call");
        into.push(t.elapsed().as_secs_f64() * 1e6);
    }
}

fn p50(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub async fn bench() -> Value {
    let state = tempfile::tempdir().expect("state dir");
    mcp_sandbox::store::private_paths::record_state_dir(state.path());
    let fixture = release_bin("fixture-mcp-server");
    let confined = config(&fixture, &[], true);
    let open = config(&fixture, &[], false);
    // Warm-up: the page cache, the bubblewrap probe, the seccomp compile.
    starts(&confined, &open, 3).await;
    let (start_c, start_u) = starts(&confined, &open, STARTS).await;

    let (_, c) = start(&confined).await;
    let (_, u) = start(&open).await;
    let (mut call_c, mut call_u) = (Vec::new(), Vec::new());
    calls(&c, CALL_BLOCK, &mut Vec::new()).await;
    calls(&u, CALL_BLOCK, &mut Vec::new()).await;
    for i in 0..CALLS / CALL_BLOCK {
        if i % 2 == 0 {
            calls(&c, CALL_BLOCK, &mut call_c).await;
            calls(&u, CALL_BLOCK, &mut call_u).await;
        } else {
            calls(&u, CALL_BLOCK, &mut call_u).await;
            calls(&c, CALL_BLOCK, &mut call_c).await;
        }
    }
    c.shutdown().await;
    u.shutdown().await;

    let mut prepare = Vec::new();
    let entry = &confined.servers["s"];
    for _ in 0..50 {
        let t = Instant::now();
        let c = mcp_sandbox::tools::catalog::confine::command("s", entry, Path::new("/"))
            .await
            .expect("confined command");
        prepare.push(t.elapsed().as_secs_f64() * 1e6);
        drop(c);
    }

    let mut out = serde_json::Map::new();
    out.insert("server_confine_prepare_us".into(), percentiles(prepare));
    out.insert(
        "server_start_added_ms".into(),
        json!(round(p50(&start_c) - p50(&start_u))),
    );
    out.insert("server_start_confined_ms".into(), percentiles(start_c));
    out.insert("server_start_unconfined_ms".into(), percentiles(start_u));
    out.insert("server_call_confined_us".into(), percentiles(call_c));
    out.insert("server_call_unconfined_us".into(), percentiles(call_u));
    match memory_server() {
        Ok(script) => {
            let node = Path::new("node");
            let (mc, mu) = starts(
                &config(node, &[&script], true),
                &config(node, &[&script], false),
                MEMORY_STARTS,
            )
            .await;
            out.insert("server_start_memory_confined_ms".into(), percentiles(mc));
            out.insert("server_start_memory_unconfined_ms".into(), percentiles(mu));
        }
        Err(why) => {
            out.insert("server_memory_skipped".into(), json!(why));
        }
    }
    Value::Object(out)
}

/// The npm reference memory server's script, if installed and node runs.
fn memory_server() -> Result<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    if !script.is_file() {
        return Err(format!("{} is not installed", script.display()));
    }
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return Err("node is not on PATH".into());
    }
    Ok(script.to_string_lossy().into_owned())
}
