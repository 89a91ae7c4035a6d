//! A principal's data-flow labels on the web view (issue 45 item 3): the labels a principal's
//! sessionless (MCP 2026-07-28) executions read stay with it; the view shows them (its own to
//! a principal, anyone's to an operator) and an operator clears them, on the audit record. In
//! headless Chromium (tests/serve_support/cdp.rs) without authentication (the person at the page
//! is the operator), and over raw HTTP with tokens for who may see and clear what. The model is
//! played by the official Python SDK's default `Client` (2026-07-28).

use crate::serve_support;
use crate::session_handles::drive;
use serde_json::{json, Value};
use serve_support::cdp::Browser;
use serve_support::http::*;
use serve_support::team::{audit, create_token};
use std::path::Path;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);
const READ: &str = "const c = await mcp.crm.get_customer({id: 7}); return c.id";

fn config(auth: bool) -> Value {
    let crm = json!({"command": crate::common::bin("fixture-mcp-server")});
    let mut sandbox = json!({
        "labels": {"crm:get_customer": ["private"]},
        "flows": [{"after": ["private"], "deny": ["egress"]}],
        "policies": {"ops": {"operator": true}},
    });
    if auth {
        sandbox["auth"] = json!({});
    }
    json!({"mcpServers": {"crm": crm}, "sandbox": sandbox})
}

#[tokio::test(flavor = "multi_thread")]
async fn the_view_shows_a_principals_labels_and_the_operator_clears_them() {
    let h = start_http_state(config(false), None, &[]).await;
    let read = json!([{"as": "M", "call": "execute_code", "args": {"code": READ}}]);
    drive(&h.addr, json!({"M": {}}), read);
    let origin = format!("http://{}", h.addr);
    let mut b = tokio::task::block_in_place(|| Browser::start(1280, 860));
    tokio::task::block_in_place(|| {
        b.navigate(&format!("{origin}/ui#/labels"));
        let shown = b.wait_for(
            "the labels table",
            "document.querySelector('#labels-table td.label') && [...document.querySelectorAll('#labels-table td')].slice(0, 2).map(td => td.textContent)",
            WAIT,
        );
        assert_eq!(shown, json!(["private", "crm:get_customer"]));
        b.eval("document.getElementById('labels-clear').click()");
        b.wait_for(
            "no labels",
            "!!document.getElementById('labels-none')",
            WAIT,
        );
    });
    let records = audit(&h.state, &[]);
    let clear = records
        .iter()
        .find(|r| r["front"] == "ui")
        .unwrap_or_else(|| panic!("{records:?}"));
    assert_eq!(clear["principal"], json!("anonymous"));
    assert_eq!(clear["labels"], json!(["private"]));
    assert_eq!(
        clear["code"],
        json!("labels clear --principal anonymous --tenant default (web view)")
    );
}

async fn clear_as(addr: &str, token: &str, principal: &str, extra: &str) -> (u16, Value) {
    let body = json!({"principal": principal}).to_string();
    let req = format!(
        "POST /ui/api/labels/clear HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
        body.len()
    );
    let a = exchange(addr, req.as_bytes()).await;
    (
        a.status,
        serde_json::from_str(&a.body).unwrap_or(json!(a.body)),
    )
}

async fn labels_as(addr: &str, token: &str, query: &str) -> (u16, Value) {
    let a = crate::ui_access::get(addr, addr, &format!("/ui/api/labels{query}"), Some(token)).await;
    (
        a.status,
        serde_json::from_str(&a.body).unwrap_or(json!(a.body)),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_principal_sees_its_own_labels_and_only_an_operator_clears_anyones() {
    let h = start_http_state(config(true), None, &[]).await;
    let state = Path::new(&h.state);
    let a = create_token(state, "a", &[]);
    let b = create_token(state, "b", &[]);
    let op = create_token(state, "op", &["--policy", "ops"]);
    let read = json!([{"as": "A", "call": "execute_code", "args": {"code": READ}}]);
    drive(&h.addr, json!({"A": {"token": a}}), read);

    let (status, own) = labels_as(&h.addr, &a, "").await;
    assert_eq!(status, 200, "{own}");
    assert_eq!(own["principal"], json!("token:a"));
    assert_eq!(own["labels"][0]["label"], json!("private"), "{own}");
    let (status, theirs) = labels_as(&h.addr, &b, "?principal=token:a").await;
    assert_eq!(
        (status, &theirs["error"]["code"]),
        (403, &json!("UI_FORBIDDEN")),
        "{theirs}"
    );
    let (status, by_op) = labels_as(&h.addr, &op, "?principal=token:a").await;
    assert_eq!(status, 200, "{by_op}");
    assert_eq!(by_op["labels"], own["labels"]);

    let (status, r) = clear_as(&h.addr, &a, "token:a", "").await;
    assert_eq!(
        (status, &r["error"]["code"]),
        (403, &json!("UI_FORBIDDEN")),
        "{r}"
    );
    let (status, r) = clear_as(&h.addr, &op, "token:a", "origin: http://evil.example\r\n").await;
    assert_eq!(
        (status, &r["error"]["code"]),
        (403, &json!("UI_CROSS_ORIGIN")),
        "{r}"
    );
    assert_eq!(
        labels_as(&h.addr, &a, "").await.1["labels"],
        own["labels"],
        "nothing cleared yet"
    );
    let (status, r) = clear_as(&h.addr, &op, "token:a", "").await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["cleared"][0]["label"], json!("private"), "{r}");
    assert_eq!(labels_as(&h.addr, &a, "").await.1["labels"], json!([]));
    let records = audit(state, &[]);
    let clear = records
        .iter()
        .find(|r| r["front"] == "ui")
        .unwrap_or_else(|| panic!("{records:?}"));
    assert_eq!(clear["principal"], json!("token:op"));
}
