//! Values cross every boundary as they are (issue 58, items 3 and 5), through the real CLI, the
//! real runner and a server on the official MCP Python SDK (tests/python/shapes_server.py):
//! one depth rule (values up to the documented depth arrive unchanged, deeper ones are
//! `LIMIT_EXCEEDED` naming the depth where they arrive, never `None` or a timeout), and NaN and
//! the infinities refused with how to convert them. The depth rule holds for the same server
//! over streamable HTTP too, where rmcp's HTTP client (not a line the host watches) parses.

use crate::common::{bin, cli_run, free_port, repo_root, Listening};
use crate::python_scripts::{fixture, run_file, run_py, write_config};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn shapes() -> Value {
    json!({
        "command": repo_root().join(".venv/bin/python"),
        "args": [repo_root().join("tests/python/shapes_server.py")],
    })
}

fn config(dir: &Path) -> PathBuf {
    write_config(
        dir,
        json!({"fixture": fixture(), "shapes": shapes()}),
        json!({}),
    )
}

/// `run --json` of `code` in `dir/name` (session `s`), its outcome read without serde_json's
/// 128-level limit (the helpers of python_scripts.rs keep it).
pub fn run_deep(dir: &Path, config: &Path, name: &str, code: &str) -> Value {
    let script = dir.join(name);
    std::fs::write(&script, code).unwrap();
    let (runner, state) = (bin("sandbox-runner"), dir.join("state.db"));
    let out = cli_run(&[
        "run",
        "--json",
        "--session",
        "s",
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    let mut de = serde_json::Deserializer::from_slice(&out.stdout);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

/// `{"k": {"k": … 1}}`, `levels` objects deep.
fn nested(levels: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..levels {
        v = json!({ "k": v });
    }
    v
}

/// Runs `f` on a thread with room for comparing and dropping values 1,000 levels deep in a
/// debug build (a test thread has 2 MiB).
fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_deep_value_stored_by_javascript_loads_equal_in_python() {
    on_big_stack(deep_value_stored_by_javascript_loads_equal_in_python);
}

fn deep_value_stored_by_javascript_loads_equal_in_python() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    for levels in [127, 600] {
        let js = format!(
            "let v = 1; for (let i = 0; i < {levels}; i++) v = {{k: v}}; await store('deep', v); return (await keys()).length"
        );
        let o = run_deep(dir.path(), &config, "store.js", &js);
        assert_eq!(o["result"], 1, "{o}");
        let o = run_deep(dir.path(), &config, "load.py", "await load('deep')\n");
        assert!(
            o["result"] == nested(levels),
            "{levels} levels: {}",
            o["error"]
        );
    }
    // The deepest value `load` can return is the deepest `store` takes, in both languages.
    let py = "v = 1\nfor _ in range(1000):\n    v = {'k': v}\nawait store('deeper', v)\n";
    let o = run_deep(dir.path(), &config, "deeper.py", py);
    assert_eq!(o["error"]["code"], "LIMIT_EXCEEDED", "{o}");
    assert_eq!(o["error"]["tool"], "$state:store", "{o}");
    let o = run_deep(dir.path(), &config, "keys.py", "await keys()\n");
    assert_eq!(o["result"], json!(["deep"]), "{o}");
}

#[test]
fn a_deep_tool_answer_arrives_unchanged_or_is_limit_exceeded_in_both_languages() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await mcp.shapes.nested(levels=125)\n",
        &[],
    );
    assert_eq!(o["result"], nested(125), "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "s.js",
        "return await mcp.shapes.nested({levels: 125})",
        &[],
    );
    assert_eq!(o["result"], nested(125), "{o}");
    let expected = "MCP server 'shapes' sent a message nested 202 levels deep, over the 127-level limit of its MCP client (a tool's structuredContent may nest at most 125 levels); the call failed (every call in flight to 'shapes' did), and the server will be restarted for the next call. Ask the tool for flatter data";
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await mcp.shapes.nested(levels=200)\n",
        &[],
    );
    assert_eq!(o["error"]["code"], "LIMIT_EXCEEDED", "{o}");
    assert_eq!(o["error"]["message"], expected, "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "s.js",
        "try { await mcp.shapes.nested({levels: 200}) } catch (e) { return [e.code, e.message] }",
        &[],
    );
    assert_eq!(o["result"], json!(["LIMIT_EXCEEDED", expected]), "{o}");
}

