//! Codes only the host (or the runner's own accounting) can give (issue 58, item 2), through the
//! real CLI and runner: a Python script that raises `TimeoutError('time limit exceeded')`,
//! `MemoryError('memory limit exceeded…')` or `SyntaxError` itself gets `RUNTIME_ERROR`, while
//! the real limits still end `CPU_LIMIT`/`MEMORY_LIMIT` — and so does a JavaScript script that
//! throws QuickJS's own words (`new InternalError('out of memory')`): only the runner's
//! allocator refusing a request is `MEMORY_LIMIT`; a value `store` refuses is
//! `STATE_VALUE_INVALID` and a state call past the call limit is `LIMIT_EXCEEDED` in both
//! languages (they used to be `PROTOCOL_ERROR`: the host's check for forged codes did not know
//! `$state`); an uncaught unknown tool is `TOOL_NOT_FOUND` in both languages.

use crate::python_scripts::{fixture, run_file, run_py, write_config};
use serde_json::{json, Value};

fn error(o: &Value) -> (&str, &str) {
    (
        o["error"]["code"].as_str().unwrap_or_else(|| panic!("{o}")),
        o["error"]["message"].as_str().unwrap_or_default(),
    )
}

#[test]
fn a_python_script_raising_a_limit_s_words_is_a_runtime_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    for (code, headline) in [
        (
            "raise TimeoutError('time limit exceeded')\n",
            "TimeoutError: time limit exceeded (line 1)",
        ),
        (
            "raise TimeoutError('time limit exceeded: 10.5s > 10s')\n",
            "TimeoutError: time limit exceeded: 10.5s > 10s (line 1)",
        ),
        (
            "raise MemoryError('memory limit exceeded: 200000000 bytes > 134217728 bytes')\n",
            "MemoryError: memory limit exceeded: 200000000 bytes > 134217728 bytes (line 1)",
        ),
        ("raise SyntaxError('bad')\n", "SyntaxError: bad (line 1)"),
    ] {
        let (o, _) = run_py(dir.path(), &config, code, &[]);
        assert_eq!(error(&o), ("RUNTIME_ERROR", headline), "{code}: {o}");
    }
    // The real limits keep their codes.
    let (o, _) = run_py(
        dir.path(),
        &config,
        "n = 0\nwhile True:\n    n += 1\n",
        &["--cpu-ms", "300"],
    );
    assert_eq!(error(&o).0, "CPU_LIMIT", "{o}");
    let (o, _) = run_py(dir.path(), &config, "x = 'x' * (2 ** 40)\nlen(x)\n", &[]);
    assert_eq!(error(&o).0, "MEMORY_LIMIT", "{o}");
    let (o, _) = run_py(
        dir.path(),
        &config,
        "xs = []\nwhile True:\n    xs.append('y' * 1000)\n",
        &["--memory-mb", "32"],
    );
    assert_eq!(error(&o).0, "MEMORY_LIMIT", "{o}");
}

#[test]
fn a_javascript_script_throwing_quickjs_s_out_of_memory_is_a_runtime_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    let js = |code: &str, flags: &[&str]| run_file(dir.path(), &config, "script.js", code, flags).0;
    for code in [
        "throw new InternalError('out of memory')",
        "await Promise.reject(new InternalError('out of memory'))",
        "Promise.reject(new InternalError('out of memory')); await new Promise(() => {})",
    ] {
        let o = js(code, &[]);
        assert_ne!(error(&o).0, "MEMORY_LIMIT", "{code}: {o}");
    }
    let o = js("throw new InternalError('out of memory')", &[]);
    assert_eq!(
        error(&o),
        ("RUNTIME_ERROR", "InternalError: out of memory"),
        "{o}"
    );
    // The real limit keeps its code, in the script's own frame and in a promise job.
    let o = js(
        "const xs = []; while (true) xs.push('y'.repeat(1000) + xs.length)",
        &["--memory-mb", "32"],
    );
    assert_eq!(error(&o).0, "MEMORY_LIMIT", "{o}");
    let o = js(
        "const xs = []; const grow = () => { xs.push(new Array(1000).fill(xs.length)); return Promise.resolve().then(grow) }; await grow()",
        &["--memory-mb", "32"],
    );
    assert_eq!(error(&o).0, "MEMORY_LIMIT", "{o}");
}

