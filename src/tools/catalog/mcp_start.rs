//! Starting the configured MCP servers: all in parallel, each within its start-up timeout, as
//! one shared process or scoped (one per tenant or principal, `scoped_server`), or an OpenAPI
//! server (`tools::openapi`: no process, its spec read).

use super::mcp_client::McpServer;
use super::ToolProvider;
use crate::config::{Config, ServerConfig};
use std::sync::Arc;
use std::time::Duration;

/// Starts one configured server: shared, or scoped (one process per tenant or principal).
async fn start_one(
    name: &str,
    server: &ServerConfig,
    cwd: &std::path::Path,
    timeout: Duration,
) -> Result<Arc<dyn ToolProvider>, String> {
    if server.is_openapi() {
        let s = crate::tools::openapi::OpenApiServer::start(name, server, cwd).await?;
        return Ok(Arc::new(s));
    }
    if server.scope() == crate::config::ServerScope::Shared {
        let s = McpServer::start(name, server, cwd).await?;
        s.set_restart_timeout(timeout);
        Ok(Arc::new(s))
    } else {
        let s = super::scoped_server::ScopedServer::start(name, server, cwd, timeout).await?;
        Ok(Arc::new(s))
    }
}

/// Starts every configured server in parallel, each bounded by its `startupTimeoutMs`, or by
/// `timeout` when the config does not set one. Returns the servers that started and, for the
/// others, the reason.
pub async fn start_mcp_servers(
    config: &Config,
    timeout: Duration,
) -> (Vec<Arc<dyn ToolProvider>>, Vec<(String, String)>) {
    start_some_mcp_servers(config, None, Some(timeout)).await
}

/// Starts the configured servers named in `only` (all when `None`) in parallel, each bounded by
/// its `startupTimeoutMs` (default 10 s, or `default_timeout`).
pub async fn start_some_mcp_servers(
    config: &Config,
    only: Option<&std::collections::BTreeSet<String>>,
    default_timeout: Option<Duration>,
) -> (Vec<Arc<dyn ToolProvider>>, Vec<(String, String)>) {
    let chosen = config
        .servers
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| o.contains(*name)));
    let starts = chosen.map(|(name, server)| {
        let cwd = config.server_cwd(server);
        let timeout = match (server.startup_timeout_ms, default_timeout) {
            (None, Some(t)) => t,
            _ => server.startup_timeout(),
        };
        async move {
            let r = tokio::time::timeout(timeout, start_one(name, server, &cwd, timeout)).await;
            let r = match r {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "did not finish starting within {} ms",
                    timeout.as_millis()
                )),
            };
            (name.clone(), r)
        }
    });
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (name, r) in futures::future::join_all(starts).await {
        match r {
            Ok(s) => ok.push(s),
            Err(reason) => {
                // Reported once, by the caller (the CLI's warning, an outcome's error).
                tracing::debug!(server = %name, "MCP server unavailable: {reason}");
                failed.push((name, reason));
            }
        }
    }
    (ok, failed)
}
