//! The web view's API (`/ui/api/...`, issue 32 item 2) over plain HTTP against the real
//! `serve --http`: behind the gateway's authentication a principal sees only its own tenant's
//! executions (another tenant's is `404 UI_NOT_FOUND`, naming another tenant `403
//! UI_FORBIDDEN`), an operator (a policy with `"operator": true`) sees all; without
//! authentication only loopback `Host` names are answered; `mcp-sandbox ui` listens on
//! loopback only and serves a state store's records.

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

/// `GET path` with `Host: host` and, when given, `Authorization: Bearer TOKEN`.
pub async fn get(addr: &str, host: &str, path: &str, token: Option<&str>) -> Answer {
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    let req = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n{auth}connection: close\r\n\r\n");
    exchange(addr, req.as_bytes()).await
}

fn json_of(a: &Answer) -> Value {
    serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("not JSON ({e}): {a:?}"))
}

/// The ids of an `/ui/api/executions` answer, newest first.
fn ids(a: &Answer) -> Vec<i64> {
    json_of(a)["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_i64().unwrap())
        .collect()
}

fn error_code(a: &Answer) -> String {
    json_of(a)["error"]["code"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_principal_sees_only_its_tenants_executions_and_an_operator_sees_all() {
    let h = start_http_with(
        json!({"auth": {}, "policies": {"ops": {"operator": true}}}),
        &[],
    )
    .await;
    let red = create_token(&h.state, "red", &["--tenant", "red"]);
    let blue = create_token(&h.state, "blue", &["--tenant", "blue"]);
    let ops = create_token(&h.state, "ops", &["--policy", "ops"]);
    for (token, id) in [(&red, 10), (&blue, 20)] {
        let s = open_session_as(&h.addr, token).await;
        let a = execute_as(
            &h.addr,
            token,
            &s,
            id,
            "await mcp.fixture.echo({message: 'hi'}); return 1",
        )
        .await;
        assert_eq!(a.status, 200, "{a:?}");
    }
    let records = audit(&h.state, &[]);
    let id_of = |tenant: &str| {
        records
            .iter()
            .find(|r| r["tenant"] == json!(tenant))
            .unwrap_or_else(|| panic!("no record of {tenant}: {records:?}"))["id"]
            .as_i64()
            .unwrap()
    };
    let (red_id, blue_id) = (id_of("red"), id_of("blue"));
    let host = h.addr.clone();

    // Red's list holds red's execution only.
    let a = get(&h.addr, &host, "/ui/api/executions", Some(&red)).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(ids(&a), vec![red_id], "{a:?}");
    // Blue's execution, by id, to red: the same answer as a missing one.
    let a = get(
        &h.addr,
        &host,
        &format!("/ui/api/executions/{blue_id}"),
        Some(&red),
    )
    .await;
    assert_eq!(
        (a.status, error_code(&a).as_str()),
        (404, "UI_NOT_FOUND"),
        "{a:?}"
    );
    let missing = get(&h.addr, &host, "/ui/api/executions/999999", Some(&red)).await;
    assert_eq!(
        (missing.status, json_of(&missing)["error"]["code"].clone()),
        (404, json!("UI_NOT_FOUND"))
    );
    // To blue it is there, with its calls and trace events.
    let a = get(
        &h.addr,
        &host,
        &format!("/ui/api/executions/{blue_id}"),
        Some(&blue),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    let rec = json_of(&a);
    assert_eq!(rec["tenant"], json!("blue"));
    assert_eq!(rec["calls"][0]["tool"], json!("fixture:echo"));
    let kinds: Vec<&str> = rec["detail"]["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tool_start", "tool_end"], "{rec}");
    // Naming another tenant is refused outright, for every endpoint that takes one.
    for path in [
        "/ui/api/executions?tenant=blue",
        "/ui/api/graph?tenant=blue",
        "/ui/api/capabilities?tenant=blue",
    ] {
        let a = get(&h.addr, &host, path, Some(&red)).await;
        assert_eq!(
            (a.status, error_code(&a).as_str()),
            (403, "UI_FORBIDDEN"),
            "{path}: {a:?}"
        );
    }
    // Red's own graph: the one tool red called.
    let a = get(&h.addr, &host, "/ui/api/graph", Some(&red)).await;
    let tools: Vec<Value> = json_of(&a)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["tool"], t["calls"]]))
        .collect();
    assert_eq!(tools, vec![json!(["fixture:echo", 1])], "{a:?}");
    // The operator sees both tenants.
    let a = get(&h.addr, &host, "/ui/api/executions", Some(&ops)).await;
    assert_eq!(a.status, 200, "{a:?}");
    let all = ids(&a);
    assert!(all.contains(&red_id) && all.contains(&blue_id), "{a:?}");
    let a = get(
        &h.addr,
        &host,
        &format!("/ui/api/executions/{blue_id}"),
        Some(&ops),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    let me = json_of(&get(&h.addr, &host, "/ui/api/me", Some(&ops)).await);
    assert_eq!(me["operator"], json!(true), "{me}");
    let me = json_of(&get(&h.addr, &host, "/ui/api/me", Some(&red)).await);
    assert_eq!(
        (me["operator"].clone(), me["tenant"].clone()),
        (json!(false), json!("red"))
    );
    // Without a credential the API is refused by the gateway; the page itself (no data in
    // it) loads, under its Content-Security-Policy.
    let a = get(&h.addr, &host, "/ui/api/executions", None).await;
    assert_eq!(a.status, 401, "{a:?}");
    let page = get(&h.addr, &host, "/ui", None).await;
    assert_eq!(page.status, 200, "{page:?}");
    assert_eq!(
        page.header("content-security-policy"),
        Some(mcp_sandbox::front::ui::routes::CONTENT_SECURITY_POLICY)
    );
    assert!(page
        .header("content-security-policy")
        .unwrap()
        .starts_with("default-src 'self';"));
    assert!(page.body.contains("/ui/assets/app.js"), "{page:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_authentication_only_loopback_hosts_are_answered() {
    let h = start_http(&[]).await;
    let s = open_session(&h.addr).await;
    let a = post(
        &h.addr,
        Some(&s),
        &execute_body(2, json!({"code": "return 7"})),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    let port = h.addr.rsplit_once(':').unwrap().1.to_string();
    for host in ["evil.example", &format!("evil.example:{port}"), "10.1.2.3"] {
        for path in ["/ui", "/ui/api/executions"] {
            let a = get(&h.addr, host, path, None).await;
            assert_eq!(
                (a.status, error_code(&a).as_str()),
                (403, "UI_HOST_REFUSED"),
                "{host} {path}: {a:?}"
            );
        }
    }
    for host in [h.addr.clone(), format!("localhost:{port}")] {
        let a = get(&h.addr, &host, "/ui/api/executions", None).await;
        assert_eq!(a.status, 200, "{host}: {a:?}");
        assert_eq!(ids(&a).len(), 1, "{a:?}");
        // Anonymous on loopback is the operator.
        let me = json_of(&get(&h.addr, &host, "/ui/api/me", None).await);
        assert_eq!(
            (me["principal"].clone(), me["operator"].clone()),
            (json!("anonymous"), json!(true))
        );
    }

    // `mcp-sandbox ui` refuses a non-loopback address ...
    let (status, _, stderr) = cli(&[
        "ui".as_ref(),
        "--http".as_ref(),
        "0.0.0.0:0".as_ref(),
        "--state".as_ref(),
        h.state.as_os_str(),
    ]);
    assert_eq!(status, 2, "{stderr}");
    assert!(
        stderr.contains("ui --http 0.0.0.0:0: the web view has no authentication of its own, so it listens on a loopback address only"),
        "{stderr}"
    );
    // ... and on loopback serves the same store's records.
    let mut ui = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["ui", "--http", "127.0.0.1:0", "--state"])
        .arg(&h.state)
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(ui.stderr.take().unwrap()));
    // The line naming the store it reads comes first; then where it serves.
    let line = loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("ui printed nothing within 20 s")
            .unwrap()
            .unwrap();
        if !line.starts_with("mcp-sandbox: store ") {
            break line;
        }
    };
    let addr = line
        .strip_prefix("mcp-sandbox: web view at http://")
        .and_then(|r| r.strip_suffix("/ui"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let a = get(&addr, &addr, "/ui/api/executions", None).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        json_of(&a)["executions"][0]["outcome"],
        json!("OK"),
        "{a:?}"
    );
    let a = get(&addr, "evil.example", "/ui/api/executions", None).await;
    assert_eq!(
        (a.status, error_code(&a).as_str()),
        (403, "UI_HOST_REFUSED")
    );
    ui.kill().await.unwrap();
}
