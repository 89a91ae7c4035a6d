//! Issue 44 item 1: a client cannot blind the audit log with what it sends. Through the real
//! `serve --http`, the fixture server and a real store (a SQLite file, and a PostgreSQL server
//! of the test's own), with `sandbox.audit.required` true and false:
//!
//! - a NUL (U+0000) in `clientInfo.name` or in a script kept for its `SYNTAX_ERROR` record is
//!   written as U+2400 `␀` on both stores (PostgreSQL refuses a NUL in text): every execution
//!   is answered and recorded, nothing is queued, no breaker trips, and after a SIGKILL of the
//!   gateway every execution that made a call has its record (one still running: `RUNNING`);
//! - a record the store refuses for its content (made so by a trigger the test installs: on
//!   PostgreSQL one that raises SQLSTATE 22023, on SQLite one that asks for a 2 GB blob,
//!   `SQLITE_TOOBIG` — the only way to make a real store refuse content once NULs are encoded)
//!   is written reduced and counted (`mcp_sandbox_audit_records_reduced_total`); one refused
//!   even reduced is withheld with a message naming the cause (`required: true`) or counted
//!   lost (`false`), and the other executions go on (no breaker, no wedged queue);
//! - a NUL in a `wait_execution` id is "no such execution", not an unreachable store.

use crate::pg_support::PgServer;
use crate::serve_support;
use mcp_sandbox::store::audit::{AuditFilter, AuditRecord};
use mcp_sandbox::store::audit_content::REDUCED_CLIENT;
use mcp_sandbox::store::Store;
use serde_json::{json, Value};
use serve_support::http::*;
use std::path::Path;
use std::time::{Duration, Instant};

const NUL_CLIENT: &str = "evil\u{0}client";
const NUL_SHOWN: &str = "evil\u{2400}client";
const CALLS: &str = "return await mcp.fixture.echo({message: 'x'})";
const BROKEN: &str = "// a \u{0} here\nreturn (";

