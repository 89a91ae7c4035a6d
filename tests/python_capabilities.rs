//! Capabilities across languages (issue 48): a capability saved in Python is called from
//! JavaScript, one saved in JavaScript from Python, and a Python capability that calls a
//! JavaScript one runs nested, each in its own runner with its own engine — through the real CLI
//! (`capability save`, `run`) on one state file, with the capability traces of each.

use crate::common::cli_run;
use crate::python_scripts::{run_file, run_py};
use serde_json::{json, Value};
use std::path::Path;

fn save(dir: &Path, name: &str, file: &str, code: &str, extra: &[&str]) {
    let path = dir.join(file);
    std::fs::write(&path, code).unwrap();
    let state = dir.join("state.db");
    let mut args = vec!["capability", "save", name, "--file", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["--state", state.to_str().unwrap()]);
    let out = cli_run(&args);
    assert_eq!(out.status, 0, "{}", String::from_utf8_lossy(&out.stderr));
}

fn run_js(dir: &Path, config: &Path, code: &str) -> Value {
    run_file(dir, config, "script.js", code, &[]).0
}

fn capability_ends(o: &Value) -> Vec<(String, bool)> {
    o["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "capability_end")
        .map(|t| {
            (
                t["tool"].as_str().unwrap().to_string(),
                t["success"] == true,
            )
        })
        .collect()
}

#[test]
fn a_capability_in_one_language_is_called_from_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::python_scripts::write_config(
        dir.path(),
        json!({"fixture": crate::python_scripts::fixture()}),
        json!({}),
    );
    // Python (the language from the file's extension), calling a tool.
    save(
        dir.path(),
        "stats:summary",
        "summary.py",
        "nums = args['values']\nlabel = await mcp.fixture.echo(message='py')\n{'n': len(nums), 'total': sum(nums), 'by': label}\n",
        &[],
    );
    // JavaScript.
    save(
        dir.path(),
        "fmt:line",
        "line.js",
        "return args.items.join(' | ')",
        &[],
    );
    // Python calling the JavaScript one (the language given with --language).
    save(
        dir.path(),
        "mix:both",
        "both.txt",
        "line = await mcp.fmt.line(items=[str(v) for v in args['values']])\nreturn {'line': line, 'lang': 'python'}\n",
        &["--language", "python"],
    );

    let o = run_js(
        dir.path(),
        &config,
        "return [await mcp.stats.summary({values: [1, 2, 3]}), await mcp.mix.both({values: [4, 5]})]",
    );
    assert_eq!(o["success"], true, "{o}");
    assert_eq!(
        o["result"],
        json!([{"n": 3, "total": 6, "by": "py"}, {"line": "4 | 5", "lang": "python"}])
    );
    assert_eq!(
        capability_ends(&o),
        [
            ("stats:summary".to_string(), true),
            ("fmt:line".to_string(), true),
            ("mix:both".to_string(), true),
        ]
    );

    let (o, _) = run_py(
        dir.path(),
        &config,
        "import asyncio\na, b = await asyncio.gather(mcp.fmt.line(items=['x', 'y']), mcp.stats.summary({'values': [7]}))\n[a, b]\n",
        &[],
    );
    assert_eq!(o["success"], true, "{o}");
    assert_eq!(
        o["result"],
        json!(["x | y", {"n": 1, "total": 7, "by": "py"}])
    );

    // The last run was Python: --from-last saves it as Python.
    let state = dir.path().join("state.db");
    let out = cli_run(&[
        "capability",
        "save",
        "again:pair",
        "--from-last",
        "--state",
        state.to_str().unwrap(),
    ]);
    assert_eq!(out.status, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let o = run_js(dir.path(), &config, "return await mcp.again.pair({})");
    assert_eq!(
        o["result"],
        json!(["x | y", {"n": 1, "total": 7, "by": "py"}]),
        "{o}"
    );
}
