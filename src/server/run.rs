//! Starting the server: the catalog (and the state store), then stdio or streamable HTTP until
//! the client leaves (stdio) or SIGINT/SIGTERM arrives. On a signal the server stops taking
//! executions, keeps its transport open while running ones finish (up to `--shutdown-grace-ms`,
//! then their runners are killed and their callers get `SANDBOX_UNAVAILABLE`), shuts the MCP
//! servers down and exits 0. A second signal kills the running executions at once.

use super::{Gateway, GatewayServer};
use crate::cli::{load_catalog, PolicyArgs, RunnerArgs, UsageError};
use crate::config::Config;
use crate::learning_cli::StateArgs;
use crate::sandbox::{QueueOptions, Sandbox};
use crate::shutdown::SignalListener;
use clap::Args;
use rmcp::ServiceExt;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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
    /// On SIGINT/SIGTERM, how long running executions may still take before their runners are
    /// killed.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub shutdown_grace_ms: u64,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub state: StateArgs,
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
    let runner = args.runner.command();
    // Learning is best effort, as for `run`: without a usable state file the server still
    // serves (without capabilities), and the reason is printed.
    let store = match args.state.open(args.config.as_ref().map(|_| &config)) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("mcp-sandbox: warning: serving without the state store: {e}");
            None
        }
    };
    // Listen before starting servers so an early signal still shuts them down cleanly.
    let mut signals = SignalListener::install();
    let catalog = Arc::new(load_catalog(&config).await?);
    let mut sandbox = Sandbox::new(catalog, runner.clone(), QueueOptions::default());
    if let Some(store) = &store {
        sandbox = sandbox.with_learning(crate::capability::Capabilities {
            require_layers: require_layers.clone(),
            ..crate::capability::Capabilities::new(store.clone(), runner)
        });
    }
    let gateway = Arc::new(Gateway {
        sandbox: sandbox.clone(),
        policy,
        limits,
        require_layers,
        store,
    });
    let grace = Duration::from_millis(args.shutdown_grace_ms);
    let stop = CancellationToken::new();
    let transport = async {
        match args.http {
            None => serve_stdio(gateway, stop.clone()).await,
            Some(addr) => serve_http(gateway, addr, args.http_allow_remote, stop.clone()).await,
        }
    };
    tokio::pin!(transport);
    let result = tokio::select! {
        result = &mut transport => {
            // The client left (stdio) or the listener failed: nothing more will arrive.
            sandbox.shutdown(grace).await;
            result
        }
        sig = signals.recv() => {
            tracing::warn!(
                "{sig}: shutting down; running executions have {} ms to finish",
                grace.as_millis()
            );
            // The transport stays open while running executions finish, so their callers
            // get their answers; it closes once the sandbox is down.
            let drain = async {
                tokio::select! {
                    () = sandbox.shutdown(grace) => {}
                    again = signals.recv() => {
                        tracing::warn!("{again} again: killing the running executions now");
                        sandbox.shutdown(Duration::ZERO).await;
                    }
                }
                stop.cancel();
            };
            let ((), result) = tokio::join!(drain, &mut transport);
            eprintln!("mcp-sandbox: {sig}: shut down cleanly");
            result
        }
    };
    result.map(|_| 0)
}

/// How long a closing transport may take to send the last answers.
const TRANSPORT_CLOSE: Duration = Duration::from_secs(3);

async fn serve_stdio(gateway: Arc<Gateway>, stop: CancellationToken) -> Result<(), UsageError> {
    let running = tokio::select! {
        running = GatewayServer::new(gateway).serve(rmcp::transport::stdio()) => running
            .map_err(|e| UsageError(format!("the MCP session did not start: {e}")))?,
        () = stop.cancelled() => return Ok(()),
    };
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = stop.cancelled() => {
            // rmcp sends the answers of finished handlers before it closes the transport.
            cancel.cancel();
            match tokio::time::timeout(TRANSPORT_CLOSE, &mut waiting).await {
                Ok(ended) => ended,
                Err(_) => {
                    tracing::warn!("the MCP session did not close within {TRANSPORT_CLOSE:?}");
                    return Ok(());
                }
            }
        }
    };
    if let Err(e) = ended {
        tracing::warn!("MCP session ended with an error: {e}");
    }
    Ok(())
}

async fn serve_http(
    gateway: Arc<Gateway>,
    addr: SocketAddr,
    allow_remote: bool,
    stop: CancellationToken,
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
    // `serve` cancels `stop` once the sandbox is down (after a signal's grace period).
    let shutdown = ct.clone();
    let stopped = stop.clone();
    tokio::spawn(async move {
        stopped.cancelled().await;
        shutdown.cancel();
    });
    let server = axum::serve(listener, router)
        .with_graceful_shutdown(async move { ct.cancelled_owned().await })
        .into_future();
    tokio::select! {
        result = server => result.map_err(|e| UsageError(format!("HTTP server failed: {e}"))),
        // A client that keeps a stream open must not hold the shutdown up for ever.
        () = async {
            stop.cancelled().await;
            tokio::time::sleep(TRANSPORT_CLOSE).await;
        } => {
            tracing::warn!("HTTP connections were still open {TRANSPORT_CLOSE:?} after shutdown; closing");
            Ok(())
        }
    }
}
