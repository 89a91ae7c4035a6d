//! One execution, as a state machine over named steps, each in its own file:
//!
//! 1. [`preflight`]: what can be refused before a runner exists (limits, source size, context
//!    keys, a request already cancelled);
//! 2. [`spawn`]: take a pre-started runner from the pool or spawn one, verify its isolation in
//!    `/proc`, and — whatever happens next — kill and reap it before returning;
//! 3. [`converse`]: send `execute`, then read the runner's frames (logs, calls, the result) under
//!    the wall clock, screening large frames before they are decoded;
//! 4. [`calls`]: each call through the gate to its provider, its `tool_start`/`tool_end` traces,
//!    and its answer back to the runner;
//! 5. [`finish`]: check the runner's `execution_complete` (codes it may report, provenance, sizes)
//!    and turn everything into the [`Outcome`].
//!
//! The runner is hostile from here: every frame is bounded and checked, and anything unexpected
//! kills it with `PROTOCOL_ERROR`. Whatever happens, the runner is reaped and every call that
//! started gets its `tool_end` receipt. The request's [`RequestContext`] is the only source of
//! the limits and the policy that apply.

mod calls;
mod converse;
mod decode;
mod finish;
mod flow_calls;
mod preflight;
mod send_time;
mod spawn;
mod state_calls;

pub use calls::{calls_in_flight, UNAWAITED_CALL};
pub use spawn::{missing_layers, REQUIRED_LAYERS};

use calls::{Call, CallFuture, Queued};

