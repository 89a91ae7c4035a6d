//! Several gateways on one PostgreSQL database (issue 31): two `serve --http` processes with
//! `--state postgres://…` (a server of the test's own, tests/pg_support), one API token created
//! once through the CLI, and the official Python SDK driving both gateways at once. At the end
//! the shared tool graph counts every call made through either gateway, and the shared audit log
//! holds exactly one record per execution.

use crate::common::bin;
use crate::pg_support::PgServer;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::{create_token, results, sdk, url};
use mcp_sandbox::store::audit::AuditFilter;
use mcp_sandbox::store::Store;
use serde_json::json;
use std::path::Path;

/// Executions sent through each gateway (bounded: the whole test takes a few seconds).
const PER_GATEWAY: usize = 150;

#[tokio::test(flavor = "multi_thread")]
async fn two_gateways_share_the_graph_the_tokens_and_the_audit_log() {
    let pg = PgServer::start();
    let state = pg.database();
    let config = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}}
    });
    let a = start_http_state(config.clone(), Some(&state), &[]).await;
    let b = start_http_state(config, Some(&state), &[]).await;
    // One token, created once, usable through both gateways.
    let token = create_token(Path::new(&state), "ci", &[]);
    let code = "await mcp.fixture.echo({message: 'a'}); \
                return await mcp.fixture.echo({message: 'b'})";
    let calls = json!(vec![json!({ "code": code }); PER_GATEWAY]);
    let runs: Vec<_> = [url(&a), url(&b)]
        .into_iter()
        .map(|u| {
            let (token, calls) = (token.clone(), calls.clone());
            std::thread::spawn(move || sdk(&u, Some(&token), &calls))
        })
        .collect();
    for run in runs {
        let out = run.join().unwrap();
        let results = results(&out);
        assert_eq!(results.len(), PER_GATEWAY, "{out}");
        for r in &results {
            assert_eq!(r["is_error"], json!(false), "{r}");
            assert_eq!(r["out"]["result"], json!("b"), "{r}");
        }
    }
    let total = 2 * PER_GATEWAY as i64;
    let store = Store::open(Path::new(&state)).unwrap();
    let g = store.graph(None).unwrap();
    let echo = g.tools.iter().find(|t| t.tool == "fixture:echo").unwrap();
    assert_eq!((echo.calls, echo.successes), (2 * total, 2 * total));
    let edges: Vec<_> = g
        .edges
        .iter()
        .map(|e| (e.source.as_str(), e.target.as_str(), e.count))
        .collect();
    assert_eq!(edges, vec![("fixture:echo", "fixture:echo", total)]);
    let records = store
        .query_audit(&AuditFilter {
            limit: 100_000,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        records.len() as i64,
        total,
        "one audit record per execution"
    );
    assert!(records
        .iter()
        .all(|r| r.outcome == "OK" && r.principal == "token:ci" && r.calls.len() == 2));
    let mut ids: Vec<i64> = records.iter().map(|r| r.id).collect();
    ids.dedup();
    assert_eq!(ids.len() as i64, total);
    for h in [&a, &b] {
        assert!(!h.stderr().contains("STORE_UNSUPPORTED"), "{}", h.stderr());
    }
}
