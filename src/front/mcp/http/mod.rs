//! The streamable HTTP front: our own accept loop (a connection cap, header-read and keep-alive
//! timeouts, a write-stall timeout) and one middleware in front of rmcp's service that checks
//! each message ([`super::jsonrpc`]), caps sessions (in total and per client address), expires
//! sessions whose handshake does not complete, and cancels a deleted session's executions.
//! The middleware is [`guard`], one connection [`connection`]; this file sets them up.

mod connection;
mod front_state;
mod guard;
mod kept_sessions;
mod session_delete;

use super::{Gateway, GatewayServer};
use crate::front::cli::UsageError;
use connection::*;
use front_state::*;
use guard::*;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Largest request body (rmcp's own bound; over it: 413).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The bounds of the HTTP front (flags of `serve`; defaults in `ServeArgs`).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Browser origins allowed besides the loopback ones (those only when bound to loopback).
    pub allowed_origins: Vec<String>,
    /// `Host` names answered besides the loopback names and the bound address (`--allow-host`).
    pub allowed_hosts: Vec<String>,
    /// A request's header must arrive within this; an idle keep-alive connection closes after it.
    pub header_timeout: Duration,
    /// A request's body must arrive within this after its header (408 past it).
    pub body_timeout: Duration,
    /// Connections open at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// A response write that waits longer than this (the client does not read) closes the
    /// connection.
    pub write_timeout: Duration,
    /// Sessions at once (503 past it); per client address without authentication and per
    /// principal with it (429 past them).
    pub max_sessions: usize,
    pub max_sessions_per_client: usize,
    pub max_sessions_per_principal: usize,
    /// A session whose handshake (`notifications/initialized`) does not arrive within this ends.
    pub handshake_timeout: Duration,
    /// A session without requests for this long ends.
    pub session_idle: Duration,
    /// Serve HTTPS with this certificate chain and key (PEM files).
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

/// Request bodies read and not yet handed on, in total: past it, reading a body waits (the
/// client's data stays in its socket) up to the header timeout, then 503.
pub const MAX_BUFFERED_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Of [`MAX_BUFFERED_BODY_BYTES`], what one caller may hold at once (one principal with
/// authentication, one client address without): four full bodies. Past it: 429 at once, so
/// one caller's slow bodies cannot exhaust the shared budget.
pub const MAX_BUFFERED_BODY_BYTES_PER_CALLER: usize = 4 * MAX_BODY_BYTES;

/// How long rmcp keeps a finished request's answers for a resuming client.
pub const COMPLETED_CACHE_TTL: Duration = Duration::from_secs(5);

/// How long a client is told to wait when the server is full.
const RETRY_AFTER_SECS: &str = "5";
/// How long a closing transport may take to send the last answers.
const TRANSPORT_CLOSE: Duration = Duration::from_secs(3);

/// What the HTTP front needs to authenticate callers (`sandbox.auth` is configured).
pub struct AuthSetup {
    pub config: crate::config::gateway::AuthConfig,
    pub policies: std::collections::BTreeMap<String, crate::config::gateway::PrincipalPolicy>,
    pub base_dir: std::path::PathBuf,
    pub store: crate::store::Store,
}

/// Origins a browser page on this machine has, allowed when the server is bound to loopback.
fn loopback_origins() -> Vec<String> {
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

pub async fn serve_http(
    gateway: Arc<Gateway>,
    addr: SocketAddr,
    allow_remote: bool,
    opts: HttpOptions,
    auth: Option<AuthSetup>,
    stop: CancellationToken,
) -> Result<(), UsageError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| UsageError(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().unwrap_or(addr);
    // Confined servers' egress proxies refuse the gateway's own ports (issue 59).
    crate::tools::egress::refuse_gateway_ports(&[bound.port()]);
    let tls = match &opts.tls {
        None => None,
        Some((cert, key)) => Some(super::tls::acceptor(cert, key).map_err(UsageError)?),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let auth = match auth {
        None => None,
        Some(setup) => {
            let resource = setup
                .config
                .resource
                .clone()
                .unwrap_or_else(|| format!("{scheme}://{bound}/mcp"));
            let a = super::auth::Authenticator::new(
                &setup.config,
                setup.policies,
                &setup.base_dir,
                setup.store,
                resource,
            )
            .await
            .map_err(UsageError)?;
            Some(Arc::new(a))
        }
    };
    let mut config = StreamableHttpServerConfig::default();
    if allow_remote {
        // The default Host check accepts loopback names only; a remote bind accepts its own address.
        config.allowed_hosts.push(addr.ip().to_string());
        config.allowed_hosts.push(addr.to_string());
    }
    config
        .allowed_hosts
        .extend(opts.allowed_hosts.iter().cloned());
    let metrics_hosts: Arc<[String]> = config.allowed_hosts.clone().into();
    let mut origins = opts.allowed_origins.clone();
    if addr.ip().is_loopback() {
        origins.extend(loopback_origins());
    }
    // Requests without `Origin` (non-browser clients) pass; a present one must be allowed.
    config = config
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    if let Some(store) = &gateway.store {
        config.session_store = Some(Arc::new(kept_sessions::StoredSessions {
            store: store.clone(),
            idle: opts.session_idle,
        }));
    }
    let ct = config.cancellation_token.clone();
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(opts.session_idle);
    session_config.init_timeout = Some(opts.handshake_timeout);
    // rmcp keeps a finished request's answers for late resumption; a short window keeps large
    // answers from staying in memory long after they were sent.
    session_config.completed_cache_ttl = COMPLETED_CACHE_TTL;
    let mut manager = LocalSessionManager::default();
    manager.session_config = session_config;
    let manager = Arc::new(manager);
    let factory_gateway = gateway.clone();
    let service: StreamableHttpService<GatewayServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(GatewayServer::new(factory_gateway.clone())),
            manager.clone(),
            config,
        );
    let front = Arc::new(Front {
        gateway,
        manager,
        sessions: Mutex::new(HashMap::new()),
        reserved: Mutex::new(HashMap::new()),
        body_shares: Mutex::new(HashMap::new()),
        opts: opts.clone(),
        bodies: Arc::new(Semaphore::new(MAX_BUFFERED_BODY_BYTES)),
        auth: auth.clone(),
        ui_limits: Arc::default(),
    });
    // The web view (`/ui`) reads the state store: its API sits behind the same guard, its page
    // (no data in it) does not, so a browser can load it before it holds a credential.
    let ui = front.gateway.store.clone().map(|store| {
        crate::front::ui::router(
            store,
            crate::front::ui::UiAccess::Gateway {
                policies: Arc::new(front.gateway.policies.clone()),
                authenticated: auth.is_some(),
                pending: Some(front.gateway.pending.clone()),
                limits: front.ui_limits.clone(),
            },
        )
    });
    let ui = ui.transpose().map_err(|e| {
        UsageError(format!(
            "the web view cannot open its read connection to the state store: {e}"
        ))
    })?;
    let (ui_page, ui_api) = ui.unzip();
    // `/metrics` sits behind the same guard: with sandbox.auth on, a scrape needs a credential.
    // ...and answers only to the Host names `/mcp` answers to (DNS rebinding).
    let metrics_sandbox = front.gateway.sandbox.clone();
    let router = axum::Router::new()
        .merge(ui_api.unwrap_or_default())
        .nest_service("/mcp", service)
        .route(
            "/metrics",
            axum::routing::get(move |headers: axum::http::HeaderMap| {
                let (sandbox, hosts) = (metrics_sandbox.clone(), metrics_hosts.clone());
                async move { super::metrics::answer_to(sandbox, &headers, &hosts).await }
            }),
        )
        .layer(axum::middleware::from_fn(
            session_delete::session_delete_answer,
        ))
        .layer(axum::middleware::from_fn_with_state(front.clone(), guard));
    let router = router.merge(ui_page.unwrap_or_default());
    // The liveness answer of probes (Kubernetes, systemd, load balancers): no credential, no
    // data, the same for every Host.
    let router = router.route("/healthz", axum::routing::get(super::health::answer));
    // The protected-resource metadata is public (clients read it to learn how to authenticate).
    let router = match &auth {
        None => router,
        Some(a) => {
            let doc = a.metadata().to_string();
            let answer = move || {
                let doc = doc.clone();
                async move { ([("content-type", "application/json")], doc) }
            };
            router
                .route(
                    super::auth::METADATA_PATH,
                    axum::routing::get(answer.clone()),
                )
                .route(
                    &format!("{}/mcp", super::auth::METADATA_PATH),
                    axum::routing::get(answer),
                )
        }
    };
    eprintln!(
        "mcp-sandbox: authentication: {}",
        match &auth {
            Some(a) => a.describe(),
            None => "off (no sandbox.auth in the config; loopback only)".to_string(),
        }
    );
    // Scripts and tests read this line to find the port when ADDR ends in :0.
    if tls.is_some() {
        eprintln!("mcp-sandbox: serving MCP over HTTPS at https://{bound}/mcp");
    } else {
        eprintln!("mcp-sandbox: serving MCP over HTTP at http://{bound}/mcp");
    }
    if front.gateway.store.is_some() {
        eprintln!("mcp-sandbox: web view at {scheme}://{bound}/ui");
    }
    let reaper = {
        let front = front.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            let mut renewed = std::time::Instant::now();
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        front.reap().await;
                        kept_sessions::renew(&front, &mut renewed).await;
                    }
                    () = stop.cancelled() => break,
                }
            }
        })
    };
    let conns = Arc::new(Semaphore::new(opts.max_connections));
    // Connections being refused politely at once (past it they are just closed).
    let refusals = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        // Answers end with small writes (the SSE event, the chunk terminator): without
        // TCP_NODELAY the last one waits for the client's delayed ACK (~40 ms on Linux) before
        // it leaves, and every client that reads an answer to its end pays that per request.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY on the connection from {peer}: {e}");
        }
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            // Over the connection cap: say so and close.
            match refusals.clone().try_acquire_owned() {
                Ok(refusal) => {
                    tokio::spawn(refuse_busy(stream, refusal));
                }
                Err(_) => drop(stream),
            }
            continue;
        };
        let router = router.clone();
        let stop = stop.clone();
        let opts = opts.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                None => serve_connection(stream, peer, router, opts, stop).await,
                Some(acceptor) => {
                    // The handshake gets the header timeout, like a request's head.
                    match tokio::time::timeout(opts.header_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(s)) => serve_connection(s, peer, router, opts, stop).await,
                        Ok(Err(e)) => tracing::debug!("TLS handshake with {peer} failed: {e}"),
                        Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
                    }
                }
            }
        });
    }
    // `serve` cancels `stop` once the sandbox is down (after a signal's grace period).
    ct.cancel();
    reaper.abort();
    // Open connections get a moment to send their last answers.
    let all = u32::try_from(opts.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(TRANSPORT_CLOSE, conns.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(
            "HTTP connections were still open {TRANSPORT_CLOSE:?} after shutdown; closing"
        );
    }
    Ok(())
}
