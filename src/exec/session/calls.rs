//! Step 4: one tool call from `rpc_call` to `rpc_result`: admitted through the gate (or
//! answered at once with why not), started within the concurrency limit, timed out, bounded,
//! and traced with `tool_start`/`tool_end` at the socket boundary.

use super::*;

pub(super) type CallFuture = BoxFuture<'static, (u64, Result<Value, ExecError>)>;

/// Tool calls admitted and not yet ended, in every execution of this process (the metrics'
/// `tool_calls_in_flight`).
static CALLS_IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub fn calls_in_flight() -> usize {
    CALLS_IN_FLIGHT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Code of the warning that calls were still running when the script returned.
pub const UNAWAITED_CALL: &str = "UNAWAITED_CALL";

pub(super) struct Call {
    pub(super) tool: String,
    pub(super) capability: bool,
    pub(super) trace_id: String,
    /// The provider's non-local transport, for the trace (`http`).
    pub(super) transport: Option<&'static str>,
    pub(super) started: Instant,
    /// Serialized size of its arguments, counted in `Run::args_in_flight` while it is open.
    pub(super) arg_bytes: u64,
    /// A session-state operation (`$state`), answered by the host.
    pub(super) state: Option<super::state_calls::StateTrace>,
}

/// The wall-clock deadline as a std `Instant`, for providers.
fn std_deadline(deadline: TokioInstant) -> Instant {
    deadline.into_std()
}

pub(super) struct Queued {
    pub(super) id: u64,
    pub(super) server: String,
    pub(super) tool: String,
    pub(super) args: Value,
    /// The frame's size when the arguments were too large to decode.
    pub(super) oversized: Option<u64>,
    /// The flow rule's ask that admission traced (the question is asked when it is sent).
    pub(super) ask: Option<super::flow_calls::Traced>,
}

impl Run {
    /// Records `tool_start` and either starts the call, queues it, or answers at once with the
    /// reason it cannot be made.
    pub(super) fn admit(
        &mut self,
        catalog: &Catalog,
        q: Queued,
        tx: &mut Outbox,
        max_frame: usize,
    ) -> Option<CallFuture> {
        if q.server == crate::exec::state::STATE_SERVER {
            return self.admit_state(q, tx, max_frame);
        }
        let tool = format!("{}:{}", q.server, q.tool);
        let arg_bytes = q.oversized.unwrap_or_else(|| budget::json_len(&q.args));
        if !self.routed.contains(&tool) {
            self.routed.insert(tool.clone());
        }
        let trace_id = new_trace_id();
        let provider = catalog.provider(&q.server);
        let capability = provider.is_some_and(|p| p.is_capability());
        let transport = provider.and_then(|p| p.transport());
        self.traces.push(TraceEvent {
            kind: if capability {
                TraceKind::CapabilityStart
            } else {
                TraceKind::ToolStart
            },
            tool: tool.clone(),
            trace_id: trace_id.clone(),
            parent_trace_id: self.request.parent_trace_id.clone(),
            ts: now_ms(),
            success: None,
            duration_ms: None,
            error: None,
            by: None,
            rule: None,
            transport: transport.map(str::to_string),
            key: None,
            bytes: Some(arg_bytes),
            label: None,
            decision: None,
            approver: None,
        });
        if let Some(sink) = &self.audit_args {
            let args = q.oversized.is_none().then_some(&q.args);
            match (&self.placeholders, args) {
                // The audit log keeps placeholders, unless the operator opted in.
                (Some(p), Some(args)) if !p.sensitive().audit_real_values() => {
                    let mut args = args.clone();
                    p.redact_value(&mut args);
                    sink.note(&trace_id, Some(&args));
                }
                _ => sink.note(&trace_id, args),
            }
        }
        self.inflight.insert(
            q.id,
            Call {
                tool: tool.clone(),
                capability,
                trace_id,
                transport,
                started: Instant::now(),
                arg_bytes,
                state: None,
            },
        );
        CALLS_IN_FLIGHT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.args_in_flight += arg_bytes;
        self.show_calls();
        let max_args = catalog
            .max_arg_bytes(&q.server)
            .unwrap_or(self.limits.max_arg_bytes);
        if arg_bytes > max_args {
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
        if let Some(tree) = self.tree().filter(|t| !t.take_call()) {
            let e = ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{tool} was not called: this execution and the capabilities it called have made {} tool calls, the limit (max_calls) for all of them together",
                    tree.max_calls()
                ),
            )
            .with_tool(&tool);
            self.finish_call(q.id, Err(e), tx, max_frame);
            return None;
        }
        // Judged on the bytes the server would get: the placeholders resolved (one that does
        // not resolve is refused here, after the names; `send_time` resolves again).
        let resolved = super::send_time::resolve(
            self.placeholders.as_deref(),
            self.request.policy.sensitive().map(|s| &**s),
            &tool,
            &q.args,
        );
        let judged = match &resolved {
            Ok(Some(sent)) => sent,
            _ => &q.args,
        };
        let checked =
            crate::gate::check_call::check_call(catalog, &self.request, &q.server, &q.tool, judged)
                .and(resolved.map(drop));
        if let Err(e) = checked {
            self.finish_call(q.id, Err(e), tx, max_frame);
            return None;
        }
        let mut q = q;
        match self.flow_check(&tool) {
            Ok(ask) => q.ask = ask,
            Err(e) => {
                self.finish_call(q.id, Err(e), tx, max_frame);
                return None;
            }
        }
        let active = self.inflight.len() - self.queue.len();
        if active > self.limits.max_concurrent_calls as usize {
            self.queue.push_back(q);
            return None;
        }
        Some(self.start_call(catalog, q))
    }

    pub(super) fn start_call(&self, catalog: &Catalog, q: Queued) -> CallFuture {
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
            request: self.request.clone(),
            feedback: Some(crate::tools::passthrough::FeedbackRef(
                self.feedback.clone(),
            )),
            audit_args: self.audit_args.clone(),
        };
        // Every decision that depends on labels, placeholders, conditions or approvals is
        // made again inside the future, right before the provider gets the bytes (`send_time`).
        let outgoing = super::send_time::Outgoing {
            server: q.server.clone(),
            tool: q.tool.clone(),
            args: q.args,
            request: self.request.clone(),
            placeholders: self.placeholders.clone(),
            sensitive: self.request.policy.sensitive().cloned(),
            approvals: self.approvals.clone(),
            trace_id: ctx.trace_id.clone(),
            sink: self.children.clone(),
            traced: q.ask,
            live: self.live.clone(),
        };
        let provider = catalog.provider(&q.server).cloned();
        let tool = q.tool;
        let id = q.id;
        Box::pin(async move {
            // Write-ahead audit: the execution's record is committed before its first call
            // leaves the host; if it cannot be, no call is made.
            if let Some(sink) = &ctx.audit_args {
                if let Err(why) = sink.before_call().await {
                    return (
                        id,
                        Err(ExecError::new(
                            ErrorCode::SandboxUnavailable,
                            format!(
                                "the audit record of this execution could not be written ({why}), so {qualified} was not called. Check the state store (the file, or the PostgreSQL database) and retry"
                            ),
                        )
                        .with_tool(&qualified)),
                    );
                }
            }
            let args = match outgoing.decide().await {
                Ok(sent) => sent,
                Err(e) => return (id, Err(e.with_tool(&qualified))),
            };
            let fut = match provider {
                Some(p) => p.call(&tool, args, &ctx),
                None => Box::pin(async move {
                    Err(ExecError::new(ErrorCode::ToolNotFound, "no such server"))
                }),
            };
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
    pub(super) fn finish_call(
        &mut self,
        id: u64,
        result: Result<Value, ExecError>,
        tx: &mut Outbox,
        max_frame: usize,
    ) {
        let Some(mut call) = self.inflight.remove(&id) else {
            return;
        };
        // A value `fields` marks that could not be masked is never let through.
        let result = match (&self.placeholders, result) {
            (Some(p), Ok(answer)) => p.remember_fields(&call.tool, &answer).map(|()| answer),
            (_, result) => result,
        };
        if let (Some(state), Ok(answer)) = (call.state.as_mut(), &result) {
            if !state.writes {
                state.bytes = super::state_calls::loaded_bytes(answer);
            }
        }
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
            // A refusal that names no tool (a state operation's: a seal that does not open, a
            // quota) was still this call's answer: the script may re-raise it with its code.
            let tool = e.tool.as_ref().unwrap_or(&call.tool);
            self.answered.insert((e.code, tool.clone()));
        }
        tx.send(buf);
        if let Some(rec) = &self.recorder {
            rec.on_answer(id, &result, self.placeholders.as_deref());
        }
        // What the server answered reached the script (a host-side refusal carries nothing).
        let answered = match &result {
            Ok(_) => true,
            Err(e) => e.code == ErrorCode::ToolError,
        };
        if answered && call.state.is_none() {
            self.flow_read(&call.tool);
        }
        self.end_trace(call, result.err().as_ref());
    }

    pub(super) fn end_trace(&mut self, call: Call, error: Option<&ExecError>) {
        self.server_logs();
        if let Ok(mut nested) = self.children.lock() {
            self.traces.append(&mut nested);
        }
        if let Some(state) = &call.state {
            let event = self.state_event(&call, state, error);
            self.traces.push(event);
            self.trace_labels();
            return;
        }
        CALLS_IN_FLIGHT.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        self.traces.push(TraceEvent {
            kind: if call.capability {
                TraceKind::CapabilityEnd
            } else {
                TraceKind::ToolEnd
            },
            tool: call.tool,
            trace_id: call.trace_id,
            parent_trace_id: self.request.parent_trace_id.clone(),
            ts: now_ms(),
            success: Some(error.is_none()),
            duration_ms: Some(call.started.elapsed().as_secs_f64() * 1000.0),
            error: error.map(|e| TraceError {
                code: e.code,
                message: budget::clip(&e.message, budget::TRACE_MESSAGE_BYTES),
            }),
            by: None,
            rule: None,
            transport: call.transport.map(str::to_string),
            key: None,
            bytes: None,
            label: None,
            decision: None,
            approver: None,
        });
        self.calls_done += 1;
        self.show_calls();
    }

    /// A `tool_end` receipt with `error` for every call still open.
    /// The calls still open when the script returned (it did not await them): one warning in
    /// the logs (so in `run`'s stderr and `execute_code`'s summary) and the tracing log.
    pub(super) fn warn_unawaited(&mut self) {
        let mut open: Vec<(u64, String)> = self
            .inflight
            .iter()
            .map(|(id, c)| (*id, c.tool.clone()))
            .chain(
                self.queue
                    .iter()
                    .map(|q| (q.id, format!("{}:{}", q.server, q.tool))),
            )
            // One warning per mistake: a call already named before the run is not named again.
            .filter(|(_, tool)| !self.warned_unawaited.contains(tool))
            .collect();
        if open.is_empty() {
            return;
        }
        open.sort();
        let count = open.len();
        let mut names: Vec<(String, usize)> = Vec::new();
        for (_, tool) in open {
            match names.iter_mut().find(|(t, _)| *t == tool) {
                Some((_, n)) => *n += 1,
                None => names.push((tool, 1)),
            }
        }
        let shown: Vec<String> = names
            .iter()
            .take(5)
            .map(|(t, n)| {
                if *n > 1 {
                    format!("{t} ×{n}")
                } else {
                    t.clone()
                }
            })
            .collect();
        let more = if names.len() > 5 { ", …" } else { "" };
        let message = format!(
            "{count} call{} still running when the script returned: {}{more} — missing await? ({UNAWAITED_CALL}: such a call is cancelled; await it, or await Promise.all of them, before returning)",
            if count == 1 { "" } else { "s" },
            shown.join(", ")
        );
        // The script's own log line is the warning (`run`'s stderr, `execute_code`'s answer);
        // the host's log gets it at info, so `run` does not print one mistake twice.
        tracing::info!(execution_id = %self.request.execution_id, "{message}");
        self.log("warn", format!("[mcp-sandbox: {message}]"));
    }

    pub(super) fn receipts(&mut self, error: &ExecError) {
        self.args_in_flight = 0;
        let mut open: Vec<(u64, Call)> = self.inflight.drain().collect();
        open.sort_by_key(|(id, _)| *id);
        for (_, call) in open {
            self.end_trace(call, Some(error));
        }
    }
}
