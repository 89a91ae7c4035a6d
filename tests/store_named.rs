//! Issue 63 item 2: `token` and `audit` read the store a gateway with the same config writes
//! (`--config`: its `sandbox.state`), and every such command says on stderr which store it read
//! and why, so an empty answer from the default store is not taken for the gateway's.

use crate::common::*;
use serde_json::json;
use std::path::Path;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `mcp-sandbox ARGS` with `XDG_DATA_HOME` at `xdg` (where the default store lives).
fn cli(xdg: &Path, args: &[&str]) -> CliRun {
    cli_run_env(args, &[("XDG_DATA_HOME", xdg.to_str().unwrap())])
}

#[test]
fn token_and_audit_read_the_configs_store_and_say_which() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let xdg = root.join("xdg");
    std::fs::create_dir_all(root.join("gw")).unwrap();
    let team = root.join("team.json");
    std::fs::write(
        &team,
        json!({"mcpServers": {}, "sandbox": {"state": "gw/state.db"}}).to_string(),
    )
    .unwrap();
    let team_arg = team.to_str().unwrap();
    let store = root.join("gw/state.db");
    let from_config = format!(
        "mcp-sandbox: store {} (sandbox.state of {team_arg})\n",
        store.display()
    );

    // A token made in the gateway's store, by its path.
    let made = cli(
        &xdg,
        &["token", "create", "ci", "--state", store.to_str().unwrap()],
    );
    assert_eq!(made.status, 0, "{}", text(&made.stderr));
    assert!(
        text(&made.stderr).starts_with(&format!(
            "mcp-sandbox: store {} (--state)\n",
            store.display()
        )),
        "{}",
        text(&made.stderr)
    );
    // Listed through the config.
    let listed = cli(&xdg, &["token", "list", "--config", team_arg]);
    assert_eq!(listed.status, 0, "{}", text(&listed.stderr));
    assert_eq!(text(&listed.stderr), from_config);
    let lines: Vec<String> = text(&listed.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("ci  tenant=default  policy=-  created="),
        "{lines:?}"
    );
    assert!(lines[0].ends_with("  expires=never  active"), "{lines:?}");

    // Without --config or --state: the default store, which is empty, and the line says so.
    let default = cli(&xdg, &["token", "list"]);
    assert_eq!(default.status, 0, "{}", text(&default.stderr));
    assert_eq!(
        text(&default.stderr),
        format!(
            "mcp-sandbox: store {} (the default store: no --state, no --config; pass --config FILE to read the gateway's)\n",
            xdg.join("mcp-sandbox/state.db").display()
        )
    );
    assert!(default.stdout.is_empty(), "{}", text(&default.stdout));

    // An execution under the config is audited in its store; `audit --config` reads it there.
    let script = root.join("one.js");
    std::fs::write(&script, "return 1").unwrap();
    let runner = bin("sandbox-runner");
    let ran = cli(
        &xdg,
        &[
            "run",
            "--config",
            team_arg,
            "--runner",
            runner.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    );
    assert_eq!(ran.status, 0, "{}", text(&ran.stderr));
    let audit = cli(&xdg, &["audit", "--config", team_arg]);
    assert_eq!(audit.status, 0, "{}", text(&audit.stderr));
    assert_eq!(text(&audit.stderr), from_config);
    let records = text(&audit.stdout);
    assert_eq!(records.lines().count(), 1, "{records}");
    assert!(
        records.contains(" local tenant=default via=run "),
        "{records}"
    );

    // A config without sandbox.state: the default store, named with the reason.
    let bare = root.join("bare.json");
    std::fs::write(&bare, json!({"mcpServers": {}}).to_string()).unwrap();
    let out = cli(&xdg, &["audit", "--config", bare.to_str().unwrap()]);
    assert_eq!(out.status, 0, "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "mcp-sandbox: store {} (the default store: {} has no sandbox.state)\n",
            xdg.join("mcp-sandbox/state.db").display(),
            bare.display()
        )
    );
}
