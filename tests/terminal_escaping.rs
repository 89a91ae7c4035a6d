//! Untrusted strings reach a terminal escaped (issue 13 item 6): a script's logs, a tool's error
//! message in `--trace table` and Mermaid, and the error line cannot set the terminal's title,
//! move the cursor or forge a line of the host's output. `--json` stays exact.

use crate::common;
use common::*;

const SCRIPT: &str = r#"
console.log("\x1b]0;TITLE\x07 hello\n[error] forged host line");
try { await mcp.fixture.fail({ message: "\x1b[2K\rboom\nfx:write_file 3.14 ok" }) } catch (e) {}
throw new Error("bad\x1b[31m red\n[info] forged");
"#;

fn run(dir: &std::path::Path, flags: &[&str]) -> CliRun {
    let config = fixture_config_file(dir, serde_json::json!({}));
    let script = dir.join("s.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let state = dir.join("state.db");
    let runner = bin("sandbox-runner");
    let mut args = vec![
        "run",
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    args.push(script.to_str().unwrap());
    cli_run(&args)
}

fn assert_clean(what: &str, text: &str) {
    for c in text.chars() {
        assert!(
            c == '\n' || !c.is_control(),
            "{what}: raw control character {c:?} in:\n{text}"
        );
    }
    for line in text.lines() {
        assert!(
            !line.starts_with("[error] forged")
                && !line.starts_with("[info] forged")
                && !line.starts_with("fx:write_file"),
            "{what}: forged line {line:?} in:\n{text}"
        );
    }
}

#[test]
fn logs_traces_and_errors_are_escaped_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["table", "mermaid"] {
        let r = run(dir.path(), &["--trace", format]);
        let stderr = String::from_utf8(r.stderr).unwrap();
        assert_clean(format, &stderr);
        assert!(
            stderr.contains(r"[log] \e]0;TITLE\x07 hello\n[error] forged host line"),
            "{stderr}"
        );
        assert!(stderr.contains(r"bad\e[31m red\n[info] forged"), "{stderr}");
        if format == "table" {
            assert!(
                stderr.contains(r"TOOL_ERROR: \e[2K\rboom\nfx:write_file 3.14 ok"),
                "{stderr}"
            );
        }
    }
    // JSON keeps the exact strings.
    let r = run(dir.path(), &["--json"]);
    let o = r.outcome();
    assert_eq!(
        o["logs"][0]["message"],
        "\x1b]0;TITLE\x07 hello\n[error] forged host line"
    );
}
