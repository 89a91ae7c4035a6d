//! The audit log, host side: what each execution records (see [`crate::store::audit`]) and the
//! rule that the record is committed before the outcome is handed back. If the record cannot be
//! written, the caller gets `SANDBOX_UNAVAILABLE` instead of the outcome: nothing is returned
//! that the log does not hold. With `sandbox.audit.required: false` the outcome is returned and
//! the record is queued and retried instead ([`AuditQueue`]); only a record the queue drops is
//! lost, and counted.

use crate::context::principal::Caller;
use crate::error::{ErrorCode, ExecError};
use crate::exec::outcome::Outcome;
use crate::store::audit::{
    AuditCall, AuditDetail, AuditRecord, DetailLog, MAX_DETAIL_LOGS, MAX_DETAIL_LOG_BYTES,
    MAX_DETAIL_TRACES, RUNNING,
};
use crate::store::audit_key::AuditKey;
use crate::store::{Store, StoreError};
use crate::trace::{TraceEvent, TraceKind};
use std::collections::HashMap;

pub use crate::exec::audit_breaker::AuditBreaker;
pub use crate::exec::audit_queue::{records_lost, AuditQueue};
pub use crate::store::audit_options::*;

/// Most trace events of an execution whose record is built and committed on the async worker
/// that finished it (a record of 100,000 calls is built on a blocking thread).
const INLINE_TRACE_EVENTS: usize = 64;

/// The outcome withheld because its record could not be committed (`sandbox.audit.required`).
fn withheld(e: impl std::fmt::Display) -> Outcome {
    tracing::error!("could not write the audit record; withholding the outcome: {e}");
    Outcome::failed(ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "the execution ran but its audit record could not be written: the audit store is unreachable or failed ({e}); the outcome is withheld (sandbox.audit.required). Check the state store and retry"
        ),
    ))
}

/// The outcome withheld because the store refused its record's content even reduced
/// (`sandbox.audit.required`; see [`crate::store::audit_content`]). The store is not down:
/// admission stays open.
fn withheld_refused(e: impl std::fmt::Display) -> Outcome {
    tracing::error!(
        "the audit store refused an audit record's content; withholding the outcome: {e}"
    );
    Outcome::failed(ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "the execution ran but the audit store refused its record's content ({e}); the outcome is withheld (sandbox.audit.required). The store itself works: change what the request sends (client name, code) and retry"
        ),
    ))
}

/// Writes audit records to the state store.
#[derive(Clone, Debug)]
pub struct Auditor {
    store: Store,
    options: AuditOptions,
    /// Closed admission while the store is known down (`required`; see [`AuditBreaker`]).
    breaker: std::sync::Arc<AuditBreaker>,
    /// Records the store could not take, retried (`required: false`; see [`AuditQueue`]).
    queue: AuditQueue,
    /// The operator's audit key: signs the checkpoints retention leaves (`--audit-key-file`).
    key: Option<std::sync::Arc<AuditKey>>,
}

impl Auditor {
    /// Applies the retention rule once (deleting old records) and returns the auditor. With
    /// `--audit-code hash`, a last execution remembered before (its code) is deleted too.
    pub fn new(store: Store, options: AuditOptions) -> Result<Self, StoreError> {
        Auditor::with_key(store, options, None)
    }

    /// [`Auditor::new`] with the operator's audit key, which signs retention's checkpoints.
    pub fn with_key(
        store: Store,
        options: AuditOptions,
        key: Option<AuditKey>,
    ) -> Result<Self, StoreError> {
        let a = Auditor {
            breaker: AuditBreaker::new(store.clone()),
            queue: AuditQueue::default(),
            store,
            options,
            key: key.map(std::sync::Arc::new),
        };
        a.prune()?;
        if options.code == AuditCode::Hash {
            a.store.forget_last_execution()?;
        }
        Ok(a)
    }

    pub fn options(&self) -> AuditOptions {
        self.options
    }

    /// `Ok` when an execution may start. With `sandbox.audit.required` (the default), while an
    /// earlier record could not be written and the store has not answered a probe since:
    /// `SANDBOX_UNAVAILABLE`, before any runner is taken (see [`AuditBreaker`]).
    pub async fn admit(&self) -> Result<(), ExecError> {
        if self.options.loss_allowed {
            return Ok(());
        }
        self.breaker.admit().await
    }

    /// The auditor with a queue of other bounds (tests).
    pub fn with_queue(self, queue: AuditQueue) -> Self {
        Auditor { queue, ..self }
    }

