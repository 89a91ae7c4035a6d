//! `wait_execution {execution_id, timeout_ms?}` and `cancel_execution {execution_id}`: the
//! outcome of an execution that `execute_code {yield_after_ms}` left running, or what is new
//! in it since the last look (`running`). The lifetime rules are in `executions`.

use super::execute_code::{reserve_answer, tool_result};
use super::executions::{self, Execution, Finished};
use super::responses::AnswerKey;
use super::search_tools::WithText;
use super::{bad_args, Gateway};
use crate::context::session::SessionScope;
use crate::exec::outcome::Outcome;
use crate::exec::output_budget::{json_len, Budget};
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `wait_execution`'s default wait.
pub const DEFAULT_WAIT_MS: u64 = 10_000;
/// `wait_execution`'s longest wait (a larger `timeout_ms` is capped).
pub const MAX_WAIT_MS: u64 = 60_000;
/// How long `cancel_execution` waits for the cancelled execution to end (its runner is killed
/// at once; this only bounds the wait for the session to reap it).
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The description of `execute_code`'s `yield_after_ms` argument.
pub const YIELD_DESCRIPTION: &str = "Answer after this many milliseconds if the execution is still \
running, instead of waiting for its end: the answer is then {status: \"running\", execution_id, \
logs_so_far, calls_done, calls_in_flight} and the execution goes on under its own timeout and CPU \
budget. Get its outcome with wait_execution (or stop it with cancel_execution). Use it for long \
scripts, to do other work or report progress meanwhile. The outcome is kept for this session until \
you read it (other requests never discard it; it is dropped when the session ends or stays idle past \
its time-to-live). A value at or above the timeout means no yield. Each session may have a few \
yielded executions running at once (LIMIT_EXCEEDED past that).";

/// The description of `wait_execution`.
pub const WAIT_DESCRIPTION: &str = "Wait for an execution that execute_code left running \
(yield_after_ms) and get its outcome. Waits up to timeout_ms (default 10000, at most 60000). If \
it ended, the answer is its outcome, exactly like execute_code's (result, logs, error, traces; \
isError when it failed; cut to the same output budget: a truncated answer means the script ran to \
its end, do not run it again), and the outcome is forgotten: read it once. If it is still \
running, the answer is {status: \"running\", execution_id, logs_so_far, calls_done, \
calls_in_flight} with the log lines new since your last look; call wait_execution again. Several \
running executions are waited on independently, by id. An id that is unknown, already read, \
expired with its session, or from another session is refused with INVALID_ARGUMENTS.";

/// The description of `cancel_execution`.
pub const CANCEL_DESCRIPTION: &str = "Stop an execution that execute_code left running \
(yield_after_ms): its runner is killed and its open tool calls are cancelled (calls already made \
are not undone). The answer is its outcome with error code CANCELLED (or, if it had ended \
before, its outcome as it ended), and the outcome is forgotten. An unknown id, or another \
session's, is refused with INVALID_ARGUMENTS.";

pub fn wait_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "execution_id": {"type": "string", "description": "The execution_id of execute_code's running answer."},
            "timeout_ms": {"type": "integer", "minimum": 0, "description": "How long to wait for the end (default 10000; 0 only looks; larger values are capped at 60000)."}
        },
        "required": ["execution_id"],
        "additionalProperties": false
    })
}

pub fn cancel_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "execution_id": {"type": "string", "description": "The execution_id of execute_code's running answer."}
        },
        "required": ["execution_id"],
        "additionalProperties": false
    })
}

/// The answer to an id that names nothing of the caller's: one and the same whether it is
/// unknown or another session's.
pub(super) fn unknown() -> ErrorData {
    let e = executions::unknown();
    ErrorData::invalid_params(e.message, Some(json!({"code": e.code.as_str()})))
}

/// The `execution_id` of `args`, which may hold only `allowed`.
fn execution_id<'a>(
    tool: &str,
    args: &'a JsonObject,
    allowed: &[&str],
) -> Result<&'a str, ErrorData> {
    if let Some(extra) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad_args(format!(
            "{tool}: unknown argument `{extra}`; use {}",
            allowed.join(", ")
        )));
    }
    match args.get("execution_id") {
        // Every id the gateway gives is a UUID: anything else names nothing, and is answered
        // so without asking the store (which may not even hold it: PostgreSQL refuses a NUL).
        Some(Value::String(s)) if uuid::Uuid::try_parse(s).is_err() => Err(unknown()),
        Some(Value::String(s)) => Ok(s),
        _ => Err(bad_args(format!(
            "{tool}: `execution_id` (a string from execute_code's running answer) is required"
        ))),
    }
}

