//! The OAuth 2 client secret goes only where the operator said (issue 57 item 3): with no
//! `tokenUrl` in the entry, the spec's `clientCredentials.tokenUrl` is used only on baseUrl's
//! host (a spec naming another host gets nothing sent there, and the call says why); a token
//! endpoint that echoes the secret in its `error` (and elsewhere) has its answer redacted like
//! the API's.

use crate::common;
use common::*;
use serde_json::json;

const SCRIPT: &str = r#"
try { return (await mcp.echo.echoOAuth({ form: "raw", status: 200, ct: "json" })).status }
catch (e) { return { code: e.code, message: e.message } }
"#;

fn run(dir: &std::path::Path, config: &std::path::Path, secret: &str) -> CliRun {
    let script = dir.join("s.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let runner = bin("sandbox-runner");
    cli_run_env(
        &[
            "run",
            "--json",
            "--config",
            config.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        &[
            ("ECHO_TEST_SECRET", secret),
            ("MCP_SANDBOX_LOG", "debug"),
            ("MCP_SANDBOX_RUNNER", runner.to_str().unwrap()),
        ],
    )
}

#[test]
fn the_client_secret_goes_only_to_the_entry_or_the_api_host() {
    let notes = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let secret = format!("s/{}+z", uuid::Uuid::new_v4().simple());
    let port = notes.server.port;
    let oauth = |token_url: Option<String>| {
        let mut o = json!({"clientId": "echo-client", "clientSecret": "${ECHO_TEST_SECRET}"});
        if let Some(u) = token_url {
            o["tokenUrl"] = u.into();
        }
        json!({ "oauth2": o })
    };

    // The spec names another host (localhost, not baseUrl's 127.0.0.1): nothing is sent.
    let elsewhere = format!("http://localhost:{port}/echo/oauth/token");
    let config = echo_config(dir.path(), &notes, &elsewhere, oauth(None), json!({}));
    let out = run(dir.path(), &config, &secret);
    let o = out.outcome();
    assert_eq!(
        o["result"],
        json!({"code": "SERVER_UNAVAILABLE", "message": format!(
            "server 'echo': the spec's clientCredentials tokenUrl {elsewhere} is not on baseUrl's host (127.0.0.1): the client secret is not sent there; set auth.oauth2.tokenUrl in the entry if that endpoint is the right one"
        )}),
        "{o}"
    );
    assert!(
        notes
            .calls()
            .iter()
            .all(|c| c["path"] != "/echo/oauth/token"),
        "{:?}",
        notes.calls()
    );

    // On baseUrl's host (here given relative to it, as OpenAPI allows): used.
    let config = echo_config(
        dir.path(),
        &notes,
        "/echo/oauth/token",
        oauth(None),
        json!({}),
    );
    let out = run(dir.path(), &config, &secret);
    assert_eq!(out.outcome()["result"], 200, "{}", out.outcome());
    assert_eq!(
        notes
            .calls()
            .iter()
            .filter(|c| c["path"] == "/echo/oauth/token")
            .count(),
        1
    );

    // A token endpoint echoing the secret in its error: redacted.
    let config = echo_config(
        dir.path(),
        &notes,
        "/unused",
        oauth(Some(format!("{}/echo/oauth/hostile", notes.origin()))),
        json!({}),
    );
    let out = run(dir.path(), &config, &secret);
    let o = out.outcome();
    assert_eq!(
        o["result"],
        json!({"code": "SERVER_UNAVAILABLE", "message": format!(
            "server 'echo': the OAuth 2 token request to {}/echo/oauth/hostile failed: HTTP 401 Unauthorized [redacted]; check auth.oauth2 (client id and secret, scopes)",
            notes.origin()
        )}),
        "{o}"
    );
    for (what, bytes) in [("stdout", &out.stdout), ("debug stderr", &out.stderr)] {
        assert!(
            !String::from_utf8_lossy(bytes).contains(&secret),
            "the secret is in {what}"
        );
    }
}
