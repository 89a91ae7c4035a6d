//! The configuration file: the `mcpServers` JSON that Claude Desktop and other MCP clients use,
//! plus an optional `sandbox` section for limits and runner settings.
//!
//! ```json
//! {"mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}},
//!  "sandbox": {"limits": {"timeout_ms": 10000}}}
//! ```

pub mod confine_entry;
pub mod gateway;
pub mod network;
pub mod openapi_entry;
pub mod openapi_values;
pub mod rule_names;
pub mod server_config;
pub mod server_entry;
pub mod telemetry;
pub mod var_expand;
pub mod vscode;

use crate::context::limits::Limits;
use crate::context::policy::{Policy, PolicyError, RuleEntry, Rules};
use sandbox_runner::protocol::valid_server_name;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use server_config::{
    OAuthConfig, ServerConfig, ServerScope, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_INSTANCES,
    DEFAULT_MAX_TOOLS, DEFAULT_MAX_TOOL_LIST_BYTES, DEFAULT_MAX_TOOL_LIST_PAGES,
    DEFAULT_STARTUP_TIMEOUT_MS,
};

/// Largest configuration file accepted.
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}{}: {source}", relative_to(path))]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path} is larger than {MAX_CONFIG_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("config {path} is not valid: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// For a relative path: the working directory it was looked up in (agents often start the
/// gateway in `/`, where a relative path finds nothing).
fn relative_to(path: &Path) -> String {
    if path.is_absolute() {
        return String::new();
    }
    match std::env::current_dir() {
        Ok(dir) => format!(" (looked up in the working directory {})", dir.display()),
        Err(_) => " (the working directory cannot be read; give an absolute path)".to_string(),
    }
}

/// The `sandbox` section.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    #[serde(default)]
    pub limits: Option<Limits>,
    /// Tool-call policy: when present, only `server:tool` names matching one of these globs may
    /// be called (see `policy`).
    #[serde(default)]
    pub allow: Option<Vec<RuleEntry>>,
    /// Tool-call policy: `server:tool` globs that may never be called (deny wins over allow).
    /// Each entry of allow/deny/ask is a glob or `{"tool": GLOB, "if": CEL, "name": NAME}`.
    #[serde(default)]
    pub deny: Vec<RuleEntry>,
    /// Tool-call policy: `server:tool` globs whose calls wait for a person's approval
    /// (deny > ask > allow; see `gate::approval`).
    #[serde(default)]
    pub ask: Vec<RuleEntry>,
    /// The state file (tool graph, capabilities); relative to the config file's directory.
    #[serde(default)]
    pub state: Option<PathBuf>,
    /// Authentication of `serve --http` (see `gateway_config`).
    #[serde(default)]
    pub auth: Option<crate::config::gateway::AuthConfig>,
    /// Per-caller policies, limits and rate limits, by name.
    #[serde(default)]
    pub policies: BTreeMap<String, crate::config::gateway::PrincipalPolicy>,
    /// Each principal's and tenant's share of the execution queue (`exec::fair_share`).
    #[serde(default)]
    pub fair_share: crate::config::gateway::FairShareConfig,
    /// What the audit log keeps (see `audit`).
    #[serde(default)]
    pub audit: Option<crate::store::audit_options::AuditConfig>,
    /// Session state and yielded executions: TTL and bounds (see `context::session`).
    #[serde(default)]
    pub session: crate::context::session::SessionOptions,
    /// Data-flow labels of tools, by `server:tool` glob (see `context::flow`).
    #[serde(default)]
    pub labels: BTreeMap<String, Vec<String>>,
    /// Data-flow rules: after reading these labels, deny or ask calls to tools with those.
    #[serde(default)]
    pub flows: Vec<crate::context::flow::FlowRuleConfig>,
    /// Whether what an execution read counts for its whole client session (default) or for
    /// the execution alone.
    #[serde(default)]
    pub flow_scope: Option<crate::context::flow::FlowScope>,
    /// Sensitive values: detectors, fields, which tools may receive real values (see
    /// `context::sensitive`).
    #[serde(default)]
    pub sensitive: crate::context::sensitive::SensitiveConfig,
    /// OpenTelemetry export (see `telemetry`): collector, headers, service name, sampler.
    #[serde(default)]
    pub telemetry: telemetry::TelemetryConfig,
    /// Whether a `deny` or `ask` glob that matches none of the tools its server lists refuses
    /// the start (the default: such a rule fails open) or is only a warning (`false`). See
    /// `rule_names`; [`SandboxSection::strict_policy`] reads it.
    #[serde(default)]
    pub strict_policy: Option<bool>,
}

