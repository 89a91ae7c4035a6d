//! A held execution read or stopped by id (`wait_execution`, `cancel_execution`, `tasks/get`,
//! `tasks/cancel`, a retry that ended it): this gateway's from the registry, else another
//! gateway's (or its outcome in its row) through the store (`remote`).

use super::registry::Execution;
use super::remote;
use super::reply::{calls_progress, deliver, running, unknown};
use crate::context::session::SessionScope;
use crate::front::mcp::passthrough::Notes;
use crate::front::mcp::responses::AnswerKey;
use crate::front::mcp::Gateway;
use rmcp::model::CallToolResult;
use rmcp::ErrorData;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `wait_execution`'s default wait.
pub const DEFAULT_WAIT_MS: u64 = 10_000;
/// `wait_execution`'s longest wait (a larger `timeout_ms` is capped).
pub const MAX_WAIT_MS: u64 = 60_000;
/// How long a cancel waits for the cancelled execution to end (its runner is killed at once;
/// this only bounds the wait for the session to reap it).
pub const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// Waits up to `timeout` (or the request's cancel) for `owner`'s execution `id`: its outcome
/// (read once), or `running` with what is new; progress notes per ended call meanwhile.
pub async fn wait(
    gateway: &Gateway,
    (owner, idle): (&SessionScope, Option<Duration>),
    id: &str,
    (timeout, cancel): (Duration, &CancellationToken),
    answer: AnswerKey,
    notes: Option<Arc<Notes>>,
) -> Result<CallToolResult, ErrorData> {
    let Some(entry) = gateway.executions.get(owner, id) else {
        // Not this gateway's: another's, through the store.
        let asker = (owner, idle);
        return remote::wait(gateway, asker, id, timeout, cancel, answer).await;
    };
    let watcher = notes
        .as_ref()
        .map(|n| calls_progress(&entry.live, n.clone()));
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
pub async fn take(
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
            remote::wait(gateway, asker, &entry.id, Duration::ZERO, &never, answer).await
        }
        None => Err(unknown()),
    }
}

/// Cancels `owner`'s execution `id` and answers with its outcome (`CANCELLED`, or as it ended
/// before), or `running` if it did not end within [`CANCEL_WAIT`].
pub async fn cancel(
    gateway: &Gateway,
    (owner, idle): (&SessionScope, Option<Duration>),
    id: &str,
    answer: AnswerKey,
) -> Result<CallToolResult, ErrorData> {
    let Some(entry) = gateway.executions.get(owner, id) else {
        // Not this gateway's: asked of its gateway through the store.
        return remote::cancel(gateway, (owner, idle), id, CANCEL_WAIT, answer).await;
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
