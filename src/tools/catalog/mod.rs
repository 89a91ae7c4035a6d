//! The tools a script can call, grouped by server: real MCP servers over stdio and in-process
//! tools registered from Rust. The session routes every call through [`ToolProvider`].

mod backoff;
pub mod confine;
pub mod group_reaper;
pub mod http_transport;
mod in_process;
mod input_rounds;
pub mod line_guard;
mod mcp_client;
mod mcp_result;
mod mcp_start;
mod mcp_watcher;
pub use mcp_watcher::{on_relist, RelistHook};
mod notification_order;
pub mod oauth;
pub mod oauth_store;
pub mod process_tree;
mod scoped_server;
pub mod server_env;
pub mod spawn_thread;
mod stderr_excerpt;
mod stdio_transport;
mod tool_list;
mod unavailable;
pub use unavailable::unavailable_code;

pub use in_process::InProcessServer;
pub use mcp_client::McpServer;
pub use mcp_result::map_result;
pub use mcp_start::{start_mcp_servers, start_some_mcp_servers};
pub use sandbox_runner::protocol::valid_server_name;
pub use scoped_server::ScopedServer;

/// MCP server processes restarted after they died, by server (the metrics'
/// `mcp_server_restarts_total`; names come from the config).
static RESTARTS: std::sync::Mutex<BTreeMap<String, u64>> = std::sync::Mutex::new(BTreeMap::new());

fn count_restart(server: &str) {
    if let Ok(mut r) = RESTARTS.lock() {
        *r.entry(server.to_string()).or_default() += 1;
    }
}

/// Restarts so far, by server.
pub fn server_restarts() -> Vec<(String, u64)> {
    RESTARTS
        .lock()
        .map(|r| r.iter().map(|(k, v)| (k.clone(), *v)).collect())
        .unwrap_or_default()
}

use crate::error::ExecError;
use futures::future::BoxFuture;
use sandbox_runner::protocol::{is_reserved_name, ToolRef, UnavailableServer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Longest server or tool name the host accepts from a runner (the MCP limit for tool names).
pub const MAX_NAME_BYTES: usize = 128;

/// What a script (and an agent searching tools) knows about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub server: String,
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
}

impl ToolInfo {
    /// `server:tool`, the name used in traces and policies.
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.server, self.name)
    }
}

/// What the session knows about one call when it routes it.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The trace id of this call (`tool_start`/`tool_end`); nested work uses it as its parent.
    pub trace_id: String,
    /// When the whole execution must be over; a provider must not outlive it.
    pub deadline: std::time::Instant,
    /// Trace events of nested work (a capability's own calls), pushed by the provider before
    /// its call returns; the session merges them into the execution's traces.
    pub children: TraceSink,
    /// The request the call serves: nested work (a capability's own calls) obeys its policy
    /// and limits, and belongs to its trace.
    pub request: std::sync::Arc<crate::context::RequestContext>,
    /// Where the server's progress and log messages for this call go (`None`: dropped).
    pub feedback: Option<crate::tools::passthrough::FeedbackRef>,
    /// Where nested calls note their arguments for the audit log (the caller's sink).
    pub audit_args: Option<crate::store::audit_options::ArgsSink>,
}

impl CallContext {
    /// A context with an empty sink for nested events and a default request (allow-all policy).
    pub fn new(trace_id: impl Into<String>, deadline: std::time::Instant) -> Self {
        CallContext {
            trace_id: trace_id.into(),
            deadline,
            children: TraceSink::default(),
            request: Default::default(),
            feedback: None,
            audit_args: None,
        }
    }
}

/// Where a provider hands back the trace events of nested work.
pub type TraceSink = Arc<std::sync::Mutex<Vec<crate::trace::TraceEvent>>>;

/// One server's worth of tools.
pub trait ToolProvider: Send + Sync {
    /// The server name (`mcp.<name>`).
    fn name(&self) -> &str;
    /// The tools it offers now.
    fn tools(&self) -> Vec<ToolInfo>;
    /// Whether it offers `tool` now (called for every tool call: keep it cheap).
    fn has_tool(&self, tool: &str) -> bool {
        self.tools().iter().any(|t| t.name == tool)
    }
    /// One tool's description and schemas (called for every tool call: keep it cheap).
    fn tool(&self, tool: &str) -> Option<ToolInfo> {
        self.tools().into_iter().find(|t| t.name == tool)
    }
    /// Calls one tool. The future must be cancel-safe: dropping it abandons the call.
    fn call(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>>;
    /// Whether its calls are capability calls (traced as `capability_start`/`capability_end`).
    fn is_capability(&self) -> bool {
        false
    }
    /// The transport named in its calls' traces when it is not a local one (`http` for a
    /// remote MCP server); `None` for stdio servers and in-process tools.
    fn transport(&self) -> Option<&'static str> {
        None
    }
    /// Stops whatever the provider runs (child processes). Later calls fail.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Every server the host knows, and those that are configured but unusable (with the reason).
#[derive(Clone, Default)]
pub struct Catalog {
    providers: BTreeMap<String, Arc<dyn ToolProvider>>,
    unavailable: BTreeMap<String, String>,
    /// Compiled `inputSchema` validators, shared by every execution on this catalog.
    validators: Arc<crate::tools::schema::ValidatorCache>,
    /// Per-server `maxArgBytes` from the config.
    arg_limits: BTreeMap<String, u64>,
}

/// A server name that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CatalogError {
    #[error("server name '{0}' is not allowed: use letters, digits, '_' or '-', and not a JavaScript built-in name")]
    BadName(String),
    #[error("server '{0}' is registered twice")]
    Duplicate(String),
}

