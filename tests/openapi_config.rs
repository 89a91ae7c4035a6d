//! Mistakes in an OpenAPI server's entry or spec (issue 49 item 1), each with its stable code
//! and what to do: entry problems refuse the config (`CONFIG_OPENAPI`), spec problems make the
//! server unavailable with the reason (`CONFIG_OPENAPI_SPEC`: a remote `$ref`, a Swagger 2.0
//! file, a missing file), and the other servers stay usable. A spec named by URL is fetched once,
//! when the server starts.

use crate::common;
use common::*;
use serde_json::json;

fn tools(dir: &std::path::Path, entry: serde_json::Value) -> CliRun {
    let config = dir.join("mcp.json");
    std::fs::write(&config, json!({"mcpServers": {"api": entry}}).to_string()).unwrap();
    cli_run_env(&["tools", "--config", config.to_str().unwrap()], &[])
}

#[test]
fn entry_mistakes_refuse_the_config_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (json!({"openapi": "s.yaml"}), "CONFIG_OPENAPI: server 'api': baseUrl is missing: give the URL every request of this API goes under"),
        (json!({"openapi": "s.yaml", "baseUrl": "http://api.example.com"}), "CONFIG_OPENAPI: server 'api': baseUrl must be https:// (plain http only to 127.0.0.1 or localhost)"),
        (json!({"openapi": "http://specs.example.com/s.yaml", "baseUrl": "https://api.example.com"}), "CONFIG_OPENAPI: server 'api': the spec URL must be https://"),
        (json!({"openapi": "s.yaml", "baseUrl": "https://u:p@api.example.com"}), "CONFIG_OPENAPI: server 'api': baseUrl must not hold credentials"),
        (json!({"openapi": "s.yaml", "baseUrl": "https://api.example.com", "command": "x"}), "CONFIG_OPENAPI: server 'api': \"openapi\" cannot be combined with command or url"),
        (json!({"openapi": "s.yaml", "baseUrl": "https://api.example.com", "scope": "tenant"}), "CONFIG_OPENAPI: server 'api': an OpenAPI server has no process to scope"),
        (json!({"openapi": "s.yaml", "baseUrl": "https://api.example.com", "maxResponseBytes": 0}), "CONFIG_OPENAPI: server 'api': maxResponseBytes must be at least 1"),
        (json!({"openapi": "s.yaml", "baseUrl": "https://api.example.com", "auth": {"bearer": "${MCP_SANDBOX_TEST_UNSET_VAR}"}}), "CONFIG_OPENAPI: server 'api': auth.bearer uses ${MCP_SANDBOX_TEST_UNSET_VAR}, which is not set in the host's environment"),
        (json!({"command": "x", "baseUrl": "https://api.example.com"}), "CONFIG_OPENAPI: server 'api': baseUrl is for OpenAPI servers (an entry with \"openapi\")"),
        (json!({"openapi": "s.yaml", "baseUrl": "https://api.example.com", "auth": {"password": "x"}}), "unknown field `password`"),
    ];
    for (entry, needle) in cases {
        let out = tools(dir.path(), entry.clone());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status, 0, "{entry}");
        assert!(stderr.contains(needle), "{entry}: {stderr}");
    }
}

