//! Every string of the outcome goes through redaction, not a list of fields (issue 43 item 4): a
//! script that calls a tool *named* after a sensitive value (`mcp.crm[customer.email]()`) gets
//! the real value back in `error.tool` on older builds (only the message was redacted). Checked
//! by walking the whole outcome `run` prints, and through `serve` with the Python SDK client.

use crate::common::{bin, cli_run_script};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const REAL: [&str; 2] = ["ada7@example.com", "4111 1111 1111 1111"];

fn config(dir: &Path) -> PathBuf {
    let body = json!({
        "mcpServers": {"crm": {"command": bin("fixture-mcp-server")}},
        "sandbox": {"sensitive": {"detect": ["email", "card"]}},
    });
    let config = dir.join("mcp.json");
    std::fs::write(&config, body.to_string()).unwrap();
    config
}

const HOSTILE: &str = "const c = await mcp.crm.get_customer({id: 7});
    try { await mcp.crm[c.email]() } catch (e) { console.log('caught ' + e.tool) }
    try { await mcp.crm[c.card]({x: 1}) } catch (e) {}
    await mcp.crm[c.email]()";

/// Every string in `v` (object keys included), with its JSON pointer.
fn strings(v: &Value, at: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((at, s.clone())),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                strings(x, format!("{at}/{i}"), out);
            }
        }
        Value::Object(fields) => {
            for (k, x) in fields {
                out.push((format!("{at} (key)"), k.clone()));
                strings(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

fn assert_nothing_real(outcome: &Value) {
    let mut all = Vec::new();
    strings(outcome, String::new(), &mut all);
    assert!(all.len() > 20, "the outcome has its fields: {outcome}");
    for (at, s) in &all {
        for real in REAL {
            assert!(!s.contains(real), "{real} at {at}: {s}");
        }
    }
}

#[test]
fn a_tool_named_after_a_value_comes_back_redacted_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hostile.js");
    std::fs::write(&script, HOSTILE).unwrap();
    let r = cli_run_script(
        &[],
        &config(dir.path()),
        &dir.path().join("state.db"),
        &script,
    );
    let printed = String::from_utf8_lossy(&r.stdout).to_string();
    let outcome: Value =
        serde_json::from_str(&printed).unwrap_or_else(|e| panic!("{e}: {printed}"));
    assert_nothing_real(&outcome);
    for real in REAL {
        assert!(!printed.contains(real), "run printed {real}");
    }
    let error = &outcome["error"];
    assert_eq!(error["code"], "TOOL_NOT_FOUND", "{outcome}");
    let tool = error["tool"].as_str().unwrap();
    assert!(
        tool.starts_with("crm:⟪email:") && tool.ends_with('⟫'),
        "{tool}"
    );
    assert_eq!(outcome["logs"][0]["message"], format!("caught {tool}"));
    // The runner refused the names itself (no such tools): no call reached a server.
    assert!(outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["tool"] == "crm:get_customer"));
    // The codes and event types are left as they are.
    assert!(outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["type"]
            .as_str()
            .is_some_and(|k| k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))));
}

#[test]
fn through_serve_no_string_of_the_answer_holds_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let report = crate::serve_support::sdk::over_stdio(
        "budget_client.py",
        &config(dir.path()),
        &dir.path().join("state.db"),
        &json!([{"code": HOSTILE}]),
    );
    let answer = &report["results"][0];
    assert_eq!(answer["out"]["error"]["code"], "TOOL_NOT_FOUND", "{answer}");
    assert_nothing_real(answer);
}
