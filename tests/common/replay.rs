//! What the replay tests (tests/replay_*.rs) share: a fixture server that can be deleted after
//! the run, a run recorded for replay, the id of the first audited execution, and `replay`.

use crate::serve_support::team::{audit, cli};
use serde_json::json;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A copy of the fixture server in `dir` (deleted by a test to prove a replay needs no server)
/// and a config that starts it as `fixture`: (server, config).
pub fn deletable_fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let server = dir.join("server");
    std::fs::copy(super::bin("fixture-mcp-server"), &server).unwrap();
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fixture": {"command": server, "args": []}}}).to_string(),
    )
    .unwrap();
    (server, config)
}

/// `mcp-sandbox run FILE --config CONFIG --state STATE --audit-record full`.
pub fn run_recorded(file: &Path, config: &Path, state: &Path) -> (i32, String, String) {
    cli(&[
        "run".as_ref(),
        file.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
        "--audit-record".as_ref(),
        "full".as_ref(),
    ])
}

/// The execution id of the oldest audit record in `state`.
pub fn first_execution_id(state: &Path) -> String {
    audit(state, &[])[0]["execution_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `mcp-sandbox replay ID --state STATE` followed by `more`.
pub fn replay(id: &str, state: &Path, more: &[&OsStr]) -> (i32, String, String) {
    let mut args: Vec<&OsStr> = vec![
        "replay".as_ref(),
        id.as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
    ];
    args.extend_from_slice(more);
    cli(&args)
}
