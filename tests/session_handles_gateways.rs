//! Session handles beyond one request (issue 45): a placeholder one execution returned is
//! resolved in the next through the handle and refused through another handle; everything a
//! handle holds (state, yielded executions, placeholders, the principal binding) goes on
//! through a second gateway on the same PostgreSQL; over stdio the connection stays the session
//! of a 2026-07-28 client. Clients: the official Python SDK's default `Client`.

use super::session_handles::{drive, out, refusal, MODERN, UNKNOWN};
use crate::common::bin;
use crate::pg_support::PgServer;
use crate::serve_support::http::start_http_state_env;
use crate::serve_support::team::create_token;
use serde_json::{json, Value};
use std::path::Path;

/// The operator key both gateways seal placeholder maps with.
const KEY: &str = "6d6370207361616e64626f78207465737420206b6579206f6e6c792120212121";

fn config(dir: &Path) -> Value {
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.join("mail.log")}, "files": {"write": [dir]},
    });
    json!({
        "mcpServers": {"crm": {"command": bin("fixture-mcp-server")}, "mail": mail},
        "sandbox": {
            "auth": {},
            "sensitive": {"detect": ["email"], "reveal_to": {"email": ["mail:send_mail"]}},
        },
    })
}

const READ: &str = "const c = await mcp.crm.get_customer({id: 7}); return c.email";
const MAIL: &str = "try { await mcp.mail.send_mail({to: [to], subject: 'hi'}); return 'sent' } catch (e) { return [e.code, e.message] }";

fn mailed(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("mail.log")).unwrap_or_default()
}

