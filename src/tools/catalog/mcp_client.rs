//! Real MCP servers over stdio, through an rmcp client: started once per host, in parallel, each
//! with a start-up timeout; a server that fails to start is reported with the reason and leaves
//! the others usable. A server that dies is restarted once; a changed tool list is re-read.

use super::mcp_result::map_result;
use super::mcp_watcher::ListWatcher;
use super::notification_order::{Counted, NotificationOrder};
use super::process_tree::{GroupGuard, ProcessGroup};
use super::stderr_excerpt::StderrExcerpt;
use super::tool_list::ListError;
use super::{CallContext, ToolInfo, ToolProvider};
use crate::config::ServerConfig;
use crate::error::{ErrorCode, ExecError};
use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

mod remote_connect;
use remote_connect::connect_remote;

/// How long a server's process group gets to exit after SIGTERM (and its stdin closing) before
/// the whole group is killed with SIGKILL.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1000);
/// How long the rmcp session may take to close once the server's processes are gone.
const CLOSE_AFTER_EXIT: Duration = Duration::from_millis(200);
/// How long a server that failed to start gets to finish writing its stderr (it usually has
/// exited: its stderr ends at once).
const STDERR_LAST_WORDS: Duration = Duration::from_secs(2);
/// How long a restart may take when `start` was not given a timeout.
const DEFAULT_RESTART_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a call's answer waits for a tool-list refresh in progress (see [`Inner::settle`]).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(2);

/// A configured MCP server, restarted once when it dies.
///
/// - A call that finds the server dead (before anything was sent) restarts it first and then
///   makes the call: nothing was lost, so nothing is retried twice.
/// - A call in flight when the server dies fails with `TOOL_ERROR` naming the server; it is not
///   retried (the tool may have had effects). The next call restarts the server.
/// - A restart that fails leaves the server down with the reason; later calls fail at once
///   with it (no restart storm). One death, one restart.
/// - `notifications/tools/list_changed` re-reads the tool list; the next execution sees it.
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    config: ServerConfig,
    cwd: PathBuf,
    restart_timeout: Mutex<Duration>,
    tools: Arc<RwLock<Vec<ToolInfo>>>,
    /// Tool-list refreshes in progress.
    refreshing: Arc<watch::Sender<u32>>,
    state: tokio::sync::Mutex<State>,
    /// When a remote server that could not be reached is tried again.
    backoff: Mutex<super::backoff::Backoff>,
    /// Open calls by progress token, for the server's progress and log messages.
    routes: Arc<crate::tools::passthrough::Routes>,
}

enum State {
    Up(Arc<Conn>),
    /// Died and could not be restarted: the reason.
    Failed(String),
    Stopped,
}

/// One running server process and its rmcp session.
struct Conn {
    peer: Peer<RoleClient>,
    /// Held for shutdown; calls go through `peer`.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ListWatcher>>>,
    stderr_tail: Arc<Mutex<StderrExcerpt>>,
    /// The server's own process group (its pid): everything it starts is signalled with it.
    group: Option<ProcessGroup>,
    /// Set when a stdio server sent an answer over the MCP client's line limit (the
    /// connection was closed because of it).
    oversize: Option<Arc<super::line_guard::Oversize>>,
    /// Set when a call to a remote server failed on the transport: the next call reconnects.
    broken: std::sync::atomic::AtomicBool,
    /// Notifications received vs handled, so an answer is not delivered before them.
    order: Arc<NotificationOrder>,
}

impl Conn {
    fn is_broken(&self) -> bool {
        self.broken.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn stderr_said(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|t| t.said())
            .unwrap_or_default()
    }

