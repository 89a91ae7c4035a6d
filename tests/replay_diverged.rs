//! `mcp-sandbox replay --code FILE` runs other code against a recording (issue 62): a call with
//! other arguments than the recorded one at its place, another tool there, or a call past the
//! recorded ones stops the replay with `REPLAY_DIVERGED` naming the call and the first
//! difference; exit 1.

use crate::common::fixture_config_file;
use crate::common::replay::{first_execution_id, replay, run_recorded};
use serde_json::{json, Value};
use std::path::Path;

const RECORDED: &str = "const a = await mcp.fixture.echo({message: 'one'});\nconst b = await mcp.fixture.add({a: 2, b: 3});\nreturn {a, b};\n";

fn record(dir: &Path) -> (std::path::PathBuf, String) {
    let config = fixture_config_file(dir, json!({}));
    let state = dir.join("state.db");
    let file = dir.join("s.js");
    std::fs::write(&file, RECORDED).unwrap();
    let (status, _, err) = run_recorded(&file, &config, &state);
    assert_eq!(status, 0, "{err}");
    let id = first_execution_id(&state);
    (state, id)
}

/// `replay ID --code CODE --json`: (status, answer).
fn replay_code(dir: &Path, state: &Path, id: &str, code: &str, name: &str) -> (i32, Value) {
    let file = dir.join(name);
    std::fs::write(&file, code).unwrap();
    let (status, out, err) = replay(
        id,
        state,
        &["--code".as_ref(), file.as_os_str(), "--json".as_ref()],
    );
    let answer = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (status, answer)
}

#[test]
fn other_arguments_another_tool_or_one_call_more_stop_the_replay_at_that_call() {
    let dir = tempfile::tempdir().unwrap();
    let (state, id) = record(dir.path());

    // The same code, from a file: equal.
    let (status, answer) = replay_code(dir.path(), &state, &id, RECORDED, "same.js");
    assert_eq!((status, &answer["matches"]), (0, &json!(true)), "{answer}");

    // Other arguments at call #2.
    let fix = RECORDED.replace("b: 3", "b: 4");
    let (status, answer) = replay_code(dir.path(), &state, &id, &fix, "fix.js");
    assert_eq!(status, 1, "{answer}");
    assert_eq!(answer["matches"], false, "{answer}");
    let error = &answer["replayed"]["error"];
    assert_eq!(error["code"], "REPLAY_DIVERGED", "{answer}");
    assert_eq!(
        error["message"],
        "call #2 (fixture.add) has other arguments than the recorded one: $.b: recorded 3, now 4; the replay was stopped there. Compare the code with the recorded one, or pass --code with a script that makes the recorded calls",
        "{answer}"
    );
    // Call #1 was answered from the recording; #2 never started.
    assert_eq!(
        answer["replayed"]["calls"],
        json!([{"tool": "fixture:echo"}]),
        "{answer}"
    );
    assert_eq!(
        answer["recorded"]["result"],
        json!({"a": "one", "b": {"sum": 5}}),
        "{answer}"
    );

    // Another tool at call #2.
    let other = RECORDED.replace(
        "mcp.fixture.add({a: 2, b: 3})",
        "mcp.fixture.echo({message: 'two'})",
    );
    let (status, answer) = replay_code(dir.path(), &state, &id, &other, "other.js");
    assert_eq!(status, 1, "{answer}");
    let message = answer["replayed"]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("call #2 is fixture.echo; the recording has fixture.add there; the replay was stopped there."),
        "{answer}"
    );

    // One call more than recorded.
    let more = RECORDED.replace(
        "return {a, b};",
        "await mcp.fixture.echo({message: 'three'});\nreturn {a, b};",
    );
    let (status, answer) = replay_code(dir.path(), &state, &id, &more, "more.js");
    assert_eq!(status, 1, "{answer}");
    let message = answer["replayed"]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("call #3 (fixture.echo) is not in the recording, which has 2 calls; the replay was stopped there."),
        "{answer}"
    );

    // Text: the verdict names the parts that differ.
    let file = dir.path().join("fix.js");
    let (status, out, _) = replay(&id, &state, &["--code".as_ref(), file.as_os_str()]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.lines().nth(1).is_some_and(|l| l
            .starts_with("replayed: REPLAY_DIVERGED call #2 (fixture.add) has other arguments")),
        "{out}"
    );
    assert_eq!(
        out.lines().nth(2),
        Some("differs: result, error, calls"),
        "{out}"
    );
}
