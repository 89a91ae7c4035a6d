//! Starting the server: the catalog (and the state store), then stdio or streamable HTTP until
//! the client leaves (stdio) or SIGINT/SIGTERM arrives. On a signal the server stops taking
//! executions, keeps its transport open while running ones finish (up to `--shutdown-grace-ms`,
//! then their runners are killed and their callers get `SANDBOX_UNAVAILABLE`), shuts the MCP
//! servers down and exits 0. A second signal kills the running executions at once.

use super::{Gateway, GatewayServer};
use crate::config::Config;
use crate::front::cli::learning::StateArgs;
use crate::front::cli::{load_catalog, PolicyArgs, RunnerArgs, UsageError};
use crate::front::shutdown::SignalListener;
use crate::sandbox::{QueueOptions, Sandbox};
use clap::Args;
use rmcp::ServiceExt;
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
    /// stdio: serve Prometheus metrics at http://ADDR/metrics (loopback only, e.g.
    /// 127.0.0.1:9464). `--http` serves /metrics on its own listener.
    #[arg(long, value_name = "ADDR", conflicts_with = "http")]
    pub metrics: Option<SocketAddr>,
    /// Allow --http on a non-loopback address. The config must also configure authentication
    /// (sandbox.auth): without it the server refuses to start.
    #[arg(long, requires = "http")]
    pub http_allow_remote: bool,
    /// HTTP: serve HTTPS with this certificate chain (PEM; leaf first). Needs --tls-key.
    #[arg(long, value_name = "PEM", requires_all = ["http", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// HTTP: the private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// On SIGINT/SIGTERM, how long running executions may still take before their runners are
    /// killed.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub shutdown_grace_ms: u64,
    /// Largest `context` of one execute_code request, in bytes of JSON (refused on arrival with
    /// LIMIT_EXCEEDED).
    #[arg(long, value_name = "BYTES", default_value_t = super::admission::DEFAULT_MAX_CONTEXT_BYTES)]
    pub max_context_bytes: u64,
    /// Bytes of code and context that admitted, unfinished executions may hold in total (running
    /// and queued); a request past it is refused at once with LIMIT_EXCEEDED.
    #[arg(long, value_name = "BYTES", default_value_t = super::admission::DEFAULT_MAX_QUEUED_BYTES)]
    pub max_queued_bytes: u64,
    /// A browser origin allowed to call the HTTP server (repeatable; e.g. https://app.example:443).
    /// Requests carrying any other `Origin` get 403; requests without one are allowed. On a
    /// loopback address, http://localhost, 127.0.0.1 and [::1] (any port) are allowed too.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// A `Host` name (or name:port) the HTTP server answers to besides its own address
    /// (repeatable; e.g. the name of a load balancer or a Kubernetes Service). Requests naming
    /// any other host get 403 (DNS rebinding).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http", value_parser = host_name)]
    pub allow_hosts: Vec<String>,
    /// HTTP: a request's header must arrive within this, and an idle keep-alive connection is
    /// closed after it.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,
    /// HTTP: a request's body must arrive within this once its header has (408 past it), so a
    /// client sending a byte now and then cannot hold its share of the body budget.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub body_timeout_ms: u64,
    /// HTTP: connections open at once; more are answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,
    /// A client that does not read an answer within this loses its connection (HTTP) or its
    /// session (stdio); the execution's outcome is still recorded.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub write_timeout_ms: u64,
    /// Bytes of execute_code answers not yet written to their clients, in total; an answer
    /// that does not fit is replaced by LIMIT_EXCEEDED (the execution was still recorded).
    #[arg(long, value_name = "BYTES", default_value_t = super::responses::DEFAULT_MAX_BUFFERED_RESPONSE_BYTES)]
    pub max_buffered_response_bytes: u64,
    /// HTTP: sessions at once (503 with Retry-After past it).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_sessions: usize,
    /// HTTP without authentication: sessions per client address (429 with Retry-After past
    /// it).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_sessions_per_client: usize,
    /// HTTP with authentication: sessions per principal (429 with Retry-After past it); the
    /// address does not count then (callers behind one proxy share it).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_sessions_per_principal: usize,
    /// HTTP: a session whose handshake (notifications/initialized) does not arrive within this
    /// is closed.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub handshake_timeout_ms: u64,
    /// HTTP: a session without requests for this long is closed.
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    pub session_idle_ms: u64,
    /// save_capability: largest code of one capability (LIMIT_EXCEEDED past it).
    #[arg(long, value_name = "BYTES", default_value_t = 256 * 1024)]
    pub capability_max_code_bytes: u64,
    /// save_capability: versions kept per name (older ones are deleted).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub capability_max_versions: u64,
    /// save_capability: bytes all stored capabilities may hold together (LIMIT_EXCEEDED past it).
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024)]
    pub capability_store_bytes: u64,
    /// Threads of the async runtime that serves requests (runners are processes of their
    /// own; starting runners and blocking store work have threads of their own). Default: 1
    /// over stdio (one client), one per two cores with --http (the other half is left to the
    /// runners); an idle extra thread costs wake-ups (0.1-0.2 ms per answer on a 2-core VM).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub audit: crate::exec::audit::AuditFlags,
}

