//! Approvals answered through any gateway (issue 31 item 3): two `serve --http` gateways on one
//! PostgreSQL database (a server of the test's own, tests/pg_support). A call an `ask` rule
//! matches waits in an execution on gateway A; its question is listed through B's web view API
//! (`GET /ui/api/approvals`) to a principal of its tenant allowed to approve, not to another
//! tenant's; answered through B (`POST`), the call is made on A with `approval_granted` by `web`
//! and B's approver in the trace and the audit record; a second answer is `404
//! APPROVAL_NOT_FOUND` through either gateway; a denial with a reason through B denies the call
//! on A with it; a question whose gateway was killed is listed no more and answered 404.

use crate::common::bin;
use crate::pg_support::PgServer;
use crate::serve_support::http::start_http_state;
use crate::serve_support::team::create_token;
use crate::ui_approvals::{
    alices_echo_question, answer_as, approval_events, get_as, pending, run_as,
};
use mcp_sandbox::store::audit::AuditFilter;
use mcp_sandbox::store::Store;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const JSON: &str = "application/json";

async fn outcome_of(run: tokio::task::JoinHandle<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the execution on A ends within 10 s of the answer")
        .unwrap()
}

fn code(body: &Value) -> &Value {
    &body["error"]["code"]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_asked_on_one_gateway_is_answered_through_another() {
    let pg = PgServer::start();
    let state = pg.database();
    let config = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
        "sandbox": {
            "auth": {},
            "ask": ["fixture:echo"],
            "policies": {"approvers": {"approve": true}, "ops": {"operator": true}}
        }
    });
    let mut a = start_http_state(config.clone(), Some(&state), &[]).await;
    let b = start_http_state(config, Some(&state), &[]).await;
    let st = Path::new(&state);
    let alice = create_token(st, "alice", &["--tenant", "red"]);
    let bob = create_token(st, "bob", &["--tenant", "red", "--policy", "approvers"]);
    let carol = create_token(st, "carol", &["--tenant", "blue", "--policy", "approvers"]);
    let ops = create_token(st, "ops", &["--policy", "ops"]);

    // Alice's call waits on A; bob (her tenant, allowed to approve) sees it through B.
    let run = run_as(
        &a.addr,
        &alice,
        "return await mcp.fixture.echo({message: 'hi'})",
    )
    .await;
    let q = pending(&b.addr, &bob, 1).await.remove(0);
    let id = alices_echo_question(&q);
    // The same question through A, once (not twice: A's own from its registry only).
    assert_eq!(pending(&a.addr, &bob, 1).await[0]["id"], json!(id));
    assert_eq!(pending(&b.addr, &ops, 1).await[0]["id"], json!(id));
    // Not to carol (another tenant) through B, who may not answer it either; nor to alice,
    // who may not answer it.
    assert_eq!(get_as(&b.addr, &carol).await["approvals"], json!([]));
    assert_eq!(
        get_as(&b.addr, &alice).await,
        json!({"approve": false, "approvals": []})
    );
    let approve = json!({"id": id, "decision": "approve"});
    let (status, body) = answer_as(&b.addr, &carol, &approve, JSON, "").await;
    assert_eq!(
        (status, code(&body)),
        (404, &json!("APPROVAL_NOT_FOUND")),
        "{body}"
    );
    let (status, body) = answer_as(&b.addr, &alice, &approve, JSON, "").await;
    assert_eq!(
        (status, code(&body)),
        (403, &json!("PERMISSION_DENIED")),
        "{body}"
    );
    assert_eq!(pending(&b.addr, &bob, 1).await[0]["id"], json!(id));

    // Bob approves through B: the call is made on A.
    let (status, body) = answer_as(&b.addr, &bob, &approve, JSON, "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["id"], &body["tool"], &body["decision"], &body["by"]),
        (
            &json!(id),
            &json!("fixture:echo"),
            &json!("approve"),
            &json!("token:bob")
        ),
        "{body}"
    );
    let t0 = Instant::now();
    let outcome = outcome_of(run).await;
    eprintln!("the call on A went on {:?} after B's answer", t0.elapsed());
    assert_eq!(outcome["result"], json!("hi"), "{outcome}");
    assert_eq!(
        approval_events(&outcome),
        [
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "web", "token:bob"])
        ]
    );
    // Answered: listed nowhere, and a second answer through either gateway finds nothing.
    assert_eq!(get_as(&b.addr, &bob).await["approvals"], json!([]));
    assert_eq!(get_as(&a.addr, &bob).await["approvals"], json!([]));
    for addr in [&b.addr, &a.addr] {
        let (status, body) = answer_as(addr, &ops, &approve, JSON, "").await;
        assert_eq!(
            (status, code(&body)),
            (404, &json!("APPROVAL_NOT_FOUND")),
            "{body}"
        );
    }

    // An operator (another tenant) denies through B with a reason: the call is denied on A.
    let run = run_as(
        &a.addr,
        &alice,
        "return await mcp.fixture.echo({message: 'again'})",
    )
    .await;
    let q = pending(&b.addr, &ops, 1).await.remove(0);
    let deny = json!({"id": q["id"], "decision": "deny", "reason": "not today"});
    let (status, body) = answer_as(&b.addr, &ops, &deny, JSON, "").await;
    assert_eq!(status, 200, "{body}");
    let outcome = outcome_of(run).await;
    assert_eq!(code(&outcome), &json!("PERMISSION_DENIED"), "{outcome}");
    assert_eq!(
        outcome["error"]["message"],
        json!("fixture:echo was denied by the person asked (web, token:ops): not today; the call was not forwarded"),
    );
    assert_eq!(
        approval_events(&outcome)[1],
        json!(["approval_denied", "web", "token:ops"])
    );
    // The first answer won: a later approve through A is refused.
    let late = json!({"id": q["id"], "decision": "approve"});
    let (status, body) = answer_as(&a.addr, &bob, &late, JSON, "").await;
    assert_eq!(
        (status, code(&body)),
        (404, &json!("APPROVAL_NOT_FOUND")),
        "{body}"
    );

    // The shared audit log names who answered through B.
    let store = Store::open(st).unwrap();
    let approvals: Vec<Option<String>> = store
        .query_audit(&AuditFilter {
            limit: 100,
            ..Default::default()
        })
        .unwrap()
        .iter()
        .flat_map(|r| r.calls.iter().map(|c| c.approval.clone()))
        .collect();
    assert!(
        approvals.contains(&Some("granted by web (token:bob)".into())),
        "{approvals:?}"
    );
    assert!(
        approvals.contains(&Some("denied by web (token:ops)".into())),
        "{approvals:?}"
    );

    // A killed while its question waits: B lists it no more and answers 404.
    let lost = run_as(
        &a.addr,
        &alice,
        "return await mcp.fixture.echo({message: 'lost'})",
    )
    .await;
    let q = pending(&b.addr, &bob, 1).await.remove(0);
    lost.abort(); // its connection to A breaks: not this test's subject
    a.child.start_kill().unwrap(); // SIGKILL
    a.child.wait().await.unwrap();
    let t0 = Instant::now();
    while get_as(&b.addr, &bob).await["approvals"] != json!([]) {
        assert!(t0.elapsed() < Duration::from_secs(10), "still listed on B");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "a killed gateway's question left B's list within {:?}",
        t0.elapsed()
    );
    let approve = json!({"id": q["id"], "decision": "approve"});
    let (status, body) = answer_as(&b.addr, &bob, &approve, JSON, "").await;
    assert_eq!(
        (status, code(&body)),
        (404, &json!("APPROVAL_NOT_FOUND")),
        "{body}"
    );
    assert!(!b.stderr().contains("STORE_UNSUPPORTED"), "{}", b.stderr());
}
