//! OAuth for remote servers (issue 17 item 3), against a real authorization server run by the
//! test: tests/python/oauth_server.py, an MCP server on the official Python SDK that is its own
//! authorization server (protected resource metadata, authorization server metadata, dynamic
//! client registration, authorization code + PKCE, refresh tokens; access tokens live 2 s; its
//! in-memory provider approves every request at once).
//!
//! Before a login the server's calls fail with `SERVER_UNAVAILABLE` "needs `mcp-sandbox auth
//! login oa`"; `auth login` prints the URL, which the test follows with a plain HTTP client
//! instead of a browser; the next run's calls succeed, an expired access token is refreshed, a
//! revoked one gives the documented error; the state file holds no token in clear; `auth status`
//! and `auth logout` report and forget the login. Through `serve`, a server without tokens fails
//! its calls the same way, at once.

use crate::common;
use crate::serve_support;
use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn host(dir: &Path, args: &[&str], key: bool) -> Output {
    let mut cmd = Command::new(bin("mcp-sandbox"));
    cmd.args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env_remove("MCP_SANDBOX_KEY")
        .env_remove("MCP_SANDBOX_KEY_FILE")
        .stdin(Stdio::null());
    if key {
        cmd.env("MCP_SANDBOX_KEY_FILE", dir.join("key"));
    }
    cmd.output().unwrap()
}

fn run(dir: &Path, script: &str, key: bool) -> Value {
    let file = dir.join("s.js");
    std::fs::write(&file, script).unwrap();
    let config = dir.join("mcp.json");
    let out = host(
        dir,
        &[
            "run",
            "--json",
            "--config",
            config.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
        key,
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// A GET with a plain TCP client; the status line and the `location` header.
fn get(url: &str) -> (String, Option<String>) {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let status = answer.lines().next().unwrap_or("").to_string();
    let location = answer.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .starts_with("location:")
            .then(|| l["location:".len()..].trim().to_string())
    });
    (status, location)
}

#[test]
fn login_then_calls_refresh_and_revocation() {
    let port = free_port();
    let mut cmd = Command::new(repo_root().join(".venv/bin/python"));
    cmd.arg(repo_root().join("tests/python/oauth_server.py"))
        .arg(port.to_string());
    let _server = Listening::spawn(cmd, port);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("key"), "0f".repeat(32) + "\n").unwrap();
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {"oa": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {}}},
            "sandbox": {"state": "state.db"}
        })
        .to_string(),
    )
    .unwrap();
    let config = config.to_str().unwrap();

    // Not logged in yet.
    let o = run(dir, "return await mcp.oa.whoami({})", true);
    assert_eq!(o["error"]["code"], "SERVER_UNAVAILABLE", "{o}");
    let message = o["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "MCP server 'oa' is unavailable: needs `mcp-sandbox auth login oa` (no stored tokens)"
        ),
        "{message}"
    );
    // Without a key the reason says how to make one.
    let o = run(dir, "return await mcp.oa.whoami({})", false);
    assert!(
        o["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no key for OAuth tokens: set MCP_SANDBOX_KEY_FILE"),
        "{o}"
    );

    // auth login: follow the printed URL like a browser would.
    let mut login = Command::new(bin("mcp-sandbox"))
        .args([
            "auth",
            "login",
            "oa",
            "--config",
            config,
            "--timeout-secs",
            "30",
        ])
        .env("MCP_SANDBOX_KEY_FILE", dir.join("key"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(login.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert_eq!(first, "Open this URL to authorize mcp-sandbox at 'oa':");
    let url = lines.next().unwrap().unwrap();
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/authorize?"))
            && url.contains("code_challenge_method=S256")
            && url.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"),
        "{url}"
    );
    let (status, location) = get(&url);
    assert!(status.contains("302"), "{status}");
    let callback = location.expect("a redirect to the loopback callback");
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    let (status, _) = get(&callback);
    assert!(status.contains("200"), "{status}");
    let done = lines.next().unwrap().unwrap();
    assert_eq!(
        done,
        "Logged in to 'oa'; the tokens are stored encrypted in the state file."
    );
    assert!(login.wait().unwrap().success());

    let status = host(dir, &["auth", "status", "--config", config], true);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.starts_with("oa: logged in (") && status.contains(", refreshable)"),
        "{status}"
    );

    // The access token lives 2 s: wait until it is expired for real.
    std::thread::sleep(Duration::from_millis(2500));
    let o = run(
        dir,
        r#"
const who = await mcp.oa.whoami({});
const stats = JSON.parse(await mcp.oa.stats({}));
await mcp.oa.revoke_all({});
let revoked = null;
try { await mcp.oa.whoami({}) } catch (e) { revoked = { code: e.code, message: e.message } }
return { who, stats, revoked };
"#,
        true,
    );
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    assert_eq!(
        r["who"],
        json!({"result": "hello, authorized client"}),
        "{r}"
    );
    assert_eq!(r["stats"]["registrations"], 1, "{r}");
    assert_eq!(r["stats"]["codes"], 1, "{r}");
    assert!(r["stats"]["refreshes"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(r["revoked"]["code"], "SERVER_UNAVAILABLE", "{r}");
    assert!(
        r["revoked"]["message"].as_str().unwrap().contains(
            "needs `mcp-sandbox auth login oa` (the server answered HTTP 401: its access token was refused and could not be refreshed)"
        ),
        "{r}"
    );

    // Sealed at rest: no token field in clear anywhere in the state files.
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("state.db") {
            let bytes = std::fs::read(entry.path()).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains("access_token") && !text.contains("refresh_token"),
                "{} holds a token in clear",
                entry.path().display()
            );
        }
    }

    let out = host(dir, &["auth", "logout", "oa", "--config", config], true);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Logged out of 'oa'.\n"
    );
    let status = host(dir, &["auth", "status", "--config", config], true);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "oa: not logged in\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_fails_calls_of_a_server_without_tokens_at_once() {
    let port = free_port();
    let mut cmd = Command::new(repo_root().join(".venv/bin/python"));
    cmd.arg(repo_root().join("tests/python/oauth_server.py"))
        .arg(port.to_string());
    let _server = Listening::spawn(cmd, port);
    let served = serve_support::start_with_servers(
        json!({"oa": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {}}}),
        json!({}),
        &[],
    )
    .await;
    let started = std::time::Instant::now();
    let r = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.oa.whoami({})"}),
        )
        .await
        .unwrap();
    let out = serve_support::structured(&r);
    assert_eq!(out["error"]["code"], "SERVER_UNAVAILABLE", "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MCP server 'oa' is unavailable: needs `mcp-sandbox auth login oa` ("),
        "{out}"
    );
    assert_not_hung(started.elapsed(), ms(5_000), ms(500), "the refusal");
}
