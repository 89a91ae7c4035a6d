//! Tools from an OpenAPI description (issue 49 items 1 and 2), through the real CLI `run`: the
//! Notes service (tests/fixtures/openapi/service.py, a real HTTP server described by an
//! OpenAPI 3.1 YAML spec with local `$ref`s and an apiKey scheme) receives exactly the request
//! the spec describes (method, path, query, header parameter, JSON body, the key in its
//! header); a non-2xx answer is TOOL_ERROR with the status and an excerpt (the key the service
//! echoes is redacted); schema validation and the policy refuse calls before any request; the
//! calls are traced with `"transport": "openapi"`; the key appears in no output, debug log,
//! `tools` listing, audit record or state file.

use crate::common;
use common::*;
use serde_json::json;

const SCRIPT: &str = r#"
const out = {};
out.created = await mcp.notes.createNote({ body: { title: "hello", priority: 2, tags: ["a", "b"] }, dryRun: true, "X-Request-Id": "r-1" });
out.note = await mcp.notes.getNote({ noteId: "n 1/2", fields: ["title", "tags"] });
out.list = await mcp.notes.listNotes({ limit: 5, q: "shopping list" });
try { await mcp.notes.brewCoffee({}) } catch (e) { out.teapot = { code: e.code, message: e.message } }
const refused = [
  () => mcp.notes.createNote({ body: { title: "" } }),
  () => mcp.notes.createNote({ body: { title: "x", priority: 9 } }),
  () => mcp.notes.getNote({}),
  () => mcp.notes.listNotes({ limit: 500 }),
  () => mcp.notes.listNotes({ unknown: 1 }),
  () => mcp.notes.deleteNote({ noteId: "n1" }),
];
out.refused = [];
for (const f of refused) { try { await f(); out.refused.push("sent") } catch (e) { out.refused.push(e.code) } }
return out;
"#;

#[test]
fn calls_send_exactly_the_described_request_and_the_key_stays_host_side() {
    let notes = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let config = notes_config(
        dir.path(),
        &notes,
        json!({}),
        json!({"deny": ["notes:deleteNote"], "state": "state.db"}),
    );
    let script = dir.path().join("s.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let state = dir.path().join("state.db");
    let runner = bin("sandbox-runner");
    let env = [
        (NOTES_KEY_VAR, notes.key.as_str()),
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
    let r = &o["result"];
    assert_eq!(
        r["created"],
        json!({"status": 201, "body": {"created": {"title": "hello", "priority": 2, "tags": ["a", "b"]}}}),
        "{r}"
    );
    assert_eq!(
        r["note"],
        json!({"status": 200, "body": {"id": "n 1/2", "fields": ["title", "tags"]}}),
        "{r}"
    );
    assert_eq!(r["list"]["body"]["q"], json!(["shopping list"]), "{r}");
    assert_eq!(r["teapot"]["code"], "TOOL_ERROR", "{r}");
    let teapot = r["teapot"]["message"].as_str().unwrap();
    assert!(
        teapot.starts_with("HTTP 418 I'm a teapot from notes.brewCoffee: {"),
        "{teapot}"
    );
    assert!(teapot.contains(r#""you_sent": "[redacted]""#), "{teapot}");
    assert_eq!(
        r["refused"],
        json!([
            "INVALID_ARGUMENTS",
            "INVALID_ARGUMENTS",
            "INVALID_ARGUMENTS",
            "INVALID_ARGUMENTS",
            "INVALID_ARGUMENTS",
            "PERMISSION_DENIED"
        ]),
        "{r}"
    );

    // What the service received: four requests, exactly as the spec describes them.
    let calls = notes.calls();
    assert_eq!(calls.len(), 4, "{calls:?}");
    let c = &calls[0];
    assert_eq!(
        (c["method"].as_str(), c["path"].as_str()),
        (Some("POST"), Some("/api/v1/notes")),
        "{c}"
    );
    assert_eq!(c["query"], json!({"dryRun": ["true"]}), "{c}");
    assert_eq!(c["request_id"], "r-1", "{c}");
    assert_eq!(c["content_type"], "application/json", "{c}");
    let body: serde_json::Value = serde_json::from_str(c["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"title": "hello", "priority": 2, "tags": ["a", "b"]})
    );
    let g = &calls[1];
    assert_eq!(
        (g["method"].as_str(), g["path"].as_str()),
        (Some("GET"), Some("/api/v1/notes/n%201%2F2")),
        "{g}"
    );
    assert_eq!(g["query"], json!({"fields": ["title", "tags"]}), "{g}");
    assert_eq!(g["body"], json!(null), "{g}");
    let l = &calls[2];
    assert_eq!(l["path"], "/api/v1/notes", "{l}");
    assert_eq!(
        l["query"],
        json!({"limit": ["5"], "q": ["shopping list"]}),
        "{l}"
    );
    assert_eq!(calls[3]["path"], "/api/v1/teapot");
    for c in &calls {
        assert_eq!(
            c["api_key"],
            notes.key.as_str(),
            "the key in its header: {c}"
        );
        assert_eq!(c["authorization"], json!(null), "{c}");
    }

    // Traced as OpenAPI calls, under the server:tool names the policy uses.
    let ends: Vec<&serde_json::Value> = o["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "tool_end")
        .collect();
    // Four forwarded, six refused at the door: all traced the same way.
    assert_eq!(ends.len(), 10, "{}", o["traces"]);
    assert_eq!(ends[0]["tool"], "notes:createNote");
    for t in &ends {
        assert_eq!(t["transport"], "openapi", "{t}");
    }

    // The key is nowhere: outputs, debug log, listings, state file (audit records included).
    let absent = |what: &str, bytes: &[u8]| {
        assert!(
            !String::from_utf8_lossy(bytes).contains(&notes.key),
            "the key is in {what}"
        );
    };
    absent("run's stdout", &run.stdout);
    absent("run's debug stderr", &run.stderr);
    assert!(String::from_utf8_lossy(&run.stderr).contains("OpenAPI server loaded"));
    for args in [
        vec!["tools", "--config", config.to_str().unwrap()],
        vec!["tools", "--json", "--config", config.to_str().unwrap()],
        vec![
            "tools",
            "--typescript",
            "--config",
            config.to_str().unwrap(),
        ],
    ] {
        let out = cli_run_env(&args, &env);
        assert_eq!(
            out.status,
            0,
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("createNote"),
            "{args:?}"
        );
        if args[1] == "--typescript" {
            // The result's shape is declared: {status, body}.
            let ts = String::from_utf8_lossy(&out.stdout);
            assert!(
                ts.contains("}): Promise<{") && ts.contains("status: number;"),
                "{ts}"
            );
        }
        absent(&format!("{args:?} stdout"), &out.stdout);
        absent(&format!("{args:?} stderr"), &out.stderr);
    }
    let audit = cli_run_env(
        &[
            "audit",
            "--json",
            "--tool",
            "notes:createNote",
            "--state",
            state.to_str().unwrap(),
        ],
        &env,
    );
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("notes:createNote"),
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    absent("the audit records", &audit.stdout);
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("state.db") {
            absent(
                &entry.path().display().to_string(),
                &std::fs::read(entry.path()).unwrap(),
            );
        }
    }
}
