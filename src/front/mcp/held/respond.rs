//! The requests that wait on an execution which may ask: the first `execute_code` of a
//! 2026-07-28 client ([`respond`], from `start`) and its retries carrying answers
//! ([`resume`]). Each answers with the first of: the outcome, a new question
//! (`input_required`), or `running` after `yield_after_ms`.
//!
//! A retry is checked before anything is answered: its `requestState` must open for the
//! caller (`state`), name an execution of the caller's on this gateway, and a question that is
//! still open; its `inputResponses` must answer that question. Then the answer goes through the
//! question's registration, as the web view's does (the first answer wins).

use super::local::{self, MAX_WAIT_MS};
use super::registry::Execution;
use super::remote;
use super::reply::{running, tool_result};
use crate::context::principal::Principal;
use crate::context::session::SessionScope;
use crate::front::mcp::input_required::state::Payload;
use crate::front::mcp::input_required::{self, Open, NO_YIELD};
use crate::front::mcp::responses::AnswerKey;
use crate::front::mcp::{bad_args, elicit, Gateway};
use crate::gate::approval::By;
use crate::gate::pending::{AnswerError, WebAnswer};
use rmcp::model::{CallToolResponse, ElicitResult, InputResponses, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a request whose client withdrew it waits for its cancelled execution to end.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// Who waits on an execution, for sealing the next `requestState`.
pub struct Waiter<'a> {
    pub gateway: &'a Arc<Gateway>,
    pub principal: &'a Principal,
    pub owner: &'a SessionScope,
    /// The session handle the final answer names.
    pub handle: Option<&'a str>,
    /// The request made a task: a question is read with `tasks/get` (status `input_required`),
    /// so the request answers `running` (the task) even when the question came first.
    pub as_task: bool,
}

/// What a request waiting on an execution saw first.
pub enum Waited {
    Ended,
    Asked(Open),
    /// `after` passed (`yield_after_ms`).
    StillRunning,
}

