//! Pending approvals answered on the web view (issue 32 item 2), against the real `serve --http`
//! with authentication and the fixture server: a call an `ask` rule matches waits, shows up in
//! `GET /ui/api/approvals` for a principal of its tenant allowed to approve (not for another
//! tenant's, not for one without the flag, not for the principal who ran it), `POST` refuses the
//! wrong caller (`403 PERMISSION_DENIED`, `404 APPROVAL_NOT_FOUND`), another origin and a body
//! that is not JSON; an approval lets the call through with `approval_granted` by `web` and the
//! approver in the trace and the audit record; a denial is `PERMISSION_DENIED` with the reason.

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;
use std::time::{Duration, Instant};

pub(crate) async fn get_as(addr: &str, token: &str) -> Value {
    let a = crate::ui_access::get(addr, addr, "/ui/api/approvals", Some(token)).await;
    assert_eq!(a.status, 200, "{a:?}");
    serde_json::from_str(&a.body).unwrap()
}

/// `POST /ui/api/approvals` with `body`, `content_type` and extra header lines.
pub(crate) async fn answer_as(
    addr: &str,
    token: &str,
    body: &Value,
    content_type: &str,
    extra: &str,
) -> (u16, Value) {
    let body = body.to_string();
    let req = format!(
        "POST /ui/api/approvals HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
        body.len()
    );
    let a = exchange(addr, req.as_bytes()).await;
    (
        a.status,
        serde_json::from_str(&a.body).unwrap_or(json!(a.body)),
    )
}

