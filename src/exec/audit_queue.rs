//! The audit records of `sandbox.audit.required: false` that the state store could not take:
//! queued locally and retried until it does ([`crate::exec::retry_queue`], the machinery the
//! learning writes use too), so an outage of the database costs the log nothing as long as the
//! queue holds.
//!
//! - A record is a completion of its write-ahead record (an UPDATE by id and the calls, which
//!   the store inserts idempotently: retried after a commit whose answer was lost, it is not
//!   written twice) or, when no write-ahead record was written, a whole append.
//! - The queue holds at most [`MAX_QUEUED_RECORDS`] records and [`MAX_QUEUED_BYTES`] bytes as
//!   estimated by [`record_size`]; past that the oldest waiting are dropped (not the one being
//!   tried at that instant), counted ([`records_lost`],
//!   on `/metrics` as `mcp_sandbox_audit_records_lost_total`) and logged at most once a minute.
//!   A record is counted lost only when it is dropped, never when it is queued; how many are
//!   queued is on `/metrics` as `mcp_sandbox_audit_records_queued`.
//! - While the queue holds records, every new record joins its end (the caller writes none
//!   directly, and starts no write-ahead record), so records are written in the order their
//!   executions ended, as far as concurrent commits allow.
//! - At shutdown the queue gets the grace period; what is left is dropped and counted.
//!
//! An append (a record without a write-ahead record) retried after a commit whose answer was
//! lost finds its key ([`crate::store::write_key`]) and completes the record that commit wrote,
//! or the execution's write-ahead record committed without its answer: one record either way.

use crate::exec::retry_queue::{trace_event_size, Kind, RetryQueue, Retryable};
use crate::store::audit::{AuditCall, AuditDetail, AuditRecord, DetailLog};
use crate::store::{Store, StoreError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Records the queue holds at most while the store cannot take them.
pub const MAX_QUEUED_RECORDS: usize = 10_000;
/// Bytes (estimated, [`record_size`]) the queue holds at most.
pub const MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;

/// The audit queue's log lines, and the records this process dropped (the queue was full, or
/// still held them at shutdown).
static KIND: Kind = Kind::new(
    "audit writes (sandbox.audit.required is false)",
    "audit records",
    "the audit log misses these executions",
);

/// How many audit records this process lost (`sandbox.audit.required: false`).
pub fn records_lost() -> u64 {
    KIND.lost()
}

/// One record waiting for the store.
pub struct Pending {
    store: Store,
    /// The write-ahead record this completes; `None`: appended whole.
    ahead: Option<i64>,
    record: AuditRecord,
}

impl Retryable for Pending {
    fn size(&self) -> usize {
        std::mem::size_of::<Pending>() + record_size(&self.record)
    }

    fn write(&self) -> Result<(), StoreError> {
        match self.ahead {
            Some(id) => self.store.complete_audit(id, &self.record),
            None => self.store.append_audit(&self.record).map(|_| ()),
        }
    }
}

/// The bytes a record holds beyond its fixed part, estimated: its strings, calls and detail.
pub fn record_size(r: &AuditRecord) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let calls: usize = r
        .calls
        .iter()
        .map(|c| {
            std::mem::size_of::<AuditCall>()
                + c.kind.len()
                + c.tool.len()
                + opt(&c.args_sha256)
                + opt(&c.args)
                + opt(&c.error)
                + opt(&c.approval)
        })
        .sum();
    let detail = r.detail.as_ref().map_or(0, |d| {
        std::mem::size_of::<AuditDetail>()
            + d.traces.iter().map(trace_event_size).sum::<usize>()
            + d.logs
                .iter()
                .map(|l| std::mem::size_of::<DetailLog>() + l.level.len() + l.message.len())
                .sum::<usize>()
            + d.error.as_ref().map_or(0, |e| e.message.len())
    });
    let labels: usize = r
        .labels
        .iter()
        .map(|l| std::mem::size_of::<String>() + l.len())
        .sum();
    r.principal.len()
        + r.tenant.len()
        + opt(&r.client)
        + r.front.len()
        + opt(&r.code)
        + r.code_sha256.len()
        + r.outcome.len()
        + labels
        + calls
        + detail
}

/// The queued audit records of one auditor, and its direct commits in flight. Cheap to clone.
#[derive(Clone, Debug)]
pub struct AuditQueue {
    queue: RetryQueue<Pending>,
    direct: Arc<AtomicUsize>,
}

impl Default for AuditQueue {
    fn default() -> Self {
        AuditQueue::bounded(MAX_QUEUED_RECORDS, MAX_QUEUED_BYTES)
    }
}

/// A direct commit in flight (the drain at shutdown waits for it).
pub struct Direct(Arc<AtomicUsize>);

impl Drop for Direct {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl AuditQueue {
    /// A queue that holds at most `max_records` records and `max_bytes` bytes.
    pub fn bounded(max_records: usize, max_bytes: usize) -> Self {
        AuditQueue {
            queue: RetryQueue::new(&KIND, max_records, max_bytes),
            direct: Arc::default(),
        }
    }

    /// Whether new records must join the queue rather than be written directly.
    pub fn holding(&self) -> bool {
        self.queue.holding()
    }

    /// Counts a direct commit in flight until the returned guard is dropped.
    pub fn direct(&self) -> Direct {
        self.direct.fetch_add(1, Ordering::AcqRel);
        Direct(self.direct.clone())
    }

    /// `record` could not be written (`e`): it joins the queue, which is retried from now on.
    pub fn failed(
        &self,
        store: &Store,
        ahead: Option<i64>,
        record: AuditRecord,
        e: &dyn std::fmt::Display,
    ) {
        let p = Pending {
            store: store.clone(),
            ahead,
            record,
        };
        self.queue.failed(p, e);
    }

    /// A record the store refused for its content even reduced
    /// ([`crate::store::audit_content`]): never queued (it would hold the queue's head for
    /// ever), counted lost.
    pub fn refused(&self, e: &dyn std::fmt::Display) {
        self.queue.refused(e);
    }

    /// `record` joins the queue's end without a try (the queue holds records).
    pub fn push(&self, store: &Store, ahead: Option<i64>, record: AuditRecord) {
        self.queue.push(Pending {
            store: store.clone(),
            ahead,
            record,
        });
    }

    /// Records queued now (one being retried included).
    pub fn queued(&self) -> usize {
        self.queue.queued()
    }

    /// Waits until the direct commits in flight are done and the queue is written, at most
    /// `within`; what is still queued then is dropped and counted. For shutdown.
    pub async fn drain(&self, within: Duration) {
        let direct = &self.direct;
        self.queue
            .drain(within, || direct.load(Ordering::Acquire) == 0)
            .await;
    }
}
