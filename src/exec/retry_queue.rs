//! A bounded local queue of writes the state store could not take, retried until it does: the
//! machinery the learning writes ([`crate::exec::learning`]) and the audit records of
//! `sandbox.audit.required: false` ([`crate::exec::audit`]) share.
//!
//! - A write that failed joins the queue ([`RetryQueue::failed`], [`RetryQueue::push`]); the
//!   queue holds at most `max_records` records and `max_bytes` bytes as estimated by
//!   [`Retryable::size`]. While it holds anything ([`RetryQueue::holding`]), the caller sends
//!   new records to its end too (no direct write), so they are written in order.
//! - One task retries the oldest record with a backoff ([`FIRST_BACKOFF`] doubling to
//!   [`MAX_BACKOFF`]) until the store takes it, then the next; when the queue is empty it ends
//!   and the caller writes directly again: no restart, no reopen.
//! - Past the bound the oldest records waiting are dropped (the one being tried at that instant
//!   keeps its place): counted (the kind's counter, on `/metrics`) and logged at most once a
//!   [`LOSS_LOG_EVERY`]. At shutdown [`RetryQueue::drain`] waits a
//!   grace period; what is still queued then is dropped and counted, and so is a record pushed
//!   after that.
//!
//! A record the store refuses for its content ([`StoreError::refused_content`]) is dropped and
//! counted, never retried: it would hold the queue's head for ever.
//!
//! A record whose commit reached the database but whose answer was lost (the server stopped at
//! that instant) is written again from the queue: each kind says what that means for it.

use crate::store::StoreError;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The first wait before a failed write is tried again.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Losses are logged at most this often.
const LOSS_LOG_EVERY: Duration = Duration::from_secs(60);

/// One queued write.
pub trait Retryable: Send + 'static {
    /// The bytes this record holds, estimated.
    fn size(&self) -> usize;
    /// Writes it to the state store (blocking: called on a blocking thread).
    fn write(&self) -> Result<(), StoreError>;
}

/// What the records of one queue are, for its log lines, and how many this process dropped.
#[derive(Debug)]
pub struct Kind {
    /// `learning writes`: "… are queued and retried", "… resumed".
    writes: &'static str,
    /// `learning records`: "… dropped".
    records: &'static str,
    /// What a loss means: `the tool graph misses their calls`.
    loss: &'static str,
    lost: AtomicU64,
}

impl Kind {
    pub const fn new(writes: &'static str, records: &'static str, loss: &'static str) -> Self {
        Kind {
            writes,
            records,
            loss,
            lost: AtomicU64::new(0),
        }
    }

    /// The records of this kind this process dropped.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

struct State<T> {
    entries: VecDeque<T>,
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

impl<T> Default for State<T> {
    fn default() -> Self {
        State {
            entries: VecDeque::new(),
            bytes: 0,
            failing: false,
            retrying: false,
            in_hand: false,
            closed: false,
            last_loss_log: None,
            lost_since_log: 0,
        }
    }
}

struct Shared<T> {
    state: Mutex<State<T>>,
    kind: &'static Kind,
    max_records: usize,
    max_bytes: usize,
}

/// Records the store could not take, retried in order. Cheap to clone (one queue).
pub struct RetryQueue<T>(Arc<Shared<T>>);

impl<T> Clone for RetryQueue<T> {
    fn clone(&self) -> Self {
        RetryQueue(self.0.clone())
    }
}

impl<T> std::fmt::Debug for RetryQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryQueue")
            .field("kind", &self.0.kind.writes)
            .field("max_records", &self.0.max_records)
            .field("max_bytes", &self.0.max_bytes)
            .finish()
    }
}

