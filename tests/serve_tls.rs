//! Optional TLS on `serve --http` (`--tls-cert`, `--tls-key`): a self-signed certificate made
//! fresh by tests/python/tls_cert.py; the official Python SDK trusting it runs code over HTTPS
//! with a token, a client that does not trust it fails the handshake, plain HTTP on the TLS port
//! gets no HTTP answer, and an unusable key file stops the server at start with exit 2.

use crate::common::repo_root;
use crate::serve_support;
use serde_json::json;
use serve_support::http::*;
use serve_support::team::*;

fn cert(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let out = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .arg(repo_root().join("tests/python/tls_cert.py"))
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir.join("cert.pem"), dir.join("key.pem"))
}

#[tokio::test(flavor = "multi_thread")]
async fn https_with_a_token_works_and_plain_http_does_not() {
    let keys = tempfile::tempdir().unwrap();
    let (cert, key) = cert(keys.path());
    let h = start_http_with(
        json!({"auth": {}}),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    )
    .await;
    assert!(
        h.stderr()
            .contains(&format!("serving MCP over HTTPS at https://{}/mcp", h.addr)),
        "{}",
        h.stderr()
    );
    let token = create_token(&h.state, "tls", &[]);
    let url = format!("https://{}/mcp", h.addr);
    let calls = json!([{"code": "return await mcp.fixture.echo({message: 'over tls'})"}]);
    let out = sdk_trusting(&url, Some(&token), &calls, Some(&cert));
    assert_eq!(
        out["results"][0]["out"]["result"],
        json!("over tls"),
        "{out}"
    );
    // A client that does not trust the certificate cannot connect.
    let out = sdk(&url, Some(&token), &calls);
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .to_lowercase()
            .contains("certificate"),
        "{out}"
    );
    // Plain HTTP on the TLS port gets no HTTP answer.
    let a = post_as(&h.addr, Some(&token), None, &initialize_body(1)).await;
    assert_eq!(a.status, 0, "{a:?}");
}

#[test]
fn an_unusable_key_stops_the_server_at_start() {
    let keys = tempfile::tempdir().unwrap();
    let (cert, _) = cert(keys.path());
    let bad = keys.path().join("bad.pem");
    std::fs::write(&bad, "not a key").unwrap();
    let (status, _, err) = cli(&[
        "serve".as_ref(),
        "--http".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--tls-cert".as_ref(),
        cert.as_os_str(),
        "--tls-key".as_ref(),
        bad.as_os_str(),
    ]);
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("--tls-key"), "{err}");
}
