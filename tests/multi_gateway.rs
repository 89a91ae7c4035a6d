//! Several gateways on one PostgreSQL database (issue 31): two `serve --http` processes with
//! `--state postgres://…` (a server of the test's own, tests/pg_support), one API token created
//! once through the CLI, and the official Python SDK driving both gateways at once (2,000
//! executions: two clients on each gateway). At the end
//! the shared tool graph counts every call made through either gateway, and the shared audit log
//! holds exactly one record per execution. A principal's executions per minute are counted
//! across both gateways. A yielded execution started through one gateway is waited on and
//! cancelled through the other, and a killed gateway's clients are told so.

use crate::common::{assert_not_hung, bin, ms};
use crate::pg_support::PgServer;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::{
    create_token, execute_as, open_session_as, post_as, results, sdk, url,
};
use mcp_sandbox::store::audit::AuditFilter;
use mcp_sandbox::store::Store;
use serde_json::json;
use std::path::Path;

/// Python SDK clients on each gateway, all at once, each one session.
const CLIENTS_PER_GATEWAY: usize = 2;
/// Executions each client sends (2 gateways × 2 clients × 500 = the 2,000; each
/// client's calls go on its command line, so they are kept well under the 128 KiB a single
/// argument may take).
const PER_CLIENT: usize = 500;
/// Executions sent through each gateway.
const PER_GATEWAY: usize = CLIENTS_PER_GATEWAY * PER_CLIENT;

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
    let calls = json!(vec![json!({ "code": code }); PER_CLIENT]);
    let t = std::time::Instant::now();
    let runs: Vec<_> = [url(&a), url(&b)]
        .into_iter()
        .flat_map(|u| std::iter::repeat_n(u, CLIENTS_PER_GATEWAY))
        .map(|u| {
            let (token, calls) = (token.clone(), calls.clone());
            std::thread::spawn(move || sdk(&u, Some(&token), &calls))
        })
        .collect();
    for run in runs {
        let out = run.join().unwrap();
        let results = results(&out);
        assert_eq!(results.len(), PER_CLIENT, "{out}");
        for r in &results {
            assert_eq!(r["is_error"], json!(false), "{r}");
            assert_eq!(r["out"]["result"], json!("b"), "{r}");
        }
    }
    eprintln!(
        "{} executions through two gateways in {:?}",
        2 * PER_GATEWAY,
        t.elapsed()
    );
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
    // Each gateway appended to a chain of its own, at once; both hold (issue 62).
    let intact = store
        .verify_audit(None)
        .unwrap()
        .unwrap_or_else(|f| panic!("the audit chains hold: {f}"));
    assert_eq!((intact.records as i64, intact.chains), (total, 2));
    for h in [&a, &b] {
        assert!(!h.stderr().contains("STORE_UNSUPPORTED"), "{}", h.stderr());
    }
}

/// `executions_per_minute: 3` for a principal holds across two gateways on one database: two
/// starts through A and one through B fill the window, and the next is refused (429,
/// `Retry-After`, the message saying it counts every gateway) through either.
#[tokio::test(flavor = "multi_thread")]
async fn executions_per_minute_are_counted_across_gateways() {
    let pg = PgServer::start();
    let state = pg.database();
    let config = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}, "policies": {"metered": {"executions_per_minute": 3}}}
    });
    let a = start_http_state(config.clone(), Some(&state), &[]).await;
    let b = start_http_state(config, Some(&state), &[]).await;
    let token = create_token(Path::new(&state), "metered", &["--policy", "metered"]);
    let other = create_token(Path::new(&state), "other", &[]);
    let (sa, sb) = (
        open_session_as(&a.addr, &token).await,
        open_session_as(&b.addr, &token).await,
    );
    for (addr, session, id) in [(&a.addr, &sa, 1), (&a.addr, &sa, 2), (&b.addr, &sb, 3)] {
        let r = execute_as(addr, &token, session, id, "return 7").await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(
            r.reply(id)["result"]["structuredContent"]["result"],
            json!(7)
        );
    }
    for (addr, session, id) in [(&b.addr, &sb, 4), (&a.addr, &sa, 5)] {
        let r = execute_as(addr, &token, session, id, "return 7").await;
        assert_eq!(r.status, 429, "{r:?}");
        let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((50..=60).contains(&retry), "{retry}");
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["error"]["data"]["code"], json!("LIMIT_EXCEEDED"));
        assert!(
            body["error"]["message"].as_str().unwrap().contains(
                "token:metered may start 3 executions per minute (counted across every gateway"
            ),
            "{body}"
        );
    }
    // Another principal has its own count; the refused requests were not executions.
    let so = open_session_as(&b.addr, &other).await;
    let r = execute_as(&b.addr, &other, &so, 1, "return 8").await;
    assert_eq!(r.status, 200, "{r:?}");
    let store = Store::open(Path::new(&state)).unwrap();
    let records = store
        .query_audit(&AuditFilter {
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(records.len(), 4, "one record per execution that ran");
}

/// `tools/call` of `tool` with `args` through `addr` in `session`, as `token`: the JSON-RPC
/// answer to request `id`.
async fn call_as(
    addr: &str,
    token: &str,
    session: &str,
    id: i64,
    tool: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    let a = post_as(addr, Some(token), Some(session), &body).await;
    assert_eq!(a.status, 200, "{tool} through {addr}: {a:?}");
    a.reply(id)
}

/// `wait_execution {execution_id, timeout_ms}` through `addr`: the JSON-RPC answer.
async fn wait_on(
    (addr, token, session): (&str, &str, &str),
    id: i64,
    execution: &str,
    timeout_ms: u64,
) -> serde_json::Value {
    let args = json!({"execution_id": execution, "timeout_ms": timeout_ms});
    call_as(addr, token, session, id, "wait_execution", args).await
}

/// A script that sleeps `ms` (a timer: no CPU) and returns `result`.
fn sleeper(ms: u64, result: &str) -> String {
    format!("await new Promise(r => setTimeout(r, {ms})); return '{result}'")
}

/// Starts `code` through `addr` with `yield_after_ms: 100`; its execution id (it answered
/// `running`).
async fn start_yielded(addr: &str, token: &str, session: &str, id: i64, code: &str) -> String {
    let r = call_as(
        addr,
        token,
        session,
        id,
        "execute_code",
        json!({"code": code, "yield_after_ms": 100}),
    )
    .await;
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["status"], json!("running"), "{r}");
    sc["execution_id"].as_str().unwrap().to_string()
}

