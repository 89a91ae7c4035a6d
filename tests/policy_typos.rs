//! A policy typo must not fail open (issue 47): the three typos a newcomer makes against the
//! reference memory server — `"deny": ["memroy:delete_*"]` (a server that is not configured),
//! `--deny memory.delete_entities` (the dot spelling) and `--deny memory:delete_entitys` (a tool
//! that does not exist) — through `run`, `serve` (stdio and `--http`) and `policy explain`.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A config with the npm memory server (its file in `dir`) and the fixture, plus `sandbox`.
fn config(dir: &Path, sandbox: Value) -> PathBuf {
    let bin_dir = repo_root().join("node_modules/.bin");
    let path = dir.join("mcp.json");
    let text = json!({"mcpServers": {
        "memory": {"command": bin_dir.join("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}, "files": {"write": [dir]}},
        "fixture": {"command": bin("fixture-mcp-server")}
    }, "sandbox": sandbox});
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

/// Creates an entity, then deletes it: what a deny of deletes must stop.
const DELETES: &str = "await mcp.memory.create_entities({entities: [{name: 'a', entityType: 't', observations: []}]});\n\
     await mcp.memory.delete_entities({entityNames: ['a']});\n\
     return 'deleted';";

fn run(config: &Path, flags: &[&str], script: &str) -> Output {
    let state = config.with_file_name("state.db");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--config".as_ref(),
        config.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
    ];
    args.extend(flags.iter().map(std::ffi::OsStr::new));
    run_stdin(&args, script)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_rule_naming_a_server_that_is_not_configured_refuses_run_and_explain() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), json!({"deny": ["memroy:delete_*"]}));
    let expected = "mcp-sandbox: POLICY_UNKNOWN_SERVER: the rule sandbox.deny[0] \"memroy:delete_*\" names the server 'memroy', which is not configured, so it would match nothing; the configured servers are fixture, memory. Fix the rule's server name, or add the server to mcpServers\n";
    let out = run(&config, &[], DELETES);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out), expected);
    assert!(out.stdout.is_empty());
    // Nothing ran: the memory server never wrote its file.
    assert!(!dir.path().join("memory.jsonl").exists());

    let out = Command::new(bin("mcp-sandbox"))
        .args(["policy", "explain", "--config"])
        .arg(&config)
        .args(["--call", "memory:delete_entities {}"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), expected);

    // The same typo as a flag, in a principal's policy, and in labels.
    let config = self::config(dir.path(), json!({}));
    let out = run(&config, &["--deny", "memroy:delete_*"], DELETES);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the rule --deny \"memroy:delete_*\" names the server 'memroy'"),
        "{}",
        stderr(&out)
    );
    for (sandbox, place) in [
        (
            json!({"policies": {"ci": {"deny": ["memroy:*"]}}}),
            "sandbox.policies.ci.deny[0] \"memroy:*\"",
        ),
        (
            json!({"labels": {"memroy:read_graph": ["pii"]}}),
            "sandbox.labels \"memroy:read_graph\"",
        ),
        (
            json!({"sensitive": {"detect": ["email"], "reveal_to": {"email": ["memroy:*"]}}}),
            "sandbox.sensitive.reveal_to.email[0] \"memroy:*\"",
        ),
    ] {
        let config = self::config(dir.path(), sandbox);
        let out = run(&config, &[], "return 1");
        assert_eq!(out.status.code(), Some(2), "{place}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "POLICY_UNKNOWN_SERVER: the rule {place} names the server 'memroy'"
            )),
            "{place}: {}",
            stderr(&out)
        );
    }

    // Without --config there is no server at all.
    let out = run_stdin(
        &["--deny".as_ref(), "memory:delete_entities".as_ref()],
        "return 1",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("names the server 'memory', which is not configured, so it would match nothing; no server is configured (pass --config with an mcpServers section)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_dot_spelling_is_refused_with_the_colon_form() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), json!({}));
    let out = run(&config, &["--deny", "memory.delete_entities"], DELETES);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "mcp-sandbox: POLICY_DOT_NAME: \"memory.delete_entities\" is written server.tool; tool names are written server:tool everywhere — write \"memory:delete_entities\"\n"
    );
    assert!(!dir.path().join("memory.jsonl").exists());
    // In the config, and in `policy explain --call`.
    let config = self::config(dir.path(), json!({"deny": ["memory.delete_entities"]}));
    let out = run(&config, &[], DELETES);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("sandbox.allow/deny: POLICY_DOT_NAME: \"memory.delete_entities\""),
        "{}",
        stderr(&out)
    );
    let config = self::config(dir.path(), json!({}));
    let out = Command::new(bin("mcp-sandbox"))
        .args(["policy", "explain", "--config"])
        .arg(&config)
        .args(["--call", "memory.delete_entities {}"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("write \"memory:delete_entities\""),
        "{}",
        stderr(&out)
    );
    // `tools` prints the one spelling.
    let out = Command::new(bin("mcp-sandbox"))
        .args(["tools", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nmemory:delete_entities  "), "{text}");
    assert!(!text.contains("memory.delete_entities"), "{text}");
}

/// The refusal of the misspelt deny rule `place`, by default (issue 63 item 1).
fn refused_by_default(place: &str, kind: &str) -> String {
    format!(
        "mcp-sandbox: POLICY_UNMATCHED_GLOB: the rule {place} \"memory:delete_entitys\" matches none of the tools its server lists, so it has no effect; check the tool name with `mcp-sandbox tools`; did you mean memory:delete_entities? (a {kind} rule that matches nothing fails open, so it is refused: fix the tool name, or set \"sandbox\": {{\"strict_policy\": false}} to only warn)\n"
    )
}

#[test]
fn a_deny_or_ask_glob_matching_no_tool_refuses_by_default() {
    let dir = tempfile::tempdir().unwrap();
    // A flag and a config rule: refused before the script runs, with the name to write.
    let config = config(dir.path(), json!({}));
    let out = run(&config, &["--deny", "memory:delete_entitys"], DELETES);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out), refused_by_default("--deny", "deny"));
    assert!(out.stdout.is_empty());
    assert!(!dir.path().join("memory.jsonl").exists());
    let config = self::config(dir.path(), json!({"deny": ["memory:delete_entitys"]}));
    let out = run(&config, &[], DELETES);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out), refused_by_default("sandbox.deny[0]", "deny"));
    assert!(!dir.path().join("memory.jsonl").exists());
    // An ask rule, and a principal's policy, the same.
    let config = self::config(dir.path(), json!({"ask": ["memory:delete_entitys"]}));
    let out = run(&config, &[], DELETES);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out), refused_by_default("sandbox.ask[0]", "ask"));
    let config = self::config(
        dir.path(),
        json!({"policies": {"ci": {"deny": ["memory:delete_entitys"]}}}),
    );
    // (`run` starts only the servers a script reaches, and checks their rules.)
    let out = run(&config, &[], "return await mcp.memory.read_graph({})");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        refused_by_default("sandbox.policies.ci.deny[0]", "deny")
    );
    // An allow glob matching nothing fails closed: a warning, the script runs.
    let config = self::config(dir.path(), json!({"allow": ["memory:*", "fixture:ech"]}));
    // (`Object.keys(mcp)` reaches every server: both are started and checked.)
    let every = "return Object.keys(mcp).length";
    let out = run(&config, &[], every);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "mcp-sandbox: warning: POLICY_UNMATCHED_GLOB: the rule sandbox.allow[1] \"fixture:ech\" matches none of the tools its server lists, so it has no effect; check the tool name with `mcp-sandbox tools`\n"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2\n");
    // --strict refuses it too.
    let out = run(&config, &["--strict"], every);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the rule sandbox.allow[1] \"fixture:ech\" matches none of the tools its server lists, so it has no effect; check the tool name with `mcp-sandbox tools`; did you mean fixture:echo? (refused under --strict)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn strict_policy_false_only_warns_and_strict_still_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), json!({"strict_policy": false}));
    let warning = "mcp-sandbox: warning: POLICY_UNMATCHED_GLOB: the rule --deny \"memory:delete_entitys\" matches none of the tools its server lists, so it has no effect; check the tool name with `mcp-sandbox tools`\n";
    // The operator said so: the warning, and the script runs (the typo denies nothing).
    let out = run(&config, &["--deny", "memory:delete_entitys"], DELETES);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(warning), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "\"deleted\"\n");

    // --strict: refused before the script runs.
    std::fs::remove_file(dir.path().join("memory.jsonl")).unwrap();
    let out = run(
        &config,
        &["--strict", "--deny", "memory:delete_entitys"],
        DELETES,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("POLICY_UNMATCHED_GLOB: the rule --deny \"memory:delete_entitys\" matches none of the tools its server lists, so it has no effect; check the tool name with `mcp-sandbox tools`; did you mean memory:delete_entities? (refused under --strict)"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("memory.jsonl").exists());

    // "strict_policy": true (what the default is) refuses the config's rules.
    let config = self::config(
        dir.path(),
        json!({"strict_policy": true, "deny": ["memory:delete_entitys"]}),
    );
    let out = run(&config, &[], DELETES);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the rule sandbox.deny[0] \"memory:delete_entitys\" matches none"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("memory.jsonl").exists());
}

