//! Yielded executions (`execute_code {yield_after_ms}`): an execution still running when its
//! request answers goes on in its own task, owned by the client session that started it
//! (`SessionScope`: tenant, principal and MCP session or stdio connection), until
//! `wait_execution` reads its outcome or `cancel_execution` ends it.
//!
//! Lifetime rules:
//! - a running execution ends by itself (its own wall clock and CPU budget), by
//!   `cancel_execution`, or when its session ends (HTTP: `DELETE` or expiry, through
//!   `SessionCancels`; stdio: the connection closes) — then its outcome is `CANCELLED`;
//! - a finished outcome is kept until it is read (`wait_execution` or `cancel_execution` return
//!   it and forget it) or its session has been idle for `sandbox.session.ttl_ms` (counted from
//!   the later of the session's last request and the end of the execution) or has ended; no
//!   other request of the session discards it;
//! - at most `sandbox.session.max_running` executions of one session run at once;
//! - an unread outcome holds its room in the unread-answer budget (`responses`) like an answer
//!   not yet written; it is already cut to its request's output budget.
//!
//! An id that is unknown, already read, expired, or owned by another scope gets one and the same
//! answer, so ids cannot be probed.

use crate::context::session::SessionScope;
use crate::error::{ErrorCode, ExecError};
use crate::exec::live::LiveView;
use crate::exec::output_budget::Budget;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{watch, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

/// A finished execution's answer, waiting to be read.
#[derive(Debug)]
pub struct Finished {
    /// The outcome as `structuredContent`, already cut to the output budget.
    pub value: Value,
    pub budget: Budget,
    /// Its room in the unread-answer budget (`None`: it found none and `value` says so).
    pub room: Option<OwnedSemaphorePermit>,
    at: Instant,
}

impl Finished {
    pub fn new(value: Value, budget: Budget, room: Option<OwnedSemaphorePermit>) -> Self {
        Finished {
            value,
            budget,
            room,
            at: Instant::now(),
        }
    }
}

/// One yielded (or yieldable) execution.
#[derive(Debug)]
pub struct Execution {
    pub id: String,
    owner: String,
    pub live: Arc<LiveView>,
    /// The output budget of the request that started it (its answers are cut to it).
    pub budget: Budget,
    /// Cancelling it ends the execution with `CANCELLED`.
    pub cancel: CancellationToken,
    /// Its session's end (a finished outcome of an ended session is dropped).
    session_gone: CancellationToken,
    done: watch::Sender<bool>,
    finished: Mutex<Option<Finished>>,
    pub started: Instant,
    /// Whether it has a row in the store (`remote`): set when its request answered `running`.
    recorded: std::sync::atomic::AtomicBool,
    /// Orders recording the row and publishing the outcome (`remote::record`, `remote::publish`).
    pub publish: tokio::sync::Mutex<()>,
    /// The question it has open for a 2026-07-28 client (`input_required`), if it may ask one.
    pub questions: Option<Arc<crate::front::mcp::input_required::QuestionSlot>>,
    /// Whether it counts against `max_running`: it was started with `yield_after_ms` (an
    /// execution here only because it may ask its client does not).
    counted: bool,
}

impl Execution {
    /// Stores the outcome and wakes whoever waits.
    pub fn finish(&self, f: Finished) {
        *self.finished.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
        self.done.send_replace(true);
    }

    /// Ended with its outcome in the store (its row): wakes whoever waits, holds nothing.
    pub fn finish_stored(&self) {
        self.done.send_replace(true);
    }

    /// Marks it recorded in the store.
    pub fn set_recorded(&self) {
        self.recorded
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether it has a row in the store.
    pub fn is_recorded(&self) -> bool {
        self.recorded.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn is_finished(&self) -> bool {
        *self.done.borrow()
    }

    /// Waits up to `timeout` for the end; whether it ended.
    pub async fn wait(&self, timeout: Duration) -> bool {
        let mut rx = self.done.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|d| *d))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

#[derive(Debug, Default)]
struct Inner {
    runs: HashMap<String, Arc<Execution>>,
    /// When each owner last sent a request.
    seen: HashMap<String, Instant>,
}

/// Every session's yielded executions (one per gateway).
#[derive(Debug, Default)]
pub struct Executions {
    inner: Mutex<Inner>,
}

/// The answer to an id that names nothing of the caller's.
pub fn unknown() -> ExecError {
    ExecError::new(
        ErrorCode::InvalidArguments,
        "no such execution in this session: the id is unknown, its outcome was already read, or it expired with its session. Ids come from execute_code's `running` answer (execution_id); start a new execution with execute_code",
    )
}

impl Executions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session of `owner` sent a request: first drops what expired (this session's too:
    /// an idle time past `ttl` ends before this request), then its outcomes live `ttl` from now.
    /// Returns how long the session had been idle before (`None`: this gateway had not seen it
    /// within the TTL), for the outcomes kept in the store (`remote`).
    pub fn touch(&self, owner: &SessionScope, ttl: Duration) -> Option<Duration> {
        let mut inner = self.lock();
        let now = Instant::now();
        let key = owner.key();
        let idle = inner.seen.get(&key).map(|s| now.duration_since(*s));
        sweep(&mut inner, now, ttl);
        inner.seen.insert(key, now);
        idle
    }

    /// A new execution of `owner`, or `LIMIT_EXCEEDED` when `max_running` of its executions
    /// run already.
    pub fn start(
        &self,
        owner: &SessionScope,
        (max_running, log_bytes): (u64, u64),
        budget: Budget,
        session_gone: CancellationToken,
        (questions, counted): (
            Option<Arc<crate::front::mcp::input_required::QuestionSlot>>,
            bool,
        ),
    ) -> Result<Arc<Execution>, ExecError> {
        let key = owner.key();
        let mut inner = self.lock();
        let running = inner
            .runs
            .values()
            .filter(|e| e.owner == key && e.counted && !e.is_finished())
            .count() as u64;
        if counted && running >= max_running {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "this session already has {running} executions running after yield_after_ms; the limit (sandbox.session.max_running) is {max_running}. Wait for one with wait_execution or stop one with cancel_execution, then retry"
                ),
            ));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let e = Arc::new(Execution {
            id: id.clone(),
            owner: key.clone(),
            live: Arc::new(LiveView::new(log_bytes)),
            budget,
            cancel: CancellationToken::new(),
            session_gone,
            done: watch::Sender::new(false),
            finished: Mutex::new(None),
            started: Instant::now(),
            recorded: Default::default(),
            publish: Default::default(),
            questions,
            counted,
        });
        inner.seen.insert(key, Instant::now());
        inner.runs.insert(id, e.clone());
        Ok(e)
    }

    /// `owner`'s execution `id` (`None` for an unknown id and for another scope's alike).
    pub fn get(&self, owner: &SessionScope, id: &str) -> Option<Arc<Execution>> {
        let key = owner.key();
        self.lock().runs.get(id).filter(|e| e.owner == key).cloned()
    }

    /// Takes `owner`'s finished outcome `id` and forgets the execution (`None`: not finished,
    /// already taken, or not the owner's).
    pub fn take(&self, owner: &SessionScope, id: &str) -> Option<Finished> {
        let key = owner.key();
        let mut inner = self.lock();
        let e = inner
            .runs
            .get(id)
            .filter(|e| e.owner == key && e.is_finished())?
            .clone();
        inner.runs.remove(id);
        drop(inner);
        let f = e.finished.lock().unwrap_or_else(|p| p.into_inner()).take();
        f
    }

    /// Forgets execution `id` (its outcome is in the store now).
    pub fn remove(&self, id: &str) {
        self.lock().runs.remove(id);
    }

    /// Whether a running execution has a row in the store (whose cancel another gateway may ask for).
    pub fn any_recorded_running(&self) -> bool {
        self.lock()
            .runs
            .values()
            .any(|e| e.is_recorded() && !e.is_finished())
    }

    /// Cancels the running executions among `ids` (asked for through another gateway); how many.
    pub fn cancel_ids(&self, ids: &[String]) -> usize {
        let inner = self.lock();
        let mut n = 0;
        for e in ids.iter().filter_map(|id| inner.runs.get(id)) {
            if e.is_recorded() && !e.cancel.is_cancelled() {
                e.cancel.cancel();
                n += 1;
            }
        }
        n
    }

    /// Executions held now (running or unread).
    pub fn len(&self) -> usize {
        self.lock().runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Drops finished outcomes whose session ended or was idle past `ttl`, and owners nobody has
/// heard of for `ttl` that hold nothing.
fn sweep(inner: &mut Inner, now: Instant, ttl: Duration) {
    let seen = &inner.seen;
    inner.runs.retain(|_, e| {
        let Some(at) = e
            .finished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|f| f.at)
        else {
            return true; // running: it ends by itself
        };
        let last = seen.get(&e.owner).map_or(at, |s| (*s).max(at));
        !e.session_gone.is_cancelled() && now.duration_since(last) < ttl
    });
    let owners: std::collections::HashSet<&String> =
        inner.runs.values().map(|e| &e.owner).collect();
    let keep: std::collections::HashSet<String> = owners.into_iter().cloned().collect();
    inner
        .seen
        .retain(|k, s| keep.contains(k) || now.duration_since(*s) < ttl);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::output_budget::DEFAULT_MAX_OUTPUT_BYTES;

    const B: Budget = Budget {
        max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        requested: None,
        capped: false,
    };

    fn scope(session: &str) -> SessionScope {
        SessionScope::new("t", "p", session)
    }

    #[test]
    fn an_outcome_is_read_once_by_its_owner_only() {
        let ex = Executions::default();
        let e = ex
            .start(
                &scope("a"),
                (4, 1000),
                B,
                CancellationToken::new(),
                (None, true),
            )
            .unwrap();
        assert!(ex.get(&scope("b"), &e.id).is_none());
        assert!(ex.take(&scope("a"), &e.id).is_none(), "not finished yet");
        e.finish(Finished::new(
            Value::Null,
            Budget::new(DEFAULT_MAX_OUTPUT_BYTES),
            None,
        ));
        assert!(ex.take(&scope("b"), &e.id).is_none());
        assert!(ex.take(&scope("a"), &e.id).is_some());
        assert!(ex.take(&scope("a"), &e.id).is_none());
        assert!(ex.is_empty());
    }

    #[test]
    fn running_executions_are_capped_per_session() {
        let ex = Executions::default();
        ex.start(
            &scope("a"),
            (1, 0),
            B,
            CancellationToken::new(),
            (None, true),
        )
        .unwrap();
        let e = ex
            .start(
                &scope("a"),
                (1, 0),
                B,
                CancellationToken::new(),
                (None, true),
            )
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
        assert!(e.message.contains("sandbox.session.max_running"), "{e:?}");
        ex.start(
            &scope("b"),
            (1, 0),
            B,
            CancellationToken::new(),
            (None, true),
        )
        .unwrap();
    }

    #[test]
    fn unread_outcomes_expire_with_an_idle_or_ended_session() {
        let ex = Executions::default();
        let gone = CancellationToken::new();
        let e = ex
            .start(&scope("a"), (4, 0), B, gone.clone(), (None, true))
            .unwrap();
        let budget = Budget::new(DEFAULT_MAX_OUTPUT_BYTES);
        e.finish(Finished::new(Value::Null, budget, None));
        let mut inner = ex.lock();
        sweep(&mut inner, Instant::now(), Duration::from_secs(60));
        assert_eq!(inner.runs.len(), 1, "kept within the TTL");
        sweep(
            &mut inner,
            Instant::now() + Duration::from_secs(61),
            Duration::from_secs(60),
        );
        assert!(inner.runs.is_empty(), "dropped after the TTL");
        drop(inner);
        let e = ex
            .start(&scope("a"), (4, 0), B, gone.clone(), (None, true))
            .unwrap();
        e.finish(Finished::new(Value::Null, budget, None));
        gone.cancel();
        sweep(&mut ex.lock(), Instant::now(), Duration::from_secs(60));
        assert!(ex.is_empty(), "dropped when the session ended");
    }
}
