//! Approvals for MCP 2026-07-28 clients (SEP-2322, multi round-trip requests): a server cannot
//! send such a client a request, so when an execution of theirs reaches an `ask`, the
//! `tools/call` of `execute_code` answers `input_required` — the approval form as an
//! elicitation to fulfil, and a signed `requestState` — and the client's retry of the same call
//! carries the answer. Meanwhile the execution waits parked, as it waits for any approval.
//!
//! - The execution is held (`front::mcp::held`: its registry, its state), as a yielded one
//!   is, so it outlives the request that answered `input_required`.
//! - The question is registered on the web view's registry (`gate::pending`), which gives it an
//!   id and the answer path: the client's retry answers it there like the page does (first
//!   answer wins, on any gateway sharing the store). [`Asker`] only publishes the open question
//!   on the execution's [`QuestionSlot`], for the request that waits on the execution.
//! - `requestState` ([`state`]) names the execution and the question, signed with a key every
//!   gateway on the store shares, expiring with the approval timeout, and bound to the
//!   principal; `held::respond` checks all of it before it answers anything.

pub mod state;

use crate::gate::approval::{Answer, ApprovalError, Approver, By, Question};
use futures::future::BoxFuture;
use rmcp::model::{InputRequest, InputRequests, InputRequiredResult};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// A question an execution has open for its client: an approval, or a downstream server's
/// elicitation or sampling request passed through.
#[derive(Debug, Clone)]
pub struct Open {
    /// The key of its `inputRequests` entry: an approval's id on the web view's registry, or
    /// a random id for a server's question.
    pub pending_id: String,
    /// The input request: `{method, params}`.
    pub request: serde_json::Value,
}

/// The open question of one execution (at most one: questions take turns), and the questions
/// a client's retry answered (a `requestState` answers once).
#[derive(Debug)]
pub struct QuestionSlot {
    tx: watch::Sender<Option<Open>>,
    by_retry: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Where the answers to servers' questions go (an approval's answer goes through its
    /// registration instead).
    replies:
        std::sync::Mutex<std::collections::HashMap<String, oneshot::Sender<serde_json::Value>>>,
}

/// Questions remembered as answered by a retry, per execution (past it the oldest are not
/// told apart from questions answered on the web view: the retry then just waits).
const REMEMBERED: usize = 1024;

impl QuestionSlot {
    pub fn new() -> Arc<QuestionSlot> {
        Arc::new(QuestionSlot {
            tx: watch::Sender::new(None),
            by_retry: Default::default(),
            replies: Default::default(),
        })
    }

    /// Asks the client a downstream server's `request` (`{method, params}`) and waits for the
    /// retry that answers it. Dropping the future withdraws the question.
    pub async fn ask_server_question(&self, request: serde_json::Value) -> serde_json::Value {
        let key = uuid::Uuid::new_v4().simple().to_string();
        let (tx, rx) = oneshot::channel();
        self.lock_replies().insert(key.clone(), tx);
        self.tx.send_replace(Some(Open {
            pending_id: key.clone(),
            request,
        }));
        let _withdraw = Withdraw {
            slot: self,
            pending_id: key,
        };
        match rx.await {
            Ok(answer) => answer,
            Err(_) => std::future::pending().await,
        }
    }

    /// Delivers the answer to server question `id`; `false` when it is not one waiting.
    pub fn answer_server_question(&self, id: &str, answer: serde_json::Value) -> bool {
        let tx = self.lock_replies().remove(id);
        tx.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// Whether `id` is a server's question waiting for its answer.
    pub fn is_server_question(&self, id: &str) -> bool {
        self.lock_replies().contains_key(id)
    }

    fn lock_replies(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<String, oneshot::Sender<serde_json::Value>>,
    > {
        self.replies.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks question `id` answered by a retry; `false` when a retry had answered it already.
    pub fn answered_by_retry(&self, id: &str) -> bool {
        let mut seen = self.by_retry.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= REMEMBERED {
            seen.clear();
        }
        seen.insert(id.to_string())
    }

    /// Whether a retry answered question `id`.
    pub fn was_answered_by_retry(&self, id: &str) -> bool {
        self.by_retry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id)
    }

    /// Waits for an open question other than `answered` (which the caller has just answered,
    /// and which may not have left yet).
    pub async fn asked(&self, answered: Option<&str>) -> Open {
        let mut rx = self.tx.subscribe();
        loop {
            let fresh = rx
                .borrow_and_update()
                .as_ref()
                .filter(|o| Some(o.pending_id.as_str()) != answered)
                .cloned();
            if let Some(open) = fresh {
                return open;
            }
            // The sender lives as long as the slot, which `self` borrows: never closed here.
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// The question open now.
    pub fn current(&self) -> Option<Open> {
        self.tx.borrow().clone()
    }

    /// Whether question `id` is the one open now.
    pub fn is_open(&self, id: &str) -> bool {
        self.tx
            .borrow()
            .as_ref()
            .is_some_and(|o| o.pending_id == id)
    }
}

/// The approver of a 2026-07-28 client that declared elicitation: it publishes the question
/// for the request waiting on the execution and waits for ever; the answer comes through the
/// question's registration (`web_approval::PageOrClient` races the two).
pub struct Asker {
    slot: Arc<QuestionSlot>,
}

impl Asker {
    pub fn new(slot: Arc<QuestionSlot>) -> Asker {
        Asker { slot }
    }
}

impl Approver for Asker {
    fn by(&self) -> By {
        By::InputRequired
    }

    fn ask(&self, question: Question) -> BoxFuture<'static, Result<Answer, ApprovalError>> {
        let slot = self.slot.clone();
        Box::pin(async move {
            let Some(pending_id) = question.pending_id.clone() else {
                return Err(ApprovalError::Failed(
                    "the question could not be registered (too many questions wait already), so the client cannot be asked; answer the waiting ones first".into(),
                ));
            };
            slot.tx.send_replace(Some(Open {
                pending_id: pending_id.clone(),
                request: json!({
                    "method": "elicitation/create",
                    "params": super::elicit::form(&question),
                }),
            }));
            // Withdrawn when answered (the page's way wins the race), timed out or ended.
            let _withdraw = Withdraw {
                slot: &slot,
                pending_id,
            };
            std::future::pending().await
        })
    }
}

/// Clears the slot when its question's wait ends.
struct Withdraw<'a> {
    slot: &'a QuestionSlot,
    pending_id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.slot.lock_replies().remove(&self.pending_id);
        self.slot.tx.send_if_modified(|o| {
            let mine = o.as_ref().is_some_and(|o| o.pending_id == self.pending_id);
            if mine {
                *o = None;
            }
            mine
        });
    }
}

/// The `input_required` result asking `open` with `request_state`.
pub fn result(open: &Open, request_state: String) -> Result<InputRequiredResult, String> {
    let request: InputRequest = serde_json::from_value(open.request.clone())
        .map_err(|e| format!("the input request: {e}"))?;
    let mut requests = InputRequests::new();
    requests.insert(open.pending_id.clone(), request);
    Ok(InputRequiredResult::new(
        Some(requests),
        Some(request_state),
    ))
}

/// How long a request waits for an execution that has no `yield_after_ms`: its own limits end it.
pub const NO_YIELD: Duration = Duration::from_secs(366 * 24 * 3600);
