//! Tenants over real HTTP: two tokens in tenants `a` and `b` save a capability with the same
//! name; each lists, calls and searches only its own (ids `local.a.…`, `local.b.…`), a save by
//! one does not overwrite the other's, a third tenant sees none (TOOL_NOT_FOUND), and the tool
//! graph learned from their executions is theirs (the default tenant's stays empty).

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

async fn tool(addr: &str, token: &str, session: &str, id: i64, name: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": args}});
    let a = post_as(addr, Some(token), Some(session), &body).await;
    assert_eq!(a.status, 200, "{a:?}");
    a.reply(id)["result"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn tenants_see_call_and_overwrite_only_their_own_capabilities() {
    // Tokens may save capabilities only with `save_capabilities` in a policy (issue 25).
    let h = start_http_with(
        json!({"auth": {}, "policies": {"team": {"save_capabilities": true}}}),
        &[],
    )
    .await;
    let ta = create_token(&h.state, "alice", &["--tenant", "a", "--policy", "team"]);
    let tb = create_token(&h.state, "bob", &["--tenant", "b", "--policy", "team"]);
    let tc = create_token(&h.state, "carol", &["--tenant", "c", "--policy", "team"]);
    let (sa, sb, sc) = (
        open_session_as(&h.addr, &ta).await,
        open_session_as(&h.addr, &tb).await,
        open_session_as(&h.addr, &tc).await,
    );
    let saved_a = tool(
        &h.addr,
        &ta,
        &sa,
        1,
        "save_capability",
        json!({"name": "math:sum", "code": "return 'A:' + (args.x + 1)"}),
    )
    .await;
    let id_a = saved_a["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id_a.starts_with("local.a.math.sum."), "{saved_a}");
    let saved_b = tool(
        &h.addr,
        &tb,
        &sb,
        1,
        "save_capability",
        json!({"name": "math:sum", "code": "return 'B:' + (args.x + 2)"}),
    )
    .await;
    let id_b = saved_b["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id_b.starts_with("local.b.math.sum."), "{saved_b}");
    // Saving in b did not add a version to a's.
    assert_eq!(saved_a["structuredContent"]["version"], json!(1));
    assert_eq!(saved_b["structuredContent"]["version"], json!(1));

    for (token, session, mine) in [(&ta, &sa, &id_a), (&tb, &sb, &id_b)] {
        let list = tool(&h.addr, token, session, 2, "list_capabilities", json!({})).await;
        let caps = list["structuredContent"]["capabilities"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(caps.len(), 1, "{list}");
        assert_eq!(caps[0]["id"], json!(mine));
        assert!(!list.to_string().contains(if mine == &id_a {
            "local.b."
        } else {
            "local.a."
        }));
    }
    let run = |token: &str, session: &str, id: i64| {
        let (addr, token, session) = (h.addr.clone(), token.to_string(), session.to_string());
        async move {
            tool(
                &addr,
                &token,
                &session,
                id,
                "execute_code",
                json!({"code": "return await mcp.math.sum({x: 1})"}),
            )
            .await
        }
    };
    assert_eq!(
        run(&ta, &sa, 3).await["structuredContent"]["result"],
        json!("A:2")
    );
    assert_eq!(
        run(&tb, &sb, 3).await["structuredContent"]["result"],
        json!("B:3")
    );
    let c = run(&tc, &sc, 3).await;
    assert_eq!(
        c["structuredContent"]["error"]["code"],
        json!("TOOL_NOT_FOUND"),
        "{c}"
    );
    let list = tool(&h.addr, &tc, &sc, 4, "list_capabilities", json!({})).await;
    assert_eq!(
        list["structuredContent"]["capabilities"],
        json!([]),
        "{list}"
    );
    let search = tool(
        &h.addr,
        &tc,
        &sc,
        5,
        "search_tools",
        json!({"query": "sum"}),
    )
    .await;
    assert!(!search.to_string().contains("math"), "{search}");

    // The graph of the default tenant learned nothing from a's and b's executions.
    let (status, out, err) = cli(&[
        "graph".as_ref(),
        "--json".as_ref(),
        "--state".as_ref(),
        h.state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    let graph: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(graph["tools"], json!([]), "{graph}");
    // The audit log has each execution with its tenant.
    // (The two saves have their own records, in their tenants: issue 25.)
    let records = audit(&h.state, &[]);
    let (saves, runs): (Vec<&Value>, Vec<&Value>) = records
        .iter()
        .partition(|r| r["calls"][0]["kind"] == json!("capability_save"));
    let tenants =
        |rs: &[&Value]| -> Vec<Value> { rs.iter().map(|r| r["tenant"].clone()).collect() };
    assert_eq!(tenants(&saves), vec![json!("a"), json!("b")]);
    assert_eq!(tenants(&runs), vec![json!("a"), json!("b"), json!("c")]);
}
