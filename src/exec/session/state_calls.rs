//! Step 4 for session state: a call to the reserved server `$state` (`store`, `load`, `keys`,
//! `remove`) is answered by the host from the state store (`exec::state`), not routed to a
//! provider. It is traced as one `state_load`/`state_store` event with its key and size, never
//! its value; it does not wait behind the concurrency limit (it holds no server's slot).

use super::*;
use crate::exec::state::{no_session, no_store, StateOp};

/// What a state call's trace event records besides its outcome.
#[derive(Debug, Clone)]
pub(super) struct StateTrace {
    pub(super) writes: bool,
    pub(super) key: String,
    pub(super) bytes: u64,
}

impl Run {
    /// Starts the state operation `q`, or answers at once with why it cannot run.
    pub(super) fn admit_state(
        &mut self,
        q: Queued,
        tx: &mut Outbox,
        max_frame: usize,
    ) -> Option<CallFuture> {
        let tool = format!("{}:{}", q.server, q.tool);
        let op = match q.oversized {
            // Screened as too large to decode: far over any value bound.
            Some(bytes) => Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{}() was refused: its arguments are about {bytes} bytes, more than a frame the host decodes; one value may be at most {} bytes (sandbox.session.max_value_bytes)",
                    q.tool,
                    self.state.as_ref().map_or(0, |s| s.options().max_value_bytes)
                ),
            )),
            None => StateOp::parse(&q.tool, &q.args),
        };
        let trace = StateTrace {
            writes: op
                .as_ref()
                .map_or(q.tool == "store" || q.tool == "remove", StateOp::writes),
            key: op.as_ref().map_or("", StateOp::key).to_string(),
            bytes: match &op {
                Ok(StateOp::Store { value, .. }) => budget::json_len(value),
                _ => 0,
            },
        };
        self.inflight.insert(
            q.id,
            Call {
                tool,
                capability: false,
                trace_id: new_trace_id(),
                transport: None,
                started: Instant::now(),
                arg_bytes: 0,
                state: Some(trace),
            },
        );
        let ready = op.and_then(|op| {
            let scope = self.request.session.clone().ok_or_else(no_session)?;
            let state = self.state.clone().ok_or_else(no_store)?;
            Ok((op, scope, state))
        });
        match ready {
            Err(e) => {
                self.finish_call(q.id, Err(e), tx, max_frame);
                None
            }
            Ok((op, scope, state)) => {
                let id = q.id;
                // A stored value carries what its execution had read; a loaded one (or the
                // keys) brings its labels back into this execution's tree.
                let tree = self.tree().cloned();
                let read = tree.as_ref().map(|t| t.taint.read()).unwrap_or_default();
                let sensitive = self.placeholders.is_some();
                Some(Box::pin(async move {
                    let answer = state.apply(&scope, op, read, sensitive).await;
                    // A refusal derived from labelled values (a quota counting them) carries
                    // their labels too.
                    if let Some(tree) = &tree {
                        match &answer {
                            Ok(a) => tree.taint.inherit(&a.labels),
                            Err(r) => tree.taint.inherit(&r.labels),
                        };
                    }
                    (id, answer.map(|a| a.value).map_err(|r| r.error))
                }))
            }
        }
    }

    /// The trace event of a finished state call (`result`: what the script got).
    pub(super) fn state_event(
        &self,
        call: &Call,
        state: &StateTrace,
        error: Option<&ExecError>,
    ) -> TraceEvent {
        TraceEvent {
            kind: if state.writes {
                TraceKind::StateStore
            } else {
                TraceKind::StateLoad
            },
            tool: call.tool.clone(),
            trace_id: call.trace_id.clone(),
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
            transport: None,
            key: Some(state.key.clone()),
            bytes: Some(state.bytes),
            label: None,
            decision: None,
            approver: None,
        }
    }
}

/// The size a `load` answered (`{found, value}`), for its trace.
pub(super) fn loaded_bytes(answer: &Value) -> u64 {
    match answer.get("value") {
        Some(v) if answer.get("found") == Some(&Value::Bool(true)) => budget::json_len(v),
        _ => 0,
    }
}