impl Catalog {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, provider: Arc<dyn ToolProvider>) -> Result<(), CatalogError> {
        let name = provider.name().to_string();
        if !valid_server_name(&name) {
            return Err(CatalogError::BadName(name));
        }
        if self.providers.contains_key(&name) || self.unavailable.contains_key(&name) {
            return Err(CatalogError::Duplicate(name));
        }
        self.providers.insert(name, provider);
        Ok(())
    }

    /// Records a configured server that could not be started.
    pub fn add_unavailable(&mut self, name: impl Into<String>, reason: impl Into<String>) {
        self.unavailable.insert(name.into(), reason.into());
    }

    /// Sets the largest serialized arguments of one call to `server` (the config's
    /// `maxArgBytes`), replacing the execution's `max_arg_bytes` for it.
    pub fn set_max_arg_bytes(&mut self, server: impl Into<String>, bytes: u64) {
        self.arg_limits.insert(server.into(), bytes);
    }

    /// The per-server argument limit, when the config sets one.
    pub fn max_arg_bytes(&self, server: &str) -> Option<u64> {
        self.arg_limits.get(server).copied()
    }

    pub fn provider(&self, server: &str) -> Option<&Arc<dyn ToolProvider>> {
        self.providers.get(server)
    }

    /// Whether any server is configured (started or not).
    pub fn has_servers(&self) -> bool {
        !self.providers.is_empty() || !self.unavailable.is_empty()
    }

    pub fn unavailable(&self) -> &BTreeMap<String, String> {
        &self.unavailable
    }

    /// One tool of one available server.
    pub fn tool(&self, server: &str, name: &str) -> Option<ToolInfo> {
        if is_reserved_name(name) {
            return None;
        }
        self.providers.get(server)?.tool(name)
    }

    pub fn validators(&self) -> &crate::tools::schema::ValidatorCache {
        &self.validators
    }

    /// Whether `server` offers `tool` (reserved names never count).
    pub fn has_tool(&self, server: &str, tool: &str) -> bool {
        !is_reserved_name(tool) && self.providers.get(server).is_some_and(|p| p.has_tool(tool))
    }

    /// Every tool of every available server, sorted by server then name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let mut all: Vec<ToolInfo> = self
            .providers
            .values()
            .flat_map(|p| p.tools())
            .filter(|t| !is_reserved_name(&t.name))
            .collect();
        all.sort_by(|a, b| (&a.server, &a.name).cmp(&(&b.server, &b.name)));
        all
    }

    /// The tool list as the runner receives it.
    pub fn tool_refs(&self) -> Vec<ToolRef> {
        self.tools()
            .into_iter()
            .map(|t| ToolRef {
                server: t.server,
                name: t.name,
            })
            .collect()
    }

    /// Shuts every provider down (MCP servers get their stdin closed, then are killed).
    pub async fn shutdown(&self) {
        futures::future::join_all(self.providers.values().map(|p| p.shutdown())).await;
    }

    pub fn unavailable_servers(&self) -> Vec<UnavailableServer> {
        self.unavailable
            .iter()
            .map(|(s, r)| UnavailableServer {
                server: s.clone(),
                reason: r.clone(),
                code: match unavailable_code(r) {
                    crate::error::ErrorCode::ServerUnavailable => None,
                    other => Some(other.as_str().to_string()),
                },
            })
            .collect()
    }
}

/// An error and its sources, joined with ": ", for a "why is this server unavailable" message.
/// reqwest and rmcp put the useful part ("Connection refused", "dns error", the certificate
/// problem) deep in the sources, and rmcp's HTTP error does not link its client error as a
/// source: it is followed here. A part that repeats a later one (a wrapper quoting its cause)
/// is left out. At most 8 levels.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if parts.len() >= 8 {
            break;
        }
        if let Some(rmcp::service::ClientInitializeError::TransportError { error, context }) =
            err.downcast_ref::<rmcp::service::ClientInitializeError>()
        {
            parts.push(format!(
                "transport error on {}",
                context.trim_start_matches("send ")
            ));
            next = Some(error.error.as_ref());
            continue;
        }
        if let Some(rmcp::service::ServiceError::TransportSend(error)) =
            err.downcast_ref::<rmcp::service::ServiceError>()
        {
            next = Some(error.error.as_ref());
            continue;
        }
        match err.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(inner)) => {
                next = Some(inner);
                continue;
            }
            Some(StreamableHttpError::AuthRequired(_)) => {
                parts.push(
                    "HTTP 401 Unauthorized: the server wants credentials (check the server's headers)"
                        .to_string(),
                );
                break;
            }
            _ => {}
        }
        parts.push(tidy(&err.to_string()));
        next = err.source();
    }
    let kept: Vec<&String> = parts
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            !parts[i + 1..]
                .iter()
                .any(|later| p.contains(later.as_str()))
        })
        .map(|(_, p)| p)
        .collect();
    kept.iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(": ")
}

/// One part of [`error_chain`]: rmcp's transport type names cut out, at most 300 characters
/// (a server's error page can be long).
fn tidy(text: &str) -> String {
    let mut text = text.to_string();
    while let Some(start) = text.find("Transport [") {
        let Some(end) = text[start..].find("] error: ") else {
            break;
        };
        text.replace_range(start..start + end + "] error: ".len(), "");
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > 300 {
        let cut: String = text.chars().take(300).collect();
        format!("{cut}…")
    } else {
        text
    }
}
