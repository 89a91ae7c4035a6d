//! The upstream side of what downstream servers send during an `execute_code` request:
//! their progress becomes progress notifications of the request (only when the client sent a
//! progress token); their elicitation and sampling requests are forwarded to the client when it
//! declared those capabilities ("not supported" otherwise), within the execution's time.
//!
//! Each downstream progress notification becomes one upstream notification whose `progress`
//! counts the notifications forwarded so far (so it always increases, whatever the servers send)
//! and whose message says which server reported what (`fixture: step 2 of 3 (2/3)`). At most
//! [`QUEUE`] notifications wait to be written; more are dropped rather than buffered.

use crate::tools::passthrough::{Feedback, FeedbackRef, Forward};
use futures::future::BoxFuture;
use rmcp::model::{ClientResult, ProgressNotificationParam, ProgressToken, ServerRequest};
use rmcp::{Peer, RoleServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Notifications waiting to be written to the client.
pub const QUEUE: usize = 64;

/// The upstream receiver of one `execute_code` request from `peer` (progress with `token`).
/// Forwarded requests wait for `turn`, which the session's approval questions share: one
/// question to the client at a time, however many servers ask.
pub fn upstream(
    peer: &Peer<RoleServer>,
    token: Option<ProgressToken>,
    turn: Arc<tokio::sync::Mutex<()>>,
) -> FeedbackRef {
    let caps = peer.peer_info().map(|i| i.capabilities.clone());
    upstream_with_notes(peer, token, turn, (caps, None, false)).0
}

/// The same, and the request's progress notifications (`None` without a progress token), for
/// more notifications of the same request (calls done, `yield_after_ms`).
///
/// `caps` are the client's capabilities (a 2026-07-28 request's own `_meta`); a 2026-07-28
/// client (`sessionless`) is asked a server's questions through `input_required` when it has
/// a [`QuestionSlot`](super::input_required::QuestionSlot).
pub fn upstream_with_notes(
    peer: &Peer<RoleServer>,
    token: Option<ProgressToken>,
    turn: Arc<tokio::sync::Mutex<()>>,
    (caps, questions, sessionless): (
        Option<rmcp::model::ClientCapabilities>,
        Option<Arc<super::input_required::QuestionSlot>>,
        bool,
    ),
) -> (FeedbackRef, Option<Arc<Notes>>) {
    let notes = notes(peer, token);
    let feedback = FeedbackRef(Arc::new(Upstream {
        peer: peer.clone(),
        turn,
        notes: notes.clone(),
        caps,
        questions,
        sessionless,
    }));
    (feedback, notes)
}

/// The progress notifications of one request with `token` (`None` without one).
pub fn notes(peer: &Peer<RoleServer>, token: Option<ProgressToken>) -> Option<Arc<Notes>> {
    let token = token?;
    let (tx, mut rx) = mpsc::channel::<(f64, Option<String>)>(QUEUE);
    let peer = peer.clone();
    // Ends when the last sender is dropped.
    tokio::spawn(async move {
        while let Some((progress, message)) = rx.recv().await {
            let params: Result<ProgressNotificationParam, _> = serde_json::from_value(json!({
                "progressToken": token,
                "progress": progress,
                "message": message,
            }));
            if let Ok(params) = params {
                if peer.notify_progress(params).await.is_err() {
                    break;
                }
            }
        }
    });
    Some(Arc::new(Notes {
        tx,
        sent: AtomicU64::new(0),
        open: AtomicBool::new(true),
    }))
}

/// The progress notifications of one request: one counter for all of them, so `progress`
/// always increases whoever sends them; closed once the request is answered (a yielded
/// execution goes on, but its request's token is spent).
pub struct Notes {
    tx: mpsc::Sender<(f64, Option<String>)>,
    sent: AtomicU64,
    open: AtomicBool,
}

impl Notes {
    /// One notification with `message` (dropped when [`QUEUE`] wait, or once closed).
    pub fn send(&self, message: String) {
        if !self.open.load(Ordering::Acquire) {
            return;
        }
        let n = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        let _ = self.tx.try_send((n as f64, Some(message)));
    }

    /// The request is answered: nothing more is sent.
    pub fn close(&self) {
        self.open.store(false, Ordering::Release);
    }
}

struct Upstream {
    peer: Peer<RoleServer>,
    turn: Arc<tokio::sync::Mutex<()>>,
    notes: Option<Arc<Notes>>,
    /// The client's capabilities, as its request declared them.
    caps: Option<rmcp::model::ClientCapabilities>,
    /// Where a 2026-07-28 client is asked (`input_required`).
    questions: Option<Arc<super::input_required::QuestionSlot>>,
    /// The client speaks MCP 2026-07-28: a server cannot send it requests.
    sessionless: bool,
}

impl Feedback for Upstream {
    fn progress(&self, server: &str, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(notes) = &self.notes else { return };
        let of = match total {
            Some(t) => format!("{progress}/{t}"),
            None => format!("{progress}"),
        };
        let text = match message {
            Some(m) => format!("{server}: {m} ({of})"),
            None => format!("{server}: {of}"),
        };
        notes.send(text);
    }

    /// Log lines reach the client in the outcome's `logs`.
    fn log(&self, _server: &str, _level: &str, _message: String) {}

    fn forward(&self, server: &str, request: Forward) -> BoxFuture<'static, Result<Value, String>> {
        let peer = self.peer.clone();
        let caps = self.caps.clone();
        let server = server.to_string();
        let turn = self.turn.clone();
        let (sessionless, questions) = (self.sessionless, self.questions.clone());
        Box::pin(async move {
            let (declared, what, request) = match request {
                Forward::Elicit(params) => (
                    caps.as_ref().is_some_and(|c| c.elicitation.is_some()),
                    "elicitation",
                    serde_json::from_value(params)
                        .map(|p| ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(p))),
                ),
                Forward::Sample(params) => (
                    caps.as_ref().is_some_and(|c| c.sampling.is_some()),
                    "sampling",
                    #[allow(deprecated)] // MCP sampling (SEP-2577): older servers still ask.
                    serde_json::from_value(params).map(|p| {
                        ServerRequest::CreateMessageRequest(rmcp::model::CreateMessageRequest::new(
                            p,
                        ))
                    }),
                ),
            };
            if !declared {
                let per_request = if sessionless {
                    " in its request's _meta"
                } else {
                    ""
                };
                return Err(format!(
                    "the MCP client of this execution did not declare the {what} capability{per_request}"
                ));
            }
            let request =
                request.map_err(|e| format!("the request from {server} is not valid: {e}"))?;
            if sessionless {
                // No request can be sent to a 2026-07-28 client: the question goes in the
                // `input_required` answer of its execute_code, its answer in the retry.
                let Some(slot) = questions else {
                    return Err(format!(
                        "the MCP client of this execution did not declare the {what} capability in its request's _meta"
                    ));
                };
                let request = serde_json::to_value(&request).map_err(|e| e.to_string())?;
                let _turn = turn.lock().await;
                return Ok(slot.ask_server_question(request).await);
            }
            let _turn = turn.lock().await;
            let answer = peer
                .send_request(request)
                .await
                .map_err(|e| format!("the MCP client failed the request: {e}"))?;
            match answer {
                ClientResult::ElicitResult(r) => serde_json::to_value(r).map_err(|e| e.to_string()),
                #[allow(deprecated)]
                ClientResult::CreateMessageResult(r) => {
                    serde_json::to_value(r).map_err(|e| e.to_string())
                }
                _ => Err("the MCP client answered with something else".into()),
            }
        })
    }
}
