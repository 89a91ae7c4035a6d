//! Per-session cancellation for streamable HTTP: a `DELETE` of a session cancels the executions
//! that session started (rmcp itself only cancels them after waiting up to 5 s for their
//! answers). Over stdio the session is the process, and rmcp's request token covers it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The header that names a streamable HTTP session.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// One token per live HTTP session that has started an execution, and the tokens of the
/// requests each session has running ([`SessionCancels::request_token`]).
#[derive(Debug, Default)]
pub struct SessionCancels {
    tokens: Mutex<HashMap<String, CancellationToken>>,
    requests: Mutex<HashMap<String, HashMap<u64, CancellationToken>>>,
    next: AtomicU64,
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
        let running = self.lock_requests().remove(session);
        for t in running.into_iter().flat_map(HashMap::into_values) {
            t.cancel();
        }
    }

    /// A token cancelled when `request` is (rmcp's token of the request: it is a child of it)
    /// or when `session` ends (it is registered here until the returned guard drops). This
    /// replaces a task per request that waited on both tokens: spawning it woke the runtime's
    /// other worker thread on every `execute_code` (issue 33).
    pub fn request_token(
        &self,
        session: &str,
        request: &CancellationToken,
    ) -> (CancellationToken, Registered<'_>) {
        let token = request.child_token();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock_requests()
            .entry(session.to_string())
            .or_default()
            .insert(key, token.clone());
        let registered = Registered {
            cancels: self,
            session: session.to_string(),
            key,
        };
        (token, registered)
    }

    fn lock_requests(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<u64, CancellationToken>>> {
        self.requests.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets (and cancels) every session `alive` says is gone (expired without a DELETE).
    pub fn retain(&self, alive: impl Fn(&str) -> bool) {
        let gone: Vec<CancellationToken> = {
            let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
            let ids: Vec<String> = tokens.keys().filter(|k| !alive(k)).cloned().collect();
            ids.iter().filter_map(|k| tokens.remove(k)).collect()
        };
        let running: Vec<CancellationToken> = {
            let mut requests = self.lock_requests();
            let ids: Vec<String> = requests.keys().filter(|k| !alive(k)).cloned().collect();
            ids.iter()
                .filter_map(|k| requests.remove(k))
                .flat_map(HashMap::into_values)
                .collect()
        };
        for t in gone.into_iter().chain(running) {
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

/// Aborts the task when dropped.
#[derive(Debug)]
pub struct DropGuardTask(pub tokio::task::JoinHandle<()>);

impl Drop for DropGuardTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A request's place in [`SessionCancels`]; dropping it forgets the request.
#[derive(Debug)]
pub struct Registered<'a> {
    cancels: &'a SessionCancels,
    session: String,
    key: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut requests = self.cancels.lock_requests();
        if let Some(running) = requests.get_mut(&self.session) {
            running.remove(&self.key);
            if running.is_empty() {
                requests.remove(&self.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_token_is_cancelled_by_its_request_or_its_session() {
        let cancels = SessionCancels::default();
        let (a, b) = (CancellationToken::new(), CancellationToken::new());
        let (by_request, _ra) = cancels.request_token("s1", &a);
        let (by_session, _rb) = cancels.request_token("s1", &b);
        let (other, _rc) = cancels.request_token("s2", &CancellationToken::new());
        a.cancel();
        assert!(by_request.is_cancelled());
        assert!(!by_session.is_cancelled());
        cancels.end("s1");
        assert!(by_session.is_cancelled());
        assert!(!other.is_cancelled());
        cancels.retain(|id| id != "s2");
        assert!(other.is_cancelled());
    }

    #[test]
    fn a_finished_request_is_forgotten() {
        let cancels = SessionCancels::default();
        let request = CancellationToken::new();
        {
            let (_t, _r) = cancels.request_token("s1", &request);
            assert_eq!(cancels.lock_requests().len(), 1);
        }
        assert!(cancels.lock_requests().is_empty());
        // A session that ends afterwards cancels nothing left over.
        cancels.end("s1");
        assert!(!request.is_cancelled());
    }
}
