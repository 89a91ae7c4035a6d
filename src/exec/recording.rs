//! An execution recorded for replay (`--audit-record full`) or replayed from a recording
//! (`mcp-sandbox replay`): the session tells its [`Recorder`] each call the runner makes, each
//! answer it sends back and the clock values the runner reports; the recorder keeps them
//! (bounded) or, in a replay, checks each call against the recording and stops the replay with
//! `REPLAY_DIVERGED` at the first that differs.
//!
//! What is kept is what crossed the runner's socket, in the order the script made its calls.
//! With `sandbox.sensitive` on, arguments and answers are kept with the session's placeholders
//! (as the rest of the audit record), unless the operator opted in to real values.

use crate::error::{ErrorCode, ExecError};
use crate::exec::outcome::Outcome;
use crate::exec::placeholders::ExecPlaceholders;
use crate::store::audit_recording::{
    first_difference, OutcomeCall, RecordedCall, RecordedError, RecordedLog, RecordedOutcome,
    Recording, MAX_RECORDED_BYTES, RECORDING_VERSION,
};
use crate::trace::TraceKind;
use sandbox_runner::protocol::{Determinism, Language, MAX_CLOCK_VALUES};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Records an execution, or replays one.
#[derive(Debug)]
pub struct Recorder {
    seed: String,
    replay: Option<Arc<Recording>>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    calls: Vec<RecordedCall>,
    /// The runner's call id → its index in `calls`.
    by_id: HashMap<u64, usize>,
    bytes: usize,
    calls_dropped: u64,
    /// Calls the runner made (the index of the next one).
    made: usize,
    tools: Vec<String>,
    clock: Vec<i64>,
    clock_dropped: u64,
}

impl Recorder {
    /// A recorder of a new execution, with a fresh seed from the kernel.
    pub fn record() -> Recorder {
        let mut seed = [0u8; 32];
        if getrandom::fill(&mut seed).is_err() {
            // Without the kernel's randomness the seed is the clock's: a replay still repeats
            // it (it is kept); the script's randomness is then weak, as it would be anyway.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            seed[..16].copy_from_slice(&now.to_le_bytes());
        }
        Recorder {
            seed: seed.iter().map(|b| format!("{b:02x}")).collect(),
            replay: None,
            inner: Mutex::default(),
        }
    }