impl SandboxSection {
    /// `strict_policy`, on unless the config turns it off.
    pub fn strict_policy(&self) -> bool {
        self.strict_policy.unwrap_or(true)
    }

    /// The config's allow/deny rules as one policy layer.
    pub fn rules(&self) -> Result<Rules, PolicyError> {
        Rules::from_entries("config", self.allow.as_deref(), &self.deny)
    }
}

/// The file's top level: `mcpServers` and `sandbox`; any other key is refused (a misspelled
/// or misplaced section would otherwise be ignored without a word), except the two that the
/// files this one is copied from commonly hold and that mean nothing here.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default, rename = "mcpServers")]
    mcp_servers: Option<BTreeMap<String, ServerConfig>>,
    /// VS Code's name for `mcpServers` (`.vscode/mcp.json`); see `vscode`.
    #[serde(default)]
    servers: Option<BTreeMap<String, ServerConfig>>,
    #[serde(default)]
    sandbox: SandboxSection,
    /// VS Code's prompted values: a `${input:ID}` using one is refused by name (see `vscode`).
    #[serde(default, rename = "inputs")]
    _inputs: Option<serde_json::Value>,
    /// Claude Desktop's own setting, in the file its users copy: ignored.
    #[serde(default, rename = "globalShortcut")]
    _global_shortcut: Option<serde_json::Value>,
    /// A JSON schema reference for editors: ignored.
    #[serde(default, rename = "$schema")]
    _schema: Option<serde_json::Value>,
}

/// Code of an unknown top-level key in the config.
pub const CONFIG_UNKNOWN_KEY: &str = "CONFIG_UNKNOWN_KEY";

/// The message of a JSON error, with what to do for an unknown top-level key.
fn explain_json_error(e: serde_json::Error) -> String {
    let message = e.to_string();
    // Only the top level's error lists `mcpServers` among the expected fields.
    if !message.starts_with("unknown field") || !message.contains("`mcpServers`") {
        return message;
    }
    let hint = "the top level holds \"mcpServers\" (the MCP servers; VS Code's \"servers\" is read the same) and \"sandbox\" (limits, policy, state)";
    format!("{CONFIG_UNKNOWN_KEY}: {message}: {hint}")
}

