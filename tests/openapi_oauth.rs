//! OAuth 2 client credentials for an OpenAPI server (issue 49 item 2): the host fetches the
//! token from the token endpoint (HTTP Basic with the client id and secret, the configured
//! scopes), sends it as a Bearer token to the operations whose security asks for the oauth2
//! scheme, reuses it while it is valid and fetches a new one before it expires. A refused client
//! fails the call with SERVER_UNAVAILABLE saying what to check; the secret and the tokens appear
//! in no output.

use crate::common;
use common::*;
use serde_json::json;

const SECRET_VAR: &str = "NOTES_TEST_CLIENT_SECRET";

#[test]
fn the_host_fetches_uses_and_refreshes_the_token() {
    // Tokens live 2 s: refreshed 1 s before they expire.
    let notes = Notes::start(2);
    let dir = tempfile::tempdir().unwrap();
    let entry = |secret_var: &str| {
        json!({"auth": {
            "apiKey": format!("${{{NOTES_KEY_VAR}}}"),
            "oauth2": {
                "clientId": "notes-client",
                "clientSecret": format!("${{{secret_var}}}"),
                "tokenUrl": format!("{}/oauth/token", notes.origin()),
                "scopes": ["notes.read"]
            }
        }})
    };
    let config = notes_config(dir.path(), &notes, entry(SECRET_VAR), json!({}));
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"
const a = await mcp.notes.whoAmI({});
const b = await mcp.notes.whoAmI({});
const list = await mcp.notes.listNotes({});
await new Promise(r => setTimeout(r, 1300));
const c = await mcp.notes.whoAmI({});
return [a.body, b.body, list.status, c.body];
"#,
    )
    .unwrap();
    let secret = format!("secret-{}", notes.key);
    let runner = bin("sandbox-runner");
    let env = [
        (NOTES_KEY_VAR, notes.key.as_str()),
        (SECRET_VAR, secret.as_str()),
        ("MCP_SANDBOX_LOG", "debug"),
        ("MCP_SANDBOX_RUNNER", runner.to_str().unwrap()),
    ];
    let run = cli_run_env(
        &[
            "run",
            "--json",
            "--trace",
            "json",
            "--config",
            config.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        &env,
    );
    let o = run.outcome();
    assert_eq!(
        o["result"],
        json!([
            {"client": "notes-client", "tokens_issued": 1},
            {"client": "notes-client", "tokens_issued": 1},
            200,
            {"client": "notes-client", "tokens_issued": 2}
        ]),
        "{o}"
    );
    let calls = notes.calls();
    let token_requests: Vec<&serde_json::Value> = calls
        .iter()
        .filter(|c| c["path"] == "/oauth/token")
        .collect();
    assert_eq!(token_requests.len(), 2, "{calls:?}");
    use base64::Engine;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("notes-client:{secret}"))
    );
    for t in &token_requests {
        assert_eq!(t["method"], "POST");
        assert_eq!(t["authorization"], basic.as_str());
        assert_eq!(t["body"], "grant_type=client_credentials&scope=notes.read");
    }
    let me: Vec<&serde_json::Value> = calls.iter().filter(|c| c["path"] == "/api/v1/me").collect();
    assert_eq!(me.len(), 3);
    let tokens: Vec<&str> = me
        .iter()
        .map(|c| c["authorization"].as_str().unwrap())
        .collect();
    assert!(
        tokens.iter().all(|t| t.starts_with("Bearer tok-")),
        "{tokens:?}"
    );
    assert_eq!(tokens[0], tokens[1]);
    assert_ne!(tokens[1], tokens[2]);
    // The apiKey operation got the key, not the token.
    let list = calls.iter().find(|c| c["path"] == "/api/v1/notes").unwrap();
    assert_eq!(
        (list["api_key"].as_str(), list["authorization"].as_str()),
        (Some(notes.key.as_str()), None)
    );
    for secret_text in [secret.as_str(), &tokens[0][7..], &tokens[2][7..]] {
        for (what, bytes) in [("stdout", &run.stdout), ("debug stderr", &run.stderr)] {
            assert!(
                !String::from_utf8_lossy(bytes).contains(secret_text),
                "a secret is in {what}"
            );
        }
    }

    // A client the endpoint refuses: the call fails with what to check, the secret unsaid.
    let bad = "not-the-secret-4711";
    let config = notes_config(dir.path(), &notes, entry(SECRET_VAR), json!({}));
    std::fs::write(&script, "try { await mcp.notes.whoAmI({}) } catch (e) { return { code: e.code, message: e.message } }").unwrap();
    let env = [
        (NOTES_KEY_VAR, notes.key.as_str()),
        (SECRET_VAR, bad),
        ("MCP_SANDBOX_LOG", "debug"),
        ("MCP_SANDBOX_RUNNER", runner.to_str().unwrap()),
    ];
    let run = cli_run_env(
        &[
            "run",
            "--json",
            "--config",
            config.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        &env,
    );
    let o = run.outcome();
    assert_eq!(o["result"]["code"], "SERVER_UNAVAILABLE", "{o}");
    assert_eq!(
        o["result"]["message"],
        format!(
            "server 'notes': the OAuth 2 token request to {}/oauth/token failed: HTTP 401 Unauthorized invalid_client; check auth.oauth2 (client id and secret, scopes)",
            notes.origin()
        ),
        "{o}"
    );
    assert!(!String::from_utf8_lossy(&run.stdout).contains(bad));
    assert!(!String::from_utf8_lossy(&run.stderr).contains(bad));
}