    /// Audit records queued now, waiting for the store (`required: false`).
    pub fn queued(&self) -> usize {
        self.queue.queued()
    }

    /// Waits for the queued records to be written, at most `within`; what is left is counted
    /// lost (`required: false`). For shutdown.
    pub async fn drain(&self, within: std::time::Duration) {
        self.queue.drain(within).await;
    }

    /// What becomes of an outcome whose record could not be written (`e`): with
    /// `sandbox.audit.required` (the default) it is withheld and admission closes until the
    /// store answers again; with `required: false` the record joins the queue and the outcome
    /// is handed back.
    ///
    /// A store that refused the record's content (even reduced, `refused`) is not down: the
    /// record is not queued (it would block the queue for ever) but counted lost, and the
    /// breaker stays closed.
    fn unrecorded(
        &self,
        e: impl std::fmt::Display,
        refused: bool,
        ahead: Option<i64>,
        record: AuditRecord,
        outcome: Outcome,
    ) -> Outcome {
        if refused {
            if self.options.loss_allowed {
                self.queue.refused(&e);
                return outcome;
            }
            return withheld_refused(e);
        }
        if self.options.loss_allowed {
            self.queue.failed(&self.store, ahead, record, &e);
            return outcome;
        }
        self.breaker.trip(&e);
        withheld(e)
    }

    /// Deletes records older than the retention period and past the retained count; returns
    /// how many.
    pub fn prune(&self) -> Result<usize, StoreError> {
        let mut n = 0;
        if let Some(days) = self.options.retain_days {
            let before = crate::trace::now_ms() - f64::from(days) * 86_400_000.0;
            n += self.store.prune_audit(before, self.key.as_deref())?;
        }
        if let Some(keep) = self.options.retain_records {
            n += self.store.prune_audit_to(keep, self.key.as_deref())?;
        }
        Ok(n)
    }

    /// Whether a retention rule is set (`serve` then prunes hourly).
    pub fn retains(&self) -> bool {
        self.options.retain_days.is_some() || self.options.retain_records.is_some()
    }

    pub fn sink(&self) -> ArgsSink {
        ArgsSink::new(self.options.args)
    }

    /// The record of an execution as it starts: who, when, the code (or only its hash with
    /// `--audit-code hash`) and its size; outcome [`RUNNING`], no calls. Every string a client
    /// chose is bounded ([`bounded`]).
    /// The execution's id is set by the caller (`execution_id`).
    pub fn header(&self, caller: &Caller, code: &str, ts: f64) -> AuditRecord {
        AuditRecord {
            id: 0,
            execution_id: None,
            ts,
            principal: bounded(&caller.principal, self.options.code),
            tenant: bounded(&caller.tenant, self.options.code),
            client: caller
                .client
                .as_deref()
                .map(|c| bounded(c, self.options.code)),
            front: caller.front.to_string(),
            code: (self.options.code == AuditCode::Full).then(|| code.to_string()),
            code_sha256: sha256_hex(code.as_bytes()),
            code_bytes: Some(code.len() as u64),
            outcome: RUNNING.to_string(),
            duration_ms: 0.0,
            calls: Vec::new(),
            labels: Vec::new(),
            detail: None,
            write_key: Some(crate::store::write_key::new_key()),
        }
    }

    /// The sink of an execution's call notes, with its write-ahead record `header`: no tool
    /// call leaves the host before that record is committed. With `required: false` while
    /// records are queued, none: the record joins the queue whole when the execution ends, and
    /// the execution does not wait on a store that failed a moment ago.
    pub fn start(&self, header: AuditRecord) -> ArgsSink {
        if self.options.loss_allowed && self.queue.holding() {
            return self.sink();
        }
        self.sink()
            .with_write_ahead(self.store.clone(), header, self.options.loss_allowed)
    }

