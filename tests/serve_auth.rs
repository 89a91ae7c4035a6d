//! Authentication of `serve --http` with API tokens (`sandbox.auth` in the config), over real
//! HTTP against the real binary: no token → 401 with `WWW-Authenticate: Bearer
//! resource_metadata=…` (the metadata document is served without authentication); a wrong,
//! revoked or expired token → 401 `invalid_token`; a valid one works with the official Python
//! SDK; a session cannot be used by another principal; a non-loopback address without
//! authentication refuses to start. Token values appear nowhere: not in the server's log, the
//! state file, the audit log or any answer.

use crate::serve_support;
use serde_json::json;
use serve_support::http::*;
use serve_support::team::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn missing_wrong_revoked_and_expired_tokens_get_401() {
    let h = start_http_with(json!({"auth": {}}), &[]).await;
    assert!(
        h.stderr()
            .contains("mcp-sandbox: authentication: on (API tokens)"),
        "{}",
        h.stderr()
    );
    let metadata_url = format!("http://{}/.well-known/oauth-protected-resource/mcp", h.addr);
    let good = create_token(&h.state, "good", &[]);
    let revoked = create_token(&h.state, "gone", &[]);
    let expired = create_token(&h.state, "old", &["--expires", "1s"]);
    let (status, _, err) = cli(&[
        "token".as_ref(),
        "revoke".as_ref(),
        "gone".as_ref(),
        "--state".as_ref(),
        h.state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");

    // No credential: 401 and where to learn how to authenticate.
    let a = post_as(&h.addr, None, None, &initialize_body(1)).await;
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(
        a.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\"").as_str()),
        "{a:?}"
    );
    assert!(a.body.contains("authentication required"), "{}", a.body);
    // The metadata document is public.
    let doc = exchange(
        &h.addr,
        format!(
            "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
            h.addr
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(doc.status, 200, "{doc:?}");
    let doc: serde_json::Value = serde_json::from_str(&doc.body).unwrap();
    assert_eq!(doc["resource"], json!(format!("http://{}/mcp", h.addr)));
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));

    // Another scheme counts as no credential.
    let basic = exchange(
        &h.addr,
        &post_bytes(
            &h.addr,
            None,
            &initialize_body(1).to_string(),
            &[("authorization", "Basic Zm9vOmJhcg==")],
        ),
    )
    .await;
    assert_eq!(basic.status, 401, "{basic:?}");

    let wrong = format!("mcps_{}", "0".repeat(64));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for (token, why) in [
        (wrong.as_str(), "the token is not valid"),
        ("not-even-a-token", "the token is not valid"),
        (revoked.as_str(), "the token was revoked"),
        (expired.as_str(), "the token has expired"),
    ] {
        let a = post_as(&h.addr, Some(token), None, &initialize_body(1)).await;
        assert_eq!(a.status, 401, "{token}: {a:?}");
        let challenge = a.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\"")
                && challenge.contains(&format!("error_description=\"{why}\""))
                && challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
            "{token}: {challenge}"
        );
        assert!(a.body.contains(why), "{}", a.body);
        assert!(!a.body.contains(token) && !challenge.contains(token));
    }

    // The good token opens a session and runs code.
    let a = post_as(&h.addr, Some(&good), None, &initialize_body(1)).await;
    assert_eq!(a.status, 200, "{a:?}");

    // No token value anywhere the host writes.
    let log = h.stderr();
    let state = std::fs::read(&h.state).unwrap();
    let wal = std::fs::read(h.state.with_extension("db-wal")).unwrap_or_default();
    for t in [&good, &revoked, &expired] {
        assert!(!log.contains(t.as_str()), "a token is in the log");
        for bytes in [&state, &wal] {
            assert!(
                !bytes.windows(t.len()).any(|w| w == t.as_bytes()),
                "a token is in the state file"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_runs_code_with_a_token_and_is_refused_without() {
    let h = start_http_with(json!({"auth": {}}), &[]).await;
    let token = create_token(&h.state, "ci", &[]);
    let calls = json!([{"code": "return await mcp.fixture.echo({message: 'hi'})"}]);
    let out = sdk(&url(&h), Some(&token), &calls);
    assert_eq!(out["results"][0]["is_error"], json!(false), "{out}");
    assert_eq!(out["results"][0]["out"]["result"], json!("hi"), "{out}");
    let out = sdk(&url(&h), None, &calls);
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("authentication required"),
        "{out}"
    );
    assert_eq!(out["results"], json!([]), "{out}");
    let records = audit(&h.state, &[]);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["principal"], json!("token:ci"));
    assert_eq!(records[0]["client"], json!("team-client"));
    assert_eq!(records[0]["front"], json!("http"));
    let dump = serde_json::to_string(&records).unwrap();
    assert!(!dump.contains(&token));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_used_only_by_the_principal_that_opened_it() {
    let h = start_http_with(json!({"auth": {}}), &[]).await;
    let alice = create_token(&h.state, "alice", &[]);
    let bob = create_token(&h.state, "bob", &[]);
    let a = post_as(&h.addr, Some(&alice), None, &initialize_body(1)).await;
    let session = a.header("mcp-session-id").unwrap().to_string();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let b = post_as(&h.addr, Some(&bob), Some(&session), &list).await;
    assert_eq!(b.status, 403, "{b:?}");
    assert!(b.body.contains("opened by another principal"), "{}", b.body);
    let none = post_as(&h.addr, None, Some(&session), &list).await;
    assert_eq!(none.status, 401, "{none:?}");
}

#[test]
fn non_loopback_http_without_authentication_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, r#"{"mcpServers": {}}"#).unwrap();
    let (status, _, err) = cli(&[
        "serve".as_ref(),
        "--http".as_ref(),
        "0.0.0.0:0".as_ref(),
        "--http-allow-remote".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    assert_eq!(status, 2, "{err}");
    assert!(
        err.contains("refusing to serve --http 0.0.0.0:0 without authentication")
            && err.contains("sandbox.auth")
            && err.contains("no flag turns this off"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn loopback_without_auth_says_authentication_is_off() {
    let h = start_http(&[]).await;
    assert!(
        h.stderr().contains(
            "mcp-sandbox: authentication: off (no sandbox.auth in the config; loopback only)"
        ),
        "{}",
        h.stderr()
    );
    let a = post(&h.addr, None, &initialize_body(1)).await;
    assert_eq!(a.status, 200, "{a:?}");
}
