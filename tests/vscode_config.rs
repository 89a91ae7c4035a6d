//! Issue 63 item 4: VS Code's `.vscode/mcp.json` is read as VS Code writes it — `servers`,
//! `type`, `inputs`, `envFile`, `${env:X}`, `${workspaceFolder}` — and the servers receive the
//! expanded values (the npm filesystem server its allowed directories from `args`, the fixture
//! its environment from `env` and `envFile`); `${input:…}`, which needs an editor to prompt, is
//! refused by name with what to write instead; `${HOME}`-style variables in `args` are expanded,
//! never passed as text.

use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(config: &Path, state: &Path, script: &str, envs: &[(&str, &str)]) -> std::process::Output {
    cli_stdin(
        &[
            "run".as_ref(),
            "-".as_ref(),
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
        ],
        script,
        envs,
    )
}

#[test]
fn a_vs_code_mcp_json_with_env_vars_and_an_env_file_loads_and_servers_get_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap().join("project");
    let extra = dir.path().canonicalize().unwrap().join("extra");
    std::fs::create_dir_all(project.join(".vscode")).unwrap();
    std::fs::create_dir_all(project.join("data")).unwrap();
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(
        project.join(".env"),
        "# the project's settings\nFROM_FILE='file value'\nBOTH=from_the_file\nexport QUOTED=\"a b\"\n",
    )
    .unwrap();
    let config = project.join(".vscode/mcp.json");
    std::fs::write(
        &config,
        serde_json::to_string_pretty(&json!({
            "inputs": [{"type": "promptString", "id": "unused-key", "description": "Not used", "password": true}],
            "servers": {
                "fs": {
                    "type": "stdio",
                    "command": repo_root().join("node_modules/.bin/mcp-server-filesystem"),
                    "args": ["${workspaceFolder}/data", "${env:MCP63_EXTRA_DIR}"],
                    "files": {"read": ["${workspaceFolder}/data", "${env:MCP63_EXTRA_DIR}"]}
                },
                "fixture": {
                    "type": "stdio",
                    "command": bin("fixture-mcp-server"),
                    "env": {"FROM_ENV": "${env:MCP63_SECRET}", "BOTH": "from env", "HOME_SEEN": "${userHome}"},
                    "envFile": "${workspaceFolder}/.env"
                }
            }
        }))
        .unwrap(),
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let script = "const dirs = await mcp.fs.list_allowed_directories({});\n\
         const env = await mcp.fixture.env({});\n\
         return {dirs: JSON.stringify(dirs), env: {FROM_ENV: env.FROM_ENV, FROM_FILE: env.FROM_FILE, BOTH: env.BOTH, QUOTED: env.QUOTED, HOME_SEEN: env.HOME_SEEN}};";
    let home = std::env::var("HOME").unwrap();
    let out = run(
        &config,
        &state,
        script,
        &[
            ("MCP63_SECRET", "s3cret"),
            ("MCP63_EXTRA_DIR", extra.to_str().unwrap()),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        result["env"],
        json!({"FROM_ENV": "s3cret", "FROM_FILE": "file value", "BOTH": "from env", "QUOTED": "a b", "HOME_SEEN": home}),
        "{}",
        text(&out.stderr)
    );
    // The filesystem server was started with both directories, expanded.
    let dirs = result["dirs"].as_str().unwrap();
    assert!(
        dirs.contains(project.join("data").to_str().unwrap()),
        "{dirs}"
    );
    assert!(dirs.contains(extra.to_str().unwrap()), "{dirs}");
    assert!(!dirs.contains("${"), "{dirs}");

    // A variable that is not set is named, before anything starts.
    let out = run(&config, &state, script, &[("MCP63_SECRET", "s3cret")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "mcp-sandbox: config {} is not valid: server 'fs': args[1] uses ${{MCP63_EXTRA_DIR}}, which is not set in the host's environment: set it before starting mcp-sandbox\n",
            config.display()
        )
    );
}

#[test]
fn an_input_variable_is_refused_with_what_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({
            "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
            "servers": {"fixture": {"type": "stdio", "command": bin("fixture-mcp-server"),
                                    "env": {"API_KEY": "${input:api-key}"}}}
        })
        .to_string(),
    )
    .unwrap();
    let out = run(&config, &dir.path().join("state.db"), "return 1", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "mcp-sandbox: config {} is not valid: CONFIG_VSCODE_UNSUPPORTED: server 'fixture': env.API_KEY uses ${{input:api-key}}, a value VS Code prompts for (declared in \"inputs\"); mcp-sandbox has no editor to ask: put the value in a host environment variable and write ${{env:NAME}} instead\n",
            config.display()
        )
    );
}
