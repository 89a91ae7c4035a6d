//! Labels per principal across eras (issue 56 item 5): with the default `flow_scope`
//! ("principal"), a legacy `Mcp-Session-Id` session and MCP 2026-07-28 requests of one
//! principal share its sticky labels. A principal that reads private data through a 2026
//! client and then sends through a legacy session is refused, and so is the reverse; the mail
//! server never receives either. Clients: the official Python SDK (`Client`, auto and legacy
//! mode) against `serve --http` with tokens; `crm` and `mail` are the rmcp fixture server.

use super::session_handles::{drive, out, MODERN};
use crate::common::bin;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use serde_json::json;
use std::path::Path;

const READ: &str = "const c = await mcp.crm.get_customer({id: 7}); return c.id";
const MAIL: &str = "try { await mcp.mail.send_mail({to: ['x@example.com'], subject: 'hi'}); return 'sent' } catch (e) { return [e.code, e.message] }";

#[tokio::test(flavor = "multi_thread")]
async fn a_private_read_in_one_era_stops_egress_in_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.path().join("mail.log")}, "files": {"write": [dir.path()]},
    });
    let config = json!({
        "mcpServers": {"crm": {"command": bin("fixture-mcp-server")}, "mail": mail},
        "sandbox": {
            "auth": {},
            "labels": {"crm:get_customer": ["private"], "mail:send_mail": ["egress"]},
            "flows": [{"after": ["private"], "deny": ["egress"], "name": "no-exfiltration"}],
        },
    });
    let g = start_http_state(config, None, &[]).await;
    let a = create_token(Path::new(&g.state), "a", &[]);
    let b = create_token(Path::new(&g.state), "b", &[]);
    let clients = json!({
        "AM": {"token": a, "mode": "auto"},
        "AL": {"token": a, "mode": "legacy"},
        "BM": {"token": b, "mode": "auto"},
        "BL": {"token": b, "mode": "legacy"},
    });
    let steps = json!([
        // 0, 1: a reads through a 2026 client, then mails through a legacy session.
        {"as": "AM", "call": "execute_code", "args": {"code": READ}},
        {"as": "AL", "call": "execute_code", "args": {"code": MAIL}},
        // 2, 3: b the other way round.
        {"as": "BL", "call": "execute_code", "args": {"code": READ}},
        {"as": "BM", "call": "execute_code", "args": {"code": MAIL}},
    ]);
    let r = drive(&g.addr, clients, steps);
    assert_eq!(r["versions"]["AM"], json!(MODERN), "{r}");
    assert_ne!(r["versions"]["AL"], json!(MODERN), "{r}");
    assert_eq!(out(&r, 0)["result"], json!(7), "{r}");
    assert_eq!(out(&r, 2)["result"], json!(7), "{r}");
    for i in [1, 3] {
        let result = &out(&r, i)["result"];
        assert_eq!(result[0], json!("PERMISSION_DENIED"), "step {i}: {r}");
        let message = result[1].as_str().unwrap();
        assert!(
            message.starts_with("mail:send_mail is egress; this execution read private data from crm:get_customer in an earlier execution (")
                && message.ends_with(") of the same principal (config flow rule \"no-exfiltration\"); the call was not forwarded"),
            "step {i}: {message}"
        );
    }
    let mailed = std::fs::read_to_string(dir.path().join("mail.log")).unwrap_or_default();
    assert_eq!(mailed, "", "the mail server received nothing");
}
