//! The questions waiting for an answer on the web view (`serve --http`, `/ui`).
//!
//! When a call needs approval, the gateway's approver registers its [`Question`] here (besides
//! asking the client by elicitation, when it can); the page lists what a viewer may answer and
//! posts the answer, which wakes the waiting call. The first answer wins: the page's answer
//! drops the elicitation (withdrawn at the client), the client's answer drops the registration.
//! An entry lives exactly as long as the wait: it is removed when it is answered, when the
//! approval timeout ends the wait, or when the execution ends or is cancelled (the waiting
//! future is dropped and with it the [`Ticket`]).
//!
//! On PostgreSQL the questions are also kept in the state store, so the web view of every
//! gateway sharing it lists and answers them ([`shared`]).
//!
//! Bounded: at most [`MAX_PENDING`] questions at once (the next one is not shown on the page);
//! each entry holds the question's arguments as the elicitation shows them (already cut to
//! `QUESTION_ARGS_BYTES`) and names and a rule cut to [`MAX_FIELD_BYTES`].

mod shared;

use super::approval::{Answer, By, Question};
pub use crate::store::approvals::PendingQuestion;
use crate::trace::now_ms;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, Notify};

/// Questions waiting on the page at once, over every tenant.
pub const MAX_PENDING: usize = 256;
/// Names (principal, tenant, execution) and the rule are cut past this many bytes.
pub const MAX_FIELD_BYTES: usize = 512;

/// An answer from the page (or a 2026-07-28 client's retry), and the principal who gave it.
#[derive(Debug, Clone)]
pub struct WebAnswer {
    pub answer: Answer,
    pub principal: String,
    /// How it came: [`By::Web`], or [`By::InputRequired`] for a client's retry.
    pub by: By,
}

/// Why the page's answer was not taken.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AnswerError {
    /// No such question: never asked, answered already, timed out or its execution ended.
    #[error("no pending approval {0}: it was answered already, timed out, or its execution ended")]
    NotFound(String),
    /// The caller may not answer this question (the message says why).
    #[error("{0}")]
    Forbidden(String),
    /// The state store, which holds other gateways' questions, failed.
    #[error("the state store failed: {0}")]
    Store(String),
}

/// The registration could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{MAX_PENDING} questions are already waiting on the web view")]
pub struct Full;

struct Entry {
    question: Arc<PendingQuestion>,
    reply: oneshot::Sender<WebAnswer>,
    /// Written to the state store (other gateways list it).
    kept: bool,
}

/// The gateway's waiting questions (shared by every session and the web view).
#[derive(Default)]
pub struct PendingApprovals {
    entries: Mutex<HashMap<String, Entry>>,
    /// The state store and this gateway's id, when questions are shared through it.
    shared: Option<shared::Shared>,
    /// A question was asked or left: the store's rows are to be brought in line.
    changed: Notify,
    /// A question left since the last [`PendingApprovals::sync`].
    stale: AtomicBool,
}

impl std::fmt::Debug for PendingApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingApprovals").finish_non_exhaustive()
    }
}

/// Who asked: the execution's principal and tenant.
#[derive(Debug, Clone)]
pub struct Asker {
    pub tenant: String,
    pub principal: String,
}

/// A registered question: await [`Ticket::answer`]; dropping it removes the entry.
pub struct Ticket {
    registry: Arc<PendingApprovals>,
    id: String,
    reply: Option<oneshot::Receiver<WebAnswer>>,
}

