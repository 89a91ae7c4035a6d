//! A recorded execution replays with the recorded outcome and traces with no MCP server left
//! (issue 62): `run --audit-record full` calls three tools of the fixture server (one
//! failing), reads the clock and `Math.random()`; the server's binary is then deleted, and
//! `mcp-sandbox replay` (no config at all) answers every call from the recording, gives the
//! script the same clock and random values, and prints `matches: true`. The recording is in the
//! hash chain: an edit of it makes `audit verify` fail. Without the flag nothing is recorded.

use crate::common::replay::{deletable_fixture, first_execution_id, replay};
use crate::serve_support::team::cli;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::path::Path;

const SCRIPT: &str = r#"
const a = await mcp.fixture.echo({message: 'one'});
const b = await mcp.fixture.add({a: 2, b: 3});
let failed;
try { await mcp.fixture.fail({message: 'boom'}); } catch (e) { failed = e.code + ' ' + e.message; }
console.log('drew', Math.random());
return {a, b, failed, now: Date.now(), date: new Date().toISOString(), text: Date(), r: Math.random(), uuid: crypto.randomUUID()};
"#;

fn run(dir: &Path, config: &Path, state: &Path, extra: &[&str]) -> (i32, String, String) {
    let file = dir.join("s.js");
    std::fs::write(&file, SCRIPT).unwrap();
    let mut args: Vec<&OsStr> = vec![
        "run".as_ref(),
        file.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    cli(&args)
}

/// `(tool, status)` of each row of a `--trace table` (the header and durations left out).
fn rows(table: &str) -> Vec<(String, String)> {
    table
        .lines()
        .filter(|l| l.starts_with("fixture:"))
        .map(|l| {
            let mut words = l.split_whitespace();
            let tool = words.next().unwrap_or("").to_string();
            let _ms = words.next();
            let status = words.next().unwrap_or("").trim_end_matches(':').to_string();
            (tool, status)
        })
        .collect()
}

#[test]
fn a_recorded_execution_replays_identically_without_its_server() {
    let dir = tempfile::tempdir().unwrap();
    // The server is a copy of the fixture binary that is deleted after the run.
    let (server, config) = deletable_fixture(dir.path());
    let state = dir.path().join("state.db");
    let (status, out, err) = run(
        dir.path(),
        &config,
        &state,
        &["--audit-record", "full", "--trace", "table"],
    );
    assert_eq!(status, 0, "{err}");
    let ran: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ran["failed"], "TOOL_ERROR boom", "{ran}");
    let recorded_rows = rows(&err);
    assert_eq!(
        recorded_rows,
        vec![
            ("fixture:echo".to_string(), "ok".to_string()),
            ("fixture:add".to_string(), "ok".to_string()),
            ("fixture:fail".to_string(), "TOOL_ERROR".to_string()),
        ],
        "{err}"
    );
    let id = first_execution_id(&state);

    // No server any more: the same config now fails at once.
    std::fs::remove_file(&server).unwrap();
    let (_, out, _) = run(
        dir.path(),
        &config,
        &dir.path().join("other.db"),
        &["--json"],
    );
    let gone: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(gone["error"]["code"], "SERVER_UNAVAILABLE", "{gone}");

    // The replay: no --config (no server is configured, none is started).
    let (status, out, err) = replay(
        &id,
        &state,
        &["--json".as_ref(), "--trace".as_ref(), "table".as_ref()],
    );
    assert_eq!(status, 0, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["matches"], true, "{answer}");
    assert_eq!(answer["recorded"], answer["replayed"], "{answer}");
    // The replayed script got the recorded clock and random values (the result holds them).
    assert_eq!(answer["replayed"]["result"], ran, "{answer}");
    assert_eq!(
        answer["replayed"]["calls"],
        json!([
            {"tool": "fixture:echo"},
            {"tool": "fixture:add"},
            {"tool": "fixture:fail", "error": "TOOL_ERROR"}
        ]),
        "{answer}"
    );
    assert_eq!(
        answer["replayed"]["logs"][0]["message"]
            .as_str()
            .map(|m| m.starts_with("drew 0.")),
        Some(true),
        "{answer}"
    );
    assert_eq!(rows(&err), recorded_rows, "{err}");
    assert!(!err.contains("SERVER_UNAVAILABLE"), "{err}");

    // Text: both outcomes and the verdict.
    let (status, out, _) = replay(&id, &state, &[]);
    assert_eq!(status, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("recorded: OK {\"a\":\"one\""), "{out}");
    assert!(
        lines[0].ends_with("(3 calls, 1 failed; 1 log line)"),
        "{out}"
    );
    assert_eq!(
        lines[0].replacen("recorded", "replayed", 1),
        lines[1],
        "{out}"
    );
    assert_eq!(
        lines[2],
        "equal: the replay has the recorded result, error, logs and calls"
    );

    // The recording is in the record the chain covers: an edit of it is found.
    let (status, out, err) = cli(&[
        "audit".as_ref(),
        "verify".as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{out}{err}");
    let edited = dir.path().join("edited.db");
    std::fs::copy(&state, &edited).unwrap();
    let c = rusqlite::Connection::open(&edited).unwrap();
    let n = c
        .execute(
            "UPDATE audit SET detail = replace(detail, '\"sum\":5', '\"sum\":6')",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(c);
    let (status, out, err) = cli(&[
        "audit".as_ref(),
        "verify".as_ref(),
        "--state".as_ref(),
        edited.as_os_str(),
    ]);
    assert_eq!(status, 1, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("record #1 was changed"),
        "{out}{err}"
    );
}

#[test]
fn without_the_flag_nothing_is_recorded_and_replay_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::common::fixture_config_file(dir.path(), json!({}));
    let state = dir.path().join("state.db");
    let (status, _, err) = run(dir.path(), &config, &state, &[]);
    assert_eq!(status, 0, "{err}");
    let id = first_execution_id(&state);
    let (status, out, err) = replay(&id, &state, &[]);
    assert_eq!(status, 2, "{out}{err}");
    assert!(
        err.contains(&format!("the record of execution {id} has no recording: it ran without --audit-record full (or sandbox.audit.record: \"full\")")),
        "{err}"
    );
    let (status, _, err) = replay("no-such-id", &state, &[]);
    assert_eq!(status, 2, "{err}");
    assert!(
        err.contains("no audit record of execution no-such-id in this store"),
        "{err}"
    );
}
