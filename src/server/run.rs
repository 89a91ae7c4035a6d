//! Starting the server: the catalog, then stdio or streamable HTTP until the client leaves (stdio)
//! or the process is interrupted (HTTP).

use super::{Gateway, GatewayServer};
use crate::cli::{load_catalog, PolicyArgs, RunnerArgs, UsageError};
use crate::config::Config;
use crate::sandbox::{QueueOptions, Sandbox};
use clap::Args;
use rmcp::ServiceExt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// MCP servers configuration (`{"mcpServers": {...}}`).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Serve streamable HTTP at this address (path /mcp) instead of stdio, e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Allow --http on a non-loopback address. Anyone who can reach it can run code against
    /// your MCP servers: put authentication in front of it.
    #[arg(long, requires = "http")]
    pub http_allow_remote: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

/// `mcp-sandbox serve`. Returns the exit status.
pub async fn serve(args: ServeArgs) -> Result<i32, UsageError> {
    if let Some(addr) = args.http {
        if !addr.ip().is_loopback() && !args.http_allow_remote {
            return Err(UsageError(format!(
                "--http {addr} is not a loopback address; anyone who can reach it could run code against your MCP servers. Use 127.0.0.1, or add --http-allow-remote"
            )));
        }
    }
    let config = match &args.config {
        Some(p) => Config::load(p).map_err(|e| UsageError(e.to_string()))?,
        None => Config::default(),
    };
    let policy = args.policy.policy(&config)?;
    let require_layers = args.runner.required_layers()?;
    let limits = config.sandbox.limits.unwrap_or_default();
    let catalog = Arc::new(load_catalog(&config).await?);
    let gateway = Arc::new(Gateway {
        sandbox: Sandbox::new(
            catalog.clone(),
            args.runner.command(),
            QueueOptions::default(),
        ),
        policy,
        limits,
        require_layers,
    });
    let result = match args.http {
        None => serve_stdio(gateway).await,
        Some(addr) => serve_http(gateway, addr, args.http_allow_remote).await,
    };
    catalog.shutdown().await;
    result.map(|_| 0)
}

async fn serve_stdio(gateway: Arc<Gateway>) -> Result<(), UsageError> {
    let running = GatewayServer::new(gateway)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| UsageError(format!("the MCP session did not start: {e}")))?;
    if let Err(e) = running.waiting().await {
        tracing::warn!("MCP session ended with an error: {e}");
    }
    Ok(())
}

async fn serve_http(
    gateway: Arc<Gateway>,
    addr: SocketAddr,
    allow_remote: bool,
) -> Result<(), UsageError> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let mut config = StreamableHttpServerConfig::default();
    if allow_remote {
        // The default Host check accepts loopback names only; a remote bind accepts its own address.
        config.allowed_hosts.push(addr.ip().to_string());
        config.allowed_hosts.push(addr.to_string());
    }
    let ct = config.cancellation_token.clone();
    let service: StreamableHttpService<GatewayServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(GatewayServer::new(gateway.clone())),
            Default::default(),
            config,
        );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| UsageError(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().unwrap_or(addr);
    // Scripts and tests read this line to find the port when ADDR ends in :0.
    eprintln!("mcp-sandbox: serving MCP over HTTP at http://{bound}/mcp");
    let shutdown = ct.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.cancel();
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { ct.cancelled_owned().await })
        .await
        .map_err(|e| UsageError(format!("HTTP server failed: {e}")))
}
