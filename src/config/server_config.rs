//! One server entry of the config file, as read: its keys and their defaults. The checks of an
//! entry (`server_entry`, `openapi_entry`) and the loader (`config/mod.rs`, which re-exports
//! these) import this file; it imports only the value types of its keys.

use super::{confine_entry, network, openapi_values};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One MCP server: a stdio server (`command`) or a remote one (`url`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program of a stdio server (empty for a remote server).
    #[serde(default)]
    pub command: String,
    /// The streamable HTTP endpoint of a remote server (`http://` or `https://`).
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP headers sent with every request to a remote server; `${VAR}` in a value is taken
    /// from the host's environment when the server is started (see `catalog::expand`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A PEM file of CA certificates trusted for this remote server besides the system roots;
    /// relative to the config file's directory.
    #[serde(default, rename = "caFile")]
    pub ca_file: Option<PathBuf>,
    /// The remote server uses OAuth (the MCP authorization flow): tokens come from
    /// `mcp-sandbox auth login NAME`, stored encrypted in the state file.
    #[serde(default)]
    pub oauth: Option<OAuthConfig>,
    #[serde(default)]
    pub args: Vec<String>,
    /// VS Code's `envFile`: a dotenv file (relative to the config file's directory) whose
    /// variables are added to `env` when the config is read (`env` wins); see `vscode`.
    #[serde(default, rename = "envFile")]
    pub env_file: Option<String>,
    /// Set for this server, on top of the default set and `inheritEnv` (the server does not
    /// get the host's whole environment).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory; relative paths are taken from the config file's directory, which is
    /// also the default.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// `"stdio"` (with `command`) or `"http"` / `"streamable-http"` (with `url`); `"sse"` is
    /// refused (rmcp 3.9 has no client for the older HTTP+SSE transport).
    #[serde(default, rename = "type")]
    pub transport: Option<String>,
    /// Largest serialized arguments of one call to this server, replacing the execution's
    /// `max_arg_bytes` for it.
    #[serde(default, rename = "maxArgBytes")]
    pub max_arg_bytes: Option<u64>,
    /// Host environment variables the server inherits besides the default set (HOME, LOGNAME,
    /// PATH, SHELL, TERM, USER): names or globs such as `"AWS_*"`.
    #[serde(default, rename = "inheritEnv")]
    pub inherit_env: Vec<String>,
    /// How long the server may take to start (spawn, initialize, list its tools) before it is
    /// reported unavailable; default [`DEFAULT_STARTUP_TIMEOUT_MS`].
    #[serde(default, rename = "startupTimeoutMs")]
    pub startup_timeout_ms: Option<u64>,
    /// Who shares one server process: `"shared"` (everyone), `"tenant"` (one process per
    /// tenant) or `"principal"` (one per principal). Default: `tenant` for a stdio server,
    /// `shared` for a remote one (see [`ServerConfig::scope`]).
    #[serde(default)]
    pub scope: Option<ServerScope>,
    /// How long a tenant's or principal's server process may sit unused before it is stopped
    /// (scoped servers only); default [`DEFAULT_IDLE_TIMEOUT_MS`].
    #[serde(default, rename = "idleTimeoutMs")]
    pub idle_timeout_ms: Option<u64>,
    /// Most processes of a scoped server alive at once; default [`DEFAULT_MAX_INSTANCES`].
    #[serde(default, rename = "maxInstances")]
    pub max_instances: Option<usize>,
    /// Most tools this server may list; a longer list is refused; default [`DEFAULT_MAX_TOOLS`].
    #[serde(default, rename = "maxTools")]
    pub max_tools: Option<usize>,
    /// Most bytes its tool list may take (each tool as JSON, summed); default
    /// [`DEFAULT_MAX_TOOL_LIST_BYTES`].
    #[serde(default, rename = "maxToolListBytes")]
    pub max_tool_list_bytes: Option<u64>,
    /// Most `tools/list` pages one listing may take; default [`DEFAULT_MAX_TOOL_LIST_PAGES`].
    #[serde(default, rename = "maxToolListPages")]
    pub max_tool_list_pages: Option<usize>,
    /// An OpenAPI description (a path relative to the config file, or an https URL): its
    /// operations become this server's tools (see `openapi_entry` and `tools::openapi`).
    #[serde(default)]
    pub openapi: Option<String>,
    /// Where an OpenAPI server's requests go; every request URL must stay under it.
    #[serde(default, rename = "baseUrl")]
    pub base_url: Option<String>,
    /// Globs over operation ids (tool names): only matching operations become tools.
    #[serde(default)]
    pub operations: Vec<String>,
    /// Only operations with one of these tags become tools.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Per-call timeout of an OpenAPI server's requests (default 30,000 ms).
    #[serde(default, rename = "timeoutMs")]
    pub timeout_ms: Option<u64>,
    /// Largest answer body of one OpenAPI request (default 10 MiB).
    #[serde(default, rename = "maxResponseBytes")]
    pub max_response_bytes: Option<u64>,
    /// Most requests in flight to one OpenAPI server (default 8).
    #[serde(default, rename = "maxConcurrency")]
    pub max_concurrency: Option<usize>,
    /// Credentials for the spec's security schemes (apiKey, bearer, OAuth 2 client credentials).
    #[serde(default)]
    pub auth: Option<openapi_values::ApiAuth>,
    /// How much loading an OpenAPI server's spec may take (parsed size, resolved schemas,
    /// nesting); default [`openapi_values::SpecBudget::default`].
    #[serde(default, rename = "specBudget")]
    pub spec_budget: Option<openapi_values::SpecBudget>,
    /// The server sandbox: docs/server-sandbox.md, `confine_entry`, `tools::catalog::confine`.
    #[serde(default)]
    pub confine: Option<bool>,
    #[serde(default)]
    pub files: confine_entry::FilesConfig,
    #[serde(default)]
    pub limits: confine_entry::LimitsConfig,
    #[serde(default)]
    pub network: network::NetworkPolicy,
    /// Whom this process serves (`default`, a tenant, `tenant/principal`): set by `for_scope`.
    #[serde(skip)]
    pub scope_key: Option<String>,
}

/// Default bound on the tools one server may list (`maxTools`).
pub const DEFAULT_MAX_TOOLS: usize = 2000;
/// Default bound on the bytes of one server's tool list (`maxToolListBytes`): 8 MiB.
pub const DEFAULT_MAX_TOOL_LIST_BYTES: u64 = 8 * 1024 * 1024;
/// Default bound on the `tools/list` pages of one listing (`maxToolListPages`).
pub const DEFAULT_MAX_TOOL_LIST_PAGES: usize = 100;

/// Who shares one process of a server (`scope` in a server entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerScope {
    /// One process serves every caller: what one tenant leaves in it, another can read.
    Shared,
    /// One process per tenant.
    Tenant,
    /// One process per principal (within its tenant).
    Principal,
}

/// Default idle time after which a scoped server's process is stopped.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 10 * 60 * 1000;
/// Default cap on a scoped server's processes alive at once.
pub const DEFAULT_MAX_INSTANCES: usize = 32;

/// OAuth settings of a remote server (`"oauth": {}` turns it on).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// Scopes to ask for; empty: what the server's metadata suggests.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The client name used in dynamic client registration (default "mcp-sandbox").
    #[serde(default, rename = "clientName")]
    pub client_name: Option<String>,
}

/// Default start-up timeout of an MCP server.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 10_000;
