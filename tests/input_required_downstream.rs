//! A downstream server's questions reach a client of either era (issue 46 item 3): a
//! 2026-07-28 server on the official Python SDK (tests/python/mrtr_server.py, `MCPServer` over
//! stateless HTTP) answers a call with `input_required`; a legacy server (the rmcp fixture)
//! sends `elicitation/create`. Through `serve --http`, the official Python SDK's client asks
//! its user — by `input_required` when it speaks 2026-07-28, by an elicitation request in
//! legacy mode — and the server receives the answer (and its own `requestState`) in its retry.

use crate::common::{repo_root, Listening};
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use crate::session_handles::{drive, out, MODERN};
use serde_json::json;
use std::path::Path;

fn mrtr_server() -> Listening {
    let port = crate::common::free_port();
    let mut cmd = std::process::Command::new(repo_root().join(".venv/bin/python"));
    cmd.arg(repo_root().join("tests/python/mrtr_server.py"))
        .arg(port.to_string());
    Listening::spawn(cmd, port)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_servers_input_required_is_answered_by_the_client_in_both_eras() {
    let server = mrtr_server();
    let config = json!({
        "mcpServers": {"mrtr": {"url": server.url()}},
        "sandbox": {"auth": {}},
    });
    let g = start_http_state(config, None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let clients = json!({
        "M": {"token": token, "elicit": [{"ok": true}]},
        "L": {"token": token, "mode": "legacy", "elicit": [{"ok": false}]},
    });
    let code = "return await mcp.mrtr.confirm({text: 'the report'})";
    let steps = json!([
        {"as": "M", "call": "execute_code", "args": {"code": code}},
        {"as": "L", "call": "execute_code", "args": {"code": code}},
    ]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"]["M"], json!(MODERN), "{r}");
    assert_ne!(r["versions"]["L"], json!(MODERN), "{r}");
    assert_eq!(r["elicited"]["M"], json!(["Send the report?"]), "{r}");
    assert_eq!(r["elicited"]["L"], json!(["Send the report?"]), "{r}");
    // The server got each client's answer and its own requestState back.
    assert_eq!(
        out(&r, 0)["result"],
        json!("accept ok=True state=asked:the report"),
        "{r}"
    );
    assert_eq!(
        out(&r, 1)["result"],
        json!("accept ok=False state=asked:the report"),
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_servers_elicitation_reaches_a_2026_client_as_input_required() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}},
    });
    let g = start_http_state(config, None, &[]).await;
    let token = create_token(Path::new(&g.state), "ci", &[]);
    let clients = json!({"M": {"token": token, "elicit": [{"colour": "blue"}]}});
    let code = "const colour = await mcp.fixture.ask_client({kind: 'elicit'}); \
                let sampled; try { sampled = await mcp.fixture.ask_client({kind: 'sample'}) } \
                catch (e) { sampled = e.message } return [colour, sampled]";
    let steps = json!([{"as": "M", "call": "execute_code", "args": {"code": code}}]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"]["M"], json!(MODERN), "{r}");
    assert_eq!(r["elicited"]["M"], json!(["Which colour?"]), "{r}");
    let result = &out(&r, 0)["result"];
    assert_eq!(
        result[0]["answer"],
        json!({"action": "accept", "content": {"colour": "blue"}}),
        "{r}"
    );
    // It declared no sampling in its requests' _meta: the server's request is refused, saying so.
    assert!(
        result[1]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("did not declare the sampling capability in its request's _meta"),
        "{r}"
    );
}