    /// The record of one execution: `header` completed with the outcome and the calls.
    pub fn record_of(
        &self,
        header: AuditRecord,
        outcome: &Outcome,
        args: &ArgsSink,
    ) -> AuditRecord {
        // One pass to index each call's end and approval by trace id, one to build the calls:
        // linear in the traces (a search per call was quadratic: minutes for 100,000 calls).
        let mut ends: HashMap<&str, &TraceEvent> = HashMap::new();
        let mut approvals: HashMap<&str, &TraceEvent> = HashMap::new();
        for e in &outcome.traces {
            match e.kind {
                TraceKind::ToolEnd | TraceKind::CapabilityEnd => {
                    ends.entry(e.trace_id.as_str()).or_insert(e);
                }
                TraceKind::ApprovalGranted | TraceKind::ApprovalDenied => {
                    approvals.entry(e.trace_id.as_str()).or_insert(e);
                }
                _ => {}
            }
        }
        let mut calls = Vec::new();
        for start in outcome
            .traces
            .iter()
            .filter(|e| matches!(e.kind, TraceKind::ToolStart | TraceKind::CapabilityStart))
        {
            let end = ends.get(start.trace_id.as_str());
            let (args_sha256, args) = args.take(&start.trace_id);
            calls.push(AuditCall {
                kind: if start.kind == TraceKind::CapabilityStart {
                    "capability".into()
                } else {
                    "tool".into()
                },
                tool: bounded(&start.tool, self.options.code),
                args_sha256,
                args,
                error: end
                    .and_then(|e| e.error.as_ref())
                    .map(|e| e.code.to_string()),
                duration_ms: end.and_then(|e| e.duration_ms),
                approval: approvals
                    .get(start.trace_id.as_str())
                    .map(|e| approval_text(e)),
            });
        }
        AuditRecord {
            outcome: outcome
                .error
                .as_ref()
                .map_or_else(|| "OK".to_string(), |e| e.code.to_string()),
            duration_ms: outcome.metrics.duration_ms,
            calls,
            detail: Some(AuditDetail {
                // The recording for replay (`--audit-record full`), put there by the sandbox.
                recording: header.detail.as_ref().and_then(|d| d.recording.clone()),
                ..detail_of(outcome, self.options.code)
            }),
            labels: outcome
                .traces
                .iter()
                .filter(|e| e.kind == TraceKind::LabelAdded)
                .filter_map(|e| e.label.clone())
                .fold(Vec::new(), |mut all, l| {
                    if !all.contains(&l) {
                        all.push(l);
                    }
                    all
                }),
            ..header
        }
    }

    /// Commits the record of `outcome` (completing the write-ahead record when one was
    /// written), then returns the outcome; if the record cannot be committed, returns
    /// `SANDBOX_UNAVAILABLE` instead (nothing leaves the host unlogged) — or, with
    /// `required: false`, queues the record and returns the outcome.
    pub async fn commit(&self, header: AuditRecord, outcome: Outcome, args: &ArgsSink) -> Outcome {
        // A call the script did not await may have started the write-ahead record and been
        // dropped before it was written: the record completes it rather than adding another.
        args.settled().await;
        let ahead = args.written_ahead();
        // A record whose write-ahead failed is not tried again at once: withheld, or queued
        // whole. Its store failed a moment ago; another try would make the answer wait a
        // second store bound when the database hangs. While records are queued, a new one
        // joins their end. A write-ahead refused for its content (even reduced) says nothing
        // of the store: the whole record is tried (it is reduced again if need be).
        let (failure, refused) = match args.write_ahead_failed() {
            Some((e, true)) => (None, Some(e)),
            Some((e, false)) => (Some(e), None),
            None => (None, None),
        };
        if let (Some(e), false) = (&refused, self.options.loss_allowed) {
            return withheld_refused(e);
        }
        if let (Some(e), false) = (&failure, self.options.loss_allowed) {
            self.breaker.trip(e);
            return withheld(e);
        }
        let to_queue = self.options.loss_allowed && (failure.is_some() || self.queue.holding());
        let _direct = self.queue.direct();
        // A small record is committed on this thread when the store can take it at once
        // (`Store::try_write_now`): two thread hand-offs less on every answer.
        let mut built = None;
        if outcome.traces.len() <= INLINE_TRACE_EVENTS {
            let record = self.record_of(header.clone(), &outcome, args);
            if to_queue {
                return self.enqueue(failure, ahead, record, outcome);
            }
            match self.store.try_commit_audit_now(ahead, &record) {
                Some(Ok(())) => return outcome,
                Some(Err(e)) => {
                    let refused = e.refused_content();
                    return self.unrecorded(e, refused, ahead, record, outcome);
                }
                // Written on a blocking thread as it is: building it again would find the
                // calls' arguments taken (`ArgsSink::take`).
                None => built = Some(record),
            }
        }
        let (auditor, args) = (self.clone(), args.clone());
        // Built off the async workers (a record of 100,000 calls takes a moment), so a signal
        // handler on the same runtime still runs meanwhile.
        let written = self
            .store
            .run(move |s| {
                let record = built.unwrap_or_else(|| auditor.record_of(header, &outcome, &args));
                if to_queue {
                    return Ok((outcome, record, None));
                }
                let done = match ahead {
                    Some(id) => s.complete_audit(id, &record),
                    None => s.append_audit(&record).map(|_| ()),
                };
                Ok((outcome, record, Some(done)))
            })
            .await;
        match written {
            Ok((outcome, _, Some(Ok(())))) => outcome,
            Ok((outcome, record, Some(Err(e)))) => {
                let refused = e.refused_content();
                self.unrecorded(e, refused, ahead, record, outcome)
            }
            Ok((outcome, record, None)) => self.enqueue(failure, ahead, record, outcome),
            Err(e) => withheld(e),
        }
    }

