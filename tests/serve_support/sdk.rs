//! The official MCP Python SDK clients of `tests/python` driving `serve`: the runner they start
//! `serve` with, the config with the fixture server, and one stdio session.

use crate::common::bin;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Runs `tests/python/<script>` with `args`, `serve` finding the runner of this build: the one
/// JSON line it prints.
pub fn client(script: &str, args: &[&OsStr]) -> Value {
    let runner = bin("sandbox-runner");
    super::python_json(script, args, &[("MCP_SANDBOX_RUNNER", runner.as_os_str())])
}

/// Writes `dir/mcp.json`: the rmcp fixture server as `fixture`, and `sandbox` as the config's
/// sandbox section.
pub fn fixture_config(dir: &Path, sandbox: &Value) -> PathBuf {
    let config = dir.join("mcp.json");
    let body = json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}, "sandbox": sandbox});
    std::fs::write(&config, body.to_string()).unwrap();
    config
}

/// One stdio session: `script` starts `serve --config config --state state` and sends `calls`.
pub fn over_stdio(script: &str, config: &Path, state: &Path, calls: &Value) -> Value {
    let exe = Path::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    let calls = calls.to_string();
    client(
        script,
        &[
            "stdio".as_ref(),
            exe.as_os_str(),
            config.as_os_str(),
            state.as_os_str(),
            calls.as_ref(),
        ],
    )
}
