//! The tool graph does not count a call the policy refused as a failure of the tool (issue 47):
//! the tool never ran. Through the real `run` (the fixture server, `--deny`) and `graph --json`.

use crate::common;
use common::*;
use serde_json::{json, Value};

#[test]
fn a_refused_call_is_not_a_tool_failure_in_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), json!({}));
    let state = dir.path().join("state.db");
    let out = run_stdin(
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
            "--deny".as_ref(),
            "fixture:add".as_ref(),
        ],
        "await mcp.fixture.echo({message: 'a'});\n\
         try { await mcp.fixture.add({a: 1, b: 2}); } catch (e) { if (e.code !== 'PERMISSION_DENIED') throw e; }\n\
         return await mcp.fixture.echo({message: 'b'});",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(bin("mcp-sandbox"))
        .args(["graph", "--json", "--state"])
        .arg(&state)
        .output()
        .unwrap();
    let g: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools: Vec<(Value, Value, Value)> = g["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tool"].clone(), t["calls"].clone(), t["failures"].clone()))
        .collect();
    // Only echo, twice, no failure; the refused add is not in the graph at all.
    assert_eq!(tools, [(json!("fixture:echo"), json!(2), json!(0))], "{g}");
    assert_eq!(g["edges"][0]["source"], "fixture:echo", "{g}");
    assert_eq!(g["edges"][0]["count"], 1, "{g}");
}
