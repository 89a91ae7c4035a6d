//! "Did you mean" suggestions cannot burn the host's CPU (issue 13 item 2): a script naming a
//! 1,000,000-character tool (the most the 1 MiB source limit allows) gets `TOOL_NOT_FOUND` with
//! no suggestions within its 2 s wall clock, and a close name still gets its suggestion. (A
//! runner sending a 4 MiB name is refused before any suggestion: tests/hostile_budget.rs.)

use crate::common;
use common::*;

fn run_script(dir: &std::path::Path, code: &str) -> CliRun {
    let config = fixture_config_file(dir, serde_json::json!({}));
    let script = dir.join("s.js");
    std::fs::write(&script, code).unwrap();
    let state = dir.join("state.db");
    cli_run_script(&["--timeout-ms", "2000"], &config, &state, &script)
}

#[test]
fn an_enormous_unknown_name_ends_within_the_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let name = "r".repeat(1_000_000);
    let run = run_script(
        dir.path(),
        &format!("return await mcp.fixture.{name}({{}})"),
    );
    let o = run.outcome();
    assert_eq!(
        o["error"]["code"],
        "TOOL_NOT_FOUND",
        "{}",
        &o.to_string()[..300]
    );
    assert_eq!(o["error"]["alternatives"], serde_json::json!([]));
    // The message names the tool cut short, not a megabyte of it.
    let message = o["error"]["message"].as_str().unwrap();
    assert!(message.len() < 1024, "{} bytes", message.len());
    // Within its 2 s wall clock is the code (past it, EXECUTION_TIMEOUT); the bound guards hangs.
    assert_not_hung(run.elapsed, ms(6_000), ms(600), "the enormous name");

    let run = run_script(dir.path(), "return await mcp.fixture.ech({})");
    let o = run.outcome();
    assert_eq!(o["error"]["code"], "TOOL_NOT_FOUND", "{o}");
    assert_eq!(
        o["error"]["alternatives"],
        serde_json::json!(["fixture:echo"])
    );
}
