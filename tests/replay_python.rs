//! A Python execution replays too (issue 62): its clock (`datetime.datetime.now()`,
//! `datetime.date.today()`, which the runner answers for monty) is recorded and given back, and
//! its calls are answered from the recording with no server running.

use crate::common::replay::{deletable_fixture, first_execution_id, replay, run_recorded};
use serde_json::{json, Value};

const SCRIPT: &str = "import datetime\na = await mcp.fixture.echo(message='py')\nt = datetime.datetime.now()\nu = datetime.datetime.now(datetime.timezone.utc)\nd = datetime.date.today()\nprint('at', str(t))\n{'a': a, 't': str(t), 'u': str(u), 'd': str(d)}\n";

#[test]
fn a_python_execution_replays_with_its_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (server, config) = deletable_fixture(dir.path());
    let state = dir.path().join("state.db");
    let file = dir.path().join("s.py");
    std::fs::write(&file, SCRIPT).unwrap();
    let (status, out, err) = run_recorded(&file, &config, &state);
    assert_eq!(status, 0, "{err}");
    let ran: Value = serde_json::from_str(&out).unwrap();
    std::fs::remove_file(&server).unwrap();
    let id = first_execution_id(&state);
    // Three clock values were recorded, in microseconds, the first matching `t`.
    let c = rusqlite::Connection::open(&state).unwrap();
    let detail: String = c
        .query_row("SELECT detail FROM audit", [], |r| r.get(0))
        .unwrap();
    let recording = &serde_json::from_str::<Value>(&detail).unwrap()["recording"];
    assert_eq!(recording["language"], "python", "{recording}");
    let clock = recording["clock"].as_array().unwrap();
    assert_eq!(clock.len(), 3, "{recording}");
    assert!(
        clock.windows(2).all(|w| w[0].as_i64() <= w[1].as_i64()),
        "{recording}"
    );
    drop(c);

    std::thread::sleep(std::time::Duration::from_millis(20));
    let (status, out, err) = replay(&id, &state, &["--json".as_ref()]);
    assert_eq!(status, 0, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["matches"], true, "{answer}");
    assert_eq!(answer["replayed"]["result"], ran, "{answer}");
    assert_eq!(
        answer["replayed"]["calls"],
        json!([{"tool": "fixture:echo"}]),
        "{answer}"
    );
    assert_eq!(
        answer["replayed"]["logs"][0]["message"],
        format!("at {}", ran["t"].as_str().unwrap()),
        "{answer}"
    );
}
