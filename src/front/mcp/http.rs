//! The streamable HTTP front: our own accept loop (a connection cap, header-read and keep-alive
//! timeouts, a write-stall timeout) and one middleware in front of rmcp's service that checks
//! each message ([`super::jsonrpc`]), caps sessions (in total and per client address), expires
//! sessions whose handshake does not complete, and cancels a deleted session's executions.

use super::jsonrpc;
use super::sessions::SESSION_HEADER;
use super::{Gateway, GatewayServer};
use crate::front::cli::UsageError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Largest request body (rmcp's own bound; over it: 413).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The bounds of the HTTP front (flags of `serve`; defaults in `ServeArgs`).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Browser origins allowed besides the loopback ones (those only when bound to loopback).
    pub allowed_origins: Vec<String>,
    /// A request's header must arrive within this; an idle keep-alive connection closes after it.
    pub header_timeout: Duration,
    /// Connections open at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// A response write that waits longer than this (the client does not read) closes the
    /// connection.
    pub write_timeout: Duration,
    /// Sessions at once (503 past it) and per client address (429 past it).
    pub max_sessions: usize,
    pub max_sessions_per_client: usize,
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

/// How long rmcp keeps a finished request's answers for a resuming client.
pub const COMPLETED_CACHE_TTL: Duration = Duration::from_secs(5);

/// How long a client is told to wait when the server is full.
const RETRY_AFTER_SECS: &str = "5";
/// How long a closing transport may take to send the last answers.
const TRANSPORT_CLOSE: Duration = Duration::from_secs(3);

/// The client's address, put on every request by the accept loop.
#[derive(Debug, Clone, Copy)]
struct ClientAddr(IpAddr);

#[derive(Debug)]
struct SessionInfo {
    client: IpAddr,
    created: Instant,
    initialized: bool,
    /// The principal that opened the session; no other may use it.
    principal: String,
}

/// What the middleware shares.
struct Front {
    gateway: Arc<Gateway>,
    manager: Arc<LocalSessionManager>,
    sessions: Mutex<HashMap<String, SessionInfo>>,
    /// Initializations admitted and not answered yet, per client: counted against the caps so
    /// concurrent requests cannot all pass the check.
    reserved: Mutex<HashMap<IpAddr, usize>>,
    opts: HttpOptions,
    /// Permits for [`MAX_BUFFERED_BODY_BYTES`].
    bodies: Arc<Semaphore>,
    /// `None`: no authentication (loopback only); every caller is `anonymous`.
    auth: super::auth::SharedAuth,
}

impl Front {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionInfo>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends sessions whose handshake is overdue; forgets sessions rmcp has closed.
    async fn reap(&self) {
        let alive: std::collections::HashSet<String> = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .map(|k| k.to_string())
            .collect();
        let overdue: Vec<String> = {
            let mut sessions = self.sessions();
            sessions.retain(|id, _| alive.contains(id));
            sessions
                .iter()
                .filter(|(_, s)| {
                    !s.initialized && s.created.elapsed() > self.opts.handshake_timeout
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in overdue {
            tracing::info!(session = %id, "the handshake did not complete in time; closing the session");
            self.sessions().remove(&id);
            let _ = self.manager.close_session(&id.clone().into()).await;
        }
        self.gateway.sessions.retain(|id| alive.contains(id));
        self.gateway.responses.expire(self.opts.write_timeout * 2);
    }
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let mut r = (
        status,
        [("content-type", "application/json")],
        serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": message}})
            .to_string(),
    )
        .into_response();
    if matches!(
        status,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
    ) {
        r.headers_mut()
            .insert("retry-after", HeaderValue::from_static(RETRY_AFTER_SECS));
    }
    r
}

fn rpc_refusal(r: &jsonrpc::Refusal) -> Response {
    // A well-formed request with bad params is answered like any request; malformed messages
    // are a client error.
    let status = if r.code == jsonrpc::INVALID_PARAMS && !r.id.is_null() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    (
        status,
        [("content-type", "application/json")],
        r.to_json().to_string(),
    )
        .into_response()
}

async fn guard(State(front): State<Arc<Front>>, mut req: Request, next: Next) -> Response {
    // Who is calling, before anything else is looked at.
    let principal = match &front.auth {
        None => crate::context::principal::Principal::anonymous(),
        Some(auth) => match auth.authenticate(req.headers()).await {
            Ok(p) => p,
            Err(failure) => return auth.refusal(&failure),
        },
    };
    let principal = Arc::new(principal);
    req.extensions_mut().insert(principal.clone());
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let client = req.extensions().get::<ClientAddr>().map(|c| c.0);
    if let Some(id) = &session {
        let owner = front.sessions().get(id).map(|s| s.principal.clone());
        if owner.is_some_and(|o| o != principal.name) {
            return refuse(
                StatusCode::FORBIDDEN,
                "this session was opened by another principal; open your own session (initialize)",
            );
        }
    }
    match *req.method() {
        Method::DELETE => {
            let response = next.run(req).await;
            if let (Some(id), true) = (session, response.status().is_success()) {
                front.sessions().remove(&id);
                front.gateway.sessions.end(&id);
            }
            response
        }
        Method::POST => {
            let (parts, body) = req.into_parts();
            let expected = parts
                .headers
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(MAX_BODY_BYTES)
                .min(MAX_BODY_BYTES);
            let permits = u32::try_from(expected.max(1)).unwrap_or(u32::MAX);
            let budget = front.bodies.clone().acquire_many_owned(permits);
            let _budget = match tokio::time::timeout(front.opts.header_timeout, budget).await {
                Ok(Ok(p)) => p,
                _ => {
                    return refuse(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the server is reading too many large requests; retry later",
                    )
                }
            };
            let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
                Ok(b) => b,
                Err(_) => {
                    return refuse(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
                    )
                }
            };
            let message = match jsonrpc::check(&bytes) {
                Ok(m) => m,
                Err(r) => return rpc_refusal(&r),
            };
            // Code over the operator's source limit is refused here, before rmcp parses it
            // again (and before it could wait for a runner).
            if let (Some(len), Some(id)) = (message.code_bytes, message.id.clone()) {
                let limit = front.gateway.limits.source_bytes;
                if let Err(e) = super::admission::Admission::check_code(len, limit) {
                    let result = super::execute_code::refused(e);
                    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
                    return (
                        StatusCode::OK,
                        [("content-type", "application/json")],
                        body.to_string(),
                    )
                        .into_response();
                }
            }
            // Rate limits apply to executions, counted from arrival until the answer is sent.
            let mut rate_permit = None;
            if message.code_bytes.is_some() {
                let rate = front.gateway.rate_of(&principal);
                match front.gateway.rate.acquire(&principal.name, rate) {
                    Ok(p) => rate_permit = p,
                    Err(refusal) => return rate_refused(message.id.clone(), &refusal),
                }
            }
            let method = message.method.as_deref();
            let mut reservation = None;
            if method == Some("initialize") && session.is_none() {
                match reserve(&front, client) {
                    Ok(r) => reservation = r,
                    Err(response) => return *response,
                }
            }
            if method == Some("notifications/initialized") {
                if let Some(id) = &session {
                    if let Some(s) = front.sessions().get_mut(id) {
                        s.initialized = true;
                    }
                }
            }
            let req = Request::from_parts(parts, Body::from(bytes));
            let response = next.run(req).await;
            if method == Some("initialize") {
                let made = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok());
                if let (Some(id), Some(client)) = (made, client) {
                    front.sessions().insert(
                        id.to_string(),
                        SessionInfo {
                            client,
                            created: Instant::now(),
                            initialized: false,
                            principal: principal.name.clone(),
                        },
                    );
                }
            }
            drop(reservation);
            match (method, message.id) {
                (Some("tools/call"), Some(id)) => {
                    // The answer's room in the response budget is free once the body is sent
                    // (or dropped with its connection).
                    let key = (
                        session.unwrap_or_else(|| "http".to_string()),
                        id.to_string(),
                    );
                    let guard = Delivered {
                        gateway: front.gateway.clone(),
                        key,
                    };
                    let (parts, body) = response.into_parts();
                    let stream = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
                        let _ = (&guard, &rate_permit);
                        chunk
                    });
                    Response::from_parts(parts, Body::from_stream(stream))
                }
                _ => response,
            }
        }
        _ => next.run(req).await,
    }
}

