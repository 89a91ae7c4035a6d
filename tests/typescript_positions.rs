//! TypeScript errors point at the TypeScript the agent wrote (issue 26): a runtime error's
//! stack and message name `script.ts:L:C` of the TypeScript source (mapped back through the
//! transform's source map), a syntax error names its TypeScript line and column, and
//! decorators are refused with SYNTAX_ERROR at their position instead of failing at a line
//! the file does not have.

use crate::common;
use common::*;
use serde_json::{json, Value};

const TS: &str = r#"interface Point {
  x: number;
  y: number;
}
type Pair = [Point, Point];
const p: Point = { x: 1, y: 2 } as Point;
if (p.x > 0) { throw new Error("boom at seven"); }
return p;
"#;

/// The same code with the types blanked out, keeping every line and column: what the position
/// of the throw is when nothing moved.
const JS_SAME_LAYOUT: &str = r#"



                           
const p        = { x: 1, y: 2 }         ;
if (p.x > 0) { throw new Error("boom at seven"); }
return p;
"#;

fn run_file(name: &str, source: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), json!({}));
    let script = dir.path().join(name);
    std::fs::write(&script, source).unwrap();
    cli_run_script(&[], &config, &dir.path().join("state.db"), &script).outcome()
}

/// `script.X:L:C` of the first stack frame in `stack`.
fn first_frame(stack: &str, file: &str) -> (u32, u32) {
    let at = stack
        .find(file)
        .unwrap_or_else(|| panic!("no {file} in {stack}"));
    let rest = &stack[at + file.len() + 1..];
    let mut parts = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty());
    (
        parts.next().unwrap().parse().unwrap(),
        parts.next().unwrap().parse().unwrap(),
    )
}

#[test]
fn a_runtime_error_reports_the_typescript_line_and_column() {
    let js = run_file("plain.js", JS_SAME_LAYOUT);
    let js_stack = js["error"]["stack"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (js_line, js_col) = first_frame(&js_stack, "script.js");
    assert_eq!(js_line, 7, "{js}");

    let ts = run_file("typed.ts", TS);
    assert_eq!(ts["error"]["code"], json!("RUNTIME_ERROR"), "{ts}");
    assert_eq!(
        ts["error"]["message"],
        json!("Error: boom at seven"),
        "{ts}"
    );
    let stack = ts["error"]["stack"].as_str().unwrap_or_default();
    assert_eq!(
        first_frame(stack, "script.ts"),
        (7, js_col),
        "{stack} (plain JS: {js_stack})"
    );
    // The frame of the throw is mapped; the runner's own outer frame (`at <eval>`, a position
    // the transform did not make from any TypeScript) keeps its `script.js` name.
    assert!(
        stack
            .lines()
            .next()
            .is_some_and(|l| l.contains("script.ts:7:")),
        "{stack}"
    );
}

#[test]
fn a_syntax_error_reports_the_typescript_line_and_column() {
    let o = run_file(
        "bad.ts",
        "interface A { x: number }\n\n\nconst a: A = { x: 1 };\nconst b = a.x +* 2;\n",
    );
    assert_eq!(o["error"]["code"], json!("SYNTAX_ERROR"), "{o}");
    let m = o["error"]["message"].as_str().unwrap();
    assert!(m.starts_with("line 5, column 16:"), "{m}");
}

#[test]
fn decorators_are_refused_at_their_typescript_position() {
    let o = run_file(
        "deco.ts",
        "function sealed(c: any) { return c }\n\ntype T = number;\n  @sealed\nclass A {}\nreturn 1;\n",
    );
    assert_eq!(o["error"]["code"], json!("SYNTAX_ERROR"), "{o}");
    let m = o["error"]["message"].as_str().unwrap();
    assert!(m.starts_with("line 4, column 3: decorators"), "{m}");
    assert!(m.contains("not supported in the sandbox"), "{m}");
}
