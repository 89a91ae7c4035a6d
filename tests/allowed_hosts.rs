//! `serve --http` behind a load balancer or a Kubernetes Service: the `Host` names clients use
//! are allowed with `--allow-host` (DNS-rebinding protection refuses every other name with 403),
//! `GET /healthz` answers probes without a credential, and a name that is not a host name is
//! refused at start (exit 2).

use crate::common::bin;
use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

struct Gateway {
    child: std::process::Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(extra: &[&str]) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin("mcp-sandbox"))
        .args(["serve", "--http", "127.0.0.1:0", "--state"])
        .arg(dir.path().join("state.db"))
        .args(extra)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.strip_prefix("mcp-sandbox: serving MCP over HTTP at http://") {
                let _ = tx.send(rest.trim_end_matches("/mcp").to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("serve --http said where it listens");
    Gateway {
        child,
        addr,
        _dir: dir,
    }
}

/// One HTTP/1.1 request with `host` as its `Host` header; the answer's status line and body.
fn request(addr: &str, method: &str, path: &str, host: &str, body: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let status = answer.lines().next().unwrap_or("").to_string();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host-test","version":"1"}}}"#;

#[test]
fn a_gateway_answers_the_names_it_is_given_and_refuses_the_others() {
    let gw = start(&["--allow-host", "Gateway.Example:8787"]);
    // The name a load balancer forwards is answered (as the loopback names are)...
    let (status, body) = request(&gw.addr, "POST", "/mcp", "gateway.example:8787", INITIALIZE);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}\n{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");
    let (status, _) = request(&gw.addr, "POST", "/mcp", "127.0.0.1", INITIALIZE);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // ...any other name is refused, as before.
    let (status, _) = request(&gw.addr, "POST", "/mcp", "evil.example", INITIALIZE);
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    let (status, _) = request(&gw.addr, "POST", "/mcp", "gateway.example:9999", INITIALIZE);
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");

    // Probes: no credential, no data, whatever the Host.
    let (status, body) = request(&gw.addr, "GET", "/healthz", "evil.example", "");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(body, "ok\n");
}

#[test]
fn a_name_that_is_not_a_host_name_is_refused_at_start() {
    for bad in [
        "",
        "user@gateway.example",
        "gateway.example/mcp",
        "gate way",
    ] {
        let out = Command::new(bin("mcp-sandbox"))
            .args(["serve", "--http", "127.0.0.1:0", "--allow-host", bad])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is not a host name"), "{bad:?}: {err}");
    }
    // --allow-host needs --http.
    let out = Command::new(bin("mcp-sandbox"))
        .args(["serve", "--allow-host", "gateway.example"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
