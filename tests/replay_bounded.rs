//! A recording is bounded (issue 62): at most 4 MiB of call arguments, answers and result
//! (past it the later calls are counted, not kept) and 10,000 clock values (the rest counted);
//! a replay that reaches a call not kept stops with `REPLAY_DIVERGED` saying why.

use crate::common::fixture_config_file;
use crate::common::replay::{first_execution_id, replay, run_recorded};
use serde_json::{json, Value};

#[test]
fn a_recording_keeps_at_most_its_bounds_and_says_what_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), json!({}));
    let state = dir.path().join("state.db");
    let file = dir.path().join("s.js");
    let script = "let n = 0;\nfor (let i = 0; i < 10005; i++) n += Date.now() > 0 ? 1 : 0;\nconst a = await mcp.fixture.big({bytes: 3000000});\nconst b = await mcp.fixture.big({bytes: 3000000});\nreturn [n, a.length, b.length];\n";
    std::fs::write(&file, script).unwrap();
    let (status, out, err) = run_recorded(&file, &config, &state);
    assert_eq!(status, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!([10005, 3000000, 3000000])
    );
    let id = first_execution_id(&state);
    let c = rusqlite::Connection::open(&state).unwrap();
    let detail: String = c
        .query_row("SELECT detail FROM audit", [], |r| r.get(0))
        .unwrap();
    drop(c);
    assert!(
        detail.len() < 4 * 1024 * 1024 + 256 * 1024,
        "{} bytes",
        detail.len()
    );
    let recording = &serde_json::from_str::<Value>(&detail).unwrap()["recording"];
    assert_eq!(recording["clock"].as_array().unwrap().len(), 10000);
    assert_eq!(recording["clock_dropped"], 5);
    assert_eq!(recording["calls"].as_array().unwrap().len(), 1);
    assert_eq!(recording["calls_dropped"], 1);

    let (status, out, err) = replay(&id, &state, &["--json".as_ref()]);
    assert_eq!(status, 1, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        answer["replayed"]["error"]["code"], "REPLAY_DIVERGED",
        "{answer}"
    );
    let message = answer["replayed"]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("call #2 (fixture.big) is not in the recording, which has 1 call kept (and 1 more over the recording's size bound, not kept); the replay was stopped there."),
        "{message}"
    );
}