use crate::context::limits::Limits;
use crate::context::RequestContext;
use crate::error::{ErrorCode, ExecError};
use crate::exec::budget;
use crate::exec::outbox::Outbox;
use crate::exec::outcome::{LogLine, Metrics, Outcome};
use crate::exec::pool::RunnerPool;
use crate::exec::provenance;
use crate::exec::runner::{self, crashed, frame_error, protocol_error, ReadyRunner, RunnerCommand};
use crate::tools::catalog::{CallContext, Catalog};
use crate::trace::{new_trace_id, now_ms, TraceError, TraceEvent, TraceKind};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use sandbox_runner::protocol::{
    decode_payload, encode_frame, raw, FrameError, HostMessage, RunnerMessage, WireError,
};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::time::Instant as TokioInstant;
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use crate::exec::outcome::LOG_LINE_OVERHEAD;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    pub code: String,
    /// The engine that runs `code` (JavaScript unless a front says Python).
    pub language: sandbox_runner::protocol::Language,
    /// For a script stripped from TypeScript: where each position of `code` came from. Error
    /// positions in the outcome are mapped back with it (`script.ts:L:C`).
    pub positions: Option<std::sync::Arc<crate::script::source_map::PositionMap>>,
    /// Variables of the script (`--context`, `execute_code {context}`).
    pub context: Map<String, Value>,
    /// Who asks, under which limits and policy, in which trace: the only source of the limits
    /// and the policy this execution obeys.
    pub request: RequestContext,
    /// Who answers when a policy `ask` rule matches a call (`None`: nobody; such calls are
    /// denied at once). See [`crate::gate::approval`]. A hook of the front, like the
    /// cancellation tokens (its type lives in `gate/`, above the request context).
    pub approvals: Option<std::sync::Arc<crate::gate::approval::Approvals>>,
    /// Where the servers' progress (and log messages) for this execution's calls go besides its
    /// logs (`serve`: progress notifications of the `execute_code` request).
    pub progress: Option<crate::tools::passthrough::FeedbackRef>,
    /// Where each call's arguments are noted for the audit log (`None`: not noted). The
    /// caller's sink is passed on to a capability's nested execution.
    pub audit_args: Option<crate::store::audit_options::ArgsSink>,
    /// Isolation layers that must be enforced besides the always-required ones.
    pub require_layers: Vec<String>,
    /// Called with the runner's pid right after it is spawned, before the host reads from it
    /// (supervisors and fault-injection tests; see [`SpawnHook`]).
    pub on_spawn: Option<SpawnHook>,
    /// Cancelling it kills the runner and ends the execution with `SANDBOX_UNAVAILABLE`
    /// (the host is shutting down); logs and traces so far are kept, open calls get receipts.
    pub cancel: Option<CancellationToken>,
    /// Where the session's state is kept (`store`/`load`); set by the sandbox for a request
    /// with a session when it has a state store. A capability's nested execution has none.
    pub state: Option<std::sync::Arc<crate::exec::state::SessionState>>,
    /// Cancelling it kills the runner and ends the execution with `CANCELLED`: the client
    /// withdrew the request (MCP `notifications/cancelled`, or its session ended). Open calls
    /// are dropped, which sends `notifications/cancelled` to their servers.
    pub client_cancel: Option<CancellationToken>,
    /// Where the session shows its progress while it runs (log lines, calls done and in
    /// flight) to a front that lets its client look before the end (`yield_after_ms`).
    pub live: Option<Arc<crate::exec::live::LiveView>>,
    /// The session's placeholders (`sandbox.sensitive`): set by the sandbox for a top-level
    /// execution when detection is on; a capability's nested execution has none (a
    /// placeholder in its calls' arguments is refused).
    pub placeholders: Option<Arc<crate::exec::placeholders::ExecPlaceholders>>,
    /// Return real values instead of placeholders (`run --reveal`: the person at the
    /// terminal); the audit log still gets placeholders.
    pub reveal: bool,
    /// Its place in its caller's fair share, when the front admitted it before it reached the
    /// sandbox (`Sandbox::admit`); else the sandbox admits it.
    pub admitted: Option<Arc<crate::exec::fair_share::Admitted>>,
    /// Records this execution for replay (`--audit-record full`), or replays a recording
    /// (`mcp-sandbox replay`). A capability's nested execution has none.
    pub record: Option<Arc<crate::exec::recording::Recorder>>,
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
    // A top-level execution starts the tree its capabilities share; a nested one joins it.
    let mut request = req.request.clone();
    let top = request.tree.is_none();
    let tree = request
        .tree
        .get_or_insert_with(|| {
            Arc::new(crate::context::tree::ExecTree::new(
                request.limits.max_calls,
                request.limits.cpu_ms,
            ))
        })
        .clone();
    let mut run = Run::new(Arc::new(request));
    run.top = top;
    run.approvals = crate::gate::approval::Gate::new(req.approvals.clone());
    run.audit_args = req.audit_args.clone();
    run.state = req.state.clone();
    run.live = req.live.clone();
    run.placeholders = req.placeholders.clone();
    run.recorder = req.record.clone();
    let owner = format!(
        "{}/{}",
        run.request.caller.tenant, run.request.caller.principal
    );
    run.feedback = Arc::new(
        crate::exec::passthrough::ExecFeedback::new(
            run.limits.log_bytes,
            req.progress.clone().map(|f| f.0),
            run.deadline,
        )
        .owned_by(owner)
        .redacting(run.placeholders.clone()),
    );
    let span = tracing::debug_span!(
        "execution",
        id = %run.request.execution_id,
        client = %run.request.client
    );
    // With `flow_scope: "session"`, what the session's other executions read counts from the
    // start and, while they run beside this one in this process, from the moment they read it;
    // what this one reads counts for them at once and for the next ones (fail closed: labels
    // that cannot be read or kept stop the execution).
    let flow_session = flow_session(&run.request, top, req.state.as_ref());
    if let Some((scope, state)) = &flow_session {
        match state.live_labels(scope).await {
            Ok(live) => {
                tree.taint.share(live);
                run.trace_labels();
            }
            Err(e) => return run.finish(Some(e), started),
        }
    }
    // Before it runs: calls started as statements of their own, which nothing waits for.
    for call in crate::script::analysis::unawaited_calls(&req.code) {
        run.warned_unawaited
            .insert(format!("{}:{}", call.server, call.tool));
        run.log(
            "warn",
            format!(
                "[mcp-sandbox: {}: mcp.{}.{}(…) is neither awaited nor returned nor assigned — missing await? The script may return before it is done, and then it is cancelled]",
                calls::UNAWAITED_CALL,
                call.server,
                call.tool
            ),
        );
    }
    let mut error = run
        .drive(catalog, runner, pool, &req)
        .instrument(span)
        .await
        .err();
    run.trace_labels();
    if let Some((scope, state)) = &flow_session {
        // Labels kept for a principal (no protocol session) name the execution that read them.
        let mut read = tree.taint.read();
        if run.request.labels_scope.is_some() {
            for s in read.iter_mut().filter(|s| !s.earlier) {
                s.execution = Some(run.request.execution_id.clone());
            }
        }
        if let Err(e) = state.add_session_labels(scope, read).await {
            error = Some(ExecError::new(
                ErrorCode::SandboxUnavailable,
                format!("the data-flow labels of this session could not be kept ({}), so the outcome is withheld; retry", e.message),
            ));
        }
    }
    let own = run.cpu_ms.unwrap_or(0);
    if !top {
        tree.spend(own);
    } else if tree.exhausted() || (tree.spent_ms() > 0 && own + tree.spent_ms() > tree.cpu_ms()) {
        // The whole tree spends one CPU budget: its capabilities' runners count.
        error = Some(ExecError::new(
            ErrorCode::CpuLimit,
            format!(
                "this execution and the capabilities it called used up the {} ms of CPU time (cpu_ms) they share ({own} ms its own, {} ms in capabilities, as the host reads them). Do less work per execution or raise --cpu-ms",
                tree.cpu_ms(),
                tree.spent_ms()
            ),
        ));
    }
    if let Some(pool) = pool {
        pool.refill();
    }
    let request = run.request.clone();
    let mut outcome = run.finish(error, started);
    if let Some(e) = outcome.error.as_mut() {
        crate::exec::hints::improve(e, &req.code, req.language, &request);
        if let Some(map) = &req.positions {
            e.message = map.rewrite(&e.message);
            e.stack = e.stack.as_deref().map(|s| map.rewrite(s));
        }
    }
    outcome
}

