//! Learning from a finished execution: its calls teach the tool graph, and its code becomes the
//! last execution (`capability save --from-last`). Best effort, and never in an execution's way:
//!
//! - While the store takes writes, an execution's record is written at once (on a blocking
//!   thread, at most [`MAX_DIRECT_WRITES`] at a time) and the execution waits for it at most
//!   [`WAIT_FOR_WRITE`] — so a healthy store has the record before the outcome goes out, as
//!   before, and a slow one costs an execution no more than that.
//! - A write that fails (the database down or refusing) puts its record in a bounded local
//!   queue ([`MAX_QUEUED_RECORDS`] records, [`MAX_QUEUED_BYTES`] bytes as estimated by
//!   [`Entry::size`]); while the queue holds anything, new records join its end without any
//!   wait, and one task retries the oldest with a backoff ([`FIRST_BACKOFF`] doubling to
//!   [`MAX_BACKOFF`]) until the store takes it. When the queue is empty again, direct writes
//!   resume: no restart, no reopen (the PostgreSQL pool reconnects by itself).
//! - Past the bound the oldest records are dropped: counted ([`writes_lost`], on `/metrics` as
//!   `mcp_sandbox_learning_writes_lost_total`) and logged at most once a minute.
//!
//! A write whose commit reached the database but whose answer was lost (the server stopped at
//! that instant) is written again from the queue: its calls are then counted twice. The graph's
//! counts are statistics; the audit log, which must be exact, does not go through this queue.

use crate::error::ErrorCode;
use crate::exec::outcome::Outcome;
use crate::store::{FinishedExecution, Store, StoreError};
use crate::trace::TraceEvent;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Records the queue holds at most while the store cannot take them.
pub const MAX_QUEUED_RECORDS: usize = 10_000;
/// Bytes (estimated, [`Entry::size`]) the queue holds at most.
pub const MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;
/// Records written at once, outside the queue (the PostgreSQL pool has 16 connections).
pub const MAX_DIRECT_WRITES: usize = 16;
/// How long an execution waits for its own record's write, at most.
pub const WAIT_FOR_WRITE: Duration = Duration::from_millis(250);
/// The first wait before a failed write is tried again.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Losses are logged at most this often.
const LOSS_LOG_EVERY: Duration = Duration::from_secs(60);

/// Learning records this process dropped (queue full, or still queued at shutdown).
static LOST: AtomicU64 = AtomicU64::new(0);

/// How many learning records this process dropped.
pub fn writes_lost() -> u64 {
    LOST.load(Ordering::Relaxed)
}

/// What the store needs of one finished execution (its outcome without the result and logs).
pub struct Entry {
    store: Store,
    success: bool,
    error_code: Option<ErrorCode>,
    traces: Vec<TraceEvent>,
    code: Option<String>,
}

impl FinishedExecution for Entry {
    fn success(&self) -> bool {
        self.success
    }
    fn error_code(&self) -> Option<ErrorCode> {
        self.error_code
    }
    fn traces(&self) -> &[TraceEvent] {
        &self.traces
    }
}

impl Entry {
    /// The bytes this entry holds, estimated: each trace event's fixed part and strings, the code.
    pub fn size(&self) -> usize {
        let strings = |e: &TraceEvent| {
            e.tool.len()
                + e.trace_id.len()
                + e.parent_trace_id.as_ref().map_or(0, String::len)
                + e.error.as_ref().map_or(0, |x| x.message.len())
        };
        std::mem::size_of::<Entry>()
            + self.code.as_ref().map_or(0, String::len)
            + self
                .traces
                .iter()
                .map(|e| std::mem::size_of::<TraceEvent>() + strings(e))
                .sum::<usize>()
    }

    fn write(&self) -> Result<(), StoreError> {
        self.store.record_execution(self, self.code.as_deref())
    }
}

