//! Helpers of the team-gateway tests: `token create` against a served state file, the Python
//! SDK as an authenticated client (tests/python/team_client.py), and raw requests with a token.
#![allow(dead_code)]

use super::http::{exchange, post_bytes, Answer, HttpServed};
use crate::common::bin;
use serde_json::Value;
use std::path::Path;

/// `mcp-sandbox token create NAME --state STATE ARGS`: the token it printed.
pub fn create_token(state: &Path, name: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["token", "create", name, "--state"])
        .arg(state)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "token create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(
        token.starts_with("mcps_") && token.len() == 5 + 64,
        "{token}"
    );
    token
}

/// The real CLI with `args` (stdin closed): (exit status, stdout, stderr).
pub fn cli(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `mcp-sandbox audit --state STATE --json ARGS`: the records.
pub fn audit(state: &Path, args: &[&str]) -> Vec<Value> {
    let mut all: Vec<&std::ffi::OsStr> = vec!["audit".as_ref(), "--json".as_ref()];
    all.push("--state".as_ref());
    all.push(state.as_os_str());
    all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
    let (status, stdout, stderr) = cli(&all);
    assert_eq!(status, 0, "audit failed: {stderr}");
    serde_json::from_str::<Value>(&stdout)
        .unwrap_or_else(|e| panic!("audit --json is not JSON ({e}): {stdout}"))
        .as_array()
        .cloned()
        .unwrap()
}

/// The Python SDK as a client with `token` (`None`: no Authorization header), running the
/// execute_code `calls` in one session: `{"results": [...]}` or `{"error", "status"}`.
pub fn sdk(url: &str, token: Option<&str>, calls: &Value) -> Value {
    sdk_trusting(url, token, calls, None)
}

/// The per-call results of an [`sdk`] run that did not fail as a whole.
pub fn results(out: &Value) -> Vec<Value> {
    assert!(out.get("error").is_none(), "{out}");
    out["results"].as_array().unwrap().clone()
}

/// Like [`sdk`]; for an https URL, `ca` is the only certificate trusted.
pub fn sdk_trusting(url: &str, token: Option<&str>, calls: &Value, ca: Option<&Path>) -> Value {
    let calls = calls.to_string();
    let envs: Vec<(&str, &std::ffi::OsStr)> = ca
        .map(|c| ("TEAM_CA_FILE", c.as_os_str()))
        .into_iter()
        .collect();
    super::python_json(
        "team_client.py",
        &[url.as_ref(), token.unwrap_or("-").as_ref(), calls.as_ref()],
        &envs,
    )
}

pub fn url(h: &HttpServed) -> String {
    format!("http://{}/mcp", h.addr)
}

/// A raw POST with `Authorization: Bearer TOKEN` (when given).
pub async fn post_as(
    addr: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> Answer {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let extra: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|b| ("authorization", b))
        .into_iter()
        .collect();
    exchange(addr, &post_bytes(addr, session, &body.to_string(), &extra)).await
}

/// initialize + notifications/initialized with a token; returns the session id.
pub async fn open_session_as(addr: &str, token: &str) -> String {
    let a = post_as(addr, Some(token), None, &super::http::initialize_body(1)).await;
    assert_eq!(a.status, 200, "{a:?}");
    let id = a.header("mcp-session-id").unwrap().to_string();
    let n = post_as(
        addr,
        Some(token),
        Some(&id),
        &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(n.status, 202, "{n:?}");
    id
}

/// One execute_code over raw HTTP with a token.
pub async fn execute_as(addr: &str, token: &str, session: &str, id: i64, code: &str) -> Answer {
    post_as(
        addr,
        Some(token),
        Some(session),
        &super::http::execute_body(id, serde_json::json!({ "code": code })),
    )
    .await
}