impl<T: Retryable> RetryQueue<T> {
    /// A queue of `kind` that holds at most `max_records` records and `max_bytes` bytes.
    pub fn new(kind: &'static Kind, max_records: usize, max_bytes: usize) -> Self {
        RetryQueue(Arc::new(Shared {
            state: Mutex::default(),
            kind,
            max_records,
            max_bytes,
        }))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn full(&self, st: &State<T>, size: usize) -> bool {
        st.entries.len() + usize::from(st.in_hand) >= self.0.max_records
            || st.bytes + size > self.0.max_bytes
    }

    /// Whether new records must join the queue's end (a write failed and the queue has not
    /// been emptied since) rather than be written directly.
    pub fn holding(&self) -> bool {
        let st = self.state();
        st.failing || !st.entries.is_empty()
    }

    /// A direct write failed: its record joins the queue, which is retried from now on.
    /// Within a tokio runtime.
    pub fn failed(&self, entry: T, e: &dyn std::fmt::Display) {
        let first = !std::mem::replace(&mut self.state().failing, true);
        if first {
            tracing::warn!(
                "{} are queued and retried: the state store failed ({e})",
                self.0.kind.writes
            );
        }
        self.push(entry);
    }

    /// Queues `entry` behind the others, dropping the oldest past the bounds; starts the
    /// retrying task when it is not running. Within a tokio runtime.
    pub fn push(&self, entry: T) {
        let size = entry.size();
        let mut st = self.state();
        if st.closed {
            self.lose(&mut st, 1, "the host is stopping");
            return;
        }
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
            self.lose(&mut st, dropped, "the queue is full");
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
                            tracing::info!("{} resumed: the queue is written", self.0.kind.writes);
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
                // The store refused this record's content: trying it again would hold the
                // queue's head for ever. It is that record's problem, not the store's.
                Ok((_, Err(e))) if e.refused_content() => {
                    let mut st = self.state();
                    st.in_hand = false;
                    self.lose(&mut st, 1, &format!("the store refused its content ({e})"));
                    backoff = FIRST_BACKOFF;
                }
                Ok((entry, Err(e))) => {
                    tracing::debug!(
                        "{}: a retry failed; retrying in {backoff:?}: {e}",
                        self.0.kind.writes
                    );
                    self.requeue(entry);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(e) => {
                    let mut st = self.state();
                    st.in_hand = false;
                    self.lose(&mut st, 1, &format!("its write task failed ({e})"));
                }
            }
        }
    }

    /// A record the store refused for its content, never queued: counted lost.
    pub fn refused(&self, e: &dyn std::fmt::Display) {
        let mut st = self.state();
        self.lose(&mut st, 1, &format!("the store refused its content ({e})"));
    }

    /// Puts a record whose retry failed back at the head of the queue (dropped after the drain
    /// at shutdown, which counted it).
    fn requeue(&self, entry: T) {
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

    /// Waits until the queue is empty and `idle()` (the caller's direct writes are done), at
    /// most `within`; what is still queued then is dropped and counted, and so is any record
    /// pushed after such a drain. For shutdown.
    pub async fn drain(&self, within: Duration, idle: impl Fn() -> bool) {
        let end = tokio::time::Instant::now() + within;
        loop {
            if idle() && self.queued() == 0 {
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
            self.lose(
                &mut st,
                n,
                "the host is stopping and the store does not take them",
            );
        }
    }

    /// Counts `n` dropped records; logs at most once a [`LOSS_LOG_EVERY`].
    fn lose(&self, st: &mut State<T>, n: u64, why: &str) {
        let kind = self.0.kind;
        let total = kind.lost.fetch_add(n, Ordering::Relaxed) + n;
        st.lost_since_log += n;
        let due = st
            .last_loss_log
            .is_none_or(|t| t.elapsed() >= LOSS_LOG_EVERY);
        if due {
            tracing::error!(
                lost = st.lost_since_log,
                total,
                "{} dropped ({why}; the queue holds at most {} records / {} bytes): {}",
                kind.records,
                self.0.max_records,
                self.0.max_bytes,
                kind.loss
            );
            st.last_loss_log = Some(Instant::now());
            st.lost_since_log = 0;
        }
    }
}

/// The bytes a trace event holds, estimated: its fixed part and its strings.
pub fn trace_event_size(e: &crate::trace::TraceEvent) -> usize {
    std::mem::size_of::<crate::trace::TraceEvent>()
        + e.tool.len()
        + e.trace_id.len()
        + e.parent_trace_id.as_ref().map_or(0, String::len)
        + e.error.as_ref().map_or(0, |x| x.message.len())
}
