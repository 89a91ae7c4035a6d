//! Policy `ask` with the real CLI, the real runner and the fixture MCP server: a matching call
//! waits at the host for an answer typed on the controlling terminal (a real pseudo-terminal made
//! by Python's `pty`, tests/python/tty_answer.py), is denied at once without a terminal unless
//! `--approve` matches it, and is denied "not approved in time" after `--approval-timeout-ms`.
//! The waits leave `approval_*` trace events between the call's `tool_start` and `tool_end`.

use crate::common::{assert_not_hung, bin, ms, repo_root};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};

/// A config with the fixture server and `sandbox.ask`.
pub(crate) fn config(dir: &Path, ask: &[&str]) -> String {
    let path = dir.join("config.json");
    let text = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}},
        "sandbox": {"ask": ask},
    });
    std::fs::write(&path, text.to_string()).expect("write config");
    path.to_string_lossy().into_owned()
}

pub(crate) fn script(dir: &Path, code: &str) -> String {
    let path = dir.join("script.js");
    std::fs::write(&path, code).expect("write script");
    path.to_string_lossy().into_owned()
}

/// `mcp-sandbox run --json ARGS` in a new session: no controlling terminal.
fn run_without_terminal(args: &[&str]) -> (i32, Value) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin("mcp-sandbox"));
    cmd.arg("run")
        .args(args)
        .arg("--json")
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .stdin(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run mcp-sandbox");
    let outcome = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON outcome ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), outcome)
}

/// `mcp-sandbox run ARGS` under tests/python/tty_answer.py, with a pseudo-terminal as its
/// controlling terminal; `answers` are typed, one per prompt, `delay_ms` after the prompt
/// appears; `stdout`/`stderr` are files, or "tty" to leave them on the terminal. Returns the
/// script's report: `status`, `tty` (what the terminal showed) and `prompts`.
pub(crate) fn on_terminal(
    args: &[&str],
    answers: &[&str],
    delay_ms: u64,
    stdout: &Path,
    stderr: &Path,
) -> Value {
    let answers = serde_json::to_string(answers).expect("answers");
    let delay = delay_ms.to_string();
    let report = Command::new("python3")
        .arg(repo_root().join("tests/python/tty_answer.py"))
        .args([answers.as_str(), delay.as_str(), "--"])
        .arg(bin("mcp-sandbox"))
        .arg("run")
        .args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .env("MCP_TTY_STDOUT", stdout)
        .env("MCP_TTY_STDERR", stderr)
        // indicatif draws nothing on a "dumb" terminal; CI may have no TERM at all.
        .env("TERM", "xterm")
        .output()
        .expect("python3 tty_answer.py");
    assert!(
        report.status.success(),
        "tty_answer.py failed: {}",
        String::from_utf8_lossy(&report.stderr)
    );
    serde_json::from_slice(&report.stdout).expect("tty_answer report")
}

/// `mcp-sandbox run --json ARGS` with a pseudo-terminal as its controlling terminal (see
/// [`on_terminal`]). Returns the exit status, the outcome, what the terminal showed and how many
/// prompts it saw.
fn run_on_terminal(
    dir: &Path,
    args: &[&str],
    answers: &[&str],
    delay_ms: u64,
) -> (i32, Value, String, u64) {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut args = args.to_vec();
    args.push("--json");
    let report = on_terminal(&args, answers, delay_ms, &out, &err);
    let stdout = std::fs::read(&out).expect("stdout file");
    let outcome = serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON outcome ({e}); stderr: {}; terminal: {}",
            std::fs::read_to_string(&err).unwrap_or_default(),
            report["tty"]
        )
    });
    (
        report["status"].as_i64().unwrap_or(-1) as i32,
        outcome,
        report["tty"].as_str().unwrap_or("").to_string(),
        report["prompts"].as_u64().unwrap_or(0),
    )
}

