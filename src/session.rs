//! One execution: spawn a runner, wait for `ready`, send `execute`, serve its tool calls
//! concurrently, enforce the host-side limits and record traces at the socket boundary.
//!
//! The runner is hostile from here: every frame is bounded and checked, and anything unexpected
//! kills it with `PROTOCOL_ERROR`. Whatever happens, the runner is reaped and every call that
//! started gets its `tool_end` receipt.

use crate::budget;
use crate::catalog::{CallContext, Catalog};
use crate::error::{ErrorCode, ExecError};
use crate::limits::Limits;
use crate::outbox::Outbox;
use crate::outcome::{LogLine, Metrics, Outcome};
use crate::policy::Policy;
use crate::pool::RunnerPool;
use crate::provenance;
use crate::runner::{self, crashed, frame_error, protocol_error, ReadyRunner, RunnerCommand};
use crate::trace::{new_trace_id, now_ms, TraceError, TraceEvent, TraceKind};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use sandbox_runner::protocol::{
    decode_payload, encode_frame, raw, FrameError, HostMessage, RunnerMessage, WireError,
};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};
use tokio::time::Instant as TokioInstant;
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;

/// Per-line overhead counted against the log budget, so empty lines cannot grow memory forever.
pub const LOG_LINE_OVERHEAD: u64 = 32;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    pub code: String,
    pub context: Map<String, Value>,
    pub limits: Limits,
    /// Isolation layers that must be enforced besides the always-required ones.
    pub require_layers: Vec<String>,
    /// Called with the runner's pid right after it is spawned, before the host reads from it
    /// (supervisors and fault-injection tests; see [`SpawnHook`]).
    pub on_spawn: Option<SpawnHook>,
    /// Cancelling it kills the runner and ends the execution with `SANDBOX_UNAVAILABLE`
    /// (the host is shutting down); logs and traces so far are kept, open calls get receipts.
    pub cancel: Option<CancellationToken>,
    /// Cancelling it kills the runner and ends the execution with `CANCELLED`: the client
    /// withdrew the request (MCP `notifications/cancelled`, or its session ended). Open calls
    /// are dropped, which sends `notifications/cancelled` to their servers.
    pub client_cancel: Option<CancellationToken>,
    /// Which tools the script may call (default: all).
    pub policy: Policy,
    /// The trace id of the call this execution serves (a capability call): stamped as
    /// `parent_trace_id` on this execution's own events.
    pub parent_trace_id: Option<String>,
}

/// A callback given the runner's pid once it is spawned. It runs synchronously on the session's
/// task while the child is known not to be reaped yet, so a `pidfd_open` inside it is race-free.
#[derive(Clone)]
pub struct SpawnHook(pub std::sync::Arc<dyn Fn(u32) + Send + Sync>);

impl SpawnHook {
    pub fn new(f: impl Fn(u32) + Send + Sync + 'static) -> Self {
        SpawnHook(std::sync::Arc::new(f))
    }
}

impl std::fmt::Debug for SpawnHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpawnHook")
    }
}

/// Layers a runner must report `enforced` or the host refuses to run code.
pub const REQUIRED_LAYERS: &[&str] = &["rlimits", "no_new_privs", "seccomp"];

/// `SANDBOX_UNAVAILABLE` naming every required layer the runner did not enforce, if any.
pub fn missing_layers(isolation: &BTreeMap<String, String>, extra: &[String]) -> Option<ExecError> {
    let missing: Vec<String> = REQUIRED_LAYERS
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .filter(|layer| {
            !isolation
                .get(layer)
                .is_some_and(|s| s.starts_with("enforced"))
        })
        .map(|layer| {
            let why = isolation
                .get(&layer)
                .cloned()
                .unwrap_or_else(|| "not reported".into());
            format!("{layer} ({why})")
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "refusing to run code: required isolation layers are not enforced: {}. Run `mcp-sandbox check` for details",
            missing.join(", ")
        ),
    ))
}

/// Runs one script to its outcome. Never panics on anything the runner sends.
pub async fn execute(catalog: &Catalog, runner: &RunnerCommand, req: ExecRequest) -> Outcome {
    execute_pooled(catalog, runner, None, req).await
}