    /// `record` joins the queue without a try (`required: false`): its write-ahead failed
    /// (`failure`), or records are queued already.
    fn enqueue(
        &self,
        failure: Option<String>,
        ahead: Option<i64>,
        record: AuditRecord,
        outcome: Outcome,
    ) -> Outcome {
        match failure {
            Some(e) => self.queue.failed(&self.store, ahead, record, &e),
            None => self.queue.push(&self.store, ahead, record),
        }
        outcome
    }

    /// Records an execution refused before it ran: by the code's size and hash only (a
    /// refused script may be far over the limit it was checked against; none of it is kept).
    pub async fn commit_refusal(
        &self,
        caller: &Caller,
        code_bytes: u64,
        code_sha256: String,
        ts: f64,
        outcome: Outcome,
    ) -> Outcome {
        let header = AuditRecord {
            code: None,
            code_sha256,
            code_bytes: Some(code_bytes),
            ..self.header(caller, "", ts)
        };
        self.commit(header, outcome, &self.sink()).await
    }
}

/// Longest client-chosen string kept whole in a record (client name, tool name, principal).
pub const MAX_STORED_STRING: usize = 256;

/// `s` when it is at most [`MAX_STORED_STRING`] bytes; else its first bytes and its full size
/// (`--audit-code full`) or only its SHA-256 and size (`--audit-code hash`).
pub fn bounded(s: &str, mode: AuditCode) -> String {
    if s.len() <= MAX_STORED_STRING {
        return s.to_string();
    }
    match mode {
        AuditCode::Full => crate::term::clip(s, MAX_STORED_STRING),
        AuditCode::Hash => format!("sha256:{} [{} bytes]", sha256_hex(s.as_bytes()), s.len()),
    }
}

/// What the record keeps for the web view: the first trace events and log lines, bounded. With
/// `--audit-code hash` no text the script produced is kept (logs, error messages, state keys).
fn detail_of(outcome: &Outcome, mode: AuditCode) -> AuditDetail {
    let full = mode == AuditCode::Full;
    let traces = outcome
        .traces
        .iter()
        .take(MAX_DETAIL_TRACES)
        .map(|e| {
            let mut e = e.clone();
            e.tool = bounded(&e.tool, mode);
            if !full {
                e.key = None;
                if let Some(err) = e.error.as_mut() {
                    err.message.clear();
                }
            }
            e
        })
        .collect();
    let logs: Vec<DetailLog> = if full {
        outcome
            .logs
            .iter()
            .take(MAX_DETAIL_LOGS)
            .map(|l| DetailLog {
                level: crate::term::clip(&l.level, 16),
                message: crate::term::clip(&l.message, MAX_DETAIL_LOG_BYTES),
            })
            .collect()
    } else {
        Vec::new()
    };
    AuditDetail {
        traces_dropped: outcome.traces.len().saturating_sub(MAX_DETAIL_TRACES) as u64,
        logs_dropped: (outcome.logs.len() - logs.len()) as u64,
        traces,
        logs,
        error: outcome.error.as_ref().map(|e| crate::trace::TraceError {
            code: e.code,
            message: if full {
                crate::term::clip(&e.message, MAX_DETAIL_LOG_BYTES)
            } else {
                String::new()
            },
        }),
        recording: None,
    }
}

/// The approval decision of an `ApprovalGranted` / `ApprovalDenied` event.
fn approval_text(e: &TraceEvent) -> String {
    let verdict = if e.kind == TraceKind::ApprovalGranted {
        "granted"
    } else {
        "denied"
    };
    let by = e.by.as_deref().unwrap_or("unknown");
    match &e.approver {
        // The page names the principal who answered.
        Some(who) => format!("{verdict} by {by} ({who})"),
        None => format!("{verdict} by {by}"),
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