/// `(type, tool, by)` of every trace event.
fn events(outcome: &Value) -> Vec<(String, String, String)> {
    outcome["traces"]
        .as_array()
        .expect("traces")
        .iter()
        .map(|t| {
            (
                t["type"].as_str().unwrap_or("").to_string(),
                t["tool"].as_str().unwrap_or("").to_string(),
                t["by"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn ev(kind: &str, tool: &str, by: &str) -> (String, String, String) {
    (kind.into(), tool.into(), by.into())
}

#[test]
fn without_a_terminal_an_asked_call_is_denied_at_once_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["fixture:echo"]);
    let code = "const s = await mcp.fixture.add({a: 1, b: 2});\n\
                try { await mcp.fixture.echo({message: 'x'}); return 'called'; }\n\
                catch (e) { return [s.sum, e.code, e.message]; }";
    let file = script(dir.path(), code);
    let started = std::time::Instant::now();
    let (status, outcome) = run_without_terminal(&[&file, "--config", &cfg]);
    assert_eq!(status, 0, "{outcome}");
    let r = &outcome["result"];
    assert_eq!(r[0], 3, "{outcome}");
    assert_eq!(r[1], "PERMISSION_DENIED", "{outcome}");
    assert_eq!(
        r[2],
        "fixture:echo needs approval (the config rule ask \"fixture:echo\") and there is no \
         terminal to ask on; pre-approve it with --approve fixture:echo (a server:tool glob); \
         the call was not forwarded"
    );
    // At once: no wait for the 120 s default approval timeout.
    assert_not_hung(started.elapsed(), ms(30_000), ms(1_000), "the refusal");
    assert_eq!(
        events(&outcome),
        [
            ev("tool_start", "fixture:add", ""),
            ev("tool_end", "fixture:add", ""),
            ev("tool_start", "fixture:echo", ""),
            ev("approval_requested", "fixture:echo", ""),
            ev("approval_denied", "fixture:echo", "flag"),
            ev("tool_end", "fixture:echo", ""),
        ]
    );
    let requested = &outcome["traces"][3];
    assert_eq!(requested["rule"], "config rule ask \"fixture:echo\"");
}

#[test]
fn approve_flag_pre_approves_and_ask_flag_adds_rules_while_deny_wins() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &[]);
    let code = "const e = await mcp.fixture.echo({message: 'hi'});\n\
                let d; try { await mcp.fixture.add({a: 1, b: 1}); } catch (x) { d = x.message; }\n\
                return [e, d];";
    let file = script(dir.path(), code);
    let (status, outcome) = run_without_terminal(&[
        &file,
        "--config",
        &cfg,
        "--ask",
        "fixture:*",
        "--approve",
        "fixture:ec*",
        "--deny",
        "fixture:add",
    ]);
    assert_eq!(status, 0, "{outcome}");
    assert_eq!(outcome["result"][0], "hi", "{outcome}");
    // deny > ask: the denied call is refused by the policy, never asked.
    assert_eq!(
        outcome["result"][1],
        "fixture:add is denied by the --allow/--deny rule deny \"fixture:add\"; the call was not forwarded"
    );
    assert_eq!(
        events(&outcome),
        [
            ev("tool_start", "fixture:echo", ""),
            ev("approval_requested", "fixture:echo", ""),
            ev("approval_granted", "fixture:echo", "flag"),
            ev("tool_end", "fixture:echo", ""),
            ev("tool_start", "fixture:add", ""),
            ev("tool_end", "fixture:add", ""),
        ]
    );
    assert_eq!(outcome["traces"][1]["rule"], "--ask rule ask \"fixture:*\"");
}

#[test]
fn terminal_answers_approve_for_the_execution_and_deny_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["fixture:echo", "fixture:add"]);
    let code = "const r = [];\n\
                for (let i = 0; i < 3; i++) r.push(await mcp.fixture.echo({message: 'm' + i}));\n\
                try { await mcp.fixture.add({a: 1, b: 2}); } catch (e) { r.push(e.code, e.message); }\n\
                return r;";
    let file = script(dir.path(), code);
    let (status, outcome, tty, prompts) = run_on_terminal(
        dir.path(),
        &[&file, "--config", &cfg],
        &["a", "n: not today"],
        50,
    );
    assert_eq!(status, 0, "{outcome}");
    // Asked twice: echo once for the whole execution, then add.
    assert_eq!(prompts, 2, "{tty}");
    assert!(
        tty.contains(
            "The script wants to call fixture:echo (asked by the config rule ask \"fixture:echo\")"
        ),
        "{tty}"
    );
    assert!(tty.contains("\"message\": \"m0\""), "{tty}");
    assert_eq!(
        outcome["result"],
        json!([
            "m0",
            "m1",
            "m2",
            "PERMISSION_DENIED",
            "fixture:add was denied by the person asked (tty): not today; the call was not forwarded"
        ])
    );
    let e = events(&outcome);
    let granted: Vec<_> = e.iter().filter(|x| x.0 == "approval_granted").collect();
    assert_eq!(granted.len(), 3, "{e:?}");
    assert!(granted.iter().all(|x| x.2 == "tty"), "{e:?}");
    assert_eq!(
        e[e.len() - 4..],
        [
            ev("tool_start", "fixture:add", ""),
            ev("approval_requested", "fixture:add", ""),
            ev("approval_denied", "fixture:add", "tty"),
            ev("tool_end", "fixture:add", ""),
        ]
    );
}

