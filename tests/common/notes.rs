//! The Notes service (tests/fixtures/openapi/service.py, described by notes.yaml) for the
//! OpenAPI tests: started on a free port, its request log read back.

use super::{repo_root, Listening};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The X-Api-Key the service demands (a test's own, so a leak is found by grepping for it).
pub const NOTES_KEY_VAR: &str = "NOTES_TEST_API_KEY";

pub struct Notes {
    pub server: Listening,
    pub log: PathBuf,
    pub key: String,
    _dir: tempfile::TempDir,
}

impl Notes {
    /// The service with a fresh key; its OAuth client is `notes-client`/`secret-<key>`, its
    /// tokens live `token_ttl` seconds.
    pub fn start(token_ttl: u64) -> Notes {
        Notes::start_with(token_ttl, None)
    }

    /// [`Notes::start`], serving HTTPS with `tls = Some((cert, key))`.
    pub fn start_with(token_ttl: u64, tls: Option<(&Path, &Path)>) -> Notes {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        std::fs::write(&log, "").unwrap();
        let key = format!("key-{}", uuid::Uuid::new_v4().simple());
        let port = super::free_port();
        let mut cmd = std::process::Command::new(repo_root().join(".venv/bin/python"));
        cmd.arg(repo_root().join("tests/fixtures/openapi/service.py"))
            .arg(port.to_string())
            .arg(&log)
            .env("NOTES_API_KEY", &key)
            .env("NOTES_CLIENT_ID", "notes-client")
            .env("NOTES_CLIENT_SECRET", format!("secret-{key}"))
            .env("NOTES_TOKEN_TTL", token_ttl.to_string());
        if let Some((cert, key)) = tls {
            cmd.env("NOTES_TLS_CERT", cert).env("NOTES_TLS_KEY", key);
        }
        Notes {
            server: Listening::spawn(cmd, port),
            log,
            key,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT` (no path).
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port)
    }

    /// The API's base: `http://127.0.0.1:PORT/api/v1`.
    pub fn base_url(&self) -> String {
        format!("{}/api/v1", self.origin())
    }

    /// Every request the service received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The requests that were API calls (not the large answer's own notes).
    pub fn calls(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.get("method").is_some())
            .collect()
    }
}

/// The service's description.
pub fn notes_spec() -> PathBuf {
    repo_root().join("tests/fixtures/openapi/notes.yaml")
}

/// A config in `dir` whose server `notes` is the service: the spec copied beside it and named
/// relatively, the key from `${NOTES_TEST_API_KEY}`; `entry` adds to (or replaces keys of) the
/// entry, `sandbox` is the sandbox section.
pub fn notes_config(dir: &Path, notes: &Notes, entry: Value, sandbox: Value) -> PathBuf {
    std::fs::copy(notes_spec(), dir.join("notes.yaml")).unwrap();
    let mut e = serde_json::json!({
        "openapi": "notes.yaml",
        "baseUrl": notes.base_url(),
        "auth": {"apiKey": format!("${{{NOTES_KEY_VAR}}}")},
    });
    for (k, v) in entry.as_object().cloned().unwrap_or_default() {
        e[k] = v;
    }
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"notes": e}, "sandbox": sandbox}).to_string(),
    )
    .unwrap();
    config
}

/// `mcp-sandbox run --json --config CONFIG SCRIPT` with the notes service's key in the
/// environment (the real runner).
pub fn run_json(config: &Path, script: &Path, notes: &Notes) -> super::cli_run::CliRun {
    let runner = super::bin("sandbox-runner");
    super::cli_run::cli_run_env(
        &[
            "run",
            "--json",
            "--config",
            config.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        &[
            (NOTES_KEY_VAR, notes.key.as_str()),
            ("MCP_SANDBOX_RUNNER", runner.to_str().unwrap()),
        ],
    )
}

/// A config in `dir` whose server `echo` is the service's hostile echo API
/// (tests/fixtures/openapi/echo.yaml, its spec's tokenUrl set to `spec_token_url`) with the
/// entry `auth`; `more` adds servers (same spec, their own entries: `openapi` is set).
pub fn echo_config(
    dir: &Path,
    notes: &Notes,
    spec_token_url: &str,
    auth: Value,
    more: Value,
) -> PathBuf {
    let spec = std::fs::read_to_string(repo_root().join("tests/fixtures/openapi/echo.yaml"))
        .unwrap()
        .replace("__TOKEN_URL__", spec_token_url);
    std::fs::write(dir.join("echo.yaml"), spec).unwrap();
    let mut servers = serde_json::json!({"echo": {
        "openapi": "echo.yaml",
        "baseUrl": format!("{}/echo", notes.origin()),
        "auth": auth,
    }});
    for (k, mut v) in more.as_object().cloned().unwrap_or_default() {
        v["openapi"] = "echo.yaml".into();
        servers[k] = v;
    }
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    config
}
