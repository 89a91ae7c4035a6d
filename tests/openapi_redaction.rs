//! No credential reaches the script by any spelling (issue 57 item 2): a hostile API (the
//! service's /echo routes, tests/fixtures/openapi/echo.yaml) sends back the API key it got in a
//! header and in the query, the bearer token and the OAuth 2 token, each raw, percent-encoded,
//! JSON-escaped (`\/`) and in base64 (of the whole header line, so off its alignment), in 2xx
//! and 401 answers, as JSON and as text. The script sees `[redacted]` in each; the outcome,
//! the traces, the debug log and the audit records hold no spelling of any of them. An API that
//! cannot be reached with the key in its query gives an error without the URL's query.

use crate::common;
use base64::Engine;
use common::*;
use serde_json::json;

const SCRIPT: &str = r#"
const out = {};
for (const op of ["echoKey", "echoQueryKey", "echoBearer", "echoOAuth"]) {
  for (const form of ["raw", "percent", "json", "base64"]) {
    for (const status of [200, 401]) {
      for (const ct of ["json", "text"]) {
        const k = `${op} ${form} ${status} ${ct}`;
        try { out[k] = (await mcp.echo[op]({ form, status, ct })).body }
        catch (e) { out[k] = e.message }
      }
    }
  }
}
try { await mcp.down.echoQueryKey({ form: "raw", status: 200, ct: "json" }); out.down = "answered" }
catch (e) { out.down = { code: e.code, message: e.message } }
return out;
"#;

/// The spellings of `secret` an output must not hold: raw, percent-encoded, JSON-escaped, and
/// a stretch of its base64 at each alignment.
fn spellings(secret: &str) -> Vec<String> {
    let percent: String = secret
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let mut out = vec![
        secret.to_string(),
        percent,
        secret.replace('/', "\\/"),
        url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
    ];
    for pad in ["", "x", "xx"] {
        let b = base64::engine::general_purpose::STANDARD.encode(format!("{pad}{secret}"));
        out.push(b[4..20].to_string());
    }
    out
}

#[test]
fn an_api_echoing_credentials_in_any_spelling_gets_them_redacted() {
    let notes = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let key = format!("k/{id}+x=y");
    let bearer = format!("b/{id}+t");
    let secret = format!("s/{id}+z");
    let config = echo_config(
        dir.path(),
        &notes,
        "/echo/oauth/token",
        json!({
            "apiKey": "${ECHO_TEST_KEY}",
            "bearer": "${ECHO_TEST_BEARER}",
            "oauth2": {
                "clientId": "echo-client",
                "clientSecret": "${ECHO_TEST_SECRET}",
                "tokenUrl": format!("{}/echo/oauth/token", notes.origin())
            }
        }),
        json!({"down": {
            "baseUrl": format!("http://127.0.0.1:{}/echo", free_port()),
            "auth": {"apiKey": "${ECHO_TEST_KEY}"}
        }}),
    );
    let script = dir.path().join("s.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let state = dir.path().join("state.db");
    let runner = bin("sandbox-runner");
    let env = [
        ("ECHO_TEST_KEY", key.as_str()),
        ("ECHO_TEST_BEARER", bearer.as_str()),
        ("ECHO_TEST_SECRET", secret.as_str()),
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
            "--state",
            state.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        &env,
    );
    let o = run.outcome();
    assert_eq!(o["success"], true, "{o}");
    let r = o["result"].as_object().unwrap();
    assert_eq!(r.len(), 4 * 4 * 2 * 2 + 1, "{o}");

    // The API did get each credential, and echoed it.
    let calls = notes.calls();
    let tokens: Vec<String> = calls
        .iter()
        .filter(|c| c["path"] == "/echo/oauth")
        .filter_map(|c| c["authorization"].as_str())
        .map(|a| a.trim_start_matches("Bearer ").to_string())
        .collect();
    assert!(!tokens.is_empty() && tokens.iter().all(|t| t.starts_with("t/")));
    let q = calls.iter().find(|c| c["path"] == "/echo/qkey").unwrap();
    assert_eq!(q["query"]["api_key"], json!([key]), "{q}");
    let b = calls.iter().find(|c| c["path"] == "/echo/bearer").unwrap();
    assert_eq!(b["authorization"], format!("Bearer {bearer}"), "{b}");

    // What the script got: each echo redacted, the rest of the answer kept.
    for (k, v) in r.iter().filter(|(k, _)| k.as_str() != "down") {
        let parts: Vec<&str> = k.split(' ').collect();
        let (op, form, status, ct) = (parts[0], parts[1], parts[2], parts[3]);
        if status == "401" {
            let m = v.as_str().unwrap_or_default();
            assert!(
                m.starts_with(&format!(
                    "HTTP 401 Unauthorized from echo.{op}: {{\"echo\": \""
                )),
                "{k}: {v}"
            );
            if form != "base64" {
                assert_eq!(
                    m,
                    format!("HTTP 401 Unauthorized from echo.{op}: {{\"echo\": \"[redacted]\"}}"),
                    "{k}"
                );
            }
            assert!(m.contains("[redacted]"), "{k}: {v}");
        } else if ct == "json" {
            let echo = v["echo"].as_str().unwrap_or_default();
            if form == "base64" {
                assert!(echo.contains("[redacted]"), "{k}: {v}");
            } else {
                assert_eq!(*v, json!({"echo": "[redacted]"}), "{k}");
            }
        } else {
            let text = v.as_str().unwrap_or_default();
            if form == "base64" {
                assert!(text.contains("[redacted]"), "{k}: {v}");
            } else {
                assert_eq!(text, r#"{"echo": "[redacted]"}"#, "{k}");
            }
        }
    }

    // Unreachable with the key in the query: said so, without the URL.
    let down = &r["down"];
    assert_eq!(down["code"], "SERVER_UNAVAILABLE", "{down}");
    let m = down["message"].as_str().unwrap();
    assert!(
        m.starts_with("server 'down' cannot be reached (the request was not sent): "),
        "{m}"
    );
    assert!(!m.contains("api_key") && !m.contains("/echo/qkey"), "{m}");

    // No spelling of any credential in the outcome, the traces, the debug log, the audit.
    let audit = cli_run_env(
        &["audit", "--json", "--state", state.to_str().unwrap()],
        &env,
    );
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("echo:echoKey"),
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let mut secrets = vec![key.clone(), bearer.clone(), secret.clone()];
    secrets.extend(tokens);
    for s in &secrets {
        for spelled in spellings(s) {
            for (what, bytes) in [
                ("stdout", &run.stdout),
                ("debug stderr", &run.stderr),
                ("audit", &audit.stdout),
            ] {
                assert!(
                    !String::from_utf8_lossy(bytes).contains(&spelled),
                    "{spelled:?} (a spelling of {s:?}) is in {what}"
                );
            }
        }
    }
}
