//! Nothing is stored for an execution before it is admitted (issue 56 item 2): a principal
//! under `executions_per_minute: 10` sends 3,000 `execute_code` calls without `code` over MCP
//! 2026-07-28 (no protocol session, so a valid call would mint a session handle). Every call
//! counts against the rate limit, valid or not: the first ten are refused for their arguments
//! (`-32602`), the rest with `429 LIMIT_EXCEEDED`; and the store's session rows are what they
//! were before (none minted for a call that was refused).

use crate::serve_support::http::start_http_state;
use crate::serve_support::modern::call;
use crate::serve_support::team::create_token;
use serde_json::{json, Value};
use std::path::Path;

const CALLS: usize = 3000;

fn session_rows(state: &Path) -> i64 {
    let c = rusqlite::Connection::open(state).unwrap();
    c.query_row("SELECT count(*) FROM state_sessions", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_calls_are_rate_limited_and_keep_nothing() {
    let config = json!({
        "mcpServers": {"fixture": {"command": crate::common::bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}, "policies": {"metered": {"executions_per_minute": 10}}},
    });
    let g = start_http_state(config, None, &[]).await;
    let mallory = create_token(Path::new(&g.state), "mallory", &["--policy", "metered"]);
    let before = session_rows(&g.state);
    let addr = g.addr.clone();
    let no_code = json!({"name": "execute_code", "arguments": {"context": {"x": 1}}});
    let mut answers: Vec<Value> = Vec::new();
    while answers.len() < CALLS {
        let n = (CALLS - answers.len()).min(16);
        let batch = (0..n).map(|_| call(&addr, &mallory, "tools/call", no_code.clone(), false));
        answers.extend(futures::future::join_all(batch).await);
    }
    let invalid: Vec<&Value> = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32602)
        .collect();
    let limited: Vec<&Value> = answers
        .iter()
        .filter(|a| a["status"] == 429 && a["error"]["data"]["code"] == "LIMIT_EXCEEDED")
        .collect();
    assert_eq!(invalid.len(), 10, "{:?}", &answers[..12]);
    assert!(
        invalid[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`code` (a string) is required"),
        "{:?}",
        invalid[0]
    );
    assert_eq!(limited.len(), CALLS - 10, "{:?}", &answers[..12]);
    assert!(
        limited[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("token:mallory may start 10 executions per minute"),
        "{:?}",
        limited[0]
    );
    assert_eq!(
        session_rows(&g.state),
        before,
        "no session row for a refused call"
    );
}
