//! The corpus of agent-style Python scripts (issue 48 item 4), run through the real CLI on the
//! real runner against the rmcp fixture, and under CPython (`python3`) with a stand-in `mcp` whose
//! tools answer as the fixture does (tests/python_corpus/cpython_run.py; its answers were checked
//! call by call against the real server). A script passes when both give the same result (int
//! and float told apart) and the same print lines, or both fail with the same exception. The pass
//! rate is printed; it may not fall below tests/python_corpus/FLOOR.

use crate::common::{bin, repo_root};
use serde_json::{json, Value};
use std::path::Path;

fn cpython(script: &Path, context: Option<&str>) -> Value {
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo_root().join("tests/python_corpus/cpython_run.py"))
        .arg(script);
    if let Some(c) = context {
        cmd.args(["--context", c]);
    }
    let out = cmd.output().expect("python3");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "cpython_run.py printed no JSON for {} ({e}): {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn sandbox(dir: &Path, script: &Path, context: Option<&str>) -> Value {
    let config = dir.join("mcp.json");
    if !config.exists() {
        let body = json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}});
        std::fs::write(&config, body.to_string()).unwrap();
    }
    let runner = bin("sandbox-runner");
    let mut args = vec!["run", "--json", "--config", config.to_str().unwrap()];
    args.extend(["--runner", runner.to_str().unwrap()]);
    if let Some(c) = context {
        args.extend(["--context", c]);
    }
    args.push(script.to_str().unwrap());
    crate::common::cli_run(&args).outcome()
}

/// Whether the sandbox's outcome is CPython's; the reason when it is not.
fn same(py: &Value, ours: &Value) -> Result<(), String> {
    let our_logs: Vec<&Value> = ours["logs"]
        .as_array()
        .map(|l| l.iter().map(|e| &e["message"]).collect())
        .unwrap_or_default();
    let py_logs: Vec<&Value> = py["logs"]
        .as_array()
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    if let Some(err) = py.get("error").and_then(Value::as_str) {
        let message = ours["error"]["message"].as_str().unwrap_or("");
        let first = err.lines().next().unwrap_or("");
        return match ours["success"] == false && message.starts_with(first) {
            true => Ok(()),
            false => Err(format!(
                "CPython raised {first:?}; the sandbox: {}",
                ours["error"]
            )),
        };
    }
    if ours["success"] != true {
        return Err(format!("the sandbox failed: {}", ours["error"]));
    }
    if py["result"] != ours["result"] {
        return Err(format!(
            "results differ: CPython {} / sandbox {}",
            py["result"], ours["result"]
        ));
    }
    if py_logs != our_logs {
        return Err(format!(
            "print lines differ: CPython {py_logs:?} / sandbox {our_logs:?}"
        ));
    }
    Ok(())
}

#[test]
fn the_corpus_gives_cpythons_answers() {
    let root = repo_root().join("tests/python_corpus");
    let mut scripts: Vec<_> = std::fs::read_dir(root.join("scripts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    scripts.sort();
    assert!(
        scripts.len() >= 40,
        "the corpus has {} scripts",
        scripts.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for script in &scripts {
        let context = std::fs::read_to_string(script.with_extension("context.json")).ok();
        let py = cpython(script, context.as_deref());
        let ours = sandbox(dir.path(), script, context.as_deref());
        if let Err(why) = same(&py, &ours) {
            let name = script.file_name().unwrap().to_string_lossy().to_string();
            failed.push(format!("{name}: {why}"));
        }
    }
    let passed = scripts.len() - failed.len();
    let version = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "python corpus: {passed}/{} scripts ({:.1}%) give {version}'s answers on monty 0.0.23",
        scripts.len(),
        100.0 * passed as f64 / scripts.len() as f64
    );
    for f in &failed {
        println!("  differs: {f}");
    }
    let floor: usize = std::fs::read_to_string(root.join("FLOOR"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        passed >= floor,
        "{passed} scripts pass; the floor is {floor}:\n{}",
        failed.join("\n")
    );
}
