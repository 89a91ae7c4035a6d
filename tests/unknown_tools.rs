//! Unknown tool names never reject a program that would succeed (issue 15 item 2): through the
//! real `run` CLI with the fixture MCP server, feature detection, a try/catch fallback and
//! references in dead code (`if (false)`, a function never called) run; the runner's proxy
//! throws a catchable `TOOL_NOT_FOUND` for a call that does run; and a call that certainly runs
//! (a top-level statement) is still refused before anything runs.

use crate::common;

use common::{bin, run_stdin};
use serde_json::{json, Value};

fn run(script: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}}).to_string(),
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let out = run_stdin(
        &[
            "--json".as_ref(),
            "--config".as_ref(),
            config.as_ref(),
            "--state".as_ref(),
            state.as_ref(),
        ],
        script,
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn feature_detection_runs() {
    let o = run(
        "if ('github' in mcp) { return await mcp.github.create_issue({}) }\n\
                 return (await mcp.fixture.add({a: 1, b: 1})).sum",
    );
    assert_eq!(o["result"], 2, "{o}");
}

#[test]
fn a_try_catch_fallback_catches_tool_not_found() {
    let o = run("try { return await mcp.github.create_issue({}) }\n\
                 catch (e) { return [e.code, (await mcp.fixture.add({a: 2, b: 2})).sum] }");
    assert_eq!(o["result"], json!(["TOOL_NOT_FOUND", 4]), "{o}");
    // A misspelt tool of a real server: caught, with the alternative.
    let o = run("try { await mcp.fixture.ech({message: 'x'}) } catch (e) { return [e.code, e.alternatives] }");
    assert_eq!(
        o["result"],
        json!(["TOOL_NOT_FOUND", ["fixture:echo"]]),
        "{o}"
    );
}

#[test]
fn dead_code_runs() {
    for script in [
        "if (false) { await mcp.github.create_issue({}) } return 1",
        "async function never() { return mcp.github.create_issue({}) } return 1",
        "const unused = () => mcp.fixture.no_such_tool(); return 1",
        "return 1; await mcp.github.create_issue({})",
        "if (1 > 0) return 1\nawait mcp.github.create_issue({})",
    ] {
        let o = run(script);
        assert_eq!(o["success"], true, "{script}: {o}");
        assert_eq!(o["result"], 1, "{script}: {o}");
    }
}

#[test]
fn a_call_that_certainly_runs_is_refused_before_anything_runs() {
    let o = run("await mcp.fixture.count(); await mcp.github.create_issue({}); return 1");
    assert_eq!(o["error"]["code"], "TOOL_NOT_FOUND", "{o}");
    assert!(
        o["error"]["message"]
            .as_str()
            .unwrap()
            .contains("github:create_issue"),
        "{o}"
    );
    // Refused before the runner started: the first call never happened.
    assert_eq!(o["traces"], json!([]), "{o}");
}
