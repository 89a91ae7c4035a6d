//! Held executions (`execute_code {yield_after_ms}`, a task, or one that may ask its 2026-07-28
//! client): an execution still running when its request answers goes on in its own task, owned
//! by the client session that started it (`SessionScope`: tenant, principal and MCP session,
//! handle or stdio connection), until its outcome is read or it is cancelled.
//!
//! Its state is one [`Phase`], changed only by the transitions below (a question it has open
//! is its `QuestionSlot`'s; a cancel is its token's, and ends it as `Finished` like any end):
//!
//! ```text
//!  Running{recorded: false} --record()----------> Running{recorded: true}   (a row in the store)
//!  Running{recorded}        --finish(outcome)---> Finished{outcome, recorded}
//!  Running{recorded: true}  --finish_stored()---> Stored                    (outcome in its row)
//!  Finished{outcome, r}     --take()------------> Read{recorded: r}         (read once)
//!  Finished{..}             --(idle past the TTL, or its session ended)--> dropped by `sweep`
//! ```
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

/// Where a held execution is (the transitions are in the module docs).
#[derive(Debug)]
pub enum Phase {
    /// Running; `recorded`: it has a row in the store (its request answered before its end).
    Running { recorded: bool },
    /// Ended, its outcome kept here until read or expired (`recorded`: it has a row that never
    /// got the outcome, because the store failed).
    Finished { outcome: Finished, recorded: bool },
    /// Ended, its outcome in its row (any gateway sharing the store reads it there).
    Stored,
    /// Ended and its outcome read.
    Read { recorded: bool },
}

/// A transition its phase does not allow: a bug of the caller, logged, the phase unchanged.
fn refused(id: &str, transition: &str, phase: &Phase) {
    tracing::warn!(
        execution = id,
        "held execution: {transition} refused in phase {}",
        phase.name()
    );
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Phase::Running { .. } => "running",
            Phase::Finished { .. } => "finished",
            Phase::Stored => "stored",
            Phase::Read { .. } => "read",
        }
    }

    fn is_running(&self) -> bool {
        matches!(self, Phase::Running { .. })
    }

    fn is_recorded(&self) -> bool {
        match self {
            Phase::Running { recorded }
            | Phase::Finished { recorded, .. }
            | Phase::Read { recorded } => *recorded,
            Phase::Stored => true,
        }
    }
}

/// One held execution.
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
    /// Its state; `done` says when it leaves `Running`.
    phase: Mutex<Phase>,
    done: watch::Sender<bool>,
    pub started: Instant,
    /// Orders recording the row and publishing the outcome (`remote::record`, `remote::publish`).
    pub publish: tokio::sync::Mutex<()>,
    /// The question it has open for a 2026-07-28 client (`input_required`), if it may ask one.
    pub questions: Option<Arc<crate::front::mcp::input_required::QuestionSlot>>,
    /// Whether it counts against `max_running`: it was started with `yield_after_ms` (an
    /// execution here only because it may ask its client does not).
    counted: bool,
}

impl Execution {
    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Running` → `Finished`: keeps the outcome and wakes whoever waits. An execution ends
    /// once: a second end is refused (logged) and its outcome dropped.
    pub fn finish(&self, outcome: Finished) {
        let mut phase = self.phase();
        let Phase::Running { recorded } = *phase else {
            return refused(&self.id, "finish", &phase);
        };
        *phase = Phase::Finished { outcome, recorded };
        drop(phase);
        self.done.send_replace(true);
    }

    /// `Running{recorded: true}` → `Stored`: its outcome is in its row; wakes whoever waits,
    /// holds nothing. Refused (logged) in any other phase.
    pub fn finish_stored(&self) {
        let mut phase = self.phase();
        if !matches!(*phase, Phase::Running { recorded: true }) {
            return refused(&self.id, "finish_stored", &phase);
        }
        *phase = Phase::Stored;
        drop(phase);
        self.done.send_replace(true);
    }

    /// `Running` → `Running{recorded: true}`: it has a row in the store. Refused (logged) once
    /// it ended.
    pub fn set_recorded(&self) {
        let mut phase = self.phase();
        if !phase.is_running() {
            return refused(&self.id, "set_recorded", &phase);
        }
        *phase = Phase::Running { recorded: true };
    }

    /// Its phase's name (`running`, `finished`, `stored`, `read`).
    pub fn phase_name(&self) -> &'static str {
        self.phase().name()
    }

    /// Whether it has (or had) a row in the store.
    pub fn is_recorded(&self) -> bool {
        self.phase().is_recorded()
    }

    /// Whether it left `Running`.
    pub fn is_finished(&self) -> bool {
        !self.phase().is_running()
    }

    /// `Finished` → `Read`: its outcome, once (`None` in any other phase).
    fn take_outcome(&self) -> Option<Finished> {
        let mut phase = self.phase();
        let recorded = phase.is_recorded();
        match std::mem::replace(&mut *phase, Phase::Read { recorded }) {
            Phase::Finished { outcome, .. } => Some(outcome),
            other => {
                *phase = other;
                None
            }
        }
    }

    /// When its outcome was kept here (`None` unless `Finished`).
    fn finished_at(&self) -> Option<Instant> {
        match &*self.phase() {
            Phase::Finished { outcome, .. } => Some(outcome.at),
            _ => None,
        }
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
            phase: Mutex::new(Phase::Running { recorded: false }),
            done: watch::Sender::new(false),
            started: Instant::now(),
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
        e.take_outcome()
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
        let Some(at) = e.finished_at() else {
            return true; // running: it ends by itself (stored and read ones leave at once)
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
    use serde_json::json;

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
    fn each_transition_happens_once_and_in_order() {
        let ex = Executions::default();
        let gone = CancellationToken::new();
        let budget = Budget::new(DEFAULT_MAX_OUTPUT_BYTES);
        let e = ex
            .start(&scope("a"), (4, 0), B, gone.clone(), (None, true))
            .unwrap();
        assert_eq!(e.phase_name(), "running");
        e.finish_stored();
        assert_eq!(e.phase_name(), "running", "stored needs a row first");
        e.set_recorded();
        assert!(e.is_recorded() && !e.is_finished());
        e.finish(Finished::new(json!(1), budget, None));
        assert_eq!(e.phase_name(), "finished");
        e.finish(Finished::new(json!(2), budget, None));
        e.set_recorded();
        e.finish_stored();
        assert_eq!(e.phase_name(), "finished", "an execution ends once");
        let f = ex.take(&scope("a"), &e.id).expect("its outcome");
        assert_eq!(f.value, json!(1), "the first end's outcome");
        assert_eq!(e.phase_name(), "read");
        assert!(e.is_recorded() && e.is_finished());
        assert!(e.take_outcome().is_none(), "read once");

        let s = ex
            .start(&scope("a"), (4, 0), B, gone, (None, true))
            .unwrap();
        s.set_recorded();
        s.finish_stored();
        assert_eq!(s.phase_name(), "stored");
        assert!(s.is_finished() && s.is_recorded());
        assert!(
            ex.take(&scope("a"), &s.id).is_none(),
            "its outcome is in its row"
        );
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
