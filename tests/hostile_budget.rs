//! A runner taken over after its lockdown (tests/fixtures fake-runner, started by the real
//! `mcp-sandbox` binary through `--runner`) tries to exhaust the host's memory through the
//! socket. Each attack ends with its documented code within its wall clock, the host's peak RSS
//! stays under 256 MiB and the outcome under 1 MiB (issue 13 item 1).

use crate::common;
use common::*;

const MAX_HOST_RSS_KIB: u64 = 256 * 1024;
const MAX_OUTCOME_BYTES: usize = 1024 * 1024;

/// Runs `mode` against the fixture server and checks the common bounds.
fn attack(mode: &str, extra: &[&str]) -> (serde_json::Value, CliRun) {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), serde_json::json!({}));
    let (_keep, runner) = fake_runner_program(mode);
    let script = dir.path().join("s.js");
    // The fake runner calls `fixture` whatever the script says; naming it here makes `run`
    // start the server (it starts only the servers a script names).
    std::fs::write(&script, "if (false) await mcp.fixture.echo({}); 1").unwrap();
    let mut args = vec![
        "run",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
        "--state",
    ];
    let state = dir.path().join("state.db");
    args.push(state.to_str().unwrap());
    args.extend_from_slice(extra);
    args.push(script.to_str().unwrap());
    let run = cli_run(&args);
    eprintln!(
        "{mode}: exit {} in {:?}, peak RSS {} KiB, outcome {} bytes",
        run.status,
        run.elapsed,
        run.max_rss_kib,
        run.stdout.len()
    );
    assert!(
        run.max_rss_kib < MAX_HOST_RSS_KIB,
        "{mode}: host peak RSS {} KiB",
        run.max_rss_kib
    );
    assert!(
        run.stdout.len() < MAX_OUTCOME_BYTES,
        "{mode}: outcome of {} bytes",
        run.stdout.len()
    );
    (run.outcome(), run)
}

fn error_of(o: &serde_json::Value) -> (String, String) {
    (
        o["error"]["code"].as_str().unwrap_or("").to_string(),
        o["error"]["message"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn long_tool_names_are_refused_before_anything_copies_them() {
    // 40 calls naming a 4 MiB tool, under a 2 s wall clock: refused at the first frame.
    let (o, run) = attack("long-names", &["--timeout-ms", "2000"]);
    let (code, message) = error_of(&o);
    assert_eq!(code, "PROTOCOL_ERROR", "{o}");
    assert!(
        message.contains("a tool name of 4194304 bytes (the limit is 128)"),
        "{message}"
    );
    assert!(o["traces"].as_array().unwrap().is_empty(), "{o}");
    // The code says it was refused, not timed out; the bound is a hang guard.
    assert_not_hung(run.elapsed, ms(20_000), ms(1_000), "the refusal");
}

#[test]
fn a_result_over_the_limit_is_refused_by_the_host() {
    let (o, _) = attack("big-result", &[]);
    let (code, message) = error_of(&o);
    assert_eq!(code, "LIMIT_EXCEEDED", "{o}");
    assert!(
        message.contains("the result is about 12582")
            && message.contains("the result limit is 8388608 bytes"),
        "{message}"
    );
}

#[test]
fn a_huge_argument_is_not_forwarded() {
    let (o, _) = attack("huge-arg", &[]);
    let (code, message) = error_of(&o);
    assert_eq!(code, "LIMIT_EXCEEDED", "{o}");
    assert!(message.contains("max_arg_bytes"), "{message}");
    assert_eq!(o["error"]["tool"], "fixture:echo", "{o}");
}

#[test]
fn arguments_that_would_grow_when_decoded_are_refused_undecoded() {
    // 14 MiB of `[0,0,…]`: ~7 million JSON values had the host decoded them.
    let (o, _) = attack("wide-args", &[]);
    let (code, message) = error_of(&o);
    assert_eq!(code, "LIMIT_EXCEEDED", "{o}");
    assert!(message.contains("max_arg_bytes"), "{message}");
}

#[test]
fn a_runner_that_never_reads_its_results_is_ended() {
    // A wall clock far away: how fast 60 results of 4 MiB come is the machine's speed (12 s in a
    // debug build on a busy machine), what ends the run must be the unread-results budget.
    let (o, run) = attack("unread-results", &["--timeout-ms", "150000"]);
    let (code, message) = error_of(&o);
    assert_eq!(code, "LIMIT_EXCEEDED", "{o}");
    assert!(message.contains("unread results"), "{message}");
    // Not the wall clock (that would be EXECUTION_TIMEOUT); a hang guard well under it.
    assert_not_hung(run.elapsed, ms(140_000), ms(14_000), "unread results");
}
