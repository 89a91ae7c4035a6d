//! The audit log, host side: what each execution records (see [`crate::store::audit`]) and the
//! rule that the record is committed before the outcome is handed back. If the record cannot be
//! written, the caller gets `SANDBOX_UNAVAILABLE` instead of the outcome: nothing is returned
//! that the log does not hold.

use crate::context::principal::Caller;
use crate::error::{ErrorCode, ExecError};
use crate::exec::outcome::Outcome;
use crate::store::audit::{
    AuditCall, AuditDetail, AuditRecord, DetailLog, MAX_DETAIL_LOGS, MAX_DETAIL_LOG_BYTES,
    MAX_DETAIL_TRACES, RUNNING,
};
use crate::store::{Store, StoreError};
use crate::trace::{TraceEvent, TraceKind};
use std::collections::HashMap;

pub use crate::exec::audit_breaker::AuditBreaker;
pub use crate::store::audit_options::*;

/// Most trace events of an execution whose record is built and committed on the async worker
/// that finished it (a record of 100,000 calls is built on a blocking thread).
const INLINE_TRACE_EVENTS: usize = 64;

/// Audit records lost while the store could not take them (`sandbox.audit.required: false`).
static LOST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many audit records this process lost (`sandbox.audit.required: false`).
pub fn records_lost() -> u64 {
    LOST.load(std::sync::atomic::Ordering::Relaxed)
}

