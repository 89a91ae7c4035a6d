//! What a held execution answers its client: an outcome cut to the request's output budget
//! (with its room in the unread-answer budget, `responses`), the `running` status with what is
//! new since the last look, the one answer to an id that names nothing of the caller's, and the
//! progress notifications of a request that waits. Every other file of `held` (and the fronts:
//! `execute_code`, `wait_execution`, `tasks`) answers through these; this file imports none of
//! them but the registry's types.

use super::registry::{self, Execution, Finished};
use crate::exec::live::LiveView;
use crate::exec::outcome::Outcome;
use crate::exec::output_budget::{self, json_len, Budget, DEFAULT_MAX_OUTPUT_BYTES};
use crate::front::mcp::passthrough::Notes;
use crate::front::mcp::responses::AnswerKey;
use crate::front::mcp::search_tools::WithText;
use crate::front::mcp::sessions::DropGuardTask;
use crate::front::mcp::summary::{result_chars, summary};
use crate::front::mcp::Gateway;
use rmcp::model::CallToolResult;
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::sync::Arc;

/// `outcome`'s answer cut to `budget`, with its room in the unread-answer budget, held until
/// the client has read it. An answer that finds no room becomes `LIMIT_EXCEEDED` (the execution
/// ran and was recorded).
pub fn reserve_answer(
    gateway: &Gateway,
    outcome: &Outcome,
    budget: Budget,
) -> (Value, Option<tokio::sync::OwnedSemaphorePermit>) {
    let value = answer_within(outcome, budget);
    // What is held until then: the text sent and the decoded answer (issue 25 item 16).
    let held = crate::front::mcp::responses::held_bytes(measure(&value, budget), &value);
    match gateway.responses.reserve(held) {
        Ok(room) => (value, Some(room)),
        Err(e) => {
            tracing::warn!("execute_code answer dropped: {e}");
            let mut failed = Outcome::failed(e);
            failed.metrics.limits = outcome.metrics.limits.clone();
            (answer_within(&failed, budget), None)
        }
    }
}

/// The bytes the client receives for `answer`: its text (as a JSON string) and its
/// `structuredContent` (compact JSON) together.
pub fn measure(answer: &Value, budget: Budget) -> u64 {
    let text = summary(answer, result_chars(budget.max_output_bytes));
    json_len(answer).saturating_add(json_len(&text))
}

/// The outcome as the answer's `structuredContent`, cut to the budget (`exec::output_budget`).
pub fn answer_within(outcome: &Outcome, budget: Budget) -> Value {
    output_budget::fit(outcome, budget, &|v| measure(v, budget))
}

pub fn tool_result(value: Value, budget: Budget) -> CallToolResult {
    let text = summary(&value, result_chars(budget.max_output_bytes));
    let result = if value["success"] == Value::Bool(true) {
        CallToolResult::structured(value)
    } else {
        CallToolResult::structured_error(value)
    };
    result.with_text(text)
}

/// The answer to an execute_code request refused before it ran (its outcome is the error).
pub fn refused(error: crate::error::ExecError) -> CallToolResult {
    let budget = Budget::new(DEFAULT_MAX_OUTPUT_BYTES);
    tool_result(answer_within(&Outcome::failed(error), budget), budget)
}

/// The answer to an id that names nothing of the caller's: one and the same whether it is
/// unknown or another session's.
pub fn unknown() -> ErrorData {
    let e = registry::unknown();
    ErrorData::invalid_params(e.message, Some(json!({"code": e.code.as_str()})))
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

/// One progress notification per ended call (`N tool calls done, M in flight`) until the
/// returned guard is dropped.
pub fn calls_progress(live: &LiveView, notes: Arc<Notes>) -> DropGuardTask {
    let mut calls = live.watch_calls();
    DropGuardTask(tokio::spawn(async move {
        let mut done = calls.borrow_and_update().done;
        while calls.changed().await.is_ok() {
            let c = *calls.borrow_and_update();
            // One per ended call, even when several ended between two looks (a call that
            // started changes nothing here).
            while done < c.done {
                done += 1;
                notes.send(format!("{done} tool calls done, {} in flight", c.in_flight));
            }
        }
    }))
}
