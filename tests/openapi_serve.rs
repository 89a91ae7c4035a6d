//! An OpenAPI server behind `serve`, driven by the official MCP Python SDK client
//! (tests/python/openapi_client.py; issue 49 items 1 and 2): `search_tools` finds an operation
//! by words of its summary and shows its declaration; calls succeed with the request the spec
//! describes; an `ask` rule asks the client (approved for createNote, denied for deleteNote, which
//! is then never sent); a flow rule refuses a call after a labelled read; a 100 MB answer is cut
//! at the cap without the gateway's memory (VmHWM) growing by anywhere near it.

use crate::common;
use common::*;
use serde_json::{json, Value};

#[test]
fn the_python_sdk_uses_an_openapi_server_through_serve() {
    let notes = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let config = notes_config(
        dir.path(),
        &notes,
        json!({}),
        json!({
            "ask": ["notes:createNote", "notes:deleteNote"],
            "labels": {"notes:getNote": ["private"], "notes:brewCoffee": ["egress"]},
            "flows": [{"after": ["private"], "deny": ["egress"], "name": "no-exfiltration"}],
            "state": "state.db"
        }),
    );
    let codes = json!([
        "return await mcp.notes.createNote({ body: { title: 'from serve' } })",
        "try { await mcp.notes.deleteNote({ noteId: 'n1' }); return 'sent' } catch (e) { return e.code }",
        "await mcp.notes.getNote({ noteId: 'n2' }); try { await mcp.notes.brewCoffee({}); return 'sent' } catch (e) { return [e.code, e.message] }",
        "try { await mcp.notes.getLarge({ mb: 100 }); return 'answered' } catch (e) { return e.code }",
    ]);
    let codes_file = dir.path().join("codes.json");
    std::fs::write(&codes_file, codes.to_string()).unwrap();
    let out = std::process::Command::new(repo_root().join(".venv/bin/python"))
        .arg(repo_root().join("tests/python/openapi_client.py"))
        .arg(bin("mcp-sandbox"))
        .arg(&config)
        .arg("notes whose title holds some words")
        .arg(&codes_file)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env(NOTES_KEY_VAR, &notes.key)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    let search = lines[0]["search"].as_str().unwrap();
    assert!(search.contains("listNotes"), "{search}");
    assert!(
        search.contains("List the notes whose title holds some words"),
        "{search}"
    );

    let created = &lines[1]["outcome"];
    assert_eq!(
        created["result"],
        json!({"status": 201, "body": {"created": {"title": "from serve"}}}),
        "{created}"
    );
    assert_eq!(created["traces"][0]["transport"], "openapi", "{created}");
    assert_eq!(
        lines[2]["outcome"]["result"], "PERMISSION_DENIED",
        "{}",
        lines[2]
    );
    let flow = &lines[3]["outcome"]["result"];
    assert_eq!(flow[0], "PERMISSION_DENIED", "{flow}");
    assert!(
        flow[1].as_str().unwrap().contains("no-exfiltration"),
        "{flow}"
    );
    assert_eq!(
        lines[4]["outcome"]["result"], "LIMIT_EXCEEDED",
        "{}",
        lines[4]
    );
    let (before, after) = (
        lines[4]["hwm_before"].as_u64().unwrap(),
        lines[4]["hwm_after"].as_u64().unwrap(),
    );
    assert!(
        after < before + 32 * 1024,
        "the gateway's VmHWM went from {before} to {after} KiB"
    );
    let questions = lines[5]["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert!(
        questions[0].as_str().unwrap().contains("notes:createNote"),
        "{questions:?}"
    );
    assert!(
        questions[1].as_str().unwrap().contains("notes:deleteNote"),
        "{questions:?}"
    );

    // Only what was allowed reached the service: no delete, no teapot.
    let sent: Vec<(String, String)> = notes
        .calls()
        .iter()
        .map(|c| {
            (
                c["method"].as_str().unwrap().to_string(),
                c["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let sent: Vec<(&str, &str)> = sent.iter().map(|(m, p)| (m.as_str(), p.as_str())).collect();
    assert_eq!(
        sent,
        [
            ("POST", "/api/v1/notes"),
            ("GET", "/api/v1/notes/n2"),
            ("GET", "/api/v1/large")
        ]
    );
}
