//! A relayed question carries placeholders only (issue 56 item 3). With `sandbox.sensitive`, a
//! downstream MCP 2026-07-28 server (tests/python/echo_meta_server.py, raw JSON-RPC) that is
//! revealed the real values and echoes them in its `input_required` question — the message, the
//! schema's description and `_meta` (as a value and as a key) — reaches the client with the
//! session's placeholders in every string, in both eras: a 2026-07-28 client reads it in a
//! task's `input_required` (raw requests), a legacy client gets an elicitation request (the
//! official Python SDK over stdio, tests/python/serve_passthrough.py, every byte `serve` wrote
//! kept). Every string of what the client received is walked.

use crate::common::{bin, repo_root, Listening};
use crate::serve_support::http::start_http_state;
use crate::serve_support::modern::{call, execute};
use crate::serve_support::team::create_token;
use serde_json::{json, Value};
use std::path::Path;

const REAL: [&str; 2] = ["ada7@example.com", "4111 1111 1111 1111"];
const CODE: &str = "const c = await mcp.fixture.get_customer({id: 7});\n\
                    const text = 'write to ' + c.email + ' about ' + c.card;\n\
                    return [c.email, await mcp.mrtr.echo({text})];";

fn mrtr_server() -> Listening {
    let port = crate::common::free_port();
    let mut cmd = std::process::Command::new(repo_root().join(".venv/bin/python"));
    cmd.arg(repo_root().join("tests/python/echo_meta_server.py"))
        .arg(port.to_string());
    Listening::spawn(cmd, port)
}

fn config(server: &Listening, auth: bool) -> Value {
    let mut sandbox = json!({"sensitive": {
        "detect": ["email", "card"],
        "reveal_to": {"email": ["mrtr:echo"], "card": ["mrtr:echo"]},
    }});
    if auth {
        sandbox["auth"] = json!({});
    }
    json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}, "mrtr": {"url": server.url()}},
        "sandbox": sandbox,
    })
}

/// Every string of `v`: its values and its object keys.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => {
            for (k, x) in m {
                out.push(k.clone());
                strings(x, out);
            }
        }
        _ => {}
    }
}

/// No string of `v` holds a real value; returns how many hold a placeholder.
fn placeholders_only(v: &Value) -> usize {
    let mut all = Vec::new();
    strings(v, &mut all);
    for s in &all {
        for real in REAL {
            assert!(!s.contains(real), "{real} reached the client in {s:?}: {v}");
        }
    }
    all.iter().filter(|s| s.contains("⟪email:")).count()
}

/// The echoed question's params: the message and the schema's description are the redacted
/// text; `_meta`, where it arrives, too. (The official Python SDK's server and rmcp drop a
/// question's own `_meta` on the way today, so the walk below covers it when it comes; the
/// unit test `exec::passthrough::tests::every_string_of_a_relayed_question_is_redacted` plays
/// a server whose `_meta` does arrive.)
fn echoed_redacted(params: &Value) {
    let message = params["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{params}"));
    assert!(message.starts_with("write to ⟪email:"), "{params}");
    assert!(message.contains(" about ⟪card:"), "{params}");
    if let Some(echo) = params["_meta"].get("io.example/echo") {
        assert_eq!(echo, &json!(message), "{params}");
    }
    let description = &params["requestedSchema"]["properties"]["ok"]["description"];
    assert_eq!(description, &json!(message), "{params}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_clients_input_required_carries_placeholders_only() {
    let server = mrtr_server();
    let g = start_http_state(config(&server, true), None, &[]).await;
    let alice = create_token(Path::new(&g.state), "alice", &[]);
    let task = execute(&g.addr, &alice, CODE, true).await;
    let id = task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{task}"))
        .to_string();
    let start = std::time::Instant::now();
    let asked = loop {
        let s = call(&g.addr, &alice, "tasks/get", json!({"taskId": id}), true).await;
        if s["status"] != "working" {
            break s;
        }
        crate::common::assert_not_hung(
            start.elapsed(),
            std::time::Duration::from_secs(60),
            std::time::Duration::from_secs(2),
            "the server's question reaching the task",
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(asked["status"], json!("input_required"), "{asked}");
    let request = asked["inputRequests"]
        .as_object()
        .and_then(|m| m.values().next())
        .unwrap_or_else(|| panic!("{asked}"));
    echoed_redacted(&request["params"]);
    assert!(placeholders_only(&asked) >= 5, "{asked}");
    call(&g.addr, &alice, "tasks/cancel", json!({"taskId": id}), true).await;
}

#[test]
fn a_legacy_clients_elicitation_carries_placeholders_only() {
    let server = mrtr_server();
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.log");
    let text = config(&server, false);
    let r = crate::serve_passthrough::client_in(
        &dir,
        text,
        CODE,
        "answering",
        &[("MCP_RAW_LOG", &raw)],
    );
    let params = r["asked_params"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(params.len(), 1, "{r}");
    echoed_redacted(&params[0]);
    assert!(placeholders_only(&r["asked_params"]) >= 5, "{r}");
    assert_eq!(r["outcome"]["result"][1], json!("answered"), "{r}");
    let bytes = std::fs::read(&raw).unwrap();
    assert!(!bytes.is_empty());
    for real in REAL {
        assert!(
            !bytes.windows(real.len()).any(|w| w == real.as_bytes()),
            "the client received {real}"
        );
    }
}
