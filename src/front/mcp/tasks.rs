//! `execute_code` as a task (the tasks extension, SEP-2663) for a client whose request declares
//! `io.modelcontextprotocol/tasks`: the call answers at once with a task (`resultType: "task"`)
//! while the execution runs as a yielded one (`yielding`); `tasks/get` gives its status —
//! `working` with the calls done in `statusMessage`, `input_required` with the question an ask
//! or a server put to the client (answered by `tasks/update`), `completed` with the outcome
//! exactly as `execute_code` answers it (cut to the same output budget), `cancelled` — and
//! `tasks/cancel` cancels it. Clients without tasks keep `yield_after_ms` and `wait_execution`.
//!
//! Ownership is that of a yielded execution (tenant, principal, session or handle): the task id
//! is sealed like a `requestState` (`input_required::state`), bound to the principal, so another
//! principal's, a forged or a changed id is one and the same `-32602 TASK_UNKNOWN`. A finished
//! outcome is read from the execution once and then kept here, on the gateway that read it, for
//! the session's TTL (at most [`KEPT`] tasks; past it the principal holding the most loses its
//! oldest, so one principal's flood evicts only its own), so `tasks/get` may be repeated; a task of another
//! gateway is reached through the store as `wait_execution` reaches it.

use super::held;
use super::input_required::state::Payload;
use super::responses::AnswerKey;
use super::Gateway;
use crate::context::principal::Principal;
use crate::context::session::SessionScope;
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, InputRequests, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Finished tasks kept at once. Past it, the principal holding the most gives up its oldest:
/// one principal's flood of tasks evicts only its own.
pub const KEPT: usize = 1024;
/// The polling interval the task suggests.
const POLL_MS: u64 = 250;
/// How long `tasks/cancel` waits for the cancelled execution to end.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The end of a finished task, kept for repeated `tasks/get`.
#[derive(Debug, Clone)]
enum Ended {
    Completed(JsonObject),
    Cancelled,
}

/// One kept task: whose, how it ended, when.
#[derive(Debug)]
struct Kept {
    owner: String,
    ended: Ended,
    at: Instant,
}

/// Finished tasks, by task id (one per gateway).
#[derive(Debug, Default)]
pub struct Tasks {
    ended: Mutex<HashMap<String, Kept>>,
}

/// Who a task is kept for: its tenant and principal.
fn owner_of(principal: &Principal) -> String {
    SessionScope::new(principal.tenant.clone(), principal.id.clone(), "").key()
}

impl Tasks {
    fn keep(&self, owner: &str, id: &str, ended: Ended, ttl: Duration) {
        let mut m = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        m.retain(|_, k| now.duration_since(k.at) < ttl);
        if m.len() >= KEPT && !m.contains_key(id) {
            // The principal that holds the most (this one, when it floods) gives up its oldest.
            let mut held: HashMap<&str, usize> = HashMap::new();
            for k in m.values() {
                *held.entry(k.owner.as_str()).or_default() += 1;
            }
            let most = held
                .into_iter()
                .max_by_key(|(o, n)| (*n, *o == owner))
                .map(|(o, _)| o.to_string());
            let oldest = m
                .iter()
                .filter(|(_, k)| Some(&k.owner) == most.as_ref())
                .min_by_key(|(_, k)| k.at)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                m.remove(&oldest);
            }
        }
        let owner = owner.to_string();
        m.insert(
            id.to_string(),
            Kept {
                owner,
                ended,
                at: now,
            },
        );
    }

    fn get(&self, id: &str, ttl: Duration) -> Option<Ended> {
        let m = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        m.get(id)
            .filter(|k| k.at.elapsed() < ttl)
            .map(|k| k.ended.clone())
    }
}

/// The task of `running` (`execute_code`'s `{status: "running", execution_id}` answer), or the
/// answer itself when the execution ended before.
pub fn created(
    gateway: &Gateway,
    principal: &Principal,
    (owner, handle): (&SessionScope, Option<&str>),
    running: CallToolResult,
) -> rmcp::model::CallToolResponse {
    let running_id = running
        .structured_content
        .as_ref()
        .filter(|v| v["status"] == "running")
        .and_then(|v| v["execution_id"].as_str())
        .map(str::to_string);
    let Some(execution) = running_id else {
        return running.into();
    };
    let now = iso_now();
    let payload = Payload {
        execution,
        question: None,
        session: owner.session.clone(),
        handle: handle.map(str::to_string),
        created_at: Some(now.clone()),
    };
    let ttl = gateway.session.ttl();
    match gateway.request_states.seal(&payload, principal, ttl * 2) {
        Ok(id) => {
            let task = Task::new(id, TaskStatus::Working, now.clone(), now)
                .with_ttl_ms(ttl.as_millis() as u64)
                .with_poll_interval_ms(POLL_MS);
            CreateTaskResult::new(task).into()
        }
        Err(e) => {
            tracing::warn!("a task id could not be made ({e}); the call answers as running");
            running.into()
        }
    }
}

