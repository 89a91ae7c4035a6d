//! `execute_code {yield_after_ms}`: the execution runs in its own task, registered in
//! `executions` under the client's session; the request waits for it up to `yield_after_ms`
//! and answers with the outcome if it ended by then, else with `{status: "running",
//! execution_id, …}` (`wait_execution::running`) while the execution goes on under its own
//! wall clock and CPU budget.
//!
//! Cancellation: before the yield, a cancelled request (`notifications/cancelled`) cancels the
//! execution as without a yield. After it, rmcp cancels the request's token as soon as the
//! answer is sent, so the execution has its own token: cancelled by `cancel_execution` and by
//! the end of its session (HTTP: `DELETE` or expiry; stdio: the connection closing). Host
//! shutdown cancels it through the sandbox as any execution. The principal's `max_concurrent`
//! permit and the admitted request bytes are held by the task until the execution ends.

use super::registry::Finished;
use super::reply::{calls_progress, deliver_outcome, reserve_answer};
use super::respond::{respond, Waiter};
use crate::context::session::SessionScope;
use crate::exec::outcome::Outcome;
use crate::exec::output_budget::Budget;
use crate::exec::session::ExecRequest;
use crate::front::mcp::admission::Held;
use crate::front::mcp::passthrough::Notes;
use crate::front::mcp::responses::AnswerKey;
use crate::front::mcp::Gateway;
use rmcp::model::CallToolResponse;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a yieldable execution needs from its request besides the script.
pub struct Yielding {
    /// The principal's `max_concurrent` slot (HTTP): held until the execution ends.
    pub permit: Option<crate::front::mcp::rate::ExecutionPermit>,
    /// Cancelled when the session ends.
    pub session_gone: CancellationToken,
    /// The request's progress notifications (when it has a progress token).
    pub notes: Option<Arc<Notes>>,
    /// Where the execution publishes a question for its 2026-07-28 client (`input_required`).
    pub questions: Option<Arc<crate::front::mcp::input_required::QuestionSlot>>,
    /// Who asked: the next `requestState` is sealed for this principal.
    pub principal: Arc<crate::context::principal::Principal>,
    /// The session handle the answer names.
    pub handle: Option<String>,
    /// The request is made a task (`front/mcp/tasks.rs`): it answers `running` even when the
    /// execution asks first; the question is read with `tasks/get`.
    pub as_task: bool,
    /// Its place in the caller's fair share, counted before anything was kept for it.
    pub admitted: Option<Arc<crate::exec::fair_share::Admitted>>,
}

/// Runs `exec` in its own task and answers after `after` at the latest (`yielded`: `after` is
/// the client's `yield_after_ms`), or at its first question for a 2026-07-28 client.
pub async fn run(
    gateway: &Arc<Gateway>,
    (mut exec, held, budget, answer): (ExecRequest, Held, Budget, AnswerKey),
    (after, yielded): (Duration, bool),
    request_cancel: CancellationToken,
    y: Yielding,
) -> CallToolResponse {
    let owner = exec.request.session.clone().unwrap_or_else(|| {
        let c = &exec.request.caller;
        SessionScope::new(c.tenant.clone(), c.principal.clone(), "")
    });
    let applied = exec.request.applied_limits.clone();
    let entry = match gateway.executions.start(
        &owner,
        (gateway.session.max_running, exec.request.limits.log_bytes),
        budget,
        y.session_gone.clone(),
        (y.questions.clone(), yielded),
    ) {
        Ok(e) => e,
        Err(e) => {
            let caller = Some(exec.request.caller.clone());
            let mut outcome = gateway
                .sandbox
                .audit_refusal(caller, &exec.code, Outcome::failed(e))
                .await;
            outcome.metrics.limits = applied;
            return deliver_outcome(gateway, &outcome, budget, answer).into();
        }
    };
    exec.live = Some(entry.live.clone());
    exec.client_cancel = Some(entry.cancel.clone());
    // Watching before the execution starts, so no ended call is missed.
    let watcher = y
        .notes
        .as_ref()
        .map(|n| calls_progress(&entry.live, n.clone()));
    let (task_gateway, task_entry, gone) = (gateway.clone(), entry.clone(), y.session_gone);
    let permit = y.permit;
    let (task_owner, sensitive) = (owner.clone(), exec.request.policy.sensitive().is_some());
    tokio::spawn(async move {
        let (_permit, _held) = (permit, held);
        let cancel = task_entry.cancel.clone();
        let execution = task_gateway.sandbox.execute(exec);
        tokio::pin!(execution);
        let mut outcome = tokio::select! {
            outcome = &mut execution => outcome,
            () = gone.cancelled() => {
                cancel.cancel();
                execution.await
            }
        };
        outcome.metrics.limits = applied;
        let (value, room) = reserve_answer(&task_gateway, &outcome, budget);
        let f = Finished::new(value, budget, room);
        super::remote::publish(&task_gateway, &task_owner, &task_entry, f, sensitive).await;
    });
    let waiter = Waiter {
        gateway,
        principal: &y.principal,
        owner: &owner,
        handle: y.handle.as_deref(),
        as_task: y.as_task,
    };
    let response = respond(&waiter, &entry, (after, None), &request_cancel, answer).await;
    drop(watcher);
    if let Some(n) = &y.notes {
        n.close();
    }
    response
}
