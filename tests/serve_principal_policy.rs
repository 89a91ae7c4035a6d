//! Per-principal policy, limits and rate limits (`sandbox.policies`, named by a token's
//! `--policy`), over real HTTP: a policy that denies a tool gives PERMISSION_DENIED for that
//! tool only and only to its principals; a policy's limits narrow the config's; executions per
//! minute and concurrent executions over the bound are refused with 429, `Retry-After` and
//! LIMIT_EXCEEDED, and a principal recovers once a running execution ends.

use crate::serve_support;
use serde_json::json;
use serve_support::http::*;
use serve_support::team::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_denies_its_tools_to_its_principals_only() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {
            "no-echo": {"deny": ["fixture:echo"]},
            "one-call": {"limits": {"max_calls": 1}}
        }}),
        &[],
    )
    .await;
    let limited = create_token(&h.state, "limited", &["--policy", "no-echo"]);
    let free = create_token(&h.state, "free", &[]);
    let frugal = create_token(&h.state, "frugal", &["--policy", "one-call"]);
    let calls = json!([
        {"code": "return await mcp.fixture.echo({message: 'x'})"},
        {"code": "return (await mcp.fixture.add({a: 2, b: 3})).sum"},
        {"code": "await mcp.fixture.add({a: 1, b: 1}); return await mcp.fixture.add({a: 1, b: 1})"}
    ]);
    let out = sdk(&url(&h), Some(&limited), &calls);
    let r = &out["results"];
    assert_eq!(r[0]["is_error"], json!(true), "{out}");
    assert_eq!(
        r[0]["out"]["error"]["code"],
        json!("PERMISSION_DENIED"),
        "{out}"
    );
    assert!(
        r[0]["out"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("policy 'no-echo'"),
        "{out}"
    );
    assert_eq!(r[1]["out"]["result"], json!(5), "{out}");
    assert_eq!(r[2]["out"]["success"], json!(true), "{out}");

    let out = sdk(&url(&h), Some(&free), &calls);
    let r = &out["results"];
    assert_eq!(r[0]["out"]["result"], json!("x"), "{out}");
    assert_eq!(r[1]["out"]["result"], json!(5), "{out}");

    // The policy's limits narrow the config's: one tool call per execution.
    let out = sdk(&url(&h), Some(&frugal), &calls);
    let r = &out["results"];
    assert_eq!(r[0]["out"]["result"], json!("x"), "{out}");
    assert_eq!(
        r[2]["out"]["error"]["code"],
        json!("LIMIT_EXCEEDED"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn executions_per_minute_over_the_bound_get_429_with_retry_after() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {"slow": {"executions_per_minute": 2}}}),
        &[],
    )
    .await;
    let token = create_token(&h.state, "metered", &["--policy", "slow"]);
    let other = create_token(&h.state, "other", &[]);
    let s = open_session_as(&h.addr, &token).await;
    for id in 1..=2 {
        let a = execute_as(&h.addr, &token, &s, id, "return 1").await;
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(
            a.reply(id)["result"]["structuredContent"]["result"],
            json!(1)
        );
    }
    let a = execute_as(&h.addr, &token, &s, 3, "return 1").await;
    assert_eq!(a.status, 429, "{a:?}");
    let retry: u64 = a.header("retry-after").unwrap().parse().unwrap();
    assert!((50..=60).contains(&retry), "{retry}");
    let body: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(body["id"], json!(3));
    assert_eq!(body["error"]["data"]["code"], json!("LIMIT_EXCEEDED"));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("token:metered may start 2 executions per minute"),
        "{body}"
    );
    // Another principal is not affected.
    let s2 = open_session_as(&h.addr, &other).await;
    let a = execute_as(&h.addr, &other, &s2, 1, "return 2").await;
    assert_eq!(a.status, 200, "{a:?}");
    // A refused request is not an execution: the audit log has the three that ran.
    assert_eq!(audit(&h.state, &[]).len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_executions_over_the_bound_get_429_and_recover() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {"single": {"max_concurrent": 1}}}),
        &[],
    )
    .await;
    let token = create_token(&h.state, "single", &["--policy", "single"]);
    let s = open_session_as(&h.addr, &token).await;
    let (addr, t, sid) = (h.addr.clone(), token.clone(), s.clone());
    let slow = tokio::spawn(async move {
        execute_as(
            &addr,
            &t,
            &sid,
            1,
            "await mcp.fixture.sleep({ms: 1500}); return 'slow'",
        )
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let a = execute_as(&h.addr, &token, &s, 2, "return 'fast'").await;
    assert_eq!(a.status, 429, "{a:?}");
    assert_eq!(a.header("retry-after"), Some("1"));
    assert!(
        a.body.contains("may run 1 executions at once"),
        "{}",
        a.body
    );
    let done = slow.await.unwrap();
    assert_eq!(
        done.reply(1)["result"]["structuredContent"]["result"],
        json!("slow")
    );
    let a = execute_as(&h.addr, &token, &s, 3, "return 'fast'").await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.reply(3)["result"]["structuredContent"]["result"],
        json!("fast")
    );
}
