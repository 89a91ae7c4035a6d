//! docs/walkthrough.md, docs/replay.md and the README are tests: every `console` block in them is run (the real CLI, the real
//! runner, the reference MCP servers from npm, the official Python MCP SDK client) and its output
//! compared with the text of the page, by `trycmd`. Durations, ids, timestamps and absolute paths
//! are `[..]` on the page; everything else must match, so a change of any output fails here
//! until the page says the new thing.
//!
//! A command that exits non-zero says so the way a reader understands, as a shell comment on
//! its line (`$ mcp-sandbox run crash.js   # exit status 1`); the test turns that into trycmd's
//! status line (`? 1`) in a copy of the page, so the exit status is still checked exactly and
//! the page never shows trycmd's syntax.
//!
//! The commands run from the repository root (the crate's directory), with the state file in a
//! fresh `XDG_DATA_HOME` (the tool graph and capabilities start empty) and without a controlling
//! terminal (an `ask` rule is denied at once, as in CI, instead of prompting the developer).

use crate::common::{bin, repo_root};
use std::time::Duration;

/// Gives up the controlling terminal of this test process, so the commands it starts have none
/// (`/dev/tty` fails to open for them). Without a terminal (CI) there is nothing to give up.
fn without_controlling_terminal() {
    let Ok(tty) = std::fs::File::open("/dev/tty") else {
        return;
    };
    use std::os::fd::AsRawFd;
    // SAFETY: TIOCNOTTY takes no argument; `tty` is an open descriptor for the call's duration.
    // For a process that is not its session's leader it only detaches this process from the
    // terminal (its children, forked after, inherit having none).
    unsafe {
        libc::ioctl(tty.as_raw_fd(), libc::TIOCNOTTY);
    }
}

#[test]
fn walkthrough_outputs_are_what_the_program_prints() {
    page_outputs_are_what_the_program_prints("docs/walkthrough.md");
}

/// The README's quick start and "When a call is refused" (issue 47 item 6): the same runner, with
/// a state file of its own (its `audit` shows only the README's executions).
#[test]
fn readme_outputs_are_what_the_program_prints() {
    page_outputs_are_what_the_program_prints("README.md");
}

/// docs/replay.md (issue 62): a recorded run, its replay, and a replay of other code that
/// diverges.
#[test]
fn replay_page_outputs_are_what_the_program_prints() {
    page_outputs_are_what_the_program_prints("docs/replay.md");
}

/// Runs every `console` block of `page` (relative to the repository root) in order, with a fresh
/// state directory, and compares each output with the page.
fn page_outputs_are_what_the_program_prints(page: &str) {
    without_controlling_terminal();
    let python = repo_root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "run scripts/setup.sh first (it makes .venv with the MCP Python SDK)"
    );
    let state = tempfile::tempdir().expect("state dir");
    let text = std::fs::read_to_string(repo_root().join(page)).expect("read the page");
    let case = state.path().join(
        std::path::Path::new(page)
            .file_name()
            .expect("a page's file name"),
    );
    std::fs::write(&case, with_status_lines(&text)).expect("write the page's copy");
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("mcp-sandbox", bin("mcp-sandbox"))
        .register_bin(".venv/bin/python", python)
        .env("XDG_DATA_HOME", state.path().to_string_lossy().into_owned())
        .env(
            "MCP_SANDBOX_RUNNER",
            bin("sandbox-runner").to_string_lossy().into_owned(),
        )
        .env("MCP_SANDBOX_LOG", "warn")
        .timeout(Duration::from_secs(30))
        .case(case);
    cases.run();
}

/// `text` with each `$ command   # exit status N` line of a `console` block as trycmd wants it:
/// the command, then `? N`.
fn with_status_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_console = false;
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            in_console = !in_console && info.trim() == "console";
        }
        let status = in_console
            .then(|| line.strip_prefix("$ "))
            .flatten()
            .and_then(|cmd| cmd.rsplit_once("# exit status "))
            .filter(|(_, n)| n.parse::<i32>().is_ok());
        match status {
            Some((cmd, n)) => {
                out.push_str(&format!("$ {}\n? {n}\n", cmd.trim_end()));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn exit_status_comments_become_status_lines() {
    let page = "text # exit status 1\n```console\n$ mcp-sandbox run a.js   # exit status 1\nerror: X\n\n$ mcp-sandbox run b.js\n{}\n```\n```sh\n$ x # exit status 2\n```\n";
    assert_eq!(
        with_status_lines(page),
        "text # exit status 1\n```console\n$ mcp-sandbox run a.js\n? 1\nerror: X\n\n$ mcp-sandbox run b.js\n{}\n```\n```sh\n$ x # exit status 2\n```\n"
    );
}