/// 429 with `Retry-After` and a JSON-RPC error whose data has `LIMIT_EXCEEDED`.
fn rate_refused(id: Option<serde_json::Value>, refusal: &super::rate::RateRefusal) -> Response {
    let secs = refusal.retry_after.as_secs().max(1);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!("LIMIT_EXCEEDED: {}", refusal.message),
        "data": {"code": "LIMIT_EXCEEDED", "retry_after_s": secs}}});
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert("retry-after", v);
    }
    r
}

/// Frees an answer's room in the response budget when dropped.
struct Delivered {
    gateway: Arc<Gateway>,
    key: super::responses::AnswerKey,
}

impl Drop for Delivered {
    fn drop(&mut self) {
        self.gateway.responses.delivered(&self.key);
    }
}

/// A place reserved for a session being initialized; given back when dropped (by then the
/// session, if made, is recorded).
struct Reservation {
    front: Arc<Front>,
    client: IpAddr,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut reserved = self
            .front
            .reserved
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = reserved.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                reserved.remove(&self.client);
            }
        }
    }
}

/// Reserves a place for a new session, or answers 503 when the server holds its maximum of
/// sessions and 429 when this client address holds its own.
fn reserve(
    front: &Arc<Front>,
    client: Option<IpAddr>,
) -> Result<Option<Reservation>, Box<Response>> {
    let sessions = front.sessions();
    let mut reserved = front.reserved.lock().unwrap_or_else(|p| p.into_inner());
    let in_flight: usize = reserved.values().sum();
    if sessions.len() + in_flight >= front.opts.max_sessions {
        return Err(Box::new(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "the server holds its maximum of {} sessions (--max-sessions); retry later",
                front.opts.max_sessions
            ),
        )));
    }
    let Some(client) = client else {
        return Ok(None);
    };
    let mine = sessions.values().filter(|s| s.client == client).count()
        + reserved.get(&client).copied().unwrap_or(0);
    if mine >= front.opts.max_sessions_per_client {
        return Err(Box::new(refuse(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "this client address holds its maximum of {} sessions (--max-sessions-per-client); end some (DELETE) or retry later",
                front.opts.max_sessions_per_client
            ),
        )));
    }
    *reserved.entry(client).or_default() += 1;
    Ok(Some(Reservation {
        front: front.clone(),
        client,
    }))
}

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
    let mut origins = opts.allowed_origins.clone();
    if addr.ip().is_loopback() {
        origins.extend(loopback_origins());
    }
    // Requests without `Origin` (non-browser clients) pass; a present one must be allowed.
    config = config
        .with_allowed_origins(origins)
        .enforce_origin_validation();
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
        opts: opts.clone(),
        bodies: Arc::new(Semaphore::new(MAX_BUFFERED_BODY_BYTES)),
        auth: auth.clone(),
    });
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(front.clone(), guard));
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
    let reaper = {
        let front = front.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tokio::select! {
                    _ = tick.tick() => front.reap().await,
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

/// Serves HTTP/1.1 on one accepted connection (plain or TLS) until it ends or `stop` fires.
async fn serve_connection<S>(
    stream: S,
    peer: SocketAddr,
    router: axum::Router,
    opts: HttpOptions,
    stop: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ClientAddr(peer.ip()));
        router.clone().oneshot(req.map(Body::new))
    });
    let io = TokioIo::new(StallGuard::new(stream, opts.write_timeout));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(io, svc);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!("connection from {peer} ended: {e}");
            }
        }
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(TRANSPORT_CLOSE, conn).await;
        }
    }
}

/// A connection whose writes may not wait for the client longer than a timeout: a client that
/// does not read its answers loses the connection (and what was buffered for it).
struct StallGuard<S> {
    inner: S,
    timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StallGuard<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        StallGuard {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Called when a write is pending: errors once the stall has lasted the timeout.
    fn check_stall(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        let timeout = self.timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client did not read for {timeout:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Pending => self.check_stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.check_stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// How many over-the-cap connections get their 503 at once; past it they are closed at once.
const REFUSALS_AT_ONCE: usize = 256;

/// Answers 503 to a connection over the cap and closes it without a reset: the request the
/// client already sent is read and dropped (for at most a second and 64 KiB) after our FIN, since
/// closing a socket with unread data sends an RST that can destroy the 503 before the client
/// reads it.
async fn refuse_busy(
    mut stream: tokio::net::TcpStream,
    _refusal: tokio::sync::OwnedSemaphorePermit,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 5\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    let polite = async {
        stream.write_all(BUSY).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut left = 64 * 1024usize;
        while left > 0 {
            let n = stream.read(&mut sink).await?;
            if n == 0 {
                break;
            }
            left = left.saturating_sub(n);
        }
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), polite).await;
}