    /// Ends the server and everything it started: SIGTERM to its process group and its stdin
    /// closed at once, SIGKILL to the group after [`SHUTDOWN_GRACE`] if anything is left.
    async fn close(&self) {
        let Some(mut service) = self.service.lock().await.take() else {
            return;
        };
        match &self.group {
            Some(group) => {
                group.signal(nix::sys::signal::Signal::SIGTERM);
                if !group.wait_gone(SHUTDOWN_GRACE).await {
                    tracing::warn!(
                        "an MCP server's processes outlived SIGTERM by {} ms; killing them",
                        SHUTDOWN_GRACE.as_millis()
                    );
                    group.signal(nix::sys::signal::Signal::SIGKILL);
                    group.wait_gone(Duration::from_millis(100)).await;
                }
                if !group.exists() {
                    // Gone: its id may be reused, so the watcher must forget it.
                    super::group_reaper::unwatch_group(group.id());
                }
                // The processes are gone: closing only ends the session and reaps the child
                // (rmcp kills and reaps it on drop if this gives up).
                let _ = service.close_with_timeout(CLOSE_AFTER_EXIT).await;
            }
            None => {
                let _ = service.close_with_timeout(SHUTDOWN_GRACE).await;
            }
        }
    }
}

impl Drop for Conn {
    /// A connection dropped without [`Conn::close`] (its provider dropped without a shutdown)
    /// still takes its whole process group with it.
    fn drop(&mut self) {
        if self.service.get_mut().is_some() {
            if let Some(group) = &self.group {
                group.signal(nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
}

impl McpServer {
    /// Spawns the server, initializes the session and lists its tools (all pages).
    pub async fn start(
        name: &str,
        config: &ServerConfig,
        cwd: &std::path::Path,
    ) -> Result<McpServer, String> {
        let tools = Arc::new(RwLock::new(Vec::new()));
        let refreshing = Arc::new(watch::channel(0).0);
        let routes = Arc::new(crate::tools::passthrough::Routes::default());
        let watcher = ListWatcher {
            server: name.to_string(),
            tools: tools.clone(),
            refreshing: refreshing.clone(),
            routes: routes.clone(),
            order: Arc::default(),
            config: Arc::new(config.clone()),
            relist: Arc::default(),
        };
        let (conn, list) = connect(name, config, cwd, watcher).await?;
        if let Ok(mut t) = tools.write() {
            *t = list;
        }
        Ok(McpServer {
            inner: Arc::new(Inner {
                name: name.to_string(),
                config: config.clone(),
                cwd: cwd.to_path_buf(),
                restart_timeout: Mutex::new(DEFAULT_RESTART_TIMEOUT),
                tools,
                refreshing,
                state: tokio::sync::Mutex::new(State::Up(Arc::new(conn))),
                backoff: Mutex::new(super::backoff::Backoff::default()),
                routes,
            }),
        })
    }

    /// How long a restart after a death may take (default 30 s).
    pub fn set_restart_timeout(&self, timeout: Duration) {
        if let Ok(mut t) = self.inner.restart_timeout.lock() {
            *t = timeout;
        }
    }
}

impl Inner {
    /// The live connection; restarts a dead server once. `Err(Some(reason))` when it could not
    /// be restarted, `Err(None)` when it was shut down.
    async fn connection(&self) -> Result<Arc<Conn>, Option<String>> {
        let mut state = self.state.lock().await;
        let old = match &*state {
            State::Up(c) if !c.peer.is_transport_closed() && !c.is_broken() => return Ok(c.clone()),
            State::Up(c) => Some(c.clone()),
            State::Failed(reason) if self.config.is_remote() => {
                // A remote server is tried again after a back-off (never a restart storm).
                if let Some(wait) = self.backoff.lock().ok().and_then(|b| b.wait()) {
                    return Err(Some(format!(
                        "{reason}; the next reconnect attempt is in {} ms",
                        wait.as_millis()
                    )));
                }
                None
            }
            State::Failed(reason) => return Err(Some(reason.clone())),
            State::Stopped => return Err(None),
        };
        if let Some(old) = old {
            if self.config.is_remote() {
                tracing::warn!(server = %self.name, "remote MCP server connection lost; reconnecting");
            } else {
                tracing::warn!(server = %self.name, "MCP server died{}; restarting it", old.stderr_said());
            }
            old.close().await;
        }
        let watcher = ListWatcher {
            server: self.name.clone(),
            tools: self.tools.clone(),
            refreshing: self.refreshing.clone(),
            routes: self.routes.clone(),
            order: Arc::default(),
            config: Arc::new(self.config.clone()),
            relist: Arc::default(),
        };
        let timeout = self
            .restart_timeout
            .lock()
            .map(|t| *t)
            .unwrap_or(DEFAULT_RESTART_TIMEOUT);
        let started = tokio::time::timeout(
            timeout,
            connect(&self.name, &self.config, &self.cwd, watcher),
        )
        .await
        .unwrap_or_else(|_| Err(format!("did not restart within {} ms", timeout.as_millis())));
        match started {
            Ok((conn, tools)) => {
                tracing::info!(server = %self.name, "MCP server restarted");
                super::count_restart(&self.name);
                if let Ok(mut b) = self.backoff.lock() {
                    *b = super::backoff::Backoff::default();
                }
                if let Ok(mut t) = self.tools.write() {
                    *t = tools;
                }
                let conn = Arc::new(conn);
                *state = State::Up(conn.clone());
                Ok(conn)
            }
            Err(reason) if self.config.is_remote() => {
                let reason = format!("it could not be reached: {reason}");
                tracing::warn!(server = %self.name, "{reason}");
                if let Ok(mut b) = self.backoff.lock() {
                    b.failed();
                }
                *state = State::Failed(reason.clone());
                Err(Some(reason))
            }
            Err(reason) => {
                let reason = format!("{}{reason}", super::unavailable::RESTART_FAILED);
                tracing::warn!(server = %self.name, "{reason}");
                *state = State::Failed(reason.clone());
                Err(Some(reason))
            }
        }
    }

    /// Waits (briefly) for tool-list refreshes in progress, so that a call that changed the list
    /// (and got `notifications/tools/list_changed` before its answer) returns after the new
    /// list is in place (the refresh has begun by then: see [`NotificationOrder::caught_up`]).
    async fn settle(&self) {
        let mut rx = self.refreshing.subscribe();
        let _ = tokio::time::timeout(SETTLE_TIMEOUT, rx.wait_for(|n| *n == 0)).await;
    }
}

/// Spawns the server process, initializes the session and lists its tools.
async fn connect(
    name: &str,
    config: &ServerConfig,
    cwd: &std::path::Path,
    watcher: ListWatcher,
) -> Result<(Conn, Vec<ToolInfo>), String> {
    if config.is_remote() {
        return connect_remote(name, config, cwd, watcher).await;
    }
    let mut home_pid = None;
    let (mut cmd, seccomp, keep) = if config.is_confined() {
        let c = super::confine::command(name, config, cwd)
            .await
            .map_err(|e| e.to_string())?;
        // A refused connection is also a log line of the execution calling this server.
        for kept in &c.keep {
            if let Some(guard) = kept.downcast_ref::<crate::tools::egress::EgressGuard>() {
                guard.report_to(watcher.routes.clone());
            }
            if let Some(quota) = kept.downcast_ref::<super::confine::home_quota::HomeQuota>() {
                home_pid = Some(quota.pid_slot());
            }
        }
        (c.command, Some(c.seccomp), c.keep)
    } else {
        let mut cmd = tokio::process::Command::new(&config.command);
        cmd.args(&config.args).current_dir(cwd);
        (cmd, None, Vec::new())
    };
    super::server_env::apply(&mut cmd, config).map_err(|e| e.to_string())?;
    super::process_tree::own_tree(&mut cmd);
    let spawned = super::stdio_transport::spawn(cmd, keep);
    // bubblewrap has its copy of the seccomp filter (or the spawn failed).
    drop(seccomp);
    let super::stdio_transport::Spawned {
        transport,
        pid,
        stderr,
        oversize,
    } = spawned.map_err(|e| format!("cannot start `{}`: {e}", config.command))?;
    // The home's watch kills this process (bubblewrap's; its sandbox dies with it) when over.
    if let (Some(slot), Some(pid)) = (home_pid, pid) {
        slot.set(pid);
    }
    let group = pid.and_then(ProcessGroup::of_leader);
    if let Some(g) = &group {
        // Its children die with the host too (they do not inherit the death signal).
        super::group_reaper::watch_group(g.id());
    }
    let tail = Arc::new(Mutex::new(StderrExcerpt::default()));
    let mut reader = None;
    if let Some(stderr) = stderr {
        let tail = tail.clone();
        let server = name.to_string();
        reader = Some(tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                // Escaped (a CR, an escape sequence): the server's text must not rewrite or
                // forge the gateway's own log lines.
                let line = crate::term::escape(&line).into_owned();
                tracing::info!(server = %server, "{line}");
                if let Ok(mut t) = tail.lock() {
                    t.push(&line);
                }
            }
        }));
    }
    // The server's last words: its stderr to its end (it exited), for a bounded while.
    let last_words = |reader: Option<tokio::task::JoinHandle<()>>| async move {
        if let Some(reader) = reader {
            // Still writing after that: what it said so far is enough (the reader goes on).
            let _ = tokio::time::timeout(STDERR_LAST_WORDS, reader).await;
        }
    };
    let explain = |what: String| {
        let said = tail.lock().map(|t| t.said()).unwrap_or_default();
        format!("{what}{said}")
    };
    // Whatever happens below, a server that did not start leaves no process behind (also when
    // this future is dropped by a start-up timeout).
    let reaper = GroupGuard(group);
    let order = watcher.order.clone();
    let transport = Counted::new(transport, order.clone());
    let service = match watcher.serve(transport).await {
        Ok(s) => s,
        Err(e) => {
            last_words(reader).await;
            // A confined start that failed: bubblewrap's namespaces, or the server itself?
            let probe = super::confine::probe::why_not;
            if let Some(why) = config.is_confined().then(probe).flatten() {
                return Err(super::confine::ConfineError::Unavailable {
                    server: name.to_string(),
                    why,
                }
                .to_string());
            }
            return Err(explain(format!(
                "initialize failed: {}",
                super::error_chain(&e)
            )));
        }
    };
    let tools = match super::tool_list::list_tools(service.peer(), name, config).await {
        Ok(t) => t,
        Err(ListError::Service(e)) => {
            last_words(reader).await;
            return Err(explain(format!(
                "tools/list failed: {}",
                super::error_chain(&e)
            )));
        }
        Err(ListError::Bound(why)) => return Err(why),
    };
    reaper.disarm();
    Ok((
        Conn {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            stderr_tail: tail,
            group,
            oversize: Some(oversize),
            broken: Default::default(),
            order,
        },
        tools,
    ))
}

/// Whether a call failed on the transport (not with an answer from the server).
fn is_transport_error(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

impl ToolProvider for McpServer {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn transport(&self) -> Option<&'static str> {
        self.inner
            .config
            .is_remote()
            .then(|| self.inner.config.transport_name())
    }

    fn tools(&self) -> Vec<ToolInfo> {
        self.inner
            .tools
            .read()
            .map(|t| t.clone())
            .unwrap_or_default()
    }

    fn has_tool(&self, tool: &str) -> bool {
        self.inner
            .tools
            .read()
            .map(|t| t.iter().any(|t| t.name == tool))
            .unwrap_or(false)
    }

    fn tool(&self, tool: &str) -> Option<ToolInfo> {
        self.inner
            .tools
            .read()
            .ok()
            .and_then(|t| t.iter().find(|t| t.name == tool).cloned())
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> BoxFuture<'static, Result<Value, ExecError>> {
        let inner = self.inner.clone();
        let feedback = ctx.feedback.clone();
        let qualified = format!("{}:{tool}", inner.name);
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        // With telemetry on, the server joins the trace: the call's span is its parent.
        if let Some(trace) = &ctx.request.trace {
            let mut meta = rmcp::model::RequestMetaObject::new();
            meta.0 .0.insert(
                "traceparent".to_string(),
                Value::String(trace.traceparent_of(&ctx.trace_id)),
            );
            params.meta = Some(meta);
        }
        Box::pin(async move {
            let server = inner.name.clone();
            let tool_error = |message: String| {
                ExecError::new(ErrorCode::ToolError, message).with_tool(&qualified)
            };
            let conn = inner.connection().await.map_err(|reason| match reason {
                // It could not be (re)started: the same code as a server that never started.
                Some(reason) => ExecError::new(
                    super::unavailable_code(&reason),
                    format!("MCP server '{server}' is unavailable: {reason}"),
                )
                .with_tool(&qualified),
                None => tool_error(format!(
                    "MCP server '{server}' is unavailable: it was shut down"
                )),
            })?;
            // rmcp sends `notifications/cancelled` if this future is dropped before the answer
            // (and so does the routed call, which also passes progress and logs back).
            let response = match feedback {
                Some(f) => {
                    super::input_rounds::call(&conn.peer, &inner.routes, params, f.0, &server).await
                }
                None => conn.peer.call_tool_once(params).await,
            };
            // What the server said before its answer (progress, logs, a changed tool list) is
            // handled before the answer is delivered.
            conn.order.caught_up().await;
            match response {
                Ok(CallToolResponse::Complete(result)) => {
                    inner.settle().await;
                    map_result(&qualified, result)
                }
                Ok(_) => Err(tool_error(format!(
                    "{qualified} asked for interactive input or a task, which scripts cannot provide"
                ))),
                Err(e) if inner.config.is_remote() && is_transport_error(&e) => {
                    // The connection to a remote server failed: nothing to restart, the next
                    // call reconnects (after a back-off if that fails too).
                    conn.broken
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    let sent = if super::http_transport::not_sent(&e) {
                        "the call was not sent"
                    } else {
                        "the call may have reached the server; it was not retried"
                    };
                    let mut reason = super::error_chain(&e);
                    if super::http_transport::nested_too_deep(&reason) {
                        return Err(ExecError::new(
                            ErrorCode::LimitExceeded,
                            format!(
                                "MCP server '{server}' sent a message nested more than {} levels deep, over the limit of its MCP client (a tool's structuredContent may nest at most {} levels); the call reached the server and failed, it was not retried, and the next call reconnects. Ask the tool for flatter data",
                                super::line_guard::MAX_LINE_DEPTH,
                                super::line_guard::MAX_LINE_DEPTH - 2
                            ),
                        )
                        .with_tool(&qualified));
                    }
                    if inner.config.oauth.is_some() && reason.contains("HTTP 401") {
                        reason = super::oauth::needs_login(&server, super::oauth::REFUSED);
                    }
                    Err(ExecError::new(
                        ErrorCode::ServerUnavailable,
                        format!(
                            "MCP server '{server}' is unavailable: {reason} ({sent}; the next call reconnects)"
                        ),
                    )
                    .with_tool(&qualified))
                }
                Err(e) => {
                    let died = is_transport_error(&e) || conn.peer.is_transport_closed();
                    if died {
                        if let Some(depth) = conn.oversize.as_ref().and_then(|o| o.deep()) {
                            return Err(ExecError::new(
                                ErrorCode::LimitExceeded,
                                format!(
                                    "MCP server '{server}' sent a message nested {depth} levels deep, over the {}-level limit of its MCP client (a tool's structuredContent may nest at most {} levels); the call failed (every call in flight to '{server}' did), and the server will be restarted for the next call. Ask the tool for flatter data",
                                    super::line_guard::MAX_LINE_DEPTH,
                                    super::line_guard::MAX_LINE_DEPTH - 2
                                ),
                            )
                            .with_tool(&qualified));
                        }
                        if let Some(seen) = conn.oversize.as_ref().and_then(|o| o.get()) {
                            return Err(ExecError::new(
                                ErrorCode::LimitExceeded,
                                format!(
                                    "MCP server '{server}' sent an answer of {}, over the {}-byte message limit of its MCP client; the call failed (every call in flight to '{server}' did), and the server will be restarted for the next call. Ask the tool for less",
                                    seen.size(),
                                    seen.limit
                                ),
                            )
                            .with_tool(&qualified));
                        }
                        // The stderr reader may still be collecting the server's last words.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Err(tool_error(format!(
                            "MCP server '{server}' died during the call ({e}){}; the call was not retried, and the server will be restarted for the next call",
                            conn.stderr_said()
                        )))
                    } else {
                        Err(tool_error(format!(
                            "MCP server '{server}' failed the call: {e}"
                        )))
                    }
                }
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let old = std::mem::replace(&mut *self.inner.state.lock().await, State::Stopped);
            if let State::Up(conn) = old {
                conn.close().await;
            }
        })
    }
}