pub async fn wait(
    gateway: &Gateway,
    (owner, idle): (&SessionScope, Option<Duration>),
    args: JsonObject,
    cancel: CancellationToken,
    answer: AnswerKey,
    notes: Option<std::sync::Arc<super::passthrough::Notes>>,
) -> Result<CallToolResult, ErrorData> {
    let id = execution_id("wait_execution", &args, &["execution_id", "timeout_ms"])?;
    let timeout = match args.get("timeout_ms") {
        None | Some(Value::Null) => DEFAULT_WAIT_MS,
        Some(v) => v.as_u64().ok_or_else(|| {
            bad_args("wait_execution: `timeout_ms` must be a non-negative integer (milliseconds)")
        })?,
    }
    .min(MAX_WAIT_MS);
    let timeout = Duration::from_millis(timeout);
    let Some(entry) = gateway.executions.get(owner, id) else {
        // Not this gateway's: another's, through the store.
        let asker = (owner, idle);
        return super::remote::wait(gateway, asker, id, timeout, &cancel, answer).await;
    };
    let watcher = notes
        .as_ref()
        .map(|n| super::yielding::calls_progress(&entry.live, n.clone()));
    let ended = tokio::select! {
        ended = entry.wait(timeout) => ended,
        () = cancel.cancelled() => false,
    };
    drop(watcher);
    if let Some(n) = &notes {
        n.close();
    }
    if !ended {
        return Ok(running(&entry));
    }
    take(gateway, (owner, idle), &entry, answer).await
}

/// The outcome of `entry`, which ended: this gateway's copy, or the one its row holds.
pub(super) async fn take(
    gateway: &Gateway,
    (owner, idle): (&SessionScope, Option<Duration>),
    entry: &Execution,
    answer: AnswerKey,
) -> Result<CallToolResult, ErrorData> {
    match gateway.executions.take(owner, &entry.id) {
        Some(f) => {
            if entry.is_recorded() {
                // Its row never got the outcome (the store failed): it goes too.
                if let Some(store) = gateway.store.clone() {
                    let id = entry.id.clone();
                    let _ = store.run(move |s| s.delete_yield(&id)).await;
                }
            }
            Ok(deliver(gateway, f, answer))
        }
        // Its outcome went into its row (or a concurrent request of the session read it).
        None if entry.is_recorded() => {
            let never = CancellationToken::new();
            let asker = (owner, idle);
            super::remote::wait(gateway, asker, &entry.id, Duration::ZERO, &never, answer).await
        }
        None => Err(unknown()),
    }
}

pub async fn cancel(
    gateway: &Gateway,
    (owner, idle): (&SessionScope, Option<Duration>),
    args: JsonObject,
    answer: AnswerKey,
) -> Result<CallToolResult, ErrorData> {
    let id = execution_id("cancel_execution", &args, &["execution_id"])?;
    let Some(entry) = gateway.executions.get(owner, id) else {
        // Not this gateway's: asked of its gateway through the store.
        return super::remote::cancel(gateway, (owner, idle), id, CANCEL_WAIT, answer).await;
    };
    entry.cancel.cancel();
    if !entry.wait(CANCEL_WAIT).await {
        tracing::warn!(
            execution = id,
            "a cancelled execution did not end within {CANCEL_WAIT:?}"
        );
        return Ok(running(&entry));
    }
    take(gateway, (owner, idle), &entry, answer).await
}

/// A finished execution's answer; its room in the unread-answer budget is now held for
/// `answer` (until it is written).
pub fn deliver(gateway: &Gateway, f: Finished, answer: AnswerKey) -> CallToolResult {
    if let Some(room) = f.room {
        gateway.responses.hold(answer, room);
    }
    tool_result(f.value, f.budget)
}

/// `outcome`'s answer, within `budget` and the unread-answer budget.
pub fn deliver_outcome(
    gateway: &Gateway,
    outcome: &Outcome,
    budget: Budget,
    answer: AnswerKey,
) -> CallToolResult {
    let (value, room) = reserve_answer(gateway, outcome, budget);
    deliver(gateway, Finished::new(value, budget, room), answer)
}

/// `{status: "running", …}` with what is new since the last look, within the execution's output
/// budget (the oldest unseen lines go first; the outcome keeps them all).
pub fn running(entry: &Execution) -> CallToolResult {
    let look = entry.live.look();
    let mut logs = look.logs;
    let text = format!(
        "Still running after {} ms (execution_id {}): {} tool calls done, {} in flight. Call wait_execution with this execution_id for the outcome, or cancel_execution to stop it.",
        entry.started.elapsed().as_millis(),
        entry.id,
        look.calls.done,
        look.calls.in_flight
    );
    let answer = |logs: &[crate::exec::outcome::LogLine], dropped: usize| {
        let mut v = json!({
            "status": "running",
            "execution_id": entry.id,
            "elapsed_ms": entry.started.elapsed().as_millis() as u64,
            "calls_done": look.calls.done,
            "calls_in_flight": look.calls.in_flight,
            "logs_so_far": logs,
        });
        if dropped > 0 {
            v["logs_dropped"] = json!(dropped);
            v["hint"] = json!(
                "older new log lines did not fit the output budget; the outcome's logs hold them"
            );
        }
        v
    };
    let max = entry.budget.max_output_bytes;
    // Room for the fields and the note besides the lines.
    let fixed = json_len(&answer(&[], 1)) + json_len(&Value::String(text.clone()));
    let mut size: u64 = logs.iter().map(|l| json_len(l) + 1).sum();
    let mut dropped = 0;
    while fixed + size > max && dropped < logs.len() {
        size -= json_len(&logs[dropped]) + 1;
        dropped += 1;
    }
    let kept = logs.split_off(dropped);
    CallToolResult::structured(answer(&kept, dropped)).with_text(text)
}