/// Yielded executions reachable from any gateway (issue 31 item 3), driven over raw HTTP
/// (JSON-RPC POSTs carrying gateway A's `Mcp-Session-Id` to gateway B, which continues the
/// session from the store): an execution started through A is waited on through B (`running`,
/// then its outcome, read once: A then answers like an unknown id); another one is cancelled
/// through B and ends `CANCELLED` well within the cancel wait; then A is SIGKILLed while it runs
/// a third, and a wait through B answers `SANDBOX_UNAVAILABLE` "the gateway running it stopped…"
/// within a few seconds, the id is forgotten, and B keeps serving the session and new ones.
#[tokio::test(flavor = "multi_thread")]
async fn yielded_executions_are_waited_on_and_cancelled_through_any_gateway() {
    let pg = PgServer::start();
    let state = pg.database();
    let config = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
        "sandbox": {"auth": {}}
    });
    let mut a = start_http_state(config.clone(), Some(&state), &[]).await;
    let b = start_http_state(config, Some(&state), &[]).await;
    let token = create_token(Path::new(&state), "ci", &[]);
    let session = open_session_as(&a.addr, &token).await;

    // Waited on through B: running, then the outcome, read once.
    let e1 = start_yielded(&a.addr, &token, &session, 1, &sleeper(1500, "one")).await;
    let r = wait_on((&b.addr, &token, &session), 2, &e1, 100).await;
    let sc = &r["result"]["structuredContent"];
    assert_eq!(
        (&sc["status"], &sc["execution_id"], &sc["elsewhere"]),
        (&json!("running"), &json!(e1), &json!(true)),
        "{r}"
    );
    let r = wait_on((&b.addr, &token, &session), 3, &e1, 10_000).await;
    let sc = &r["result"]["structuredContent"];
    assert_eq!(
        (&sc["success"], &sc["result"]),
        (&json!(true), &json!("one")),
        "{r}"
    );
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    for addr in [&a.addr, &b.addr] {
        let r = wait_on((addr, &token, &session), 4, &e1, 0).await;
        assert_eq!(
            r["error"]["data"]["code"],
            json!("INVALID_ARGUMENTS"),
            "{r}"
        );
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("no such execution"),
            "{r}"
        );
    }

    // Cancelled through B: A cancels it, B returns CANCELLED.
    let e2 = start_yielded(&a.addr, &token, &session, 5, &sleeper(30_000, "two")).await;
    let t0 = std::time::Instant::now();
    let r = call_as(
        &b.addr,
        &token,
        &session,
        6,
        "cancel_execution",
        json!({"execution_id": e2}),
    )
    .await;
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["error"]["code"], json!("CANCELLED"), "{r}");
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    // The code says it was cancelled, not finished (it sleeps 30 s); a hang guard.
    assert_not_hung(t0.elapsed(), ms(20_000), ms(500), "the cancel through B");
    let r = wait_on((&a.addr, &token, &session), 7, &e2, 0).await;
    assert_eq!(
        r["error"]["data"]["code"],
        json!("INVALID_ARGUMENTS"),
        "{r}"
    );

    // A killed while it runs one: B says so (not `running` at the end of its 60 s wait, nor
    // the result after the 300 s sleep), and forgets the id.
    let e3 = start_yielded(&a.addr, &token, &session, 8, &sleeper(300_000, "three")).await;
    a.child.start_kill().unwrap(); // SIGKILL
    a.child.wait().await.unwrap();
    let t0 = std::time::Instant::now();
    let r = wait_on((&b.addr, &token, &session), 9, &e3, 60_000).await;
    let waited = t0.elapsed();
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["error"]["code"], json!("SANDBOX_UNAVAILABLE"), "{r}");
    let message = sc["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the gateway running it stopped"),
        "{message}"
    );
    assert!(message.contains("Run the script again"), "{message}");
    assert_not_hung(waited, ms(50_000), ms(4_000), "B noticing A's death");
    let r = wait_on((&b.addr, &token, &session), 10, &e3, 0).await;
    assert_eq!(
        r["error"]["data"]["code"],
        json!("INVALID_ARGUMENTS"),
        "{r}"
    );

    // B keeps serving: the same session, and a new one.
    let r = execute_as(&b.addr, &token, &session, 11, "return 'after'").await;
    assert_eq!(
        r.reply(11)["result"]["structuredContent"]["result"],
        json!("after"),
        "{r:?}"
    );
    let fresh = open_session_as(&b.addr, &token).await;
    let e4 = start_yielded(&b.addr, &token, &fresh, 12, &sleeper(300, "four")).await;
    let r = wait_on((&b.addr, &token, &fresh), 13, &e4, 10_000).await;
    assert_eq!(
        r["result"]["structuredContent"]["result"],
        json!("four"),
        "{r}"
    );
}
