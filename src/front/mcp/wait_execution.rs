//! `wait_execution {execution_id, timeout_ms?}` and `cancel_execution {execution_id}`: the
//! outcome of an execution that `execute_code {yield_after_ms}` left running, or what is new
//! in it since the last look (`running`). This file reads the tools' arguments; the execution
//! itself is `held`'s (`held::local`: this gateway's, else through the store).

use super::held::local::{self, DEFAULT_WAIT_MS, MAX_WAIT_MS};
use super::held::reply::unknown;
use super::responses::AnswerKey;
use super::{bad_args, Gateway};
use crate::context::session::SessionScope;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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
    asker: (&SessionScope, Option<Duration>),
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
    local::wait(gateway, asker, id, (timeout, &cancel), answer, notes).await
}

pub async fn cancel(
    gateway: &Gateway,
    asker: (&SessionScope, Option<Duration>),
    args: JsonObject,
    answer: AnswerKey,
) -> Result<CallToolResult, ErrorData> {
    let id = execution_id("cancel_execution", &args, &["execution_id"])?;
    local::cancel(gateway, asker, id, answer).await
}