/// Learns from a finished execution, waiting for the write however long it takes (no queue;
/// for a caller without a [`LearningQueue`]). A failure is logged, never fatal.
pub async fn record(store: &Store, outcome: &Outcome, code: Option<&str>) {
    if code.is_none() && outcome.traces.is_empty() {
        return;
    }
    let (outcome, code) = (outcome.clone(), code.map(str::to_string));
    if let Err(e) = store
        .run(move |s| s.record_execution(&outcome, code.as_deref()))
        .await
    {
        tracing::warn!("could not record the execution in the state store: {e}");
    }
}

#[derive(Default)]
struct State {
    entries: VecDeque<Entry>,
    bytes: usize,
    /// A write failed and the queue has not been emptied since: new records go to the queue.
    failing: bool,
    /// The retrying task runs.
    retrying: bool,
    /// The retrying task holds the oldest record (taken off `entries`, counted in the bounds).
    in_hand: bool,
    /// Drained at shutdown: a record whose retry fails is dropped, not queued again.
    closed: bool,
    last_loss_log: Option<Instant>,
    lost_since_log: u64,
}

struct Shared {
    state: Mutex<State>,
    direct: Arc<Semaphore>,
    /// [`MAX_QUEUED_RECORDS`] and [`MAX_QUEUED_BYTES`] (smaller in tests).
    max_records: usize,
    max_bytes: usize,
}

/// The learning writes of one sandbox. Cheap to clone.
#[derive(Clone)]
pub struct LearningQueue(Arc<Shared>);

impl Default for LearningQueue {
    fn default() -> Self {
        LearningQueue::bounded(MAX_QUEUED_RECORDS, MAX_QUEUED_BYTES)
    }
}

impl LearningQueue {
    /// A queue that holds at most `max_records` records and `max_bytes` bytes.
    pub fn bounded(max_records: usize, max_bytes: usize) -> Self {
        LearningQueue(Arc::new(Shared {
            state: Mutex::default(),
            direct: Arc::new(Semaphore::new(MAX_DIRECT_WRITES)),
            max_records,
            max_bytes,
        }))
    }

    fn bounds(&self) -> (usize, usize) {
        (self.0.max_records, self.0.max_bytes)
    }

    fn full(&self, st: &State, size: usize) -> bool {
        st.entries.len() + usize::from(st.in_hand) >= self.0.max_records
            || st.bytes + size > self.0.max_bytes
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Learns from a finished execution in `store` (tool graph; `code` also becomes the last
    /// execution). Waits at most [`WAIT_FOR_WRITE`], and not at all while writes fail.
    pub async fn record(&self, store: &Store, outcome: &Outcome, code: Option<&str>) {
        // Nothing to learn (no call, no code to remember): no hop to a blocking thread.
        if code.is_none() && outcome.traces.is_empty() {
            return;
        }
        let entry = Entry {
            store: store.clone(),
            success: outcome.success,
            error_code: outcome.error.as_ref().map(|e| e.code),
            traces: outcome.traces.clone(),
            code: code.map(str::to_string),
        };
        let permit = {
            let st = self.state();
            if st.failing || !st.entries.is_empty() {
                None
            } else {
                self.0.direct.clone().try_acquire_owned().ok()
            }
        };
        let Some(permit) = permit else {
            self.push(entry);
            return;
        };
        let (queue, runtime) = (self.clone(), tokio::runtime::Handle::current());
        let write = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            if let Err(e) = entry.write() {
                let _in = runtime.enter();
                queue.failed(entry, &e);
            }
        });
        // The write goes on (and its record is queued if it fails) when the wait is over.
        let _ = tokio::time::timeout(WAIT_FOR_WRITE, write).await;
    }

    /// A direct write failed: its record joins the queue, which is retried from now on.
    fn failed(&self, entry: Entry, e: &StoreError) {
        let first = !std::mem::replace(&mut self.state().failing, true);
        if first {
            tracing::warn!("learning writes are queued and retried: the state store failed ({e})");
        }
        self.push(entry);
    }