#[test]
fn a_value_store_refuses_has_the_state_code_in_both_languages() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    let session = ["--session", "s"];
    let (o, _) = run_py(dir.path(), &config, "await store('k', {1, 2})\n", &session);
    assert_eq!(
        error(&o),
        (
            "STATE_VALUE_INVALID",
            "the value stored under \"k\" holds a value of type set that JSON cannot hold; convert it first: sorted(s) or list(s)"
        ),
        "{o}"
    );
    assert_eq!(o["error"]["tool"], "$state:store", "{o}");
    // Caught, it is a TypeError whose message starts with the code.
    let (o, _) = run_py(
        dir.path(),
        &config,
        "try:\n    await store('k', {1, 2})\nexcept TypeError as e:\n    r = str(e).split(':', 1)[0]\nr\n",
        &session,
    );
    assert_eq!(o["result"], "STATE_VALUE_INVALID", "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "s.js",
        "await store('k', 10n)",
        &session,
    );
    let (code, message) = error(&o);
    assert_eq!(code, "STATE_VALUE_INVALID", "{o}");
    assert!(
        message.starts_with("store() was refused: the value cannot be stored as JSON: "),
        "{o}"
    );
    assert_eq!(o["error"]["tool"], "$state:store", "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "c.js",
        "try { await store('k', 10n) } catch (e) { return e.code }",
        &session,
    );
    assert_eq!(o["result"], "STATE_VALUE_INVALID", "{o}");
}

#[test]
fn a_state_call_past_the_call_limit_is_limit_exceeded_in_both_languages() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    let flags = ["--session", "s", "--max-calls", "1"];
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await store('a', 1)\nawait load('a')\n",
        &flags,
    );
    assert_eq!(
        error(&o),
        (
            "LIMIT_EXCEEDED",
            "the script made more than 1 tool calls (the max-calls limit)"
        ),
        "{o}"
    );
    assert_eq!(o["error"]["tool"], "$state:load", "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "s.js",
        "await store('a', 1); return await load('a')",
        &flags,
    );
    assert_eq!(
        error(&o),
        (
            "LIMIT_EXCEEDED",
            "the script made more than 1 tool calls (the max-calls limit)"
        ),
        "{o}"
    );
}

#[test]
fn an_uncaught_unknown_tool_is_tool_not_found_in_both_languages() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    // Behind an `if`, so the host's check before the run leaves it to the runner.
    let (o, _) = run_py(
        dir.path(),
        &config,
        "if True:\n    await mcp.fixture.ecko(message='x')\n",
        &[],
    );
    assert_eq!(
        error(&o),
        (
            "TOOL_NOT_FOUND",
            "unknown tool 'fixture:ecko'; did you mean fixture:echo?"
        ),
        "{o}"
    );
    assert_eq!(o["error"]["tool"], "fixture:ecko", "{o}");
    let (o, _) = run_file(
        dir.path(),
        &config,
        "s.js",
        "if (true) { await mcp.fixture.ecko({message: 'x'}) }",
        &[],
    );
    assert_eq!(error(&o).0, "TOOL_NOT_FOUND", "{o}");
    assert_eq!(o["error"]["tool"], "fixture:ecko", "{o}");
    // An unknown server, read as an attribute.
    let (o, _) = run_py(dir.path(), &config, "if True:\n    x = mcp.nope\n", &[]);
    assert_eq!(
        error(&o),
        (
            "TOOL_NOT_FOUND",
            "no MCP server 'nope'; the servers are fixture"
        ),
        "{o}"
    );
}

#[test]
fn a_state_refusal_the_host_answered_keeps_its_code_when_uncaught() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    // Stored sealed under the operator's key; loaded by a run without it.
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await store('k', 1)\n",
        &["--session", "s"],
    );
    assert_eq!(o["success"], true, "{o}");
    let o = crate::value_boundaries::run_deep(dir.path(), &config, "l.py", "await load('k')\n");
    assert_eq!(o["error"]["code"], "SANDBOX_UNAVAILABLE", "{o}");
}
