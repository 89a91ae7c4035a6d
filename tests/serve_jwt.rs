//! JWT access tokens on `serve --http` (`sandbox.auth.jwt` with a JWKS file): test keys and
//! tokens are made fresh by tests/python/jwt_tokens.py (pyjwt). A token signed by the JWKS key
//! with a mapped scope is accepted (the subject is the principal, the tenant comes from the
//! configured claim); another key, an expired or not-yet-valid token, another audience or
//! issuer, and HS256 are refused with 401; a valid token without a mapped scope gets 403.

use crate::common::repo_root;
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "mcp-sandbox-test";

fn tokens(dir: &std::path::Path) -> Value {
    let out = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .arg(repo_root().join("tests/python/jwt_tokens.py"))
        .arg(dir)
        .args([ISSUER, AUDIENCE])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn jwts_are_checked_for_signature_time_issuer_audience_and_scope() {
    let keys = tempfile::tempdir().unwrap();
    let t = tokens(keys.path());
    let jwks = keys.path().join("jwks.json");
    let h = start_http_with(
        json!({
            "auth": {"tokens": false, "jwt": {
                "issuer": ISSUER, "audience": AUDIENCE, "jwks_file": jwks,
                "scopes": {"mcp:run": "runner"}, "tenant_claim": "tenant"}},
            "policies": {"runner": {"deny": ["fixture:fail"]}}
        }),
        &[],
    )
    .await;
    assert!(
        h.stderr().contains(&format!(
            "mcp-sandbox: authentication: on (JWT from {ISSUER})"
        )),
        "{}",
        h.stderr()
    );
    for (name, why) in [
        ("other_key", "the token's signature does not verify"),
        ("expired", "the token has expired"),
        ("future", "the token is not valid yet (nbf)"),
        ("wrong_aud", "the token is for another audience"),
        ("wrong_iss", "the token is for another issuer"),
        ("hs256", "JWT algorithm HS256 is not accepted"),
    ] {
        let token = t[name].as_str().unwrap();
        let a = post_as(&h.addr, Some(token), None, &initialize_body(1)).await;
        assert_eq!(a.status, 401, "{name}: {a:?}");
        let challenge = a.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains("error=\"invalid_token\"") && challenge.contains(why),
            "{name}: {challenge}"
        );
        assert!(!a.body.contains(token));
    }
    let a = post_as(
        &h.addr,
        Some(t["no_scope"].as_str().unwrap()),
        None,
        &initialize_body(1),
    )
    .await;
    assert_eq!(a.status, 403, "{a:?}");
    assert!(
        a.header("www-authenticate")
            .unwrap_or_default()
            .contains("error=\"insufficient_scope\""),
        "{a:?}"
    );
    // API tokens are off in this config: even a real one is refused.
    let api = create_token(&h.state, "api", &[]);
    let a = post_as(&h.addr, Some(&api), None, &initialize_body(1)).await;
    assert_eq!(a.status, 401, "{a:?}");

    // The metadata names the identity provider and the scopes.
    let doc = exchange(
        &h.addr,
        format!(
            "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
            h.addr
        )
        .as_bytes(),
    )
    .await;
    let doc: Value = serde_json::from_str(&doc.body).unwrap();
    assert_eq!(doc["authorization_servers"], json!([ISSUER]));
    assert_eq!(doc["scopes_supported"], json!(["mcp:run"]));

    // The good token works with the Python SDK; its scope's policy applies.
    let out = sdk(
        &url(&h),
        t["good"].as_str(),
        &json!([
            {"code": "return await mcp.fixture.echo({message: 'jwt'})"},
            {"code": "return await mcp.fixture.fail({message: 'x'})"}
        ]),
    );
    assert_eq!(out["results"][0]["out"]["result"], json!("jwt"), "{out}");
    assert_eq!(
        out["results"][1]["out"]["error"]["code"],
        json!("PERMISSION_DENIED"),
        "{out}"
    );
    let records = audit(&h.state, &[]);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[0]["principal"], json!("jwt:alice"));
    assert_eq!(records[0]["tenant"], json!("team-a"));
    assert!(!h.stderr().contains(t["good"].as_str().unwrap()));
}

/// A one-file HTTP server for the JWKS: answers every GET with the current `body` and counts
/// the requests.
async fn jwks_server(
    body: std::sync::Arc<std::sync::Mutex<String>>,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let (body, hits) = (body.clone(), hits.clone());
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let text = body.lock().unwrap().clone();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/jwks.json")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jwks_url_is_fetched_at_start_and_again_for_a_new_key() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let keys = tempfile::tempdir().unwrap();
    let t = tokens(keys.path());
    let body = Arc::new(Mutex::new(
        std::fs::read_to_string(keys.path().join("jwks.json")).unwrap(),
    ));
    let hits = Arc::new(AtomicUsize::new(0));
    let url = jwks_server(body.clone(), hits.clone()).await;
    let h = start_http_with(
        json!({
            "auth": {"tokens": false, "jwt": {
                "issuer": ISSUER, "audience": AUDIENCE, "jwks_url": url,
                "jwks_refetch_after_s": 1, "scopes": {"mcp:run": "runner"}}},
            "policies": {"runner": {}}
        }),
        &[],
    )
    .await;
    assert_eq!(hits.load(Ordering::SeqCst), 1, "fetched once at start");
    let good = t["good"].as_str().unwrap();
    let rotated = t["rotated"].as_str().unwrap();
    let a = post_as(&h.addr, Some(good), None, &initialize_body(1)).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "a known key is not fetched again"
    );
    // The identity provider rotates in key "b".
    *body.lock().unwrap() = std::fs::read_to_string(keys.path().join("jwks_rotated.json")).unwrap();
    // Within the refetch interval the unknown kid is refused without a fetch…
    let a = post_as(&h.addr, Some(rotated), None, &initialize_body(1)).await;
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // …after it, the JWKS is fetched again and the new key is accepted.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let a = post_as(&h.addr, Some(rotated), None, &initialize_body(1)).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[test]
fn a_plain_http_jwks_url_off_loopback_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"sandbox": {"auth": {"jwt": {"issuer": ISSUER, "audience": AUDIENCE,
            "jwks_url": "http://idp.example/jwks.json"}}}})
        .to_string(),
    )
    .unwrap();
    let (status, _, err) = cli(&[
        "serve".as_ref(),
        "--http".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("must be an https URL"), "{err}");
}
