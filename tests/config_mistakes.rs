//! The newcomer's config mistakes (issue 47 item 3): `run` without `--config`, a config shaped
//! like VS Code's `{"servers": …}`, a misspelt top-level key, and a relative `--config` looked
//! up in another working directory — each says what is wrong instead of a typo's
//! `TOOL_NOT_FOUND` or a bare "No such file".

use crate::common;
use common::*;
use serde_json::json;
use std::process::Command;

const SCRIPT: &str = "return await mcp.filesystem.read_text_file({path: 'a'})";

#[test]
fn run_without_servers_says_none_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.db");
    let out = run_stdin(&["--state".as_ref(), state.as_os_str()], SCRIPT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("mcp-sandbox: warning: NO_SERVERS: no MCP server is configured (no --config was given), so mcp.* reaches only saved capabilities; pass --config FILE with {\"mcpServers\": {...}}\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: TOOL_NOT_FOUND: unknown tool 'filesystem:read_text_file'; NO_SERVERS: no MCP server is configured (no --config, or a config without an mcpServers section)"),
        "{stderr}"
    );
    assert!(!stderr.contains("capability list"), "{stderr}");

    // A script that does not use mcp gets no warning.
    let out = run_stdin(&["--state".as_ref(), state.as_os_str()], "return 1");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn a_vs_code_shaped_config_is_read_and_unknown_top_level_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    // VS Code's `servers` is read like `mcpServers` (issue 63 item 4; tests/vscode_config.rs
    // has the rest of its shape).
    std::fs::write(
        &config,
        json!({"servers": {"fixture": {"type": "stdio", "command": bin("fixture-mcp-server")}}})
            .to_string(),
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let out = run_stdin(
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
        ],
        "return (await mcp.fixture.echo({message: 'hi'}))",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hi"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::write(
        &config,
        "{\"mcpServers\": {},\n \"sandbx\": {\"deny\": [\"x\"]}}",
    )
    .unwrap();
    let out = Command::new(bin("mcp-sandbox"))
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("CONFIG_UNKNOWN_KEY: unknown field `sandbx`, expected one of `mcpServers`, `servers`, `sandbox`, `inputs`, `globalShortcut`, `$schema` at line 2 column 9: the top level holds \"mcpServers\" (the MCP servers; VS Code's \"servers\" is read the same) and \"sandbox\" (limits, policy, state)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_relative_config_not_found_names_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let out = Command::new(bin("mcp-sandbox"))
        .current_dir(&cwd)
        .args(["serve", "--config", "mcp.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "mcp-sandbox: cannot read config mcp.json (looked up in the working directory {}): No such file or directory (os error 2)\n",
            cwd.display()
        )
    );
    // An absolute path needs no working directory.
    let missing = cwd.join("nope.json");
    let out = Command::new(bin("mcp-sandbox"))
        .args(["serve", "--config"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "mcp-sandbox: cannot read config {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}