/// Like [`execute`], taking a pre-started runner from `pool` when it has one that fits.
pub async fn execute_pooled(
    catalog: &Catalog,
    runner: &RunnerCommand,
    pool: Option<&RunnerPool>,
    req: ExecRequest,
) -> Outcome {
    let started = Instant::now();
    let mut run = Run::new(&req.limits);
    run.policy = req.policy.clone();
    run.parent = req.parent_trace_id.clone();
    let error = run.drive(catalog, runner, pool, &req).await.err();
    if let Some(pool) = pool {
        pool.refill();
    }
    run.finish(error, started)
}

type CallFuture = BoxFuture<'static, (u64, Result<Value, ExecError>)>;

struct Call {
    tool: String,
    capability: bool,
    trace_id: String,
    started: Instant,
    /// Serialized size of its arguments, counted in `Run::args_in_flight` while it is open.
    arg_bytes: u64,
}

/// The wall-clock deadline as a std `Instant`, for providers.
fn std_deadline(deadline: TokioInstant) -> Instant {
    deadline.into_std()
}

struct Queued {
    id: u64,
    server: String,
    tool: String,
    args: Value,
    /// The frame's size when the arguments were too large to decode.
    oversized: Option<u64>,
}

/// What to do with a frame before decoding it.
enum Screened {
    Decode,
    /// An `rpc_call` whose frame alone is over its server's argument limit: refused without
    /// building its arguments.
    OversizedCall {
        id: u64,
        server: String,
        tool: String,
    },
}

/// Frames up to this size are decoded at once; larger ones are screened first.
const SCREEN_ABOVE: usize = 64 * 1024;

/// The fields of a frame that decide whether to decode the rest; everything else is skipped
/// without being built.
#[derive(serde::Deserialize)]
struct FrameHead {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    success: Option<bool>,
}

/// Room for everything in an `rpc_call` frame but its arguments.
const CALL_FRAME_OVERHEAD: u64 = 1024;

/// The state of one execution.
struct Run {
    limits: Limits,
    deadline: TokioInstant,
    logs: Vec<LogLine>,
    log_bytes: u64,
    logs_truncated: bool,
    traces: Vec<TraceEvent>,
    calls: u64,
    seen_ids: HashSet<u64>,
    inflight: HashMap<u64, Call>,
    queue: VecDeque<Queued>,
    result: Option<Value>,
    /// The script's own error, reported by the runner.
    script_error: Option<ExecError>,
    policy: Policy,
    /// `parent_trace_id` of this execution's events.
    parent: Option<String>,
    /// Events of nested work handed back by providers.
    children: crate::catalog::TraceSink,
    /// Argument bytes of the open calls (running or queued).
    args_in_flight: u64,
    /// `server:tool` of every call the host routed in this execution.
    routed: HashSet<String>,
    /// `(code, server:tool)` of every error the host answered a call with.
    answered: HashSet<(ErrorCode, String)>,
    /// The runner's layers as verified in `/proc`.
    isolation: BTreeMap<String, String>,
}

impl Run {
    fn new(limits: &Limits) -> Self {
        Run {
            limits: *limits,
            deadline: TokioInstant::now() + Duration::from_millis(limits.timeout_ms),
            logs: Vec::new(),
            log_bytes: 0,
            logs_truncated: false,
            traces: Vec::new(),
            calls: 0,
            seen_ids: HashSet::new(),
            inflight: HashMap::new(),
            queue: VecDeque::new(),
            result: None,
            script_error: None,
            policy: Policy::default(),
            parent: None,
            children: Default::default(),
            args_in_flight: 0,
            routed: HashSet::new(),
            answered: HashSet::new(),
            isolation: BTreeMap::new(),
        }
    }