/// `tasks/get`.
pub async fn get(
    gateway: &Gateway,
    principal: &Principal,
    id: &str,
    answer: AnswerKey,
) -> Result<GetTaskResult, ErrorData> {
    let payload = open(gateway, principal, id)?;
    let ttl = gateway.session.ttl();
    let created = payload.created_at.clone().unwrap_or_else(iso_now);
    let base = |status| {
        Task::new(id, status, created.clone(), iso_now())
            .with_ttl_ms(ttl.as_millis() as u64)
            .with_poll_interval_ms(POLL_MS)
    };
    let detailed = |payload: TaskPayload| {
        GetTaskResult::new(DetailedTask::new(base(TaskStatus::Working), payload))
    };
    if let Some(ended) = gateway.tasks.get(id, ttl) {
        return Ok(detailed(payload_of(ended)));
    }
    let owner = payload.owner(principal);
    if let Some(entry) = gateway.executions.get(&owner, &payload.execution) {
        if !entry.is_finished() {
            let open = entry.questions.as_ref().and_then(|s| s.current());
            if let Some(open) = open {
                let mut requests = InputRequests::new();
                let request = serde_json::from_value(open.request.clone())
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                requests.insert(open.pending_id, request);
                return Ok(detailed(TaskPayload::InputRequired {
                    input_requests: requests,
                }));
            }
            let look = entry.live.look();
            let message = format!(
                "{} tool calls done, {} in flight",
                look.calls.done, look.calls.in_flight
            );
            let task = base(TaskStatus::Working).with_status_message(message);
            return Ok(GetTaskResult::new(DetailedTask::new(
                task,
                TaskPayload::Working,
            )));
        }
    }
    // Ended here, or another gateway's: its outcome, once, through the registry or the store.
    let read = match gateway.executions.get(&owner, &payload.execution) {
        Some(entry) => held::local::take(gateway, (&owner, None), &entry, answer).await,
        None => {
            let never = CancellationToken::new();
            let (exec, zero) = (&payload.execution, Duration::ZERO);
            held::remote::wait(gateway, (&owner, None), exec, zero, &never, answer).await
        }
    };
    let result = read.map_err(|_| unknown())?;
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    if structured["status"] == "running" {
        return Ok(detailed(TaskPayload::Working));
    }
    let ended = if structured["error"]["code"] == "CANCELLED" {
        Ended::Cancelled
    } else {
        // Named with the session's handle, as execute_code's answer is.
        let result = super::handles::name_in(result, payload.handle.as_deref());
        let value = serde_json::to_value(&result).unwrap_or_default();
        Ended::Completed(value.as_object().cloned().unwrap_or_default())
    };
    gateway
        .tasks
        .keep(&owner_of(principal), id, ended.clone(), ttl);
    Ok(detailed(payload_of(ended)))
}

/// `tasks/cancel`: the execution is cancelled (its runner killed, its open calls cancelled).
pub async fn cancel(
    gateway: &Gateway,
    principal: &Principal,
    id: &str,
    answer: AnswerKey,
) -> Result<(), ErrorData> {
    let payload = open(gateway, principal, id)?;
    let owner = payload.owner(principal);
    let ttl = gateway.session.ttl();
    if gateway.tasks.get(id, ttl).is_some() {
        return Ok(());
    }
    let ended = match gateway.executions.get(&owner, &payload.execution) {
        Some(entry) => {
            entry.cancel.cancel();
            entry.wait(CANCEL_WAIT).await;
            held::local::take(gateway, (&owner, None), &entry, answer).await
        }
        None => {
            let exec = &payload.execution;
            held::remote::cancel(gateway, (&owner, None), exec, CANCEL_WAIT, answer).await
        }
    };
    ended.map_err(|_| unknown())?;
    gateway
        .tasks
        .keep(&owner_of(principal), id, Ended::Cancelled, ttl);
    Ok(())
}

/// `tasks/update`: answers the question the task asks (`input_required`), as a retry of
/// `execute_code` does.
pub async fn update(
    gateway: &Gateway,
    principal: &Principal,
    id: &str,
    responses: rmcp::model::InputResponses,
) -> Result<(), ErrorData> {
    let payload = open(gateway, principal, id)?;
    let owner = payload.owner(principal);
    let entry = gateway
        .executions
        .get(&owner, &payload.execution)
        .ok_or_else(unknown)?;
    let open = entry
        .questions
        .as_ref()
        .and_then(|s| s.current())
        .ok_or_else(|| {
            super::bad_args(
                "tasks/update: the task asks nothing now; read its status with tasks/get",
            )
        })?;
    let asked = Payload {
        question: Some(open.pending_id),
        ..payload
    };
    held::respond::answer_question(gateway, principal, &entry, &asked, Some(&responses)).await
}

fn open(gateway: &Gateway, principal: &Principal, id: &str) -> Result<Payload, ErrorData> {
    gateway
        .request_states
        .open(id, principal)
        .ok()
        .filter(|p| p.question.is_none())
        .ok_or_else(unknown)
}

fn payload_of(ended: Ended) -> TaskPayload {
    match ended {
        Ended::Completed(result) => TaskPayload::Completed { result },
        Ended::Cancelled => TaskPayload::Cancelled,
    }
}

/// The one answer to a task id that names nothing of the caller's.
pub fn unknown() -> ErrorData {
    ErrorData::invalid_params(
        "no such task of yours: the id is unknown, was changed, belongs to another principal, or its task ended and expired with its session. Task ids come from execute_code's task answer",
        Some(json!({"code": "TASK_UNKNOWN"})),
    )
}

fn iso_now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_finished_tasks_evicts_only_its_own() {
        let tasks = Tasks::default();
        let ttl = Duration::from_secs(3600);
        let mut alice = Principal::local();
        alice.id = "alice".into();
        let mut mallory = Principal::local();
        mallory.id = "mallory".into();
        tasks.keep(&owner_of(&alice), "a1", Ended::Cancelled, ttl);
        for i in 0..3 * KEPT {
            let id = format!("m{i}");
            tasks.keep(&owner_of(&mallory), &id, Ended::Cancelled, ttl);
        }
        assert!(
            tasks.get("a1", ttl).is_some(),
            "alice's task outlived the flood"
        );
        assert!(tasks.get("m0", ttl).is_none(), "mallory's oldest went");
        assert!(tasks.get(&format!("m{}", 3 * KEPT - 1), ttl).is_some());
        assert_eq!(tasks.ended.lock().unwrap().len(), KEPT);
    }
}
