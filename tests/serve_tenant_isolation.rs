//! Nothing one tenant's execution causes at a downstream server reaches another tenant (issue
//! 25, item 4), over real HTTP with two official Python SDK clients at once
//! (tests/python/tenant_clients.py): a server shared by both that logs and elicits about blue's
//! call after answering it (naming no request) reaches neither red's outcome nor red's client —
//! the message is dropped and the host says so.

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

/// Runs the clients of `plan` at once; their results by name.
pub fn tenant_clients(url: &str, plan: &Value) -> Value {
    let plan = plan.to_string();
    serve_support::python_json("tenant_clients.py", &[url.as_ref(), plan.as_ref()], &[])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_late_log_and_elicitation_about_blue_never_reach_red() {
    let h = start_http_config(
        json!({
            // One process serves both tenants (what the routing must handle when an operator
            // chooses to share a server).
            "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server"), "scope": "shared"}},
            "sandbox": {"auth": {}}
        }),
        &[],
    )
    .await;
    let red = create_token(&h.state, "red", &["--tenant", "red"]);
    let blue = create_token(&h.state, "blue", &["--tenant", "blue"]);
    let plan = json!([
        {"name": "red", "token": red, "delay_s": 0,
         "calls": [{"code": "await mcp.fixture.sleep({ms: 2500}); return 'red done'"}]},
        {"name": "blue", "token": blue, "delay_s": 0.5, "linger_s": 2.5,
         "calls": [{"code": "return await mcp.fixture.process_secret({secret: 'BLUE-SECRET-42', delay_ms: 800})"}]}
    ]);
    let out = tenant_clients(&url(&h), &plan);
    assert!(out["red"].get("error").is_none(), "{out}");
    assert!(out["blue"].get("error").is_none(), "{out}");
    assert_eq!(
        out["red"]["results"][0]["result"],
        json!("red done"),
        "{out}"
    );
    assert_eq!(
        out["blue"]["results"][0]["result"],
        json!("accepted"),
        "{out}"
    );
    assert!(!out["red"].to_string().contains("BLUE-SECRET-42"), "{out}");
    assert_eq!(out["red"]["asked"], json!([]), "{out}");
    // Not blue's either: nothing names blue's call, and it had ended.
    assert_eq!(out["blue"]["asked"], json!([]), "{out}");
    let log = h.stderr();
    assert!(
        log.contains("a log message from the server dropped")
            && log.contains("an elicitation request from the server dropped"),
        "{log}"
    );
}