    async fn drive(
        &mut self,
        catalog: &Catalog,
        runner: &RunnerCommand,
        pool: Option<&RunnerPool>,
        req: &ExecRequest,
    ) -> Result<(), ExecError> {
        if let Err(e) = self.limits.validate() {
            return Err(ExecError::new(ErrorCode::LimitExceeded, e.to_string()));
        }
        if req.code.len() as u64 > self.limits.source_bytes {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the script is {} bytes; the source limit is {} bytes",
                    req.code.len(),
                    self.limits.source_bytes
                ),
            ));
        }
        // Context keys become the script's globals: refused before any runner is spawned when
        // they are not identifiers or would shadow a built-in (the runner checks them again).
        if let Some(problem) = req
            .context
            .keys()
            .find_map(|k| sandbox_runner::protocol::context_key_problem(k))
        {
            return Err(ExecError::new(ErrorCode::InvalidArguments, problem));
        }
        if req.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(shutting_down());
        }
        if req.client_cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(cancelled());
        }
        let hook = req.on_spawn.as_ref().map(|h| &*h.0);
        let mut ready = match pool.and_then(|p| p.take(&self.limits)) {
            Some(r) => {
                // A pooled runner started earlier; the hook sees it when it is handed out.
                if let Some(hook) = hook {
                    hook(r.pid);
                }
                r
            }
            None => runner::start(runner, &self.limits, self.deadline, hook).await?,
        };
        self.isolation = ready.isolation.clone();
        let result = match missing_layers(&ready.isolation, &req.require_layers) {
            Some(e) => Err(e),
            None => {
                let (shutdown, client) = (req.cancel.clone(), req.client_cancel.clone());
                tokio::select! {
                    r = self.session(catalog, req, &mut ready) => r,
                    () = fired(shutdown) => Err(shutting_down()),
                    () = fired(client) => Err(cancelled()),
                }
            }
        };
        // Whatever happened, the runner is killed now. After a checked `execution_complete`
        // it is reaped in the background (no teardown on the hot path); after a failure it is
        // reaped before we return, as the failure may be about how it ended.
        match result {
            Ok(()) => runner::retire(ready),
            Err(_) => {
                let _ = ready.child.start_kill();
                let _ = ready.child.wait().await;
            }
        }
        result
    }

    /// The conversation with one ready runner.
    async fn session(
        &mut self,
        catalog: &Catalog,
        req: &ExecRequest,
        ready: &mut ReadyRunner,
    ) -> Result<(), ExecError> {
        let max_frame = usize::try_from(self.limits.frame_bytes).unwrap_or(usize::MAX);
        let Some(write_half) = ready.writer.take() else {
            return Err(protocol("the runner's socket was already used".into()));
        };
        let mut outbox = Outbox::new(write_half);
        self.converse(
            catalog,
            req,
            &mut ready.frames,
            &mut outbox,
            &mut ready.child,
            max_frame,
        )
        .await
    }

    async fn converse(
        &mut self,
        catalog: &Catalog,
        req: &ExecRequest,
        frames: &mut FramedRead<tokio::net::unix::OwnedReadHalf, LengthDelimitedCodec>,
        tx: &mut Outbox,
        child: &mut crate::runner_process::RunnerProcess,
        max_frame: usize,
    ) -> Result<(), ExecError> {
        // 2. execute
        let exec = HostMessage::Execute {
            code: req.code.clone(),
            tools: catalog.tool_refs(),
            unavailable: catalog.unavailable_servers(),
            context: req.context.clone(),
            limits: self.limits.runner_limits(),
        };
        let mut buf = Vec::new();
        encode_frame(&exec, max_frame, &mut buf).map_err(|e| {
            ExecError::new(
                ErrorCode::LimitExceeded,
                format!("the script and its context do not fit in one frame: {e}"),
            )
        })?;
        tx.send(buf);

        // 3. calls, logs and the result
        let mut running: FuturesUnordered<CallFuture> = FuturesUnordered::new();
        loop {
            tokio::select! {
                biased;
                _ = tokio::time::sleep_until(self.deadline) => {
                    return Err(self.timeout_error(""));
                }
                _ = tx.flush(), if tx.pending() => {}
                Some((id, result)) = running.next(), if !running.is_empty() => {
                    self.finish_call(id, result, tx, max_frame);
                    if tx.queued_bytes() > budget::OUTBOX_BYTES {
                        return Err(ExecError::new(
                            ErrorCode::LimitExceeded,
                            format!(
                                "{} bytes of tool results wait for the script to read them; the limit is {} bytes of unread results, so the runner was killed. Await large calls a few at a time",
                                tx.queued_bytes(),
                                budget::OUTBOX_BYTES
                            ),
                        ));
                    }
                    while running.len() < self.limits.max_concurrent_calls as usize {
                        let Some(q) = self.queue.pop_front() else { break };
                        running.push(self.start_call(catalog, q));
                    }
                }
                // Back-pressure: no new frames while the open calls hold their argument budget.
                frame = frames.next(), if self.args_in_flight < budget::ARGS_IN_FLIGHT_BYTES => {
                    let payload = match frame {
                        None => {
                            return Err(crashed(child, "while running the script").await);
                        }
                        Some(Err(e)) => {
                            return Err(frame_error(child, e, "while running the script").await)
                        }
                        Some(Ok(p)) => p,
                    };
                    // A large frame is screened before it is decoded: decoded JSON can take many
                    // times its size (`[0,0,…]`), so what is over a budget is never built.
                    let mut oversized = None;
                    let msg = match self.screen(catalog, &payload)? {
                        Screened::Decode => sandbox_runner::protocol::decode_from_runner(&payload)
                            .map_err(|e| protocol(e.to_string()))?,
                        Screened::OversizedCall { id, server, tool } => {
                            oversized = Some(payload.len() as u64);
                            RunnerMessage::RpcCall { id, server, tool, args: Value::Null }
                        }
                    };
                    match msg {
                        RunnerMessage::Log { level, message } => self.log(level.as_str(), message),
                        RunnerMessage::RpcCall { id, server, tool, args } => {
                            // Before the names are copied anywhere (traces, suggestions).
                            budget::check_name("server", &server)
                                .and_then(|()| budget::check_name("tool", &tool))
                                .map_err(|e| protocol(format!("rpc_call {id} with {e}")))?;
                            if !self.seen_ids.insert(id) {
                                return Err(protocol(format!("call id {id} was used twice")));
                            }
                            self.calls += 1;
                            if self.calls > self.limits.max_calls {
                                return Err(protocol(format!(
                                    "the runner made more than {} calls; it should have refused them",
                                    self.limits.max_calls
                                )));
                            }
                            let q = Queued {
                                id,
                                server,
                                tool,
                                args,
                                oversized,
                            };
                            if let Some(fut) = self.admit(catalog, q, tx, max_frame) {
                                running.push(fut);
                            }
                        }
                        RunnerMessage::ExecutionComplete { success, result, error } => {
                            if payload.len() as u64 > self.limits.result_bytes {
                                self.check_result_size(result.as_ref())?;
                            }
                            self.complete(catalog, success, result, error)?;
                            // The execution is over: nothing the runner sends or does from
                            // here on changes the outcome (the caller kills and reaps it in the
                            // background). Calls the script did not wait for are abandoned
                            // (their MCP requests are cancelled as their futures drop).
                            running.clear();
                            self.queue.clear();
                            self.receipts(&ExecError::new(
                                ErrorCode::ToolError,
                                "abandoned: the script finished before this call returned",
                            ));
                            return Ok(());
                        }
                        RunnerMessage::Ready { .. } => {
                            return Err(protocol("a second ready frame".into()));
                        }
                    }
                }
            }
        }
    }

    /// Records `tool_start` and either starts the call, queues it, or answers at once with the
    /// reason it cannot be made.
    fn admit(
        &mut self,
        catalog: &Catalog,
        q: Queued,
        tx: &mut Outbox,
        max_frame: usize,
    ) -> Option<CallFuture> {
        let tool = format!("{}:{}", q.server, q.tool);
        let arg_bytes = q.oversized.unwrap_or_else(|| budget::json_len(&q.args));
        self.routed.insert(tool.clone());
        let trace_id = new_trace_id();
        let capability = catalog
            .provider(&q.server)
            .is_some_and(|p| p.is_capability());
        self.traces.push(TraceEvent {
            kind: if capability {
                TraceKind::CapabilityStart
            } else {
                TraceKind::ToolStart
            },
            tool: tool.clone(),
            trace_id: trace_id.clone(),
            parent_trace_id: self.parent.clone(),
            ts: now_ms(),
            success: None,
            duration_ms: None,
            error: None,
        });
        self.inflight.insert(
            q.id,
            Call {
                tool,
                capability,
                trace_id,
                started: Instant::now(),
                arg_bytes,
            },
        );
        self.args_in_flight += arg_bytes;
        let max_args = catalog
            .max_arg_bytes(&q.server)
            .unwrap_or(self.limits.max_arg_bytes);
        if arg_bytes > max_args {
            let tool = format!("{}:{}", q.server, q.tool);
            // Screened frames were not decoded: their size is the whole frame's.
            let about = if q.oversized.is_some() { "about " } else { "" };
            let e = ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the arguments of {tool} are {about}{arg_bytes} bytes; the limit (max_arg_bytes) is {max_args} bytes, so the call was not forwarded. Send less, or raise --max-arg-bytes or the server's maxArgBytes"
                ),
            )
            .with_tool(&tool);
            self.finish_call(q.id, Err(e), tx, max_frame);
            return None;
        }
        if let Err(e) = crate::gate::check_call(catalog, &self.policy, &q.server, &q.tool, &q.args)
        {
            self.finish_call(q.id, Err(e), tx, max_frame);
            return None;
        }
        let active = self.inflight.len() - self.queue.len();
        if active > self.limits.max_concurrent_calls as usize {
            self.queue.push_back(q);
            return None;
        }
        Some(self.start_call(catalog, q))
    }

    fn start_call(&self, catalog: &Catalog, q: Queued) -> CallFuture {
        let timeout = Duration::from_millis(self.limits.call_timeout_ms);
        let qualified = format!("{}:{}", q.server, q.tool);
        let ctx = CallContext {
            trace_id: self
                .inflight
                .get(&q.id)
                .map(|c| c.trace_id.clone())
                .unwrap_or_default(),
            deadline: std_deadline(self.deadline),
            children: self.children.clone(),
            policy: self.policy.clone(),
        };
        let fut =
            match catalog.provider(&q.server) {
                Some(p) => p.call(&q.tool, q.args, &ctx),
                None => Box::pin(async move {
                    Err(ExecError::new(ErrorCode::ToolNotFound, "no such server"))
                }),
            };
        let id = q.id;
        Box::pin(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => (id, r),
                Err(_) => (
                    id,
                    Err(ExecError::new(
                        ErrorCode::ToolTimeout,
                        format!(
                            "{qualified} did not answer within {} ms (the per-call timeout); the request was cancelled",
                            timeout.as_millis()
                        ),
                    )
                    .with_tool(&qualified)),
                ),
            }
        })
    }

    /// Sends the `rpc_result` and records `tool_end`.
    fn finish_call(
        &mut self,
        id: u64,
        result: Result<Value, ExecError>,
        tx: &mut Outbox,
        max_frame: usize,
    ) {
        let Some(call) = self.inflight.remove(&id) else {
            return;
        };
        self.args_in_flight = self.args_in_flight.saturating_sub(call.arg_bytes);
        let mut result = result.map_err(|mut e| {
            if e.tool.is_none() {
                e.tool = Some(call.tool.clone());
            }
            e
        });
        if let Ok(v) = &result {
            let n = budget::json_len(v);
            if n > self.limits.max_tool_result_bytes {
                result = Err(ExecError::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "the result of {} is {n} bytes; the tool-result limit (max_tool_result_bytes) is {} bytes. Ask the tool for less",
                        call.tool, self.limits.max_tool_result_bytes
                    ),
                )
                .with_tool(&call.tool));
            }
        }
        let mut buf = Vec::new();
        let frame = |result: &Result<Value, ExecError>, buf: &mut Vec<u8>| match result {
            Ok(v) => raw::encode_rpc_result_ok(id, v, max_frame, buf),
            Err(e) => encode_frame(
                &HostMessage::RpcResult {
                    id,
                    success: false,
                    result: None,
                    error: Some(to_wire(e)),
                },
                max_frame,
                buf,
            ),
        };
        let too_big = match frame(&result, &mut buf) {
            Err(FrameError::TooLarge { len, max }) => Some((len, max)),
            Err(FrameError::TooDeep { depth, max }) => {
                // Nested deeper than the runner may receive: the call fails, the script goes on.
                result = Err(ExecError::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "the result of {} is nested {depth} levels deep; values sent to or from \
                         tools may nest at most {max} levels",
                        call.tool
                    ),
                )
                .with_tool(&call.tool));
                let _ = frame(&result, &mut buf);
                None
            }
            _ => None,
        };
        if let Some((len, max)) = too_big {
            result = Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the result of {} is {len} bytes; the frame limit is {max} bytes",
                    call.tool
                ),
            )
            .with_tool(&call.tool));
            let _ = frame(&result, &mut buf);
        }
        if let Err(e) = &result {
            if let Some(tool) = &e.tool {
                self.answered.insert((e.code, tool.clone()));
            }
        }
        tx.send(buf);
        self.end_trace(call, result.err().as_ref());
    }

    fn end_trace(&mut self, call: Call, error: Option<&ExecError>) {
        if let Ok(mut nested) = self.children.lock() {
            self.traces.append(&mut nested);
        }
        self.traces.push(TraceEvent {
            kind: if call.capability {
                TraceKind::CapabilityEnd
            } else {
                TraceKind::ToolEnd
            },
            tool: call.tool,
            trace_id: call.trace_id,
            parent_trace_id: self.parent.clone(),
            ts: now_ms(),
            success: Some(error.is_none()),
            duration_ms: Some(call.started.elapsed().as_secs_f64() * 1000.0),
            error: error.map(|e| TraceError {
                code: e.code,
                message: budget::clip(&e.message, budget::TRACE_MESSAGE_BYTES),
            }),
        });
    }

    /// A `tool_end` receipt with `error` for every call still open.
    fn receipts(&mut self, error: &ExecError) {
        self.args_in_flight = 0;
        let mut open: Vec<(u64, Call)> = self.inflight.drain().collect();
        open.sort_by_key(|(id, _)| *id);
        for (_, call) in open {
            self.end_trace(call, Some(error));
        }
    }

    fn log(&mut self, level: &str, message: String) {
        if self.logs_truncated {
            return;
        }
        let cost = message.len() as u64 + LOG_LINE_OVERHEAD;
        if self.log_bytes + cost > self.limits.log_bytes.saturating_add(4096) {
            self.logs_truncated = true;
            self.logs.push(LogLine {
                level: "warn".into(),
                message: "[mcp-sandbox: log limit reached; later log lines were dropped]".into(),
            });
            return;
        }
        self.log_bytes += cost;
        self.logs.push(LogLine {
            level: level.to_string(),
            message,
        });
    }

    /// Looks at a large frame's head (type, id, names) without building the rest.
    fn screen(&self, catalog: &Catalog, payload: &[u8]) -> Result<Screened, ExecError> {
        if payload.len() <= SCREEN_ABOVE {
            return Ok(Screened::Decode);
        }
        let head: FrameHead = decode_payload(payload).map_err(|e| protocol(e.to_string()))?;
        let len = payload.len() as u64;
        match head.kind.as_str() {
            "rpc_call" => {
                let (Some(id), Some(server), Some(tool)) = (head.id, head.server, head.tool) else {
                    return Ok(Screened::Decode); // the full decode names what is missing
                };
                budget::check_name("server", &server)
                    .and_then(|()| budget::check_name("tool", &tool))
                    .map_err(|e| protocol(format!("rpc_call {id} with {e}")))?;
                let max_args = catalog
                    .max_arg_bytes(&server)
                    .unwrap_or(self.limits.max_arg_bytes);
                if len > max_args.saturating_add(CALL_FRAME_OVERHEAD) {
                    return Ok(Screened::OversizedCall { id, server, tool });
                }
                Ok(Screened::Decode)
            }
            "execution_complete" if head.success == Some(true) => {
                if len > self.limits.result_bytes.saturating_add(CALL_FRAME_OVERHEAD) {
                    return Err(ExecError::new(
                        ErrorCode::LimitExceeded,
                        format!(
                            "the result is about {len} bytes; the result limit is {} bytes (checked by the host; the runner was killed). Return less data",
                            self.limits.result_bytes
                        ),
                    ));
                }
                Ok(Screened::Decode)
            }
            _ => Ok(Screened::Decode),
        }
    }

    /// The host's own check of the result size (the runner is not trusted to have made it).
    fn check_result_size(&self, result: Option<&Value>) -> Result<(), ExecError> {
        let n = result.map(budget::json_len).unwrap_or(0);
        if n > self.limits.result_bytes {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the result is {n} bytes; the result limit is {} bytes (checked by the host; the runner was killed). Return less data",
                    self.limits.result_bytes
                ),
            ));
        }
        Ok(())
    }

    fn complete(
        &mut self,
        catalog: &Catalog,
        success: bool,
        result: Option<Value>,
        error: Option<WireError>,
    ) -> Result<(), ExecError> {
        if success {
            self.result = Some(result.unwrap_or(Value::Null));
            return Ok(());
        }
        let Some(w) = error else {
            return Err(protocol(
                "a failed execution_complete without an error".into(),
            ));
        };
        let code = ErrorCode::parse(&w.code)
            .filter(|c| c.runner_may_report())
            .ok_or_else(|| protocol(format!("the runner reported error code '{}'", w.code)))?;
        if let Err(why) = provenance::check(
            code,
            w.tool.as_deref(),
            &provenance::Seen {
                catalog,
                routed: &self.routed,
                answered: &self.answered,
            },
        ) {
            return Err(protocol(why));
        }
        // A script error is the execution's outcome, not a protocol failure. Its strings are the
        // runner's: bounded here before they are kept.
        let alternatives = w.alternatives.map(|alts| {
            alts.into_iter()
                .take(crate::gate::MAX_ALTERNATIVES)
                .map(|a| budget::clip(&a, 2 * budget::MAX_NAME_BYTES + 1))
                .collect()
        });
        self.script_error = Some(ExecError {
            code,
            message: budget::clip(&w.message, budget::ERROR_MESSAGE_BYTES),
            tool: w.tool.filter(|t| t.len() <= 2 * budget::MAX_NAME_BYTES + 1),
            alternatives,
            stack: w
                .stack
                .map(|st| budget::clip(&st, budget::ERROR_MESSAGE_BYTES)),
            signal: None,
            exit_status: None,
        });
        Ok(())
    }

    fn timeout_error(&self, when: &str) -> ExecError {
        let when = if when.is_empty() {
            String::new()
        } else {
            format!(" {when}")
        };
        ExecError::new(
            ErrorCode::ExecutionTimeout,
            format!(
                "the execution did not finish within {} ms{when}; the runner was killed. Await every promise you start, or raise --timeout-ms",
                self.limits.timeout_ms
            ),
        )
    }

    fn finish(mut self, error: Option<ExecError>, started: Instant) -> Outcome {
        let error = error.or(self.script_error.take());
        if let Some(e) = &error {
            self.receipts(&ExecError::new(e.code, e.message.clone()));
        }
        let success = error.is_none();
        Outcome {
            success,
            result: if success {
                self.result.take().unwrap_or(Value::Null)
            } else {
                Value::Null
            },
            error,
            logs: self.logs,
            traces: self.traces,
            metrics: Metrics {
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                tool_calls: self.calls,
                isolation: self.isolation,
                ..Default::default()
            },
        }
    }
}

fn to_wire(e: &ExecError) -> WireError {
    WireError {
        code: e.code.as_str().to_string(),
        message: e.message.clone(),
        tool: e.tool.clone(),
        alternatives: e.alternatives.clone(),
        stack: None,
    }
}

fn shutting_down() -> ExecError {
    ExecError::new(
        ErrorCode::SandboxUnavailable,
        "the host is shutting down; the runner was killed. Retry on a running host",
    )
}

/// `CANCELLED`: the client withdrew the request while it ran.
pub fn cancelled() -> ExecError {
    ExecError::new(
        ErrorCode::Cancelled,
        "the client cancelled the request (or ended its session); the runner was killed and open tool calls were cancelled",
    )
}

/// Resolves when `token` is cancelled; never without one.
async fn fired(token: Option<CancellationToken>) {
    match token {
        Some(t) => t.cancelled_owned().await,
        None => std::future::pending().await,
    }
}

fn protocol(message: String) -> ExecError {
    protocol_error(message)
}