    /// A recorder that replays `recording`.
    pub fn replay(recording: Arc<Recording>) -> Recorder {
        Recorder {
            seed: recording.seed.clone(),
            replay: Some(recording),
            inner: Mutex::default(),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the runner is told: the seed and, in a replay, the clock values.
    pub fn determinism(&self) -> Determinism {
        Determinism {
            seed: self.seed.clone(),
            clock: self.replay.as_ref().map(|r| r.clock.clone()),
        }
    }

    /// The tools the runner was given (`server:tool`).
    pub fn set_tools(&self, tools: Vec<String>) {
        self.inner().tools = tools;
    }

    /// A call the runner made. Recording: kept (with placeholders when `redact` says so) while
    /// the recording is under its size bound. Replay: checked against the recorded call at the
    /// same place; a different one is `REPLAY_DIVERGED`, which ends the replay.
    pub fn on_call(
        &self,
        id: u64,
        server: &str,
        tool: &str,
        args: &Value,
        redact: Option<&ExecPlaceholders>,
    ) -> Result<(), ExecError> {
        let mut inner = self.inner();
        let index = inner.made;
        inner.made += 1;
        if let Some(rec) = &self.replay {
            return match rec.calls.get(index) {
                Some(c) => compare(index, c, server, tool, args),
                None => Err(diverged(format!(
                    "call #{} ({server}.{tool}) is not in the recording, which has {} call{}{}",
                    index + 1,
                    rec.calls.len(),
                    if rec.calls.len() == 1 { "" } else { "s" },
                    if rec.calls_dropped > 0 {
                        format!(
                            " kept (and {} more over the recording's size bound, not kept)",
                            rec.calls_dropped
                        )
                    } else {
                        String::new()
                    }
                ))),
            };
        }
        let mut args = args.clone();
        if let Some(p) = redact.filter(|p| !p.sensitive().audit_real_values()) {
            p.redact_value(&mut args);
        }
        let size = crate::exec::budget::json_len(&args) as usize;
        if inner.calls_dropped > 0 || inner.bytes + size > MAX_RECORDED_BYTES {
            inner.calls_dropped += 1;
            return Ok(());
        }
        inner.bytes += size;
        let at = inner.calls.len();
        inner.by_id.insert(id, at);
        inner.calls.push(RecordedCall {
            server: server.to_string(),
            tool: tool.to_string(),
            args,
            result: None,
            error: None,
        });
        Ok(())
    }

    /// The answer sent to the runner for call `id` (recording only).
    pub fn on_answer(
        &self,
        id: u64,
        answer: &Result<Value, ExecError>,
        redact: Option<&ExecPlaceholders>,
    ) {
        if self.replay.is_some() {
            return;
        }
        let mut inner = self.inner();
        let Some(at) = inner.by_id.remove(&id) else {
            return;
        };
        match answer {
            Ok(v) => {
                let mut v = v.clone();
                if let Some(p) = redact.filter(|p| !p.sensitive().audit_real_values()) {
                    p.redact_value(&mut v);
                }
                let size = crate::exec::budget::json_len(&v) as usize;
                if inner.bytes + size > MAX_RECORDED_BYTES {
                    // Over the bound: this call and every later one are not kept.
                    let dropped = (inner.calls.len() - at) as u64;
                    inner.calls.truncate(at);
                    inner.calls_dropped += dropped;
                    return;
                }
                inner.bytes += size;
                if let Some(c) = inner.calls.get_mut(at) {
                    c.result = Some(v);
                }
            }
            Err(e) => {
                let message = match redact.filter(|p| !p.sensitive().audit_real_values()) {
                    Some(p) => p.redact_text(&e.message),
                    None => e.message.clone(),
                };
                inner.bytes += message.len();
                if let Some(c) = inner.calls.get_mut(at) {
                    c.error = Some(RecordedError {
                        code: e.code.as_str().to_string(),
                        message,
                    });
                }
            }
        }
    }

    /// The clock values the runner reports. More than it may report is the runner breaking
    /// the protocol (the caller ends the execution with `PROTOCOL_ERROR`).
    pub fn on_clock(&self, values: Vec<i64>, dropped: u64) -> Result<(), String> {
        if values.len() > MAX_CLOCK_VALUES {
            return Err(format!(
                "the runner reported {} clock values; at most {MAX_CLOCK_VALUES} may be reported",
                values.len()
            ));
        }
        let mut inner = self.inner();
        if !inner.clock.is_empty() {
            return Err("a second clock frame".into());
        }
        inner.clock = values;
        inner.clock_dropped = dropped;
        Ok(())
    }

    /// The recording of the execution that ended with `outcome`.
    pub fn finish(
        &self,
        code: &str,
        language: Language,
        context: &Map<String, Value>,
        outcome: &Outcome,
    ) -> Recording {
        let mut inner = self.inner();
        let mut recorded = outcome_of(outcome);
        let size = crate::exec::budget::json_len(&recorded.result) as usize;
        if inner.bytes + size > MAX_RECORDED_BYTES {
            recorded.result = Value::Null;
            recorded.result_dropped = true;
        }
        Recording {
            version: RECORDING_VERSION,
            language: language.as_str().to_string(),
            code: code.to_string(),
            context: context.clone(),
            tools: std::mem::take(&mut inner.tools),
            seed: self.seed.clone(),
            clock: std::mem::take(&mut inner.clock),
            clock_dropped: inner.clock_dropped,
            calls: std::mem::take(&mut inner.calls),
            calls_dropped: inner.calls_dropped,
            outcome: recorded,
        }
    }
}

/// The parts of `outcome` a replay is compared on.
pub fn outcome_of(outcome: &Outcome) -> RecordedOutcome {
    let mut ends: HashMap<&str, Option<String>> = HashMap::new();
    for e in &outcome.traces {
        if matches!(e.kind, TraceKind::ToolEnd | TraceKind::CapabilityEnd) {
            ends.entry(e.trace_id.as_str())
                .or_insert_with(|| e.error.as_ref().map(|x| x.code.as_str().to_string()));
        }
    }
    RecordedOutcome {
        success: outcome.success,
        result: outcome.result.clone(),
        result_dropped: false,
        error: outcome.error.as_ref().map(|e| RecordedError {
            code: e.code.as_str().to_string(),
            message: e.message.clone(),
        }),
        logs: outcome
            .logs
            .iter()
            .map(|l| RecordedLog {
                level: l.level.clone(),
                message: l.message.clone(),
            })
            .collect(),
        calls: outcome
            .traces
            .iter()
            .filter(|e| matches!(e.kind, TraceKind::ToolStart | TraceKind::CapabilityStart))
            .map(|e| OutcomeCall {
                tool: e.tool.clone(),
                error: ends.get(e.trace_id.as_str()).cloned().flatten(),
            })
            .collect(),
    }
}

fn diverged(message: String) -> ExecError {
    ExecError::new(
        ErrorCode::ReplayDiverged,
        format!("{message}; the replay was stopped there. Compare the code with the recorded one, or pass --code with a script that makes the recorded calls"),
    )
}

/// Call `index` as replayed against the recorded one.
fn compare(
    index: usize,
    recorded: &RecordedCall,
    server: &str,
    tool: &str,
    args: &Value,
) -> Result<(), ExecError> {
    let n = index + 1;
    if recorded.server != server || recorded.tool != tool {
        return Err(diverged(format!(
            "call #{n} is {server}.{tool}; the recording has {}.{} there",
            recorded.server, recorded.tool
        ))
        .with_tool(format!("{server}:{tool}")));
    }
    match first_difference(&recorded.args, args) {
        None => Ok(()),
        Some(d) => Err(diverged(format!(
            "call #{n} ({server}.{tool}) has other arguments than the recorded one: {d}"
        ))
        .with_tool(format!("{server}:{tool}"))),
    }
}