/// Waits for the end of `entry`, a question of its `slot` other than `answered`, or `after`.
pub async fn wait(entry: &Execution, after: Duration, answered: Option<&str>) -> Waited {
    let asked = async {
        match &entry.questions {
            Some(slot) => slot.asked(answered).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        ended = entry.wait(after) => if ended { Waited::Ended } else { Waited::StillRunning },
        open = asked => Waited::Asked(open),
    }
}

/// Waits on `entry` (started by this request, or resumed by a retry that answered
/// `answered`) and answers with what came first.
pub async fn respond(
    w: &Waiter<'_>,
    entry: &Arc<Execution>,
    (after, answered): (Duration, Option<&str>),
    cancel: &CancellationToken,
    answer: AnswerKey,
) -> CallToolResponse {
    let waited = tokio::select! {
        waited = wait(entry, after, answered) => waited,
        () = cancel.cancelled() => {
            // The client withdrew the request: the execution is cancelled and nobody reads it.
            entry.cancel.cancel();
            entry.wait(CANCEL_WAIT).await;
            return match w.gateway.executions.take(w.owner, &entry.id) {
                Some(f) => tool_result(f.value, f.budget).into(),
                None => running(entry).into(),
            };
        }
    };
    let gateway = w.gateway;
    let ended = match &waited {
        Waited::Ended => true,
        // Still running: it gets its row in the store (any gateway may be asked for it),
        // unless it ended meanwhile.
        Waited::Asked(_) | Waited::StillRunning => !remote::record(gateway, w.owner, entry).await,
    };
    if ended {
        // Its outcome is here, or in its row when it was recorded.
        return match local::take(gateway, (w.owner, None), entry, answer).await {
            Ok(r) => r.into(),
            Err(_) => running(entry).into(),
        };
    }
    match waited {
        Waited::Asked(open) if !w.as_task => {
            let payload = Payload {
                execution: entry.id.clone(),
                question: Some(open.pending_id.clone()),
                session: w.owner.session.clone(),
                handle: w.handle.map(str::to_string),
                created_at: None,
            };
            // It lives while the question may be answered and then while the outcome is kept
            // (a retry after the question timed out still gets the outcome).
            let ttl = gateway.approval_timeout + gateway.session.ttl();
            let sealed = gateway.request_states.seal(&payload, w.principal, ttl);
            match sealed.and_then(|s| input_required::result(&open, s)) {
                Ok(r) => CallToolResponse::InputRequired(r),
                Err(e) => {
                    // Nobody can answer through the client: the question waits for its timeout
                    // (or the web view), and the client is told where the execution is.
                    tracing::warn!("an input_required result could not be made: {e}");
                    running(entry).into()
                }
            }
        }
        _ => running(entry).into(),
    }
}

/// The retry of `execute_code` carrying `input_responses` and `request_state`: what the
/// answer resumed, as [`respond`] answers; and the handle the answer names.
pub async fn resume(
    gateway: &Arc<Gateway>,
    principal: &Principal,
    (responses, request_state): (Option<InputResponses>, Option<String>),
    args: &JsonObject,
    cancel: CancellationToken,
    answer: AnswerKey,
) -> Result<(CallToolResponse, Option<String>), ErrorData> {
    let Some(sealed) = request_state else {
        return Err(bad_args(
            "execute_code: inputResponses came without requestState; retry with the requestState of the input_required result, exactly as it came",
        ));
    };
    let payload = gateway.request_states.open(&sealed, principal)?;
    let owner = payload.owner(principal);
    let after = match args.get("yield_after_ms").and_then(Value::as_u64) {
        Some(ms) if ms > 0 => Duration::from_millis(ms),
        _ => NO_YIELD,
    };
    let Some(entry) = gateway.executions.get(&owner, &payload.execution) else {
        // Another gateway's, or ended with its outcome in its row: through the store.
        let response = elsewhere(
            gateway,
            principal,
            &payload,
            responses.as_ref(),
            &cancel,
            (after, answer),
        )
        .await?;
        return Ok((response, payload.handle.clone()));
    };
    answer_question(gateway, principal, &entry, &payload, responses.as_ref()).await?;
    let w = Waiter {
        gateway,
        principal,
        owner: &owner,
        handle: payload.handle.as_deref(),
        as_task: false,
    };
    let answered = payload.question.as_deref();
    let response = respond(&w, &entry, (after, answered), &cancel, answer).await;
    Ok((response, payload.handle.clone()))
}

/// Answers the question `payload` names with its answer in `responses`: through the question's
/// registration (an approval), or back to the server that asked. A question answered otherwise
/// first (the web view) or timed out is left as it is; one a retry answered already is a replay.
pub async fn answer_question(
    gateway: &Gateway,
    principal: &Principal,
    entry: &Execution,
    payload: &Payload,
    responses: Option<&InputResponses>,
) -> Result<(), ErrorData> {
    if let Some(q) = &payload.question {
        let Some(slot) = entry.questions.as_ref() else {
            return Err(used(payload));
        };
        // A `requestState` answers once: the same one again is a replay.
        if slot.was_answered_by_retry(q) {
            return Err(used(payload));
        }
        if slot.is_server_question(q) {
            // A downstream server's question: its answer goes back to the server as it came.
            let given = responses.and_then(|r| r.get(q)).ok_or_else(|| {
                bad_args(format!(
                    "execute_code: inputResponses has no answer for {q:?}, the question of this requestState; answer it and retry"
                ))
            })?;
            if slot.answer_server_question(q, given.clone()) {
                slot.answered_by_retry(q);
            }
        } else {
            if crate::config::gateway::refuses_own_approvals(principal, &gateway.policies) {
                return Err(ErrorData::invalid_params(
                    format!(
                        "{} may not approve its own execution's calls: one of its policies says \"approve_own_calls\": false. Another approver answers the question on the web view",
                        principal.name
                    ),
                    Some(serde_json::json!({"code": "PERMISSION_DENIED"})),
                ));
            }
            let result = answer_to(q, responses)?;
            // Answered on the web view meanwhile, or timed out: the first answer stands and
            // this retry only waits on.
            if slot.is_open(q) && give(gateway, principal, q, result).await? {
                slot.answered_by_retry(q);
            }
        }
    }
    Ok(())
}

/// The answer to question `q` in `responses`.
fn answer_to(q: &str, responses: Option<&InputResponses>) -> Result<ElicitResult, ErrorData> {
    let given = responses.and_then(|r| r.get(q)).ok_or_else(|| {
        bad_args(format!(
            "execute_code: inputResponses has no answer for {q:?}, the question of this requestState; answer it (an elicitation result: action, content) and retry"
        ))
    })?;
    serde_json::from_value(given.clone()).map_err(|e| {
        bad_args(format!(
            "execute_code: the answer to {q:?} is not an elicitation result ({e}); send {{action: \"accept\" | \"decline\" | \"cancel\", content}}"
        ))
    })
}

/// Answers question `q` through its registration, on any gateway sharing the store: whether
/// this answer was taken (`false`: answered otherwise first, or gone).
async fn give(
    gateway: &Gateway,
    principal: &Principal,
    q: &str,
    result: ElicitResult,
) -> Result<bool, ErrorData> {
    let web = WebAnswer {
        answer: elicit::answer_of(result),
        principal: principal.name.clone(),
        by: By::InputRequired,
    };
    let mine = |pq: &crate::gate::pending::PendingQuestion| {
        if pq.tenant == principal.tenant && pq.principal == principal.name {
            Ok(())
        } else {
            Err(AnswerError::Forbidden(
                "not this principal's question".into(),
            ))
        }
    };
    match gateway.pending.answer_anywhere(q, mine, web).await {
        Ok(_) => Ok(true),
        Err(AnswerError::NotFound(_) | AnswerError::Forbidden(_)) => Ok(false),
        Err(e @ AnswerError::Store(_)) => Err(ErrorData::internal_error(
            format!("the answer could not be recorded: {e}; retry the same request"),
            Some(json!({"code": "STORE_UNAVAILABLE"})),
        )),
    }
}

/// A retry whose execution is not in this gateway's registry: another gateway runs it, or it
/// ended with its outcome in its row. The answer goes through the store; the request waits
/// as `wait_execution` does (a later question of it is answered on the web view, or through
/// wait_execution's `running` answer and then the gateway that runs it).
async fn elsewhere(
    gateway: &Gateway,
    principal: &Principal,
    payload: &Payload,
    responses: Option<&InputResponses>,
    cancel: &CancellationToken,
    (after, answer): (Duration, AnswerKey),
) -> Result<CallToolResponse, ErrorData> {
    if let Some(q) = &payload.question {
        give(gateway, principal, q, answer_to(q, responses)?).await?;
    }
    let owner = payload.owner(principal);
    let timeout = after.min(Duration::from_millis(MAX_WAIT_MS));
    let waited = remote::wait(
        gateway,
        (&owner, None),
        &payload.execution,
        timeout,
        cancel,
        answer,
    )
    .await;
    waited.map(Into::into).map_err(|_| gone(payload))
}

/// The question of a valid `requestState` was answered by a retry already (a replay).
fn used(payload: &Payload) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "this requestState was used already: its question was answered by an earlier retry, and a requestState answers once; nothing was answered or resumed. Retry with the requestState of the latest input_required result; the execution goes on, and wait_execution with execution_id {} gives its outcome",
            payload.execution
        ),
        Some(json!({"code": "REQUEST_STATE_USED", "execution_id": payload.execution})),
    )
}

/// The execution of a valid `requestState` is not this gateway's (any more).
fn gone(payload: &Payload) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "the execution of this requestState ({}) is not running on this gateway: it ended and its outcome was read, or another gateway runs it. Nothing was answered; wait_execution with its execution_id reaches it through any gateway, and its question waits on the web view until its timeout",
            payload.execution
        ),
        Some(json!({"code": INVALID_EXECUTION, "execution_id": payload.execution})),
    )
}

/// The code of [`gone`].
const INVALID_EXECUTION: &str = "REQUEST_STATE_EXECUTION_GONE";