#[test]
fn a_glob_is_checked_again_when_the_tool_list_changes() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), json!({"strict_policy": false}));
    let out = run(
        &config,
        &["--deny", "fixture:late_toll"],
        "return await mcp.fixture.list_changed();",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("mcp-sandbox: warning: POLICY_UNMATCHED_GLOB: the rule --deny \"fixture:late_toll\" matches none"),
        "{err}"
    );
    assert!(
        err.contains("after list_changed: POLICY_UNMATCHED_GLOB: the rule --deny \"fixture:late_toll\" matches none"),
        "{err}"
    );
}

/// A tool list that changes after the start still warns, and the gateway counts it on
/// `/metrics` (issue 63 item 1).
#[tokio::test]
async fn a_glob_unmatched_after_a_relisting_is_counted() {
    use crate::serve_support::http::*;
    let h = start_http_config(
        json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}},
               "sandbox": {"strict_policy": false, "deny": ["fixture:late_toll"]}}),
        &[],
    )
    .await;
    let metric = |body: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix("mcp_sandbox_policy_globs_unmatched_after_relist_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let scrape = || async {
        let req = format!(
            "GET /metrics HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
            h.addr
        );
        exchange(&h.addr, req.as_bytes()).await.body
    };
    assert_eq!(metric(&scrape().await), Some(0.0));
    let session = open_session(&h.addr).await;
    let a = post(
        &h.addr,
        Some(&session),
        &execute_body(
            2,
            json!({"code": "return await mcp.fixture.list_changed();"}),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    // Wait for the re-listing (it follows the notification), then read the count.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let body = scrape().await;
        if metric(&body) == Some(1.0) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{body}\n{}",
            h.stderr()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[test]
fn policy_explain_says_when_the_tool_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), json!({"deny": ["memory:delete_*"]}));
    let explain = |call: &str, json: bool| {
        let mut cmd = Command::new(bin("mcp-sandbox"));
        cmd.args(["policy", "explain", "--config"])
            .arg(&config)
            .args(["--call", call]);
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let out = explain("memory:delete_entitys {}", false);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("deny: memory:delete_entitys is denied by the config rule deny \"memory:delete_*\"")
    );
    let note = lines.next().unwrap();
    assert!(
        note.starts_with("note: POLICY_TOOL_UNKNOWN: the server 'memory' lists no tool 'delete_entitys' (its tools: "),
        "{note}"
    );
    assert!(note.contains("delete_entities"), "{note}");
    let out = explain("memory:delete_entities {}", true);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["decision"], "deny");
    assert_eq!(answer["tool_exists"], true);
    assert!(answer.get("note").is_none(), "{answer}");
    let out = explain("memory:read_grph {}", true);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["decision"], "allow");
    assert_eq!(answer["tool_exists"], false);
    // The call's server itself not configured.
    let out = explain("memroy:read_graph {}", false);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "allow: no rule refuses it or asks for approval\nnote: POLICY_TOOL_UNKNOWN: the server 'memroy' is not configured (configured: fixture, memory), so this call would fail with TOOL_NOT_FOUND whatever the policy says\n"
    );
}

