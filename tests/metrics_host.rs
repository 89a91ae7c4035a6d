//! Issue 44 item 5: `/metrics` answers only to a `Host` naming its listener, as `/mcp` does, so
//! a page whose name a DNS-rebinding attack points at 127.0.0.1 cannot read it: on
//! `serve --http` without authentication and on the stdio server's `--metrics` listener, raw
//! HTTP with a foreign `Host` is refused (`403 METRICS_HOST_REFUSED`), the listener's own
//! names are served.

use crate::serve_support;
use serde_json::json;
use serve_support::http::*;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

async fn scrape(addr: &str, host: &str) -> Answer {
    let req = format!("GET /metrics HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
    exchange(addr, req.as_bytes()).await
}

async fn refuses_foreign_hosts(addr: &str) {
    let port = addr.rsplit_once(':').unwrap().1;
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("127.0.0.1.evil.example:{port}"),
    ] {
        let a = scrape(addr, &host).await;
        assert_eq!(a.status, 403, "Host {host:?}: {a:?}");
        assert!(a.body.starts_with("METRICS_HOST_REFUSED: "), "{a:?}");
        assert!(!a.body.contains("mcp_sandbox_"), "{a:?}");
    }
    for host in [
        addr.to_string(),
        format!("localhost:{port}"),
        "127.0.0.1".to_string(),
    ] {
        let a = scrape(addr, &host).await;
        assert_eq!(a.status, 200, "Host {host:?}: {a:?}");
        assert!(a.body.contains("mcp_sandbox_executions"), "{a:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_over_http_without_auth_refuse_a_foreign_host() {
    let h = start_http_with(json!({}), &[]).await;
    refuses_foreign_hosts(&h.addr).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stdio_servers_metrics_listener_refuses_a_foreign_host() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, json!({"mcpServers": {}}).to_string()).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["serve", "--metrics", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--state")
        .arg(dir.path().join("state.db"))
        .env("MCP_SANDBOX_RUNNER", crate::common::bin("sandbox-runner"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.strip_prefix("mcp-sandbox: serving metrics at http://") {
                return rest.trim_end_matches("/metrics").to_string();
            }
        }
        panic!("serve exited before it printed the metrics address");
    })
    .await
    .expect("the metrics address within 30 s");
    refuses_foreign_hosts(&addr).await;
    child.start_kill().unwrap();
}
