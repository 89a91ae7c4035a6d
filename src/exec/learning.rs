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
//!   [`MAX_BACKOFF`]) until the store takes it (the queue is [`crate::exec::retry_queue`]'s,
//!   shared with the audit records of `sandbox.audit.required: false`). When the queue is empty again, direct writes
//!   resume: no restart, no reopen (the PostgreSQL pool reconnects by itself).
//! - Past the bound the oldest records are dropped: counted ([`writes_lost`], on `/metrics` as
//!   `mcp_sandbox_learning_writes_lost_total`) and logged at most once a minute.
//!
//! A write whose commit reached the database but whose answer was lost (the server stopped or
//! hung at that instant) is tried again from the queue: each record carries a key
//! ([`crate::store::write_key`]) written in the same transaction, so the retry finds it and
//! counts nothing twice.

use crate::error::ErrorCode;
use crate::exec::outcome::Outcome;
use crate::exec::retry_queue::{trace_event_size, Kind, RetryQueue, Retryable};
pub use crate::exec::retry_queue::{FIRST_BACKOFF, MAX_BACKOFF};
use crate::store::write_key::{new_key, WriteKey};
use crate::store::{FinishedExecution, Store, StoreError};
use crate::trace::TraceEvent;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Records the queue holds at most while the store cannot take them.
pub const MAX_QUEUED_RECORDS: usize = 10_000;
/// Bytes (estimated, [`Entry::size`]) the queue holds at most.
pub const MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;
/// Records written at once, outside the queue (the PostgreSQL pool has 16 connections).
pub const MAX_DIRECT_WRITES: usize = 16;
/// How long an execution waits for its own record's write, at most.
pub const WAIT_FOR_WRITE: Duration = Duration::from_millis(250);

/// The learning queue's log lines, and the records this process dropped (queue full, or still
/// queued at shutdown).
static KIND: Kind = Kind::new(
    "learning writes",
    "learning records",
    "the tool graph misses their calls",
);

/// How many learning records this process dropped.
pub fn writes_lost() -> u64 {
    KIND.lost()
}

/// What the store needs of one finished execution (its outcome without the result and logs).
pub struct Entry {
    store: Store,
    success: bool,
    error_code: Option<ErrorCode>,
    traces: Vec<TraceEvent>,
    code: Option<(String, sandbox_runner::protocol::Language)>,
    /// Applied at most once under this key; `tried` once a write of it was started.
    key: String,
    tried: AtomicBool,
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
        std::mem::size_of::<Entry>()
            + self.key.len()
            + self.code.as_ref().map_or(0, |(c, _)| c.len())
            + self.traces.iter().map(trace_event_size).sum::<usize>()
    }
}

impl Retryable for Entry {
    fn size(&self) -> usize {
        Entry::size(self)
    }

    fn write(&self) -> Result<(), StoreError> {
        let code = self.code.as_ref().map(|(c, l)| (c.as_str(), *l));
        let key = WriteKey {
            id: &self.key,
            retry: self.tried.swap(true, Ordering::Relaxed),
        };
        self.store.record_execution_once(self, code, key)
    }
}

/// Learns from a finished execution, waiting for the write however long it takes (no queue;
/// for a caller without a [`LearningQueue`]). A failure is logged, never fatal.
pub async fn record(
    store: &Store,
    outcome: &Outcome,
    code: Option<(&str, sandbox_runner::protocol::Language)>,
) {
    if code.is_none() && outcome.traces.is_empty() {
        return;
    }
    let (outcome, code) = (outcome.clone(), code.map(|(c, l)| (c.to_string(), l)));
    if let Err(e) = store
        .run(move |s| s.record_execution(&outcome, code.as_ref().map(|(c, l)| (c.as_str(), *l))))
        .await
    {
        tracing::warn!("could not record the execution in the state store: {e}");
    }
}

/// The learning writes of one sandbox. Cheap to clone.
#[derive(Clone)]
pub struct LearningQueue {
    queue: RetryQueue<Entry>,
    direct: Arc<Semaphore>,
}

impl Default for LearningQueue {
    fn default() -> Self {
        LearningQueue::bounded(MAX_QUEUED_RECORDS, MAX_QUEUED_BYTES)
    }
}

impl LearningQueue {
    /// A queue that holds at most `max_records` records and `max_bytes` bytes.
    pub fn bounded(max_records: usize, max_bytes: usize) -> Self {
        LearningQueue {
            queue: RetryQueue::new(&KIND, max_records, max_bytes),
            direct: Arc::new(Semaphore::new(MAX_DIRECT_WRITES)),
        }
    }

    /// Learns from a finished execution in `store` (tool graph; `code` also becomes the last
    /// execution). Waits at most [`WAIT_FOR_WRITE`], and not at all while writes fail.
    pub async fn record(
        &self,
        store: &Store,
        outcome: &Outcome,
        code: Option<(&str, sandbox_runner::protocol::Language)>,
    ) {
        // Nothing to learn (no call, no code to remember): no hop to a blocking thread.
        if code.is_none() && outcome.traces.is_empty() {
            return;
        }
        let entry = Entry {
            store: store.clone(),
            success: outcome.success,
            error_code: outcome.error.as_ref().map(|e| e.code),
            traces: outcome.traces.clone(),
            code: code.map(|(c, l)| (c.to_string(), l)),
            key: new_key(),
            tried: AtomicBool::new(false),
        };
        let permit = if self.queue.holding() {
            None
        } else {
            self.direct.clone().try_acquire_owned().ok()
        };
        let Some(permit) = permit else {
            self.queue.push(entry);
            return;
        };
        let (queue, runtime) = (self.queue.clone(), tokio::runtime::Handle::current());
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

    /// Records queued now (one being retried included).
    pub fn queued(&self) -> usize {
        self.queue.queued()
    }

    /// Waits until every record is written (queued ones and direct writes in flight), at most
    /// `within`; what is still queued then is dropped and counted. For shutdown.
    pub async fn drain(&self, within: Duration) {
        let direct = &self.direct;
        self.queue
            .drain(within, || direct.available_permits() == MAX_DIRECT_WRITES)
            .await;
    }
}

#[cfg(test)]
#[path = "learning_tests.rs"]
mod tests;
