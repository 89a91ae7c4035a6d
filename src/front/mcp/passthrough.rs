//! Progress of the downstream calls of an `execute_code` request, passed to its client as
//! progress notifications of that request (only when the client sent a progress token).
//!
//! Each downstream notification becomes one upstream notification whose `progress` counts the
//! notifications forwarded so far (so it always increases, whatever the servers send) and whose
//! message says which server reported what (`fixture: step 2 of 3 (2/3)`). At most
//! [`QUEUE`] notifications wait to be written; more are dropped rather than buffered.

use crate::tools::passthrough::{Feedback, FeedbackRef};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Notifications waiting to be written to the client.
pub const QUEUE: usize = 64;

/// A receiver of the execution's downstream progress for the request with `token`, if any.
pub fn progress_of(peer: &Peer<RoleServer>, token: Option<ProgressToken>) -> Option<FeedbackRef> {
    let token = token?;
    let (tx, mut rx) = mpsc::channel::<(f64, Option<String>)>(QUEUE);
    let peer = peer.clone();
    // Ends when the execution drops its sender.
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
    Some(FeedbackRef(Arc::new(Upstream {
        tx,
        sent: std::sync::atomic::AtomicU64::new(0),
    })))
}

struct Upstream {
    tx: mpsc::Sender<(f64, Option<String>)>,
    sent: std::sync::atomic::AtomicU64,
}

impl Feedback for Upstream {
    fn progress(&self, server: &str, progress: f64, total: Option<f64>, message: Option<String>) {
        let n = self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let of = match total {
            Some(t) => format!("{progress}/{t}"),
            None => format!("{progress}"),
        };
        let text = match message {
            Some(m) => format!("{server}: {m} ({of})"),
            None => format!("{server}: {of}"),
        };
        let _ = self.tx.try_send((n as f64, Some(text)));
    }

    /// Log lines reach the client in the outcome's `logs`.
    fn log(&self, _server: &str, _level: &str, _message: String) {}
}
