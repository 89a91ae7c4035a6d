//! The tools a script can call, grouped by server: real MCP servers over stdio and in-process
//! tools registered from Rust. The session routes every call through [`ToolProvider`].

mod in_process;
mod mcp_client;
pub mod process_tree;
pub mod server_env;

pub use in_process::InProcessServer;
pub use mcp_client::{start_mcp_servers, start_some_mcp_servers, McpServer};

use crate::error::ExecError;
use futures::future::BoxFuture;
use sandbox_runner::protocol::{is_reserved_name, ToolRef, UnavailableServer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

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
    /// The caller's policy: nested work (a capability's own calls) obeys it too.
    pub policy: crate::policy::Policy,
    /// Where nested calls note their arguments for the audit log (the caller's sink).
    pub audit_args: Option<crate::audit::ArgsSink>,
}

impl CallContext {
    /// A context with an empty sink for nested events and an allow-all policy.
    pub fn new(trace_id: impl Into<String>, deadline: std::time::Instant) -> Self {
        CallContext {
            trace_id: trace_id.into(),
            deadline,
            children: TraceSink::default(),
            policy: crate::policy::Policy::default(),
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
    validators: Arc<crate::validate::ValidatorCache>,
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

/// Whether `name` can name a server: non-empty, no ':' (used in `server:tool`), not reserved.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !is_reserved_name(name)
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

    pub fn validators(&self) -> &crate::validate::ValidatorCache {
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
            })
            .collect()
    }
}