#[test]
fn a_deep_answer_from_an_http_server_is_limit_exceeded_and_the_next_call_works() {
    let port = free_port();
    let mut cmd = std::process::Command::new(repo_root().join(".venv/bin/python"));
    cmd.arg(repo_root().join("tests/python/shapes_server.py"))
        .args(["--http", &port.to_string()]);
    let server = Listening::spawn(cmd, port);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"shapes": {"url": server.url()}}),
        json!({}),
    );
    let expected = "MCP server 'shapes' sent a message nested more than 127 levels deep, over the limit of its MCP client (a tool's structuredContent may nest at most 125 levels); the call reached the server and failed, it was not retried, and the next call reconnects. Ask the tool for flatter data";
    let (o, _) = run_file(
        dir.path(),
        &config,
        "s.js",
        "let code; try { await mcp.shapes.nested({levels: 200}) } catch (e) { code = [e.code, e.message] } return [code, await mcp.shapes.nested({levels: 3})]",
        &[],
    );
    assert_eq!(
        o["result"],
        json!([["LIMIT_EXCEEDED", expected], {"k": {"k": {"k": 1}}}]),
        "{o}"
    );
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await mcp.shapes.nested(levels=200)\n",
        &[],
    );
    assert_eq!(o["error"]["code"], "LIMIT_EXCEEDED", "{o}");
    assert_eq!(o["error"]["message"], expected, "{o}");
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await mcp.shapes.nested(levels=125)\n",
        &[],
    );
    assert_eq!(o["result"], nested(125), "{o}");
}

#[test]
fn python_results_nest_to_the_documented_depth_and_deeper_is_limit_exceeded() {
    on_big_stack(python_results_nest_to_the_documented_depth);
}

fn python_results_nest_to_the_documented_depth() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let o = run_deep(
        dir.path(),
        &config,
        "r.py",
        "v = 1\nfor _ in range(1000):\n    v = {'k': v}\nv\n",
    );
    assert!(o["result"] == nested(1000), "{}", o["error"]);
    let (o, _) = run_py(
        dir.path(),
        &config,
        "v = 1\nfor _ in range(1001):\n    v = [v]\nv\n",
        &[],
    );
    assert_eq!(o["error"]["code"], "LIMIT_EXCEEDED", "{o}");
    assert_eq!(
        o["error"]["message"],
        "the result is nested more than 1000 levels deep (at level 1001); values may nest at most 1000 levels: return flatter data"
    );
}

#[test]
fn nan_and_the_infinities_are_refused_saying_how_to_convert_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (o, _) = run_py(dir.path(), &config, "{'x': float('nan')}\n", &[]);
    assert_eq!(o["error"]["code"], "RESULT_NOT_SERIALIZABLE", "{o}");
    assert_eq!(
        o["error"]["message"],
        "the result holds the float nan, which JSON cannot hold; convert it first: None where there is no number (None if math.isnan(x) else x), or str(x) to keep it as text"
    );
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await mcp.fixture.add(a=1, b=float('-inf'))\n",
        &[],
    );
    assert_eq!(o["error"]["code"], "INVALID_ARGUMENTS", "{o}");
    assert!(
        o["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the arguments of fixture:add holds the float -inf"),
        "{o}"
    );
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await store('k', [float('inf')])\n",
        &["--session", "s"],
    );
    assert_eq!(o["error"]["code"], "STATE_VALUE_INVALID", "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "a.js",
        "try { await mcp.fixture.add({a: 1, b: NaN}) } catch (e) { return [e.code, e.message] }",
        &[],
    );
    assert_eq!(o["result"][0], "INVALID_ARGUMENTS", "{o}");
    assert!(
        o["result"][1]
            .as_str()
            .unwrap()
            .contains("it contains the number NaN (key \"b\"), which JSON cannot represent; convert it first: null where there is no number"),
        "{o}"
    );
    let (o, _) = run_file(
        dir.path(),
        &config,
        "s.js",
        "await store('k', [Infinity])",
        &["--session", "s"],
    );
    assert_eq!(o["error"]["code"], "STATE_VALUE_INVALID", "{o}");
    assert!(
        o["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the number Infinity (key \"0\")"),
        "{o}"
    );
    let (o, _) = run_file(dir.path(), &config, "r.js", "return {x: NaN}", &[]);
    assert_eq!(o["error"]["code"], "RESULT_NOT_SERIALIZABLE", "{o}");
    assert_eq!(
        o["error"]["message"],
        "the result contains the number NaN (key \"x\"), which JSON cannot represent; convert it first: null where there is no number (Number.isFinite(x) ? x : null), or String(x) to keep it as text. Return plain data: objects, arrays, strings, numbers, booleans, null."
    );
}