/// `--allow-host`: a host name or address, with an optional port, as a `Host` header carries it.
fn host_name(value: &str) -> Result<String, String> {
    let authority = axum::http::uri::Authority::try_from(value).map_err(|e| {
        format!("'{value}' is not a host name (e.g. gateway.example or gateway.example:8787): {e}")
    })?;
    if authority.host().is_empty() || authority.as_str().contains('@') {
        return Err(format!(
            "'{value}' is not a host name (e.g. gateway.example or gateway.example:8787)"
        ));
    }
    Ok(authority.as_str().to_ascii_lowercase())
}

impl ServeArgs {
    /// `serve`'s worker threads when neither `--worker-threads` nor `TOKIO_WORKER_THREADS`
    /// says: 1 over stdio, one per two cores (at least 1) with `--http`.
    pub fn default_workers(&self) -> usize {
        match self.http {
            None => 1,
            Some(_) => std::thread::available_parallelism()
                .map_or(1, |n| n.get() / 2)
                .max(1),
        }
    }
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
    if let Some(addr) = args.http {
        if !addr.ip().is_loopback() && config.sandbox.auth.is_none() {
            return Err(UsageError(format!(
                "refusing to serve --http {addr} without authentication: a non-loopback address needs sandbox.auth in the config (API tokens from `mcp-sandbox token create`, or JWTs from an identity provider); no flag turns this off"
            )));
        }
    }
    let policy = args.policy.policy(&config)?;
    let require_layers = args.runner.required_layers()?;
    let limits = config.sandbox.limits.unwrap_or_default();
    let runner = args.runner.command();
    if let Err(refusal) = crate::front::cli::check::at_start(
        &runner,
        &require_layers,
        args.runner.require_isolation.is_some(),
    )
    .await
    {
        crate::term::errln(&format!("mcp-sandbox: {refusal}"));
        return Ok(crate::front::cli::EXIT_FAILED);
    }
    if let Err(refusal) = crate::front::cli::check_servers::unconfined_at_start(
        &config,
        args.runner.require_isolation.as_deref() == Some("all"),
    ) {
        crate::term::errln(&format!("mcp-sandbox: {refusal}"));
        return Ok(crate::front::cli::EXIT_FAILED);
    }
    // Learning is best effort, as for `run`: without a usable state file the server still
    // serves (without capabilities), and the reason is printed.
    if let Ok(path) = args.state.path(args.config.as_ref().map(|_| &config)) {
        crate::tools::catalog::oauth::use_state_file(path);
    }
    let store = match args.state.open(args.config.as_ref().map(|_| &config)) {
        Ok(s) => Some(s),
        // An audit the operator asked for is not skipped: without its state file, no code
        // would be recorded, so the server does not start (as with sandbox.auth).
        Err(e) if config.sandbox.audit.is_some() || args.audit.given() => {
            return Err(UsageError(format!(
                "the audit log is configured (sandbox.audit or --audit-*) but the state store could not be opened ({e}); no execution would be audited. Fix the state file or pass --state"
            )));
        }
        Err(e) => {
            eprintln!("mcp-sandbox: warning: serving without the state store: {e}");
            None
        }
    };
    // Flow rules with session scope keep each session's labels in the state store: without
    // it, the next execution of a session would start clean (fail closed: do not serve).
    let flows = !config.sandbox.flows.is_empty()
        || config
            .sandbox
            .policies
            .values()
            .any(|p| !p.flows.is_empty());
    if store.is_none()
        && flows
        && config.sandbox.flow_scope.unwrap_or_default()
            != crate::context::flow::FlowScope::Execution
    {
        return Err(UsageError(
            "sandbox.flows with flow_scope \"principal\" (the default), \"session\" or \"handle\" keep data-flow labels in the state store, which could not be opened (see the warning above); fix it, pass --state, or set \"flow_scope\": \"execution\"".into(),
        ));
    }
    // Listen before starting servers so an early signal still shuts them down cleanly.
    let mut signals = SignalListener::install();
    let catalog = Arc::new(load_catalog(&config).await?);
    if let Err(e) = args.policy.check_globs(&config, &catalog) {
        catalog.shutdown().await;
        return Err(e);
    }
    let mut sandbox = Sandbox::new(catalog, runner.clone(), QueueOptions::default());
    // Traces when a collector is configured; metrics for `--http` and `--metrics`.
    let metrics = args.http.is_some() || args.metrics.is_some();
    if let Some(t) = crate::telemetry::Telemetry::new(&config.sandbox.telemetry, metrics)
        .map_err(|e| UsageError(e.to_string()))?
    {
        sandbox = sandbox.with_telemetry(Arc::new(t));
    }
    if let Some(store) = &store {
        sandbox = sandbox.with_session_state(crate::exec::state::SessionState::new(
            store.clone(),
            config.sandbox.session,
        ));
        sandbox = sandbox.with_learning(crate::exec::capability::Capabilities {
            require_layers: require_layers.clone(),
            authors: crate::exec::capability_author::AuthorPolicies(Arc::new(
                config.sandbox.policies.clone(),
            )),
            ..crate::exec::capability::Capabilities::new(store.clone(), runner)
        });
        let options = args.audit.options(config.sandbox.audit.as_ref());
        let key = args
            .audit
            .key(config.sandbox.audit.as_ref(), &config.base_dir)
            .map_err(|e| UsageError(e.to_string()))?;
        let auditor = crate::exec::audit::Auditor::with_key(store.clone(), options, key)
            .map_err(|e| UsageError(format!("cannot use the audit log in the state store: {e}")))?;
        sandbox = sandbox.with_audit(auditor.clone());
        if auditor.retains() {
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(3600));
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let a = auditor.clone();
                    let _ = tokio::task::spawn_blocking(move || a.prune()).await;
                }
            });
        }
    }
    // Authentication needs the state store (API tokens live there) and gives the audit log
    // its principals: without the store, an authenticated server does not start.
    let auth = match (&config.sandbox.auth, args.http) {
        (Some(auth), Some(_)) => {
            let Some(store) = store.clone() else {
                return Err(UsageError(
                    "sandbox.auth is configured but the state store could not be opened (see the warning above); fix it or pass --state".into(),
                ));
            };
            Some(super::http::AuthSetup {
                config: auth.clone(),
                policies: config.sandbox.policies.clone(),
                base_dir: config.base_dir.clone(),
                store,
            })
        }
        _ => None,
    };
    // Questions go to the web view when it is mounted and someone can answer there.
    let web_approvals = args.http.is_some()
        && store.is_some()
        && crate::config::gateway::someone_may_approve(auth.is_some(), &config.sandbox.policies);
    // This process's gateway id; on PostgreSQL it holds a lock other gateways see it alive by.
    let gateway_id = uuid::Uuid::new_v4().to_string();
    let liveness = match store.as_ref().and_then(|s| s.pg()) {
        Some(pg) => {
            let (pg, id) = (pg.clone(), gateway_id.clone());
            match tokio::task::spawn_blocking(move || pg.hold_liveness(&id)).await {
                Ok(Ok(l)) => Some(l),
                Ok(Err(e)) => {
                    return Err(UsageError(format!(
                        "cannot mark this gateway alive in the state store: {e}"
                    )))
                }
                Err(e) => return Err(UsageError(e.to_string())),
            }
        }
        None => None,
    };
    // On PostgreSQL the questions are kept in the store, so every gateway's web view lists and
    // answers them (`gate::pending::shared`); on SQLite (one gateway per file) they stay here.
    let pending = match store.as_ref().filter(|s| web_approvals && s.pg().is_some()) {
        Some(s) => crate::gate::pending::PendingApprovals::shared(s.clone(), gateway_id.clone()),
        None => Default::default(),
    };
    // The `requestState` key: shared by every gateway on the store, else this process's own.
    let state_key = match store.clone() {
        Some(s) => {
            match tokio::task::spawn_blocking(move || s.shared_secret("request_state")).await {
                Ok(Ok(k)) => Some(k),
                Ok(Err(e)) => {
                    return Err(UsageError(format!(
                        "cannot read or make the requestState key in the state store: {e}"
                    )))
                }
                Err(e) => return Err(UsageError(e.to_string())),
            }
        }
        None => None,
    };
    let request_states = super::input_required::state::StateCodec::new(state_key.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    let gateway = Arc::new(Gateway {
        sandbox: sandbox.clone(),
        policy,
        limits,
        admission: super::admission::Admission::new(args.max_queued_bytes, args.max_context_bytes),
        sessions: Default::default(),
        responses: super::responses::ResponseBudget::new(args.max_buffered_response_bytes),
        require_layers,
        store,
        policies: config.sandbox.policies.clone(),
        rate: Default::default(),
        capability_quota: crate::store::CapabilityQuota {
            max_code_bytes: args.capability_max_code_bytes,
            max_versions: args.capability_max_versions.max(1),
            max_total_bytes: args.capability_store_bytes,
        },
        pre_approved: args.policy.pre_approved()?,
        approval_timeout: args.policy.approval_timeout()?,
        session: config.sandbox.session,
        executions: Default::default(),
        pending: Arc::new(pending),
        web_approvals,
        gateway_id,
        liveness,
        suspects: Default::default(),
        handles: Default::default(),
        request_states,
        tasks: Default::default(),
        fair_share: config.sandbox.fair_share.clone(),
    });
    let grace = Duration::from_millis(args.shutdown_grace_ms);
    let stop = CancellationToken::new();
    super::held::remote::watch(gateway.clone(), stop.clone());
    super::approvals_sync::watch(gateway.clone(), stop.clone());
    let write_timeout = Duration::from_millis(args.write_timeout_ms);
    let http_options = super::http::HttpOptions {
        allowed_origins: args.allow_origins.clone(),
        allowed_hosts: args.allow_hosts.clone(),
        header_timeout: Duration::from_millis(args.header_timeout_ms),
        body_timeout: Duration::from_millis(args.body_timeout_ms.max(1)),
        max_connections: args.max_connections.max(1),
        write_timeout,
        max_sessions: args.max_sessions.max(1),
        max_sessions_per_client: args.max_sessions_per_client.max(1),
        max_sessions_per_principal: args.max_sessions_per_principal.max(1),
        handshake_timeout: Duration::from_millis(args.handshake_timeout_ms),
        session_idle: Duration::from_millis(args.session_idle_ms),
        tls: args.tls_cert.clone().zip(args.tls_key.clone()),
    };
    if let Some(addr) = args.metrics {
        super::metrics::serve(addr, sandbox.clone(), stop.clone()).await?;
    }
    let transport = async {
        match args.http {
            None => serve_stdio(gateway, write_timeout, stop.clone()).await,
            Some(addr) => {
                super::http::serve_http(
                    gateway,
                    addr,
                    args.http_allow_remote,
                    http_options,
                    auth,
                    stop.clone(),
                )
                .await
            }
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
    flush_telemetry(&sandbox).await;
    result.map(|_| 0)
}

/// Exports the spans still queued, for at most a few seconds (the collector may be down).
async fn flush_telemetry(sandbox: &Sandbox) {
    if let Some(t) = sandbox.telemetry().cloned() {
        let flush = tokio::task::spawn_blocking(move || t.shutdown());
        let _ = tokio::time::timeout(Duration::from_secs(6), flush).await;
    }
}

/// How long a closing transport may take to send the last answers.
const TRANSPORT_CLOSE: Duration = Duration::from_secs(3);

async fn serve_stdio(
    gateway: Arc<Gateway>,
    write_timeout: Duration,
    stop: CancellationToken,
) -> Result<(), UsageError> {
    // The client stopped reading its answers: the session ends as if it had left.
    let gone = CancellationToken::new();
    let budget = gateway.clone();
    let written = super::stdio::Written(Arc::new(move |id: &serde_json::Value| {
        budget
            .responses
            .delivered(&("stdio".to_string(), id.to_string()));
    }));
    let transport = super::stdio::front(
        super::stdio_fd::input(),
        super::stdio_fd::output(),
        write_timeout,
        gone.clone(),
        written,
    );
    let running = tokio::select! {
        running = GatewayServer::new(gateway).serve(transport) => running
            .map_err(|e| UsageError(format!("the MCP session did not start: {e}")))?,
        () = stop.cancelled() => return Ok(()),
    };
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = gone.cancelled() => {
            cancel.cancel();
            match tokio::time::timeout(TRANSPORT_CLOSE, &mut waiting).await {
                Ok(ended) => ended,
                Err(_) => return Ok(()),
            }
        }
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
