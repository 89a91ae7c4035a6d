//! The host verifies the runner's isolation from `/proc`, never from its `ready` frame (issue 13
//! item 3): a runner that is not locked down at all but claims every layer is refused with
//! `SANDBOX_UNAVAILABLE` naming each missing layer; the real runner passes `--require-isolation
//! all`, and the outcome's metrics carry the verified layers (the same check as `check`).

use crate::common;
use common::*;

fn run(runner: &std::path::Path, flags: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(&script, "return 1").unwrap();
    let state = dir.path().join("state.db");
    let mut args = vec![
        "run",
        "--json",
        "--state",
        state.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    args.push(script.to_str().unwrap());
    cli_run(&args).outcome()
}

#[test]
fn a_runner_claiming_layers_it_lacks_is_refused() {
    let (_keep, fake) = fake_runner_program("claims-all");
    let o = run(&fake, &["--require-isolation", "all"]);
    assert_eq!(o["error"]["code"], "SANDBOX_UNAVAILABLE", "{o}");
    let message = o["error"]["message"].as_str().unwrap();
    for layer in [
        "seccomp (unavailable: the kernel shows Seccomp: 0",
        "no_new_privs (unavailable: the kernel shows NoNewPrivs: 0)",
        "namespaces (unavailable: it shares the host's user, net, ipc, uts, mnt namespace(s))",
        "rlimits (unavailable: the kernel shows address space unlimited",
    ] {
        assert!(message.contains(layer), "{layer} not in: {message}");
    }
    // Even without --require-isolation: seccomp, no_new_privs and rlimits are always required.
    let o = run(&fake, &[]);
    assert_eq!(o["error"]["code"], "SANDBOX_UNAVAILABLE", "{o}");
    assert_eq!(
        o["metrics"]["isolation"]["seccomp"],
        "unavailable: the kernel shows Seccomp: 0 (2 is a filter)"
    );
}

#[test]
fn the_real_runner_is_verified_and_the_outcome_says_so() {
    let o = run(&bin("sandbox-runner"), &["--require-isolation", "all"]);
    assert_eq!(o["success"], true, "{o}");
    let layers = &o["metrics"]["isolation"];
    assert_eq!(
        layers["seccomp"], "enforced (the kernel shows Seccomp: 2)",
        "{o}"
    );
    assert!(
        layers["namespaces"]
            .as_str()
            .unwrap()
            .starts_with("enforced (the kernel shows"),
        "{o}"
    );
}