#[test]
fn spec_mistakes_make_only_that_server_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("remote.yaml"),
        "openapi: 3.1.0\npaths:\n  /a:\n    get:\n      operationId: a\n      parameters:\n        - $ref: 'https://specs.example.com/common.yaml#/Limit'\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("swagger.yaml"),
        "swagger: '2.0'\npaths: {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("ok.yaml"),
        "openapi: 3.1.0\npaths:\n  /ping:\n    get:\n      operationId: ping\n",
    )
    .unwrap();
    let config = dir.path().join("mcp.json");
    let entry = |spec: &str| json!({"openapi": spec, "baseUrl": "https://api.example.com"});
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "remote": entry("remote.yaml"),
            "swagger": entry("swagger.yaml"),
            "missing": entry("missing.yaml"),
            "ok": entry("ok.yaml")
        }})
        .to_string(),
    )
    .unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        "const out = {}; for (const s of ['remote', 'swagger', 'missing']) { try { await mcp[s].a({}) } catch (e) { out[s] = [e.code, e.message] } } out.ok = Object.keys(mcp.ok); return out;",
    )
    .unwrap();
    let runner = bin("sandbox-runner");
    let run = cli_run_env(
        &[
            "run",
            "--json",
            "--config",
            config.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        &[("MCP_SANDBOX_RUNNER", runner.to_str().unwrap())],
    );
    let o = run.outcome();
    let r = &o["result"];
    for (server, needle) in [
        ("remote", "CONFIG_OPENAPI_SPEC: the spec has a remote $ref https://specs.example.com/common.yaml#/Limit: only local references (\"#/components/...\") are resolved; bundle the spec into one file first"),
        ("swagger", "CONFIG_OPENAPI_SPEC: the spec is not an OpenAPI 3.0 or 3.1 description: Swagger 2.0 is not supported"),
        ("missing", "CONFIG_OPENAPI_SPEC: cannot read the spec"),
    ] {
        assert_eq!(r[server][0], "SERVER_UNAVAILABLE", "{r}");
        assert!(r[server][1].as_str().unwrap().contains(needle), "{server}: {r}");
    }
    assert_eq!(r["ok"], json!(["ping"]), "{r}");
}

#[test]
fn a_spec_url_is_fetched_once_when_the_server_starts() {
    let notes = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let config = notes_config(
        dir.path(),
        &notes,
        json!({"openapi": format!("{}/openapi.yaml", notes.origin())}),
        json!({}),
    );
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        "const a = await mcp.notes.getNote({ noteId: 'a' }); const b = await mcp.notes.getNote({ noteId: 'b' }); return [a.body.id, b.body.id, Object.keys(mcp.notes).length];",
    )
    .unwrap();
    let run = run_json(&config, &script, &notes);
    assert_eq!(run.outcome()["result"], json!(["a", "b", 9]));
    let paths: Vec<String> = notes
        .calls()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        paths,
        ["/openapi.yaml", "/api/v1/notes/a", "/api/v1/notes/b"]
    );
}

#[test]
fn policy_typos_are_caught_for_openapi_tools_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(notes_spec(), dir.path().join("notes.yaml")).unwrap();
    let write = |sandbox: serde_json::Value| {
        let config = dir.path().join("mcp.json");
        let entry = json!({"openapi": "notes.yaml", "baseUrl": "http://127.0.0.1:9/api/v1"});
        std::fs::write(
            &config,
            json!({"mcpServers": {"notes": entry}, "sandbox": sandbox}).to_string(),
        )
        .unwrap();
        let script = dir.path().join("s.js");
        std::fs::write(&script, "return Object.keys(mcp.notes).length").unwrap();
        let runner = bin("sandbox-runner");
        cli_run_env(
            &[
                "run",
                "--config",
                config.to_str().unwrap(),
                script.to_str().unwrap(),
            ],
            &[("MCP_SANDBOX_RUNNER", runner.to_str().unwrap())],
        )
    };
    let dot = write(json!({"deny": ["notes.deleteNote"]}));
    assert_ne!(dot.status, 0);
    assert!(
        String::from_utf8_lossy(&dot.stderr).contains("POLICY_DOT_NAME"),
        "{}",
        String::from_utf8_lossy(&dot.stderr)
    );
    let typo = write(json!({"deny": ["notes:deleteNotes"], "strict_policy": true}));
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert_ne!(typo.status, 0, "{stderr}");
    assert!(stderr.contains("POLICY_UNMATCHED_GLOB"), "{stderr}");
    assert!(
        stderr.contains("deleteNote"),
        "the near miss is suggested: {stderr}"
    );
    let fine = write(json!({"deny": ["notes:deleteNote"], "strict_policy": true}));
    assert_eq!(fine.status, 0, "{}", String::from_utf8_lossy(&fine.stderr));
}