fn placeholder(v: &Value) -> String {
    let p = v.as_str().unwrap().to_string();
    assert!(p.starts_with("⟪email:") && p.ends_with(":1⟫"), "{p}");
    p
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_is_resolved_through_its_handle_and_refused_through_another() {
    let dir = tempfile::tempdir().unwrap();
    let g = start_http_state_env(config(dir.path()), None, &[], &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let steps = json!([
        {"as": "A", "call": "execute_code", "args": {"code": READ}, "keep": {"h": "session", "p": "result"}},
        // 1: another session (the model dropped the handle), which the placeholder is not from.
        {"as": "A", "call": "execute_code", "args": {"code": MAIL, "context": {"to": "$p"}}},
        // 2: through the handle: resolved for the mail server, which may see emails.
        {"as": "A", "call": "execute_code", "args": {"code": MAIL, "context": {"to": "$p"}, "session": "$h"}},
    ]);
    let r = drive(&g.addr, json!({"A": {"token": token}}), steps);
    let p = placeholder(&out(&r, 0)["result"]);
    let refused = &out(&r, 1)["result"];
    assert_eq!(refused[0], json!("PERMISSION_DENIED"), "{r}");
    assert!(
        refused[1].as_str().unwrap().starts_with(&format!(
            "the arguments hold {p}, which is not one of this session's placeholders"
        )),
        "{r}"
    );
    assert_eq!(out(&r, 2)["result"], json!("sent"), "{r}");
    let sent = mailed(dir.path());
    assert_eq!(sent.lines().count(), 1, "{sent}");
    assert!(
        sent.contains("ada7@example.com"),
        "the real address, once: {sent}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_goes_on_through_another_gateway_on_the_same_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let pg = PgServer::start();
    let state = pg.database();
    let envs = [("MCP_SANDBOX_KEY", KEY)];
    let a = start_http_state_env(config(dir.path()), Some(&state), &[], &envs).await;
    let b = start_http_state_env(config(dir.path()), Some(&state), &[], &envs).await;
    let token = create_token(Path::new(&state), "ci", &[]);
    let other = create_token(Path::new(&state), "other", &[]);
    let (ua, ub) = (
        format!("http://{}/mcp", a.addr),
        format!("http://{}/mcp", b.addr),
    );
    let clients = json!({
        "A": {"token": token, "url": ua},
        "B": {"token": token, "url": ub},
        "O": {"token": other, "url": ub},
    });
    let slow = "await new Promise(r => setTimeout(r, 800)); return 'late'";
    let steps = json!([
        // 0, 1 through gateway A: a value, a placeholder, an execution left running.
        {"as": "A", "call": "execute_code", "args": {"code": format!("await store('k', 41); {READ}")}, "keep": {"h": "session", "p": "result"}},
        {"as": "A", "call": "execute_code", "args": {"code": slow, "yield_after_ms": 50, "session": "$h"}, "keep": {"e": "execution_id"}},
        // 2..4 through gateway B: the value, the placeholder, the execution's outcome.
        {"as": "B", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
        {"as": "B", "call": "execute_code", "args": {"code": MAIL, "context": {"to": "$p"}, "session": "$h"}},
        {"as": "B", "call": "wait_execution", "args": {"execution_id": "$e", "session": "$h", "timeout_ms": 20000}},
        // 5: another principal on B with the same handle.
        {"as": "O", "call": "execute_code", "args": {"code": "return await load('k')", "session": "$h"}},
    ]);
    let r = drive(&a.addr, clients, steps);
    assert_eq!(r["versions"]["B"], json!(MODERN), "{r}");
    placeholder(&out(&r, 0)["result"]);
    assert_eq!(out(&r, 1)["status"], json!("running"), "{r}");
    assert_eq!(out(&r, 2)["result"], json!(41), "{r}");
    assert_eq!(out(&r, 3)["result"], json!("sent"), "{r}");
    assert!(
        mailed(dir.path()).contains("ada7@example.com"),
        "{}",
        mailed(dir.path())
    );
    assert_eq!(out(&r, 4)["result"], json!("late"), "{r}");
    assert_eq!(refusal(&r, 5).1, UNKNOWN, "{r}");
}

#[test]
fn over_stdio_the_connection_stays_the_session_of_a_2026_client() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let body = json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}});
    std::fs::write(&config, body.to_string()).unwrap();
    let state = dir.path().join("state.db");
    let exe = env!("CARGO_BIN_EXE_mcp-sandbox");
    let plan = json!({
        "stdio": [exe, config, state],
        "clients": {"S": {"mode": "auto"}},
        "steps": [
            {"as": "S", "call": "execute_code", "args": {"code": "await store('k', 41); return 1"}},
            {"as": "S", "call": "execute_code", "args": {"code": "return await load('k')"}},
            {"as": "S", "call": "list_state", "args": {}},
            {"as": "S", "call": "execute_code", "args": {"code": "return 1", "session": format!("session_{}", "a".repeat(64))}},
        ],
    });
    let r = crate::serve_support::sdk::client("modern_client.py", &[plan.to_string().as_ref()]);
    assert_eq!(r["versions"]["S"], json!(MODERN), "{r}");
    assert!(
        out(&r, 0).get("session").is_none(),
        "no handle on stdio: {r}"
    );
    assert_eq!(out(&r, 1)["result"], json!(41), "{r}");
    assert_eq!(out(&r, 2)["count"], json!(1), "{r}");
    assert_eq!(refusal(&r, 3).2, "SESSION_NOT_NEEDED", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_outlives_a_restart_of_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("kept.db");
    let state = state.to_str().unwrap();
    let config = || json!({"mcpServers": {"crm": {"command": bin("fixture-mcp-server")}}, "sandbox": {"auth": {}}});
    let first = start_http_state_env(config(), Some(state), &[], &[]).await;
    let token = create_token(Path::new(state), "ci", &[]);
    let clients = json!({"A": {"token": token}});
    let steps = json!([{"as": "A", "call": "execute_code", "args": {"code": "await store('k', 41); return 1"}}]);
    let r = drive(&first.addr, clients.clone(), steps);
    let h = out(&r, 0)["session"].as_str().unwrap().to_string();
    drop(first);
    let second = start_http_state_env(config(), Some(state), &[], &[]).await;
    let steps = json!([{"as": "A", "call": "execute_code", "args": {"code": "return await load('k')", "session": h}}]);
    let r = drive(&second.addr, clients, steps);
    assert_eq!(out(&r, 0)["result"], json!(41), "{r}");
}
