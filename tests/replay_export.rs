//! A recording replays from an `audit export` file on another machine (issue 62): recorded by
//! the config's `sandbox.audit.record: "full"` (no flag), the export of one execution
//! (`--execution-id`) carries its recording, verifies offline, and `replay --file` replays it
//! with the state store gone.

use crate::common::bin;
use crate::serve_support::team::{audit, cli};
use serde_json::{json, Value};

#[test]
fn an_exported_recording_replays_without_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}},
            "sandbox": {"audit": {"record": "full"}}
        })
        .to_string(),
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let file = dir.path().join("s.js");
    let script = "const a = await mcp.fixture.echo({message: 'x'});\nreturn {a, r: Math.random(), t: Date.now()};\n";
    std::fs::write(&file, script).unwrap();
    for _ in 0..2 {
        let (status, _, err) = cli(&[
            "run".as_ref(),
            file.as_os_str(),
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
        ]);
        assert_eq!(status, 0, "{err}");
    }
    let records = audit(&state, &[]);
    let id = records[0]["execution_id"].as_str().unwrap().to_string();
    let key = dir.path().join("audit.key");
    let (status, public, err) = cli(&[
        "audit".as_ref(),
        "keygen".as_ref(),
        "--key-file".as_ref(),
        key.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    let (status, export, err) = cli(&[
        "audit".as_ref(),
        "export".as_ref(),
        "--audit-key-file".as_ref(),
        key.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
        "--execution-id".as_ref(),
        id.as_ref(),
    ]);
    assert_eq!(status, 0, "{err}");
    assert!(err.contains("exported 1 records (2 links)"), "{err}");
    let exported = dir.path().join("one.jsonl");
    std::fs::write(&exported, export).unwrap();
    std::fs::remove_file(&state).unwrap();

    let (status, out, err) = cli(&[
        "audit".as_ref(),
        "verify".as_ref(),
        "--file".as_ref(),
        exported.as_os_str(),
        "--public-key".as_ref(),
        public.trim().as_ref(),
    ]);
    assert_eq!(status, 0, "{out}{err}");
    let (status, out, err) = cli(&[
        "replay".as_ref(),
        id.as_ref(),
        "--file".as_ref(),
        exported.as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(status, 0, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["matches"], true, "{answer}");
    assert_eq!(answer["replayed"]["result"]["a"], "x", "{answer}");
    assert_eq!(answer["recorded"], answer["replayed"], "{answer}");

    // The other execution is not in this file.
    let other = records[1]["execution_id"].as_str().unwrap();
    let (status, _, err) = cli(&[
        "replay".as_ref(),
        other.as_ref(),
        "--file".as_ref(),
        exported.as_os_str(),
    ]);
    assert_eq!(status, 2, "{err}");
    assert!(
        err.contains(&format!("no record of execution {other} in ")),
        "{err}"
    );
}