/// The questions `token` sees, once there are `n` (10 s at most).
pub(crate) async fn pending(addr: &str, token: &str, n: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let list = get_as(addr, token).await["approvals"]
            .as_array()
            .unwrap()
            .clone();
        if list.len() >= n || start.elapsed() > Duration::from_secs(10) {
            assert_eq!(list.len(), n, "{list:?}");
            return list;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts `code` as `token` in its own session; the task ends with its `execute_code` result.
pub(crate) async fn run_as(addr: &str, token: &str, code: &str) -> tokio::task::JoinHandle<Value> {
    let s = open_session_as(addr, token).await;
    let (addr, token, code) = (addr.to_string(), token.to_string(), code.to_string());
    tokio::spawn(async move {
        let a = execute_as(&addr, &token, &s, 7, &code).await;
        a.reply(7)["result"]["structuredContent"].clone()
    })
}

pub(crate) fn approval_events(outcome: &Value) -> Vec<Value> {
    outcome["traces"]
        .as_array()
        .unwrap_or_else(|| panic!("no traces: {outcome}"))
        .iter()
        .filter(|t| t["type"].as_str().unwrap_or("").starts_with("approval_"))
        .map(|t| json!([t["type"], t["by"], t["approver"]]))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_teammate_approves_or_denies_a_pending_call_on_the_web_view() {
    let h = start_http_with(
        json!({
            "auth": {},
            "ask": ["fixture:echo"],
            "policies": {"approvers": {"approve": true}, "ops": {"operator": true}},
        }),
        &[],
    )
    .await;
    let alice = create_token(&h.state, "alice", &["--tenant", "red"]);
    let bob = create_token(
        &h.state,
        "bob",
        &["--tenant", "red", "--policy", "approvers"],
    );
    let carol = create_token(
        &h.state,
        "carol",
        &["--tenant", "blue", "--policy", "approvers"],
    );
    let ops = create_token(&h.state, "ops", &["--policy", "ops"]);
    let addr = h.addr.clone();

    // Alice's call waits; bob (her tenant, allowed to approve) sees it with its arguments.
    let run = run_as(
        &addr,
        &alice,
        "return await mcp.fixture.echo({message: 'hi'})",
    )
    .await;
    let q = pending(&addr, &bob, 1).await.remove(0);
    let id = alices_echo_question(&q);
    // Not to carol (another tenant), nor to alice (no "approve"), who may not answer it either.
    assert_eq!(get_as(&addr, &carol).await["approvals"], json!([]));
    assert_eq!(
        get_as(&addr, &alice).await,
        json!({"approve": false, "approvals": []})
    );
    let approve = json!({"id": id, "decision": "approve"});
    let (status, body) = answer_as(&addr, &alice, &approve, "application/json", "").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (403, &json!("PERMISSION_DENIED")),
        "{body}"
    );
    let (status, body) = answer_as(&addr, &carol, &approve, "application/json", "").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("APPROVAL_NOT_FOUND")),
        "{body}"
    );
    // Another origin, a body that is not JSON, a bad decision: refused, the question stays.
    let evil = "origin: http://evil.example\r\n";
    let (status, body) = answer_as(&addr, &bob, &approve, "application/json", evil).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (403, &json!("UI_CROSS_ORIGIN")),
        "{body}"
    );
    let (status, body) = answer_as(&addr, &bob, &approve, "text/plain", "").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (415, &json!("UI_BAD_REQUEST")),
        "{body}"
    );
    let wrong = json!({"id": id, "decision": "yes"});
    let (status, body) = answer_as(&addr, &bob, &wrong, "application/json", "").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("UI_BAD_REQUEST")),
        "{body}"
    );
    assert_eq!(pending(&addr, &bob, 1).await[0]["id"], json!(id));

    // Bob approves from the page (same origin): the call goes through.
    let same = format!("origin: http://{addr}\r\n");
    let (status, body) = answer_as(&addr, &bob, &approve, "application/json", &same).await;
    assert_eq!(status, 200, "{body}");
    let outcome = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome["result"], json!("hi"), "{outcome}");
    assert_eq!(
        approval_events(&outcome),
        [
            json!(["approval_requested", null, null]),
            json!(["approval_granted", "web", "token:bob"])
        ]
    );
    // Answered: gone, and a second answer finds nothing.
    assert_eq!(get_as(&addr, &bob).await["approvals"], json!([]));
    let (status, body) = answer_as(&addr, &bob, &approve, "application/json", "").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("APPROVAL_NOT_FOUND")),
        "{body}"
    );

    // Bob's own call: not his to answer; an operator of another tenant denies it with a reason.
    let run = run_as(
        &addr,
        &bob,
        "return await mcp.fixture.echo({message: 'mine'})",
    )
    .await;
    let q = pending(&addr, &ops, 1).await.remove(0);
    assert_eq!(q["principal"], json!("token:bob"));
    assert_eq!(get_as(&addr, &bob).await["approvals"], json!([]));
    let deny = json!({"id": q["id"], "decision": "deny", "reason": "not today"});
    let (status, body) = answer_as(&addr, &bob, &deny, "application/json", "").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (403, &json!("PERMISSION_DENIED")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("its own execution"),
        "{body}"
    );
    let (status, body) = answer_as(&addr, &ops, &deny, "application/json", "").await;
    assert_eq!(status, 200, "{body}");
    let outcome = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome["error"]["code"],
        json!("PERMISSION_DENIED"),
        "{outcome}"
    );
    assert_eq!(
        outcome["error"]["message"],
        json!("fixture:echo was denied by the person asked (web, token:ops): not today; the call was not forwarded"),
    );
    assert_eq!(
        approval_events(&outcome)[1],
        json!(["approval_denied", "web", "token:ops"])
    );

    // The audit log says who answered.
    let approvals: Vec<Value> = audit(&h.state, &[])
        .iter()
        .flat_map(|r| r["calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["approval"].clone())
        .collect();
    assert!(
        approvals.contains(&json!("granted by web (token:bob)")),
        "{approvals:?}"
    );
    assert!(
        approvals.contains(&json!("denied by web (token:ops)")),
        "{approvals:?}"
    );
}

/// Checks that `q` is alice's question about `fixture:echo {message: "hi"}` (tenant red, the
/// config's ask rule) as the page lists it, and returns its id.
pub(crate) fn alices_echo_question(q: &Value) -> String {
    assert_eq!(
        (&q["tenant"], &q["principal"], &q["tool"], &q["rule"]),
        (
            &json!("red"),
            &json!("token:alice"),
            &json!("fixture:echo"),
            &json!("config rule ask \"fixture:echo\"")
        ),
        "{q}"
    );
    assert_eq!(q["arguments"], json!("{\n  \"message\": \"hi\"\n}"));
    q["id"].as_str().unwrap().to_string()
}
