//! The audit log, host side: what each execution records (see [`crate::store::audit`]) and the
//! rule that the record is committed before the outcome is handed back. If the record cannot be
//! written, the caller gets `SANDBOX_UNAVAILABLE` instead of the outcome: nothing is returned
//! that the log does not hold.

use crate::context::principal::Caller;
use crate::error::{ErrorCode, ExecError};
use crate::exec::outcome::Outcome;
use crate::store::audit::{AuditCall, AuditRecord};
use crate::store::{Store, StoreError};
use crate::trace::TraceKind;

pub use crate::store::audit_options::*;

/// Writes audit records to the state store.
#[derive(Clone, Debug)]
pub struct Auditor {
    store: Store,
    options: AuditOptions,
}

impl Auditor {
    /// Applies the retention rule once (deleting old records) and returns the auditor.
    pub fn new(store: Store, options: AuditOptions) -> Result<Self, StoreError> {
        let a = Auditor { store, options };
        a.prune()?;
        Ok(a)
    }

    pub fn options(&self) -> AuditOptions {
        self.options
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

    /// The record of one execution.
    pub fn record_of(
        &self,
        caller: &Caller,
        code: &str,
        ts: f64,
        outcome: &Outcome,
        args: &ArgsSink,
    ) -> AuditRecord {
        let mut calls = Vec::new();
        for start in outcome
            .traces
            .iter()
            .filter(|e| matches!(e.kind, TraceKind::ToolStart | TraceKind::CapabilityStart))
        {
            let end = outcome.traces.iter().find(|e| {
                e.trace_id == start.trace_id
                    && matches!(e.kind, TraceKind::ToolEnd | TraceKind::CapabilityEnd)
            });
            let (args_sha256, args) = args.take(&start.trace_id);
            calls.push(AuditCall {
                kind: if start.kind == TraceKind::CapabilityStart {
                    "capability".into()
                } else {
                    "tool".into()
                },
                tool: start.tool.clone(),
                args_sha256,
                args,
                error: end
                    .and_then(|e| e.error.as_ref())
                    .map(|e| e.code.to_string()),
                duration_ms: end.and_then(|e| e.duration_ms),
                approval: approval_of(&outcome.traces, &start.trace_id),
            });
        }
        AuditRecord {
            id: 0,
            ts,
            principal: caller.principal.clone(),
            tenant: caller.tenant.clone(),
            client: caller.client.clone(),
            front: caller.front.to_string(),
            code: (self.options.code == AuditCode::Full).then(|| code.to_string()),
            code_sha256: sha256_hex(code.as_bytes()),
            outcome: outcome
                .error
                .as_ref()
                .map_or_else(|| "OK".to_string(), |e| e.code.to_string()),
            duration_ms: outcome.metrics.duration_ms,
            calls,
        }
    }

    /// Commits the record of `outcome`, then returns it; if the record cannot be committed,
    /// returns `SANDBOX_UNAVAILABLE` instead (nothing leaves the host unlogged).
    pub async fn commit(
        &self,
        caller: &Caller,
        code: &str,
        ts: f64,
        outcome: Outcome,
        args: &ArgsSink,
    ) -> Outcome {
        let record = self.record_of(caller, code, ts, &outcome, args);
        match self.store.run(move |s| s.append_audit(&record)).await {
            Ok(_) => outcome,
            Err(e) => {
                tracing::error!("could not write the audit record; withholding the outcome: {e}");
                Outcome::failed(ExecError::new(
                    ErrorCode::SandboxUnavailable,
                    format!(
                        "the execution ran but its audit record could not be written ({e}); the outcome is withheld. Check the state file and retry"
                    ),
                ))
            }
        }
    }
}

/// The approval decision recorded for the call `trace_id`, if an `ask` rule matched it.
fn approval_of(traces: &[crate::trace::TraceEvent], trace_id: &str) -> Option<String> {
    traces.iter().find_map(|e| {
        let verdict = match e.kind {
            TraceKind::ApprovalGranted => "granted",
            TraceKind::ApprovalDenied => "denied",
            _ => return None,
        };
        (e.trace_id == trace_id)
            .then(|| format!("{verdict} by {}", e.by.as_deref().unwrap_or("unknown")))
    })
}