impl Ticket {
    /// The page's answer. Pending forever when the entry went away without one (the caller
    /// races it against the client's answer and the timeout).
    pub async fn answer(&mut self) -> WebAnswer {
        match self.reply.take() {
            Some(rx) => match rx.await {
                Ok(a) => a,
                Err(_) => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.registry.remove(&self.id);
    }
}

impl PendingApprovals {
    /// Registers `question`, asked by `asker`, until the ticket is dropped.
    pub fn register(self: &Arc<Self>, asker: &Asker, question: &Question) -> Result<Ticket, Full> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let pending = PendingQuestion {
            id: id.clone(),
            tenant: cut(&asker.tenant),
            principal: cut(&asker.principal),
            execution_id: question.execution_id.as_deref().map(cut),
            tool: cut(&format!("{}:{}", question.server, question.tool)),
            rule: cut(&question.rule),
            arguments: question.arguments.clone(),
            arguments_bytes: question.arguments_bytes,
            truncated: question.truncated,
            asked_at: now_ms(),
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut entries = self.entries.lock().map_err(|_| Full)?;
            if entries.len() >= MAX_PENDING {
                return Err(Full);
            }
            entries.insert(
                id.clone(),
                Entry {
                    question: Arc::new(pending),
                    reply: tx,
                    kept: false,
                },
            );
        }
        self.changed.notify_one();
        Ok(Ticket {
            registry: self.clone(),
            id,
            reply: Some(rx),
        })
    }

    /// The waiting questions `visible` lets through, oldest first.
    pub fn list(&self, visible: impl Fn(&PendingQuestion) -> bool) -> Vec<PendingQuestion> {
        let mut out: Vec<PendingQuestion> = match self.entries.lock() {
            Ok(e) => e
                .values()
                .filter(|x| visible(&x.question))
                .map(|x| (*x.question).clone())
                .collect(),
            Err(_) => Vec::new(),
        };
        out.sort_by(|a, b| a.asked_at.total_cmp(&b.asked_at));
        out
    }

    /// Answers question `id` when `allowed` says the caller may (`Err(why)` otherwise). The
    /// entry is removed: a second answer finds nothing.
    pub fn answer(
        &self,
        id: &str,
        allowed: impl Fn(&PendingQuestion) -> Result<(), AnswerError>,
        answer: WebAnswer,
    ) -> Result<Arc<PendingQuestion>, AnswerError> {
        let not_found = || AnswerError::NotFound(cut(id));
        let mut entries = self.entries.lock().map_err(|_| not_found())?;
        let question = entries.get(id).ok_or_else(not_found)?.question.clone();
        allowed(&question)?;
        let entry = entries.remove(id).ok_or_else(not_found)?;
        drop(entries);
        self.left();
        // The waiter may have gone in the same instant (timeout): then nobody took the answer.
        entry.reply.send(answer).map_err(|_| not_found())?;
        Ok(question)
    }

    /// Removes question `id` (its wait ended).
    fn remove(&self, id: &str) {
        let removed = match self.entries.lock() {
            Ok(mut e) => e.remove(id).is_some(),
            Err(_) => false,
        };
        if removed {
            self.left();
        }
    }

    /// A question left the registry: its row, if any, is to be deleted.
    fn left(&self) {
        if self.shared.is_some() {
            self.stale.store(true, Ordering::SeqCst);
            self.changed.notify_one();
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn cut(s: &str) -> String {
    let mut end = s.len().min(MAX_FIELD_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn question() -> Question {
        Question::new("fixture", "echo", &json!({"text": "hi"}), "config rule ask")
    }

    fn asker() -> Asker {
        Asker {
            tenant: "t1".into(),
            principal: "token:alice".into(),
        }
    }

    #[tokio::test]
    async fn answered_once_then_gone() {
        let reg = Arc::new(PendingApprovals::default());
        let mut ticket = reg.register(&asker(), &question()).unwrap();
        let id = ticket.id().to_string();
        assert_eq!(reg.list(|_| true).len(), 1);
        assert_eq!(reg.list(|q| q.tenant == "t2").len(), 0);
        let refused = reg.answer(
            &id,
            |_| Err(AnswerError::Forbidden("no".into())),
            WebAnswer {
                answer: Answer::Once,
                principal: "x".into(),
                by: By::Web,
            },
        );
        assert_eq!(refused.unwrap_err(), AnswerError::Forbidden("no".into()));
        let web = WebAnswer {
            answer: Answer::Once,
            principal: "token:bob".into(),
            by: By::Web,
        };
        reg.answer(&id, |_| Ok(()), web.clone()).unwrap();
        assert_eq!(ticket.answer().await.principal, "token:bob");
        assert!(reg.is_empty());
        assert_eq!(
            reg.answer(&id, |_| Ok(()), web).unwrap_err(),
            AnswerError::NotFound(id)
        );
    }

    #[test]
    fn dropping_the_ticket_removes_it_and_the_count_is_bounded() {
        let reg = Arc::new(PendingApprovals::default());
        let tickets: Vec<Ticket> = (0..MAX_PENDING)
            .map(|_| reg.register(&asker(), &question()).unwrap())
            .collect();
        assert!(reg.register(&asker(), &question()).is_err());
        drop(tickets);
        assert!(reg.is_empty());
    }
}