/// initialize as client `name` + notifications/initialized; the session id.
async fn session_named(addr: &str, name: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": name, "version": "0"}}});
    let a = post(addr, None, &init).await;
    assert_eq!(a.status, 200, "{a:?}");
    let s = a.header("mcp-session-id").unwrap().to_string();
    let n = post(
        addr,
        Some(&s),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(n.status, 202, "{n:?}");
    s
}

/// `code` run with execute_code: its structuredContent.
async fn run(addr: &str, s: &str, id: i64, code: &str) -> Value {
    let a = post(addr, Some(s), &execute_body(id, json!({ "code": code }))).await;
    a.reply(id)["result"]["structuredContent"].clone()
}

fn records(state: &str) -> Vec<AuditRecord> {
    Store::open(Path::new(state))
        .unwrap()
        .query_audit(&AuditFilter {
            limit: 10_000,
            ..Default::default()
        })
        .unwrap()
}

/// The value of an unlabelled sample on the gateway's `/metrics`.
async fn metric(h: &HttpServed, name: &str) -> u64 {
    let req = format!(
        "GET /metrics HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        h.addr
    );
    let a = exchange(&h.addr, req.as_bytes()).await;
    assert_eq!(a.status, 200, "{a:?}");
    a.body
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{name} not on /metrics:\n{}", a.body)) as u64
}

async fn gateway(state: Option<&str>, required: bool) -> HttpServed {
    let servers = json!({"fixture": {"command": crate::common::bin("fixture-mcp-server")}});
    start_http_state(
        json!({"mcpServers": servers, "sandbox": {"audit": {"required": required}}}),
        state,
        &[],
    )
    .await
}

fn state_of(h: &HttpServed, pg: Option<&str>) -> String {
    pg.map_or_else(|| h.state.display().to_string(), str::to_string)
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The NUL client's call, its broken script, and another client's call: all answered and
/// recorded as they ran, with `␀` for the NUL; nothing queued or lost.
async fn nul_is_recorded(h: &HttpServed, state: &str) {
    let evil = session_named(&h.addr, NUL_CLIENT).await;
    let out = run(&h.addr, &evil, 2, CALLS).await;
    assert_eq!(out["error"], Value::Null, "{out}");
    let out = run(&h.addr, &evil, 3, BROKEN).await;
    assert_eq!(out["error"]["code"], json!("SYNTAX_ERROR"), "{out}");
    let other = session_named(&h.addr, "other").await;
    let out = run(&h.addr, &other, 4, CALLS).await;
    assert_eq!(out["error"], Value::Null, "{out}");
    let r = records(state);
    let seen: Vec<_> = r
        .iter()
        .map(|r| (r.client.clone(), r.outcome.clone(), r.calls.len()))
        .collect();
    assert_eq!(
        seen,
        [
            (Some(NUL_SHOWN.to_string()), "OK".to_string(), 1),
            (Some(NUL_SHOWN.to_string()), "SYNTAX_ERROR".to_string(), 0),
            (Some("other".to_string()), "OK".to_string(), 1),
        ]
    );
    assert_eq!(r[1].code.as_deref(), Some("// a \u{2400} here\nreturn ("));
    // The digest is of the code as it ran.
    assert_eq!(r[1].code_sha256, sha256_hex(BROKEN));
    assert_eq!(metric(h, "mcp_sandbox_audit_records_queued").await, 0);
    assert_eq!(metric(h, "mcp_sandbox_audit_records_lost_total").await, 0);
    assert_eq!(
        metric(h, "mcp_sandbox_audit_records_reduced_total").await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nul_is_recorded_as_the_symbol_for_null_on_sqlite() {
    for required in [true, false] {
        let h = gateway(None, required).await;
        nul_is_recorded(&h, &state_of(&h, None)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nul_neither_wedges_nor_trips_the_audit_on_postgres_and_survives_a_sigkill() {
    let pg = PgServer::start();
    for required in [true, false] {
        let db = pg.database();
        let mut h = gateway(Some(&db), required).await;
        nul_is_recorded(&h, &db).await;
        // A NUL in a wait_execution id: no such execution, not an unreachable store.
        let s = session_named(&h.addr, "waiter").await;
        let a = post(
            &h.addr,
            Some(&s),
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
                "name": "wait_execution", "arguments": {"execution_id": "a\u{0}b"}}}),
        )
        .await;
        let e = &a.reply(9)["error"];
        assert_eq!(e["data"]["code"], json!("INVALID_ARGUMENTS"), "{a:?}");
        assert!(
            e["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("no such execution in this session"),
            "{a:?}"
        );
        // More executions of both clients, then one of the NUL client killed in its call:
        // every one that made a call has its record.
        let evil = session_named(&h.addr, NUL_CLIENT).await;
        let other = session_named(&h.addr, "other").await;
        for (i, s) in [&evil, &other, &evil].into_iter().enumerate() {
            let out = run(&h.addr, s, 10 + i as i64, CALLS).await;
            assert_eq!(out["error"], Value::Null, "{out}");
        }
        let (addr, slow_s) = (h.addr.clone(), evil.clone());
        let slow = tokio::spawn(async move {
            let body = execute_body(
                20,
                json!({"code": "await mcp.fixture.sleep({ms: 5000}); return 1"}),
            );
            exchange(
                &addr,
                &post_bytes(&addr, Some(&slow_s), &body.to_string(), &[]),
            )
            .await
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while !records(&db).iter().any(|r| r.outcome == "RUNNING") {
            assert!(
                Instant::now() < deadline,
                "no RUNNING record: {:?}",
                records(&db)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        h.child.start_kill().unwrap();
        let _ = h.child.wait().await;
        slow.abort();
        let r = records(&db);
        let seen: Vec<_> = r[3..]
            .iter()
            .map(|r| (r.client.clone().unwrap_or_default(), r.outcome.clone()))
            .collect();
        let (n, o) = (NUL_SHOWN.to_string(), "other".to_string());
        assert_eq!(
            seen,
            [
                (n.clone(), "OK".into()),
                (o, "OK".into()),
                (n.clone(), "OK".into()),
                (n, "RUNNING".into()),
            ],
            "required: {required}"
        );
    }
}

/// The trigger that makes PostgreSQL refuse a record for its content (SQLSTATE 22023): one of
/// client `refuse-me` (its reduced form passes), or of the code whose digest is `sha` (its
/// reduced form keeps the digest: refused too).
fn pg_trigger(sha: &str) -> String {
    format!(
        "CREATE FUNCTION refuse_content() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.client = 'refuse-me' OR NEW.code_sha256 = '{sha}' THEN
             RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22023';
           END IF;
           RETURN NEW;
         END $$;
         CREATE TRIGGER refuse_content BEFORE INSERT ON audit
           FOR EACH ROW EXECUTE FUNCTION refuse_content();"
    )
}

/// The same on SQLite: a blob over SQLite's length limit, `SQLITE_TOOBIG`.
fn sqlite_trigger(sha: &str) -> String {
    format!(
        "CREATE TRIGGER refuse_content BEFORE INSERT ON audit
           WHEN NEW.client = 'refuse-me' OR NEW.code_sha256 = '{sha}'
         BEGIN SELECT zeroblob(2000000000); END;"
    )
}

const REFUSED_ALWAYS: &str = "// refused even reduced\nreturn 1";

async fn refused_content(h: &HttpServed, state: &str, required: bool) {
    // Refused as sent, taken reduced: both the write-ahead record of a call and a whole one.
    let refused = session_named(&h.addr, "refuse-me").await;
    let out = run(&h.addr, &refused, 2, CALLS).await;
    assert_eq!(out["error"], Value::Null, "{out}");
    let out = run(&h.addr, &refused, 3, "return 2").await;
    assert_eq!(out["result"], json!(2), "{out}");
    // Refused even reduced: withheld naming the cause, or counted lost.
    let other = session_named(&h.addr, "other").await;
    let out = run(&h.addr, &other, 4, REFUSED_ALWAYS).await;
    if required {
        assert_eq!(out["error"]["code"], json!("SANDBOX_UNAVAILABLE"), "{out}");
        let m = out["error"]["message"].as_str().unwrap();
        assert!(m.contains("refused its record's content"), "{m}");
        assert!(!m.contains("unreachable"), "{m}");
    } else {
        assert_eq!(out["result"], json!(1), "{out}");
    }
    // The others go on at once: no breaker, no queue.
    for id in 5..8 {
        let out = run(&h.addr, &other, id, CALLS).await;
        assert_eq!(out["error"], Value::Null, "{out}");
    }
    let r = records(state);
    let seen: Vec<_> = r
        .iter()
        .map(|r| {
            (
                r.client.clone().unwrap_or_default(),
                r.outcome.clone(),
                r.code.is_some(),
            )
        })
        .collect();
    let reduced = (REDUCED_CLIENT.to_string(), "OK".to_string(), false);
    let ok = ("other".to_string(), "OK".to_string(), true);
    assert_eq!(seen, [reduced.clone(), reduced, ok.clone(), ok.clone(), ok]);
    assert_eq!(r[0].calls[0].tool, "fixture:echo");
    assert_eq!(r[0].tenant, r[2].tenant);
    let detail = Store::open(Path::new(state))
        .unwrap()
        .audit_record(r[1].id)
        .unwrap()
        .unwrap()
        .detail
        .unwrap();
    assert!(
        detail.logs[0]
            .message
            .starts_with("the audit store refused this record's content"),
        "{detail:?}"
    );
    assert_eq!(
        metric(h, "mcp_sandbox_audit_records_reduced_total").await,
        2
    );
    assert_eq!(metric(h, "mcp_sandbox_audit_records_queued").await, 0);
    assert_eq!(
        metric(h, "mcp_sandbox_audit_records_lost_total").await,
        u64::from(!required)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_record_refused_for_its_content_is_reduced_on_postgres() {
    let pg = PgServer::start();
    for required in [true, false] {
        let db = pg.database();
        let h = gateway(Some(&db), required).await;
        pg.psql_on(&db, &pg_trigger(&sha256_hex(REFUSED_ALWAYS)));
        refused_content(&h, &db, required).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_record_refused_for_its_content_is_reduced_on_sqlite() {
    for required in [true, false] {
        let h = gateway(None, required).await;
        let c = rusqlite::Connection::open(&h.state).unwrap();
        c.execute_batch(&sqlite_trigger(&sha256_hex(REFUSED_ALWAYS)))
            .unwrap();
        drop(c);
        refused_content(&h, &state_of(&h, None), required).await;
    }
}