/// A loaded configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub servers: BTreeMap<String, ServerConfig>,
    pub sandbox: SandboxSection,
    /// The directory relative paths are resolved against.
    pub base_dir: PathBuf,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let read_err = |source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(read_err)?;
        if meta.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        let text = std::fs::read_to_string(path).map_err(read_err)?;
        crate::store::private_paths::hide(path);
        let base = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."));
        let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        Config::parse(&text, &base).map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })
    }

    /// Parses configuration text; relative paths resolve against `base_dir`.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Config, String> {
        let raw: RawConfig = serde_json::from_str(text).map_err(explain_json_error)?;
        let mut servers = vscode::servers(raw.mcp_servers, raw.servers)?;
        let workspace = vscode::workspace_folder(base_dir);
        for (name, server) in servers.iter_mut() {
            if !valid_server_name(name) {
                return Err(format!(
                    "server name '{name}' is not allowed: use letters, digits, '_' or '-', and not a JavaScript built-in name"
                ));
            }
            vscode::resolve(name, server, base_dir, &workspace)?;
            let server = &*server;
            crate::config::server_entry::check(name, server)?;
            if server.max_arg_bytes == Some(0) {
                return Err(format!(
                    "server '{name}': maxArgBytes must be at least 1 (it is a size in bytes)"
                ));
            }
            if let Some(bad) = server
                .inherit_env
                .iter()
                .find(|p| p.is_empty() || p.contains('='))
            {
                return Err(format!(
                    "server '{name}': inheritEnv pattern {bad:?} is not a variable name or glob (like \"AWS_*\")"
                ));
            }
            if let Some(ms) = server.startup_timeout_ms {
                if !(1..=600_000).contains(&ms) {
                    return Err(format!(
                        "server '{name}': startupTimeoutMs must be between 1 and 600000, got {ms}"
                    ));
                }
            }
        }
        if let Some(state) = &raw.sandbox.state {
            crate::store::location::state_location(&state.to_string_lossy())
                .map_err(|e| format!("sandbox.state: {e}"))?;
        }
        if let Some(limits) = &raw.sandbox.limits {
            limits.validate().map_err(|e| e.to_string())?;
        }
        raw.sandbox
            .rules()
            .map_err(|e| format!("sandbox.allow/deny: {e}"))?;
        Policy::allow_all()
            .with_ask_entries("config", &raw.sandbox.ask)
            .map_err(|e| format!("sandbox.ask: {e}"))?;
        Policy::allow_all()
            .with_flow("config", &raw.sandbox.labels, &raw.sandbox.flows)
            .map_err(|e| format!("sandbox.labels/flows: {e}"))?;
        Policy::allow_all()
            .with_sensitive("sandbox.sensitive", &raw.sandbox.sensitive, true)
            .map_err(|e| format!("sandbox.sensitive: {e}"))?;
        gateway::validate(
            raw.sandbox.auth.as_ref(),
            &raw.sandbox.policies,
            &raw.sandbox.fair_share,
        )?;
        raw.sandbox.session.validate()?;
        raw.sandbox.telemetry.validate()?;
        Ok(Config {
            servers,
            sandbox: raw.sandbox,
            base_dir: base_dir.to_path_buf(),
        })
    }

    /// The tool-call policy of this config (allow everything when it has no rules).
    pub fn policy(&self) -> Policy {
        let policy = self.rule_policy();
        let scope = self.sandbox.flow_scope.unwrap_or_default();
        match policy
            .clone()
            .with_flow("config", &self.sandbox.labels, &self.sandbox.flows)
        {
            Ok(p) => match p.with_flow_scope(scope).with_sensitive(
                "sandbox.sensitive",
                &self.sandbox.sensitive,
                true,
            ) {
                Ok(p) => p,
                // `parse` refused a bad one already; a hand-built config with one denies all.
                Err(_) => policy.with(Rules::deny_all("config (invalid sandbox.sensitive)")),
            },
            // `parse` refused bad labels already; a hand-built config with one denies all.
            Err(_) => policy.with(Rules::deny_all("config (invalid flow rules)")),
        }
    }

    /// The allow/deny/ask part of [`Config::policy`].
    fn rule_policy(&self) -> Policy {
        match self.sandbox.rules() {
            Ok(rules) => {
                let policy = Policy::allow_all().with(rules);
                // `parse` checked the ask patterns; a hand-built config with a bad one asks all.
                policy
                    .clone()
                    .with_ask_entries("config", &self.sandbox.ask)
                    .unwrap_or_else(|_| {
                        policy
                            .with_ask("config (invalid ask rules)", &["*".to_string()])
                            .unwrap_or_default()
                    })
            }
            // `parse` refused bad patterns already; a hand-built config with one denies all.
            Err(_) => Policy::allow_all().with(Rules::deny_all("config (invalid rules)")),
        }
    }

    /// The `sandbox.state` path, resolved against the config file's directory.
    pub fn state_path(&self) -> Option<PathBuf> {
        // A PostgreSQL URL is not a path: it is used as written.
        self.sandbox.state.as_ref().map(|p| match p.to_str() {
            Some(url) if crate::store::pg::url::is_postgres(url) => p.clone(),
            _ => self.base_dir.join(p),
        })
    }

    /// The working directory of a server.
    pub fn server_cwd(&self, server: &ServerConfig) -> PathBuf {
        match &server.cwd {
            Some(p) if p.is_absolute() => p.clone(),
            Some(p) => self.base_dir.join(p),
            None => self.base_dir.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_claude_desktop_style_config() {
        let c = Config::parse(
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}}}, "globalShortcut": ""}"#,
            Path::new("/base"),
        )
        .unwrap();
        assert_eq!(c.servers["fs"].args, ["-y", "x"]);
        assert_eq!(c.server_cwd(&c.servers["fs"]), Path::new("/base"));
    }

    #[test]
    fn parses_remote_servers() {
        let c = Config::parse(
            r#"{"mcpServers": {"r": {"url": "https://example.com/mcp", "type": "http", "headers": {"X-Plain": "1", "Authorization": "Bearer ${PATH}"}, "caFile": "ca.pem"}}}"#,
            Path::new("/base"),
        )
        .unwrap();
        assert!(c.servers["r"].is_remote());
        assert_eq!(c.servers["r"].transport_name(), "http");
        // The config keeps the template, never the expanded value.
        assert_eq!(c.servers["r"].headers["Authorization"], "Bearer ${PATH}");
    }

    #[test]
    fn rejects_bad_configs_with_a_reason() {
        let bad = [
            (
                r#"{"mcpServers": {"a:b": {"command": "x"}}}"#,
                "not allowed",
            ),
            (
                r#"{"mcpServers": {"constructor": {"command": "x"}}}"#,
                "not allowed",
            ),
            (
                r#"{"mcpServers": {"a": {"command": ""}}}"#,
                "command is empty",
            ),
            (
                r#"{"mcpServers": {"a": {"uri": "http://x"}}}"#,
                "unknown field",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "type": "sse"}}}"#,
                "not supported",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://x/mcp", "type": "sse"}}}"#,
                "transport 'sse' (the older HTTP+SSE transport) is not supported",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://x/mcp", "command": "x"}}}"#,
                "command and url are mutually exclusive",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "ftp://x/mcp"}}}"#,
                "url must start with https://",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "https://u:p@x/mcp"}}}"#,
                "url must not hold credentials",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "https://x/mcp", "args": ["1"]}}}"#,
                "args is for stdio servers",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "headers": {"A": "1"}}}}"#,
                "headers is for remote servers",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "https://x/mcp", "headers": {"Accept": "1"}}}}"#,
                "set by the MCP client itself",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${MCP_SANDBOX_TEST_UNSET_VAR}"}}}}"#,
                "server 'a': headers.Authorization uses ${MCP_SANDBOX_TEST_UNSET_VAR}, which is not set in the host's environment",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${MCP_SANDBOX_TEST_UNSET_VAR}"}}}}"#,
                "server 'a': env.K uses ${MCP_SANDBOX_TEST_UNSET_VAR}",
            ),
            (r#"{"sandbox": {"limits": {"memory_mb": 0}}}"#, "memory_mb"),
            ("[1, 2]", "expected"),
            (r#"{"sandbox": {"deny": ["a:b:c"]}}"#, "sandbox.allow/deny"),
            (r#"{"sandbox": {"allow": "fs:*"}}"#, "invalid type"),
            (r#"{"mcpServers": "#, "EOF"),
            (
                r#"{"servers": {"fs": {"command": "x"}}, "mcpServers": {}}"#,
                "the config has both \"mcpServers\" and \"servers\" (VS Code's name for the same section): keep one",
            ),
            (
                r#"{"servers": {"fs": {"command": "x", "args": ["${input:key}"]}}}"#,
                "CONFIG_VSCODE_UNSUPPORTED: server 'fs': args[0] uses ${input:key}",
            ),
            (
                r#"{"mcpServers": {},
                    "sandbx": {}}"#,
                "CONFIG_UNKNOWN_KEY: unknown field `sandbx`, expected one of `mcpServers`, `servers`, `sandbox`, `inputs`, `globalShortcut`, `$schema` at line 2 column 28: the top level holds",
            ),
        ];
        for (text, needle) in bad {
            let err = Config::parse(text, Path::new("/")).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