/// The session whose data-flow labels a top-level execution shares, with the state store that
/// keeps them: only with `flow_scope: "session"` and labelled tools.
fn flow_session(
    request: &RequestContext,
    top: bool,
    state: Option<&Arc<crate::exec::state::SessionState>>,
) -> Option<(
    crate::context::session::SessionScope,
    Arc<crate::exec::state::SessionState>,
)> {
    let flow = request.policy.flow();
    if !top || !flow.tracks() || flow.scope == crate::context::flow::FlowScope::Execution {
        return None;
    }
    let scope = request
        .labels_scope
        .clone()
        .or_else(|| request.session.clone());
    scope.zip(state.cloned())
}

/// The state of one execution.
struct Run {
    /// The request this execution serves (shared with its calls' providers).
    request: Arc<RequestContext>,
    /// `request.limits`, copied for the many checks that read them.
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
    /// See [`ExecRequest::audit_args`].
    audit_args: Option<crate::store::audit_options::ArgsSink>,
    /// Events of nested work handed back by providers.
    children: crate::tools::catalog::TraceSink,
    /// Argument bytes of the open calls (running or queued).
    args_in_flight: u64,
    /// `server:tool` of every call the host routed in this execution.
    routed: HashSet<String>,
    /// `(code, server:tool)` of every error the host answered a call with.
    answered: HashSet<(ErrorCode, String)>,
    /// The runner's layers as verified in `/proc`.
    isolation: BTreeMap<String, String>,
    /// The host's pid of the runner, once one is ready.
    runner_pid: Option<u32>,
    /// Where calls an `ask` rule matches wait for approval.
    approvals: crate::gate::approval::Gate,
    /// The servers' progress and log messages for this execution's calls.
    feedback: Arc<crate::exec::passthrough::ExecFeedback>,
    /// A top-level execution (not a capability's nested one).
    top: bool,
    /// CPU its runner used, read from `/proc` before it was reaped.
    cpu_ms: Option<u64>,
    /// See [`ExecRequest::state`].
    state: Option<Arc<crate::exec::state::SessionState>>,
    /// See [`ExecRequest::live`].
    live: Option<Arc<crate::exec::live::LiveView>>,
    /// Calls that ended, for the live view.
    calls_done: u64,
    /// See [`ExecRequest::placeholders`].
    placeholders: Option<Arc<crate::exec::placeholders::ExecPlaceholders>>,
    /// `server:tool` of the calls warned about before the run (neither awaited nor returned
    /// nor assigned): left open at the end, they are not warned about a second time.
    warned_unawaited: HashSet<String>,
    /// See [`ExecRequest::record`].
    recorder: Option<Arc<crate::exec::recording::Recorder>>,
}

impl Run {
    fn new(request: Arc<RequestContext>) -> Self {
        let limits = request.limits;
        Run {
            request,
            limits,
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
            audit_args: None,
            children: Default::default(),
            args_in_flight: 0,
            routed: HashSet::new(),
            answered: HashSet::new(),
            isolation: BTreeMap::new(),
            runner_pid: None,
            approvals: crate::gate::approval::Gate::new(None),
            feedback: Arc::new(crate::exec::passthrough::ExecFeedback::new(
                0,
                None,
                TokioInstant::now(),
            )),
            top: true,
            cpu_ms: None,
            state: None,
            live: None,
            calls_done: 0,
            placeholders: None,
            warned_unawaited: HashSet::new(),
            recorder: None,
        }
    }

    /// Shows the calls now in the live view, if there is one.
    fn show_calls(&self) {
        if let Some(live) = &self.live {
            live.set_calls(crate::exec::live::Calls {
                done: self.calls_done,
                in_flight: self.inflight.len() as u64,
            });
            let oldest = self.inflight.values().min_by_key(|c| c.started);
            live.set_waiting_on(oldest.map(|c| c.tool.as_str()));
        }
    }

    /// The tree this execution belongs to (always set by `execute_pooled`).
    fn tree(&self) -> Option<&Arc<crate::context::tree::ExecTree>> {
        self.request.tree.as_ref()
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
