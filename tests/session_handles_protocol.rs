//! The rest of MCP 2026-07-28 that a gateway is judged on (issue 45 item 4), as raw HTTP a
//! client, a proxy or a WAF would send: `server/discover` names this gateway and its
//! capabilities; `Mcp-Method` / `Mcp-Name` headers that contradict the body are refused before
//! dispatch (nothing runs, nothing is audited, the downstream server sees nothing); the tool
//! list carries caching hints; the client identity of each request's `_meta` reaches the audit
//! record.

use crate::serve_support::http::{exchange, start_http_state, Answer};
use serde_json::{json, Value};
use std::path::Path;

const VERSION: &str = "2026-07-28";

fn meta(client: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1.2.3"},
    })
}

/// A 2026-07-28 POST (no session) with `headers` besides the version.
async fn modern(addr: &str, body: &Value, headers: &[(&str, &str)]) -> Answer {
    let body = body.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: {VERSION}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    exchange(addr, &[head.as_bytes(), body.as_bytes()].concat()).await
}

fn call(id: i64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args, "_meta": meta("probe-client")}})
}

fn audit(state: &Path) -> Vec<Value> {
    let records = super::session_handles::cli_json(state, &["audit", "--json"]);
    records.as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn discover_headers_caching_and_client_identity() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({
        "mcpServers": {"fixture": {
            "command": crate::common::bin("fixture-mcp-server"),
            "env": {"FIXTURE_MAIL_LOG": dir.path().join("mail.log")}, "files": {"write": [dir.path()]},
        }},
    });
    let g = start_http_state(config, None, &[]).await;

    // server/discover: this gateway, its versions and capabilities.
    let d = modern(
        &g.addr,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta("probe-client")}}),
        &[("mcp-method", "server/discover")],
    )
    .await;
    assert_eq!(d.status, 200, "{d:?}");
    let r = &d.reply(1)["result"];
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        json!("mcp-sandbox"),
        "{r}"
    );
    assert!(
        r["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(VERSION)),
        "{r}"
    );
    assert!(
        r["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25")),
        "{r}"
    );
    assert_eq!(r["capabilities"]["tools"], json!({}), "{r}");

    // Headers that contradict the body are refused before anything runs.
    let mail = "await mcp.fixture.send_mail({to: ['x@example.com'], subject: 's'}); return 1";
    let wrong_method = modern(
        &g.addr,
        &call(2, "execute_code", json!({"code": mail})),
        &[("mcp-method", "tools/list"), ("mcp-name", "execute_code")],
    )
    .await;
    assert_eq!(wrong_method.status, 400, "{wrong_method:?}");
    assert_eq!(
        wrong_method.reply(2)["error"]["code"],
        json!(-32020),
        "{wrong_method:?}"
    );
    assert_eq!(
        wrong_method.reply(2)["error"]["message"],
        json!("Mcp-Method header `tools/list` does not match body method `tools/call`")
    );
    let wrong_name = modern(
        &g.addr,
        &call(3, "execute_code", json!({"code": mail})),
        &[("mcp-method", "tools/call"), ("mcp-name", "search_tools")],
    )
    .await;
    assert_eq!(wrong_name.status, 400, "{wrong_name:?}");
    assert_eq!(
        wrong_name.reply(3)["error"]["message"],
        json!("Mcp-Name header `search_tools` does not match body value `execute_code`")
    );
    assert!(audit(&g.state).is_empty(), "nothing ran");
    assert!(
        !dir.path().join("mail.log").exists(),
        "the server received nothing"
    );

    // The tool list: fresh for a minute, for this caller only.
    let list = modern(
        &g.addr,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": meta("probe-client")}}),
        &[("mcp-method", "tools/list")],
    )
    .await;
    let r = &list.reply(4)["result"];
    assert_eq!(r["ttlMs"], json!(60000), "{r}");
    assert_eq!(r["cacheScope"], json!("private"), "{r}");
    let exec = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "execute_code")
        .unwrap();
    assert_eq!(
        exec["inputSchema"]["properties"]["session"]["type"],
        json!("string"),
        "{exec}"
    );

    // A matching call runs; its record names the client its `_meta` named.
    let ok = modern(
        &g.addr,
        &call(5, "execute_code", json!({"code": "return 1"})),
        &[("mcp-method", "tools/call"), ("mcp-name", "execute_code")],
    )
    .await;
    assert_eq!(
        ok.reply(5)["result"]["structuredContent"]["result"],
        json!(1),
        "{ok:?}"
    );
    let records = audit(&g.state);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["client"], json!("probe-client"), "{records:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_name_of_a_2026_request_reaches_the_execution_span() {
    let collector = crate::serve_support::otlp::Collector::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let body = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"telemetry": {"endpoint": collector.endpoint}},
    });
    std::fs::write(&config, body.to_string()).unwrap();
    let plan = json!({
        "stdio": [env!("CARGO_BIN_EXE_mcp-sandbox"), config, dir.path().join("state.db")],
        "clients": {"S": {"mode": "auto"}},
        "steps": [{"as": "S", "call": "execute_code", "args": {"code": "return 1"}}],
    });
    let r = tokio::task::spawn_blocking(move || {
        crate::serve_support::sdk::client("modern_client.py", &[plan.to_string().as_ref()])
    })
    .await
    .unwrap();
    assert_eq!(r["versions"]["S"], json!(VERSION), "{r}");
    let spans = collector
        .wait_for(1, std::time::Duration::from_secs(15))
        .await;
    let exec = spans
        .iter()
        .find(|s| s.span.name == "execute_code")
        .unwrap();
    let attrs = crate::serve_support::otlp::attrs(&exec.span.attributes);
    // The Python SDK names itself in each request's `_meta` (there is no initialize).
    assert_eq!(
        attrs.get("mcp_sandbox.client.name").map(String::as_str),
        Some("mcp"),
        "{attrs:?}"
    );
}