    /// Queues `entry` behind the others, dropping the oldest past the bounds; starts the
    /// retrying task when it is not running.
    fn push(&self, entry: Entry) {
        let size = entry.size();
        let mut st = self.state();
        let mut dropped = 0u64;
        if size > self.0.max_bytes {
            dropped += 1;
        } else {
            while self.full(&st, size) {
                let Some(old) = st.entries.pop_front() else {
                    break;
                };
                st.bytes = st.bytes.saturating_sub(old.size());
                dropped += 1;
            }
            st.bytes += size;
            st.entries.push_back(entry);
        }
        if dropped > 0 {
            lose(&mut st, dropped, "the queue is full", self.bounds());
        }
        if !st.retrying && !st.entries.is_empty() {
            st.retrying = true;
            drop(st);
            tokio::spawn(self.clone().retry());
        }
    }

    /// Writes the queued records, oldest first, backing off while the store fails; ends when
    /// the queue is empty (direct writes resume then).
    async fn retry(self) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let entry = {
                let mut st = self.state();
                match st.entries.pop_front() {
                    Some(e) => {
                        st.in_hand = true;
                        st.bytes = st.bytes.saturating_sub(e.size());
                        e
                    }
                    None => {
                        let was = std::mem::replace(&mut st.failing, false);
                        st.retrying = false;
                        if was {
                            tracing::info!("learning writes resumed: the queue is written");
                        }
                        return;
                    }
                }
            };
            let written = tokio::task::spawn_blocking(move || {
                let r = entry.write();
                (entry, r)
            })
            .await;
            match written {
                Ok((_, Ok(()))) => {
                    self.state().in_hand = false;
                    backoff = FIRST_BACKOFF;
                }
                Ok((entry, Err(e))) => {
                    tracing::debug!("learning write failed again; retrying in {backoff:?}: {e}");
                    self.requeue(entry);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(e) => {
                    let mut st = self.state();
                    st.in_hand = false;
                    lose(
                        &mut st,
                        1,
                        &format!("its write task failed ({e})"),
                        self.bounds(),
                    );
                }
            }
        }
    }

    /// Puts a record whose retry failed back at the head of the queue (dropped after the drain
    /// at shutdown, which counted it).
    fn requeue(&self, entry: Entry) {
        let mut st = self.state();
        st.failing = true;
        st.in_hand = false;
        if st.closed {
            return; // counted by the drain
        }
        // Its place was kept (`in_hand`), so it always fits.
        st.bytes = st.bytes.saturating_add(entry.size());
        st.entries.push_front(entry);
    }

    /// Records queued now (one being retried included).
    pub fn queued(&self) -> usize {
        let st = self.state();
        st.entries.len() + usize::from(st.in_hand && !st.closed)
    }

    /// Waits until every record is written (queued ones and direct writes in flight), at most
    /// `within`; what is still queued then is dropped and counted. For shutdown.
    pub async fn drain(&self, within: Duration) {
        let end = tokio::time::Instant::now() + within;
        loop {
            let idle = self.0.direct.available_permits() == MAX_DIRECT_WRITES;
            if idle && self.queued() == 0 {
                return;
            }
            if tokio::time::Instant::now() >= end {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut st = self.state();
        // A record being retried now is counted too; if that try still succeeds, it is written
        // though counted (a shutdown with the store down: the count errs on the side of loss).
        let n = (st.entries.len() + usize::from(st.in_hand)) as u64;
        st.entries.clear();
        st.bytes = 0;
        st.closed = true;
        if n > 0 {
            lose(
                &mut st,
                n,
                "the host is stopping and the store does not take them",
                self.bounds(),
            );
        }
    }
}

/// Counts `n` dropped records; logs at most once a [`LOSS_LOG_EVERY`].
fn lose(st: &mut State, n: u64, why: &str, bounds: (usize, usize)) {
    let total = LOST.fetch_add(n, Ordering::Relaxed) + n;
    st.lost_since_log += n;
    let due = st
        .last_loss_log
        .is_none_or(|t| t.elapsed() >= LOSS_LOG_EVERY);
    if due {
        tracing::error!(
            lost = st.lost_since_log,
            total,
            "learning records dropped ({why}; the queue holds at most {} records / {} bytes): the tool graph misses their calls",
            bounds.0,
            bounds.1
        );
        st.last_loss_log = Some(Instant::now());
        st.lost_since_log = 0;
    }
}

#[cfg(test)]
#[path = "learning_tests.rs"]
mod tests;
