//! Headers and secrets of remote servers (issue 17 item 2): a server on the official Python MCP
//! SDK (tests/python/bearer_server.py) demands `Authorization: Bearer <token>`. The config says
//! `"Bearer ${MCP_SANDBOX_TEST_TOKEN}"`; the host expands it from its environment, reaches the
//! server with it, and a second entry without the header is refused (401 → SERVER_UNAVAILABLE).
//! The token appears in no output: `run --json --trace json` (stdout), stderr at
//! `MCP_SANDBOX_LOG=debug`, `tools` and `tools --json`, and the state file. A config naming an
//! unset variable is refused with the variable's name.

use crate::common;
use common::*;
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const VAR: &str = "MCP_SANDBOX_TEST_TOKEN";

fn host(args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(bin("mcp-sandbox"));
    cmd.args(args)
        .env("MCP_SANDBOX_LOG", "debug")
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env_remove(VAR)
        .stdin(Stdio::null());
    if let Some(t) = token {
        cmd.env(VAR, t);
    }
    cmd.output().unwrap()
}

fn assert_absent(what: &str, bytes: &[u8], token: &str) {
    let text = String::from_utf8_lossy(bytes);
    assert!(!text.contains(token), "the token is in {what}:\n{text}");
}

fn write_config(dir: &Path, url: &str) -> std::path::PathBuf {
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {
                "secured": {"url": url, "headers": {"Authorization": format!("Bearer ${{{VAR}}}"), "X-Client": "mcp-sandbox-test"}},
                "anonymous": {"url": url}
            },
            "sandbox": {"state": "state.db"}
        })
        .to_string(),
    )
    .unwrap();
    config
}

#[test]
fn the_expanded_token_reaches_the_server_and_no_output() {
    let token = format!("tok-{}", uuid::Uuid::new_v4().simple());
    let server = Listening::bearer(&token, None);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &server.url());
    let config = config.to_str().unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"
const out = { sum: await mcp.secured.add({ a: 2, b: 40 }) };
try { await mcp.secured.fail({ reason: "on purpose" }) } catch (e) { out.fail = e.code }
try { await mcp.anonymous.add({ a: 1, b: 1 }) } catch (e) { out.anonymous = { code: e.code, message: e.message } }
console.log(JSON.stringify(Object.keys(mcp)));
return out;
"#,
    )
    .unwrap();
    let run = host(
        &[
            "run",
            "--json",
            "--trace",
            "json",
            "--config",
            config,
            script.to_str().unwrap(),
        ],
        Some(&token),
    );
    let o: serde_json::Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stderr)));
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    assert_eq!(r["sum"], json!({"result": 42}), "{r}");
    assert_eq!(r["fail"], "TOOL_ERROR", "{r}");
    assert_eq!(r["anonymous"]["code"], "SERVER_UNAVAILABLE", "{r}");
    assert!(
        r["anonymous"]["message"]
            .as_str()
            .unwrap()
            .contains("HTTP 401 Unauthorized"),
        "{r}"
    );
    assert!(
        o["traces"].as_array().unwrap().len() >= 4,
        "traces of the calls: {o}"
    );
    assert_absent("run's stdout", &run.stdout, &token);
    assert_absent("run's stderr", &run.stderr, &token);
    // Debug logging was on and said something about the servers.
    assert!(!run.stderr.is_empty());

    for args in [
        vec!["tools", "--config", config],
        vec!["tools", "--json", "--config", config],
        vec!["tools", "--typescript", "--config", config],
    ] {
        let out = host(&args, Some(&token));
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("add"),
            "{args:?}"
        );
        assert_absent(&format!("{args:?} stdout"), &out.stdout, &token);
        assert_absent(&format!("{args:?} stderr"), &out.stderr, &token);
    }

    let state = std::fs::read(dir.path().join("state.db")).expect("the state file");
    assert_absent("the state file", &state, &token);
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("state.db") {
            assert_absent(
                &entry.path().display().to_string(),
                &std::fs::read(entry.path()).unwrap(),
                &token,
            );
        }
    }
}

#[test]
fn an_unset_variable_is_a_config_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "http://127.0.0.1:1/mcp");
    let out = host(&["tools", "--config", config.to_str().unwrap()], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "server 'secured': headers.Authorization uses ${{{VAR}}}, which is not set in the host's environment"
        )),
        "{stderr}"
    );
}
