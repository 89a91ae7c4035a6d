//! Objects keep their key order end to end (issue 58, item 4), through the real CLI, the real
//! runner and a server on the official MCP Python SDK (tests/python/shapes_server.py): an
//! answer `{zeta, alpha, mid: {y, b}}` reaches the script in that order, in both languages,
//! and what the script returns reaches the model in the order the script built it — also
//! through session state. (With serde_json's sorted maps it came back `{alpha, mid, zeta}`.)

use crate::python_scripts::{run_file, run_py, write_config};
use serde_json::json;

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    write_config(
        dir,
        json!({"shapes": {
            "command": crate::common::repo_root().join(".venv/bin/python"),
            "args": [crate::common::repo_root().join("tests/python/shapes_server.py")],
        }}),
        json!({}),
    )
}

/// The `result` of the printed outcome as text, in the order it was printed (the test reads it
/// with the workspace's serde_json, which keeps order).
fn result_text(printed: &str) -> String {
    let o: serde_json::Value = serde_json::from_str(printed).expect("one JSON outcome");
    o["result"].to_string()
}

#[test]
fn a_server_s_key_order_reaches_the_script_and_the_model_in_both_languages() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (o, printed) = run_py(
        dir.path(),
        &config,
        "a = await mcp.shapes.ordered()\n{'seen': list(a), 'inner': list(a['mid']), 'answer': a, 'built': {'zeta': 1, 'alpha': 2}}\n",
        &[],
    );
    assert_eq!(o["result"]["seen"], json!(["zeta", "alpha", "mid"]), "{o}");
    assert_eq!(o["result"]["inner"], json!(["y", "b"]), "{o}");
    assert_eq!(
        result_text(&printed),
        r#"{"seen":["zeta","alpha","mid"],"inner":["y","b"],"answer":{"zeta":1,"alpha":2,"mid":{"y":1,"b":2}},"built":{"zeta":1,"alpha":2}}"#
    );
    let (o, printed) = run_file(
        dir.path(),
        &config,
        "o.js",
        "const a = await mcp.shapes.ordered(); return {seen: Object.keys(a), answer: a, built: {zeta: 1, alpha: 2}}",
        &[],
    );
    assert_eq!(o["result"]["seen"], json!(["zeta", "alpha", "mid"]), "{o}");
    assert_eq!(
        result_text(&printed),
        r#"{"seen":["zeta","alpha","mid"],"answer":{"zeta":1,"alpha":2,"mid":{"y":1,"b":2}},"built":{"zeta":1,"alpha":2}}"#
    );
    // Through session state, from one language to the other.
    let (o, _) = run_py(
        dir.path(),
        &config,
        "await store('o', {'zeta': 1, 'alpha': 2})\n",
        &["--session", "s"],
    );
    assert_eq!(o["success"], true, "{o}");
    let (_, printed) = run_file(
        dir.path(),
        &config,
        "l.js",
        "return await load('o')",
        &["--session", "s"],
    );
    assert_eq!(result_text(&printed), r#"{"zeta":1,"alpha":2}"#);
}