#[test]
fn calls_waiting_at_once_are_asked_one_after_another() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["fixture"]);
    let code = "return await Promise.all([\n\
                  mcp.fixture.echo({message: 'one'}),\n\
                  mcp.fixture.add({a: 2, b: 3}),\n\
                  mcp.fixture.echo({message: 'two'}),\n\
                ]);";
    let file = script(dir.path(), code);
    let (status, outcome, tty, prompts) = run_on_terminal(
        dir.path(),
        &[&file, "--config", &cfg],
        &["y", "y", "y"],
        100,
    );
    assert_eq!(status, 0, "{outcome} {tty}");
    assert_eq!(prompts, 3, "{tty}");
    assert_eq!(outcome["result"], json!(["one", {"sum": 5}, "two"]));
    // Never interleaved: each question is whole before the next begins.
    let questions: Vec<&str> = tty.split("mcp-sandbox: The script wants").skip(1).collect();
    assert_eq!(questions.len(), 3, "{tty}");
    for q in &questions {
        assert_eq!(q.matches("Approve? ").count(), 1, "{tty}");
    }
    // The answers came one after another: each grant at least one answer delay after the last.
    let mut ts: Vec<f64> = outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "approval_granted")
        .map(|t| t["ts"].as_f64().unwrap())
        .collect();
    ts.sort_by(f64::total_cmp);
    assert_eq!(ts.len(), 3);
    assert!(ts[1] - ts[0] >= 90.0 && ts[2] - ts[1] >= 90.0, "{ts:?}");
}

#[test]
fn a_two_second_approval_wait_does_not_spend_the_cpu_budget() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["fixture:echo"]);
    let file = script(
        dir.path(),
        "return await mcp.fixture.echo({message: 'waited'});",
    );
    let (status, outcome, tty, _) = run_on_terminal(
        dir.path(),
        &[
            &file,
            "--config",
            &cfg,
            "--cpu-ms",
            "500",
            "--timeout-ms",
            "20000",
        ],
        &["y"],
        2000,
    );
    assert_eq!(status, 0, "{outcome} {tty}");
    assert_eq!(outcome["success"], true, "{outcome}");
    assert_eq!(outcome["result"], "waited");
    let granted = outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "approval_granted")
        .expect("approval_granted");
    assert!(
        granted["duration_ms"].as_f64().unwrap() >= 2000.0,
        "{granted}"
    );
    // The call's duration shows the wait.
    let end = outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "tool_end")
        .expect("tool_end");
    assert!(end["duration_ms"].as_f64().unwrap() >= 2000.0, "{end}");
}

#[test]
fn a_question_nobody_answers_is_denied_not_approved_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["fixture:echo"]);
    let file = script(
        dir.path(),
        "try { await mcp.fixture.echo({message: 'x'}); } catch (e) { return [e.code, e.message]; }",
    );
    let (status, outcome, tty, prompts) = run_on_terminal(
        dir.path(),
        &[&file, "--config", &cfg, "--approval-timeout-ms", "300"],
        &[],
        0,
    );
    assert_eq!(status, 0, "{outcome} {tty}");
    assert_eq!(prompts, 1, "{tty}");
    assert_eq!(
        outcome["result"],
        json!([
            "PERMISSION_DENIED",
            "fixture:echo was not approved in time: nobody answered within 300 ms (--approval-timeout-ms); the call was not forwarded"
        ])
    );
    assert!(events(&outcome).contains(&ev("approval_denied", "fixture:echo", "timeout")));
}

#[test]
fn long_arguments_are_cut_in_the_question_with_their_full_size() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &["fixture:echo"]);
    let file = script(
        dir.path(),
        "return (await mcp.fixture.echo({message: 'x'.repeat(10000)})).length;",
    );
    let (status, outcome, tty, _) =
        run_on_terminal(dir.path(), &[&file, "--config", &cfg], &["y"], 0);
    assert_eq!(status, 0, "{outcome} {tty}");
    assert_eq!(outcome["result"], 10000);
    assert!(tty.contains("Arguments (10019 bytes):"), "{tty}");
    assert!(
        tty.contains("(cut: the arguments are 10019 bytes; the first 2048 are shown)"),
        "{tty}"
    );
    assert!(tty.len() < 4000, "{}", tty.len());
}
