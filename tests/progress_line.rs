//! `run`'s live progress line (src/front/cli/progress.rs) under a real pseudo-terminal (Python's
//! `pty`, tests/python/tty_answer.py, with stdout and stderr left on the terminal): while a slow
//! call of the fixture server runs, the line says the calls done and the tool waited on; it is
//! erased before the outcome is printed and while an approval question is on the terminal; and
//! it is never written when stderr is a pipe or with `--quiet`.

use crate::approval_cli::{config, on_terminal, script};
use crate::common::bin;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// What indicatif writes to erase the line (carriage return, erase the whole line).
const ERASE: &str = "\r\x1b[2K";

/// Runs `mcp-sandbox run ARGS` with the pseudo-terminal as its controlling terminal, stdout and
/// stderr; answers each approval prompt with `answers`. Returns the exit status and everything
/// the terminal showed.
fn run_on_terminal(args: &[&str], answers: &[&str]) -> (i32, String) {
    let tty = Path::new("tty");
    let report = on_terminal(args, answers, 200, tty, tty);
    (
        report["status"].as_i64().unwrap_or(-1) as i32,
        report["tty"].as_str().unwrap_or("").to_string(),
    )
}

const SLOW: &str = "await mcp.fixture.echo({message: 'first'});\n\
                    await mcp.fixture.sleep({ms: 1500});\n\
                    console.log('slept');\n\
                    return 'done';";

#[test]
fn on_a_terminal_the_line_shows_the_calls_and_the_tool_waited_on_then_is_erased() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &[]);
    let file = script(dir.path(), SLOW);
    let state = dir.path().join("state.db");
    let (status, tty) = run_on_terminal(
        &[&file, "--config", &cfg, "--state", state.to_str().unwrap()],
        &[],
    );
    assert_eq!(status, 0, "{tty:?}");
    let waiting = "1 call done, 1 in flight · waiting on fixture:sleep";
    let last = tty
        .rfind(waiting)
        .unwrap_or_else(|| panic!("no progress line {waiting:?} on the terminal: {tty:?}"));
    // The elapsed time leads the line (`1.2 s · …`).
    assert!(tty[..last].ends_with(" s · "), "{tty:?}");
    // After the last drawing: the erase sequence, then the logs and the result, untouched.
    let after = &tty[last + waiting.len()..];
    let erased = after
        .find(ERASE)
        .unwrap_or_else(|| panic!("the line was not erased: {after:?}"));
    assert_eq!(
        after[erased + ERASE.len()..].trim_start_matches(ERASE),
        "[log] slept\r\n\"done\"\r\n",
        "{tty:?}"
    );
}

#[test]
fn with_quiet_or_when_stderr_is_not_a_terminal_there_is_no_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &[]);
    let file = script(dir.path(), SLOW);
    let state = dir.path().join("state.db");
    let state = state.to_str().unwrap();

    let (status, tty) =
        run_on_terminal(&[&file, "--config", &cfg, "--state", state, "--quiet"], &[]);
    assert_eq!(status, 0, "{tty:?}");
    assert_eq!(tty, "[log] slept\r\n\"done\"\r\n");

    // stderr a pipe, stdout the JSON: nothing but the outcome in either.
    let out = Command::new(bin("mcp-sandbox"))
        .args(["run", &file, "--config", &cfg, "--state", state, "--json"])
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-sandbox");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let outcome: Value = serde_json::from_slice(&out.stdout).expect("one JSON outcome");
    assert_eq!(outcome["result"], "done");
}

#[test]
fn the_line_is_erased_while_an_approval_question_is_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["fixture:echo"]);
    let code = "await mcp.fixture.sleep({ms: 800});\n\
                await mcp.fixture.echo({message: 'asked'});\n\
                await mcp.fixture.sleep({ms: 800});\n\
                return 'approved';";
    let file = script(dir.path(), code);
    let state = dir.path().join("state.db");
    let (status, tty) = run_on_terminal(
        &[&file, "--config", &cfg, "--state", state.to_str().unwrap()],
        &["y"],
    );
    assert_eq!(status, 0, "{tty:?}");
    let question = tty
        .find("\r\nmcp-sandbox: The script wants to call fixture:echo")
        .unwrap_or_else(|| panic!("no question: {tty:?}"));
    let before = &tty[..question];
    assert!(
        before.contains("0 calls done, 1 in flight · waiting on fixture:sleep"),
        "{tty:?}"
    );
    // Erased right before the question: the last thing written before it.
    assert!(before.ends_with(ERASE), "{tty:?}");
    // Nothing drawn between the question and the typed answer.
    let prompt =
        "Approve? [y] once  [a] this tool for the rest of this execution  [n] deny (n <reason>): ";
    let asked = &tty[question..];
    let answered = asked.find(prompt).expect("the prompt") + prompt.len();
    assert!(!asked[..answered].contains("in flight"), "{tty:?}");
    assert!(!asked[..answered].contains('\x1b'), "{tty:?}");
    assert!(asked[answered..].starts_with("y\r\n"), "{tty:?}");
    // Drawn again after the answer (the second sleep), then erased before the result.
    let rest = &asked[answered..];
    assert!(
        rest.contains("2 calls done, 1 in flight · waiting on fixture:sleep"),
        "{tty:?}"
    );
    assert!(
        rest.ends_with(&format!("{ERASE}\"approved\"\r\n")),
        "{tty:?}"
    );
}