/// `serve` with `sandbox` over stdio, stdin closed: its exit status and stderr.
fn serve(dir: &Path, sandbox: Value, flags: &[&str]) -> Output {
    let config = config(dir, sandbox);
    Command::new(bin("mcp-sandbox"))
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--state")
        .arg(dir.join("state.db"))
        .args(flags)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn serve_refuses_to_start_on_a_typo() {
    let dir = tempfile::tempdir().unwrap();
    let out = serve(dir.path(), json!({"deny": ["memroy:delete_*"]}), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("POLICY_UNKNOWN_SERVER: the rule sandbox.deny[0] \"memroy:delete_*\" names the server 'memroy'"),
        "{}",
        stderr(&out)
    );
    let out = serve(dir.path(), json!({}), &["--deny", "memory.delete_entities"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("POLICY_DOT_NAME"), "{}", stderr(&out));
    // A misspelt deny: refused by default (issue 63 item 1), over stdio and --http.
    let out = serve(dir.path(), json!({"deny": ["memory:delete_entitys"]}), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out), refused_by_default("sandbox.deny[0]", "deny"));
    let out = serve(
        dir.path(),
        json!({"deny": ["memory:delete_entitys"]}),
        &["--http", "127.0.0.1:0"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out), refused_by_default("sandbox.deny[0]", "deny"));
    // --strict refuses even when the config only warns.
    let out = serve(
        dir.path(),
        json!({"strict_policy": false, "deny": ["memory:delete_entitys"]}),
        &["--strict", "--http", "127.0.0.1:0"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(refused under --strict)"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn serve_warns_of_a_glob_matching_no_tool_and_still_serves() {
    let served = crate::serve_support::start_with_servers(
        json!({"fixture": {"command": bin("fixture-mcp-server")}}),
        json!({"strict_policy": false, "deny": ["fixture:ech"]}),
        &[],
    )
    .await;
    let r = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.fixture.echo({message: 'hi'})"}),
        )
        .await
        .unwrap();
    assert!(!crate::serve_support::is_error(&r));
    assert!(
        served.stderr().contains("mcp-sandbox: warning: POLICY_UNMATCHED_GLOB: the rule sandbox.deny[0] \"fixture:ech\" matches none of the tools its server lists"),
        "{}",
        served.stderr()
    );
}
