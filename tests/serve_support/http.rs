//! `mcp-sandbox serve --http 127.0.0.1:0` with the fixture MCP server, and a raw HTTP/1.1 client
//! on plain sockets (so a test can misbehave on purpose: half-sent headers, unread answers,
//! malformed JSON).
#![allow(dead_code)]

use crate::common::bin;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const PROTOCOL: &str = "2025-06-18";

pub struct HttpServed {
    pub child: tokio::process::Child,
    pub pid: u32,
    pub addr: String,
    pub stderr: Arc<Mutex<String>>,
    pub state: PathBuf,
    pub dir: tempfile::TempDir,
}

/// Starts `mcp-sandbox serve --http 127.0.0.1:0 --config <fixture> --state <tmp> ARGS`.
pub async fn start_http(args: &[&str]) -> HttpServed {
    start_http_with(json!({}), args).await
}

/// Like [`start_http`], with `sandbox` as the config's `sandbox` section.
pub async fn start_http_with(sandbox: Value, args: &[&str]) -> HttpServed {
    start_http_config(
        json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}, "sandbox": sandbox}),
        args,
    )
    .await
}

/// Like [`start_http`], with `config` as the whole config file.
pub async fn start_http_config(config_json: Value, args: &[&str]) -> HttpServed {
    start_http_state(config_json, None, args).await
}

/// Like [`start_http_config`], with `state` as `--state` (a PostgreSQL URL, say) instead of a
/// file in the temporary directory.
pub async fn start_http_state(
    config_json: Value,
    state: Option<&str>,
    args: &[&str],
) -> HttpServed {
    start_http_state_env(config_json, state, args, &[]).await
}

/// Like [`start_http_state`], with `envs` in the gateway's environment (an operator key, say).
pub async fn start_http_state_env(
    config_json: Value,
    state: Option<&str>,
    args: &[&str],
    envs: &[(&str, &str)],
) -> HttpServed {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, config_json.to_string()).unwrap();
    let state = state
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("state.db"));
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--state")
        .arg(&state)
        .args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("MCP_SANDBOX_LOG", "mcp_sandbox=info")
        .env("XDG_DATA_HOME", dir.path())
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let sink = stderr.clone();
    tokio::spawn(async move {
        let mut tx = Some(tx);
        while let Ok(Some(line)) = lines.next_line().await {
            let url = line
                .strip_prefix("mcp-sandbox: serving MCP over HTTP at http://")
                .or_else(|| line.strip_prefix("mcp-sandbox: serving MCP over HTTPS at https://"));
            // Kept before the address is handed over, so a test that reads stderr as soon as
            // it has the address sees the line that gave it.
            {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
            if let Some(url) = url {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(url.trim_end_matches("/mcp").to_string());
                }
            }
        }
    });
    let addr = tokio::time::timeout(Duration::from_secs(30), rx)
        .await
        .expect("serve --http did not print its address within 30 s")
        .unwrap();
    HttpServed {
        child,
        pid,
        addr,
        stderr,
        state,
        dir,
    }
}

impl HttpServed {
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// One HTTP answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages in the body (plain JSON, or the `data:` lines of an SSE stream).
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(v) = serde_json::from_str::<Value>(&self.body) {
            return vec![v];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }

    /// The message that answers request `id`.
    pub fn reply(&self, id: i64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer for id {id}: {self:?}"))
    }
}

/// The request bytes of a POST to /mcp.
pub fn post_bytes(
    addr: &str,
    session: Option<&str>,
    body: &str,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: {PROTOCOL}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if let Some(s) = session {
        head.push_str(&format!("mcp-session-id: {s}\r\n"));
    }
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// Sends raw bytes on a new connection and reads the whole answer (the server closes).
pub async fn exchange(addr: &str, request: &[u8]) -> Answer {
    exchange_on(TcpStream::connect(addr).await.unwrap(), request).await
}

/// Like [`exchange`], from the local address `from` (another address of the loopback network:
/// another client, as far as the server's per-address bounds go).
pub async fn exchange_from(from: std::net::Ipv4Addr, addr: &str, request: &[u8]) -> Answer {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind((from, 0).into()).unwrap();
    exchange_on(
        socket.connect(addr.parse().unwrap()).await.unwrap(),
        request,
    )
    .await
}

async fn exchange_on(mut s: TcpStream, request: &[u8]) -> Answer {
    s.write_all(request).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut raw))
        .await
        .expect("no complete answer within 60 s")
        .unwrap();
    parse(&raw)
}

pub fn parse(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            out.push_str(&rest[..rest.len().min(n)]);
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

pub async fn post(addr: &str, session: Option<&str>, body: &Value) -> Answer {
    exchange(addr, &post_bytes(addr, session, &body.to_string(), &[])).await
}

/// initialize + notifications/initialized; returns the session id.
pub async fn open_session(addr: &str) -> String {
    let a = post(addr, None, &initialize_body(1)).await;
    assert_eq!(a.status, 200, "{a:?}");
    let id = a
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {a:?}"))
        .to_string();
    let n = post(
        addr,
        Some(&id),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(n.status, 202, "{n:?}");
    id
}

pub fn initialize_body(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
}

pub fn execute_body(id: i64, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "execute_code", "arguments": args}})
}

pub async fn delete(addr: &str, session: &str) -> Answer {
    delete_with(addr, session, &[]).await
}

/// `DELETE /mcp` of `session` with `extra` headers (an authorization, say).
pub async fn delete_with(addr: &str, session: &str, extra: &[(&str, &str)]) -> Answer {
    let mut req = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: {session}\r\nmcp-protocol-version: {PROTOCOL}\r\nconnection: close\r\n"
    );
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    exchange(addr, req.as_bytes()).await
}

/// Resident memory of a process, KiB.
pub fn rss_kib_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}