/// What becomes of an outcome whose record could not be committed: withheld (the default,
/// `sandbox.audit.required`), or handed back as a counted, logged loss.
fn unrecorded(e: impl std::fmt::Display, outcome: Outcome, loss_allowed: bool) -> Outcome {
    if loss_allowed {
        let lost = LOST.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        tracing::error!(
            lost,
            "audit record lost (sandbox.audit.required is false): {e}"
        );
        return outcome;
    }
    tracing::error!("could not write the audit record; withholding the outcome: {e}");
    Outcome::failed(ExecError::new(
        ErrorCode::SandboxUnavailable,
        format!(
            "the execution ran but its audit record could not be written: the audit store is unreachable or failed ({e}); the outcome is withheld (sandbox.audit.required). Check the state store and retry"
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
}

impl Auditor {
    /// Applies the retention rule once (deleting old records) and returns the auditor. With
    /// `--audit-code hash`, a last execution remembered before (its code) is deleted too.
    pub fn new(store: Store, options: AuditOptions) -> Result<Self, StoreError> {
        let a = Auditor {
            breaker: AuditBreaker::new(store.clone()),
            store,
            options,
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

    /// What becomes of an outcome whose record could not be written (see [`unrecorded`]);
    /// with `required`, admission closes until the store answers again.
    fn unrecorded(&self, e: impl std::fmt::Display, outcome: Outcome) -> Outcome {
        if !self.options.loss_allowed {
            self.breaker.trip(&e);
        }
        unrecorded(e, outcome, self.options.loss_allowed)
    }

    /// Deletes records older than the retention period and past the retained count; returns
    /// how many.
    pub fn prune(&self) -> Result<usize, StoreError> {
        let mut n = 0;
        if let Some(days) = self.options.retain_days {
            let before = crate::trace::now_ms() - f64::from(days) * 86_400_000.0;
            n += self.store.prune_audit(before)?;
        }
        if let Some(keep) = self.options.retain_records {
            n += self.store.prune_audit_to(keep)?;
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
    pub fn header(&self, caller: &Caller, code: &str, ts: f64) -> AuditRecord {
        AuditRecord {
            id: 0,
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
        }
    }

    /// The sink of an execution's call notes, with its write-ahead record `header`: no tool
    /// call leaves the host before that record is committed.
    pub fn start(&self, header: AuditRecord) -> ArgsSink {
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
            detail: Some(detail_of(outcome, self.options.code)),
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
    /// `SANDBOX_UNAVAILABLE` instead (nothing leaves the host unlogged).
    pub async fn commit(&self, header: AuditRecord, outcome: Outcome, args: &ArgsSink) -> Outcome {
        let ahead = args.written_ahead();
        // A record whose write-ahead failed is not tried again whole: withheld (or, with the
        // loss allowed, counted lost) at once. Its store failed a moment ago; another try
        // would make the answer wait a second store bound when the database hangs.
        if let Some(e) = args.write_ahead_failure() {
            return self.unrecorded(e, outcome);
        }
        // A small record is committed on this thread when the store can take it at once
        // (`Store::try_write_now`): two thread hand-offs less on every answer.
        if outcome.traces.len() <= INLINE_TRACE_EVENTS {
            let record = self.record_of(header.clone(), &outcome, args);
            match self.store.try_commit_audit_now(ahead, &record) {
                Some(Ok(())) => return outcome,
                Some(Err(e)) => return self.unrecorded(e, outcome),
                None => {}
            }
        }
        let (auditor, args) = (self.clone(), args.clone());
        // Built off the async workers (a record of 100,000 calls takes a moment), so a signal
        // handler on the same runtime still runs meanwhile.
        let written = self
            .store
            .run(move |s| {
                let record = auditor.record_of(header, &outcome, &args);
                let done = match ahead {
                    Some(id) => s.complete_audit(id, &record),
                    None => s.append_audit(&record).map(|_| ()),
                };
                Ok(match done {
                    Ok(()) => outcome,
                    Err(e) => auditor.unrecorded(e, outcome),
                })
            })
            .await;
        written.unwrap_or_else(|e| {
            let failed = Outcome::failed(ExecError::new(ErrorCode::SandboxUnavailable, ""));
            unrecorded(e, failed, false)
        })
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
mod tests {
    use super::*;
    use crate::trace::TraceEvent;

    #[test]
    fn hash_only_auditing_deletes_a_remembered_last_execution() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        store
            .set_last_execution(&crate::store::LastExecution {
                code: "return 'secret plan'".into(),
                success: true,
                tool_calls: 0,
                failed_calls: 0,
                ts: 1.0,
            })
            .unwrap();
        let full = AuditOptions {
            code: AuditCode::Full,
            args: AuditArgs::default(),
            retain_days: None,
            retain_records: None,
            loss_allowed: false,
        };
        Auditor::new(store.clone(), full).unwrap();
        assert!(store.last_execution().unwrap().is_some());
        let hash = AuditOptions {
            code: AuditCode::Hash,
            ..full
        };
        Auditor::new(store.clone(), hash).unwrap();
        assert!(store.last_execution().unwrap().is_none());
    }

    fn event(kind: TraceKind, id: usize) -> TraceEvent {
        TraceEvent {
            kind,
            tool: "s:t".into(),
            trace_id: format!("t{id}"),
            parent_trace_id: None,
            ts: 0.0,
            success: Some(true),
            duration_ms: Some(1.0),
            error: None,
            by: None,
            rule: None,
            transport: None,
            key: None,
            bytes: None,
            label: None,
            decision: None,
            approver: None,
        }
    }

    #[test]
    fn a_record_of_100k_calls_is_built_in_one_linear_pass() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let a = Auditor::new(store, AuditOptions::default()).unwrap();
        let mut traces = Vec::new();
        for i in 0..100_000 {
            traces.push(event(TraceKind::ToolStart, i));
        }
        for i in (0..100_000).rev() {
            traces.push(event(TraceKind::ToolEnd, i));
        }
        traces.push(event(TraceKind::ApprovalGranted, 7));
        let outcome = Outcome {
            traces,
            ..Outcome::failed(ExecError::new(ErrorCode::RuntimeError, "x"))
        };
        let header = a.header(&Caller::default(), "return 1", 0.0);
        let t = std::time::Instant::now();
        let r = a.record_of(header, &outcome, &a.sink());
        // Quadratic, this took minutes; linear, well under a second.
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(r.calls.len(), 100_000);
        assert!(r.calls.iter().all(|c| c.duration_ms == Some(1.0)));
        assert_eq!(r.calls[7].approval.as_deref(), Some("granted by unknown"));
        assert_eq!(r.calls[8].approval, None);
    }

    #[test]
    fn client_strings_are_bounded() {
        let long = "x".repeat(1000);
        let full = bounded(&long, AuditCode::Full);
        assert!(
            full.len() < 300 && full.ends_with("[cut: 1000 bytes in all]"),
            "{full}"
        );
        let hash = bounded(&long, AuditCode::Hash);
        assert_eq!(
            hash,
            format!("sha256:{} [1000 bytes]", sha256_hex(long.as_bytes()))
        );
        assert_eq!(bounded("short", AuditCode::Hash), "short");
    }

    /// The database down: with `sandbox.audit.required` (the default) the outcome is withheld
    /// with SANDBOX_UNAVAILABLE saying the audit store is unreachable; with `required: false`
    /// the outcome comes back and the loss is counted; once the server is back, records are
    /// written again without reopening the store. A real PostgreSQL server, stopped and
    /// restarted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_database_down_withholds_or_counts_the_loss() {
        let server = crate::store::suites::pg_support::PgServer::start();
        let store = Store::open(std::path::Path::new(&server.database())).unwrap();
        let required = Auditor::new(store.clone(), AuditOptions::default()).unwrap();
        let lossy = Auditor::new(
            store.clone(),
            AuditOptions {
                loss_allowed: true,
                ..AuditOptions::default()
            },
        )
        .unwrap();
        let ok = || Outcome {
            success: true,
            result: serde_json::json!(1),
            error: None,
            ..Outcome::failed(ExecError::new(ErrorCode::RuntimeError, ""))
        };
        let commit = async |a: &Auditor| {
            let header = a.header(&Caller::default(), "return 1", 0.0);
            let t = std::time::Instant::now();
            let out = a.commit(header, ok(), &a.sink()).await;
            assert!(
                t.elapsed() < std::time::Duration::from_secs(12),
                "{:?}",
                t.elapsed()
            );
            out
        };
        let records = || crate::store::suites::count(&store, "SELECT COUNT(*) FROM audit");
        assert!(commit(&required).await.success);
        assert_eq!(records(), 1);

        server.checkpoint();
        server.stop();
        let out = commit(&required).await;
        let e = out.error.expect("withheld");
        assert_eq!(e.code, ErrorCode::SandboxUnavailable);
        assert!(
            e.message.contains("the audit store is unreachable"),
            "{}",
            e.message
        );
        let lost = records_lost();
        let out = commit(&lossy).await;
        assert!(out.success, "{out:?}");
        assert_eq!(records_lost(), lost + 1);

        server.restart();
        let out = commit(&required).await;
        assert!(out.success, "{out:?}");
        assert_eq!(records(), 2);
    }
}
