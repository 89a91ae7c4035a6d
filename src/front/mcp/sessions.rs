//! Per-session cancellation for streamable HTTP: a `DELETE` of a session cancels the executions
//! that session started (rmcp itself only cancels them after waiting up to 5 s for their
//! answers). Over stdio the session is the process, and rmcp's request token covers it.

use std::collections::HashMap;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The header that names a streamable HTTP session.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// One token per live HTTP session that has started an execution.
#[derive(Debug, Default)]
pub struct SessionCancels {
    tokens: Mutex<HashMap<String, CancellationToken>>,
}

impl SessionCancels {
    /// The token of `session` (made on first use).
    pub fn token(&self, session: &str) -> CancellationToken {
        let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        tokens.entry(session.to_string()).or_default().clone()
    }

    /// The session ended: cancels what it runs and forgets it.
    pub fn end(&self, session: &str) {
        let token = {
            let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
            tokens.remove(session)
        };
        if let Some(t) = token {
            t.cancel();
        }
    }

    /// Forgets (and cancels) every session `alive` says is gone (expired without a DELETE).
    pub fn retain(&self, alive: impl Fn(&str) -> bool) {
        let gone: Vec<CancellationToken> = {
            let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
            let ids: Vec<String> = tokens.keys().filter(|k| !alive(k)).cloned().collect();
            ids.iter().filter_map(|k| tokens.remove(k)).collect()
        };
        for t in gone {
            t.cancel();
        }
    }

    pub fn len(&self) -> usize {
        self.tokens.lock().map(|t| t.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A token cancelled when either `a` or `b` is; the forwarding task ends with the returned guard.
pub fn either(a: &CancellationToken, b: &CancellationToken) -> (CancellationToken, DropGuardTask) {
    let both = CancellationToken::new();
    let (a, b, out) = (a.clone(), b.clone(), both.clone());
    let task = tokio::spawn(async move {
        tokio::select! {
            () = a.cancelled() => out.cancel(),
            () = b.cancelled() => out.cancel(),
            () = out.cancelled() => {}
        }
    });
    (both, DropGuardTask(task))
}

/// Aborts the forwarding task when dropped.
#[derive(Debug)]
pub struct DropGuardTask(pub tokio::task::JoinHandle<()>);

impl Drop for DropGuardTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}
