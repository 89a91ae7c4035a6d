//! The audit log, host side: what each execution records (see [`crate::store::audit`]) and the
//! rule that the record is committed before the outcome is handed back. If the record cannot be
//! written, the caller gets `SANDBOX_UNAVAILABLE` instead of the outcome: nothing is returned
//! that the log does not hold.

use crate::error::{ErrorCode, ExecError};
use crate::outcome::Outcome;
use crate::principal::Caller;
use crate::store::audit::{AuditCall, AuditRecord};
use crate::store::{Store, StoreError};
use crate::trace::TraceKind;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the log keeps of the code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AuditCode {
    /// The code itself (and its SHA-256).
    #[default]
    Full,
    /// Only its SHA-256.
    Hash,
}

/// What the log keeps of each call's arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AuditArgs {
    /// The SHA-256 of the arguments' JSON.
    #[default]
    Digest,
    /// The arguments' JSON too (up to [`MAX_FULL_ARGS_PER_CALL`] bytes a call and
    /// [`MAX_FULL_ARGS_PER_EXECUTION`] an execution; past that, the digest only).
    Full,
}

/// The `sandbox.audit` section of the config (flags override it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    #[serde(default)]
    pub code: Option<AuditCode>,
    #[serde(default)]
    pub args: Option<AuditArgs>,
    /// Records older than this many days are deleted when the host starts (and hourly by
    /// `serve`).
    #[serde(default)]
    pub retain_days: Option<u32>,
    /// Only the newest this many records are kept (pruned like `retain_days`).
    #[serde(default)]
    pub retain_records: Option<u64>,
}

/// `--audit-code`, `--audit-args`, `--audit-retain-days` of `run` and `serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AuditFlags {
    /// Audit log: keep each execution's code (`full`, default) or only its SHA-256 (`hash`).
    #[arg(long, value_enum, value_name = "MODE")]
    pub audit_code: Option<AuditCode>,
    /// Audit log: keep a SHA-256 of each tool call's arguments (`digest`, default) or the
    /// arguments themselves (`full`).
    #[arg(long, value_enum, value_name = "MODE")]
    pub audit_args: Option<AuditArgs>,
    /// Audit log: delete records older than this many days (default: keep everything).
    #[arg(long, value_name = "DAYS")]
    pub audit_retain_days: Option<u32>,
    /// Audit log: keep only the newest this many records (default: keep everything).
    #[arg(long, value_name = "N")]
    pub audit_retain_records: Option<u64>,
}

impl AuditFlags {
    /// The flags over the config's `sandbox.audit`.
    pub fn options(&self, config: Option<&AuditConfig>) -> AuditOptions {
        let c = config.cloned().unwrap_or_default();
        AuditOptions {
            code: self.audit_code.or(c.code).unwrap_or_default(),
            args: self.audit_args.or(c.args).unwrap_or_default(),
            retain_days: self.audit_retain_days.or(c.retain_days),
            retain_records: self.audit_retain_records.or(c.retain_records),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditOptions {
    pub code: AuditCode,
    pub args: AuditArgs,
    pub retain_days: Option<u32>,
    pub retain_records: Option<u64>,
}

/// Largest arguments kept whole for one call with `--audit-args full`.
pub const MAX_FULL_ARGS_PER_CALL: usize = 64 * 1024;
/// Largest total of arguments kept whole for one execution.
pub const MAX_FULL_ARGS_PER_EXECUTION: usize = 1024 * 1024;
/// Calls noted per execution (the execution's own `max_calls` is lower by default).
const MAX_NOTES: usize = 100_000;

/// Where the session notes each call's arguments (digest, or JSON) by trace id, at the door.
#[derive(Debug, Clone, Default)]
pub struct ArgsSink {
    full: bool,
    notes: Arc<Mutex<Notes>>,
}

#[derive(Debug, Default)]
struct Notes {
    by_trace: HashMap<String, (Option<String>, Option<String>)>,
    full_bytes: usize,
}

impl ArgsSink {
    pub fn new(mode: AuditArgs) -> Self {
        ArgsSink {
            full: mode == AuditArgs::Full,
            notes: Default::default(),
        }
    }

    /// Notes the arguments of the call `trace_id` (`None`: too large to be decoded; no digest).
    pub fn note(&self, trace_id: &str, args: Option<&Value>) {
        let json = args.and_then(|a| serde_json::to_vec(a).ok());
        let digest = json.as_deref().map(sha256_hex);
        let mut notes = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        if notes.by_trace.len() >= MAX_NOTES {
            return;
        }
        let mut kept = None;
        if let Some(json) = json.filter(|j| self.full && j.len() <= MAX_FULL_ARGS_PER_CALL) {
            if notes.full_bytes + json.len() <= MAX_FULL_ARGS_PER_EXECUTION {
                notes.full_bytes += json.len();
                kept = String::from_utf8(json).ok();
            }
        }
        notes.by_trace.insert(trace_id.to_string(), (digest, kept));
    }

    fn take(&self, trace_id: &str) -> (Option<String>, Option<String>) {
        let mut notes = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        notes.by_trace.remove(trace_id).unwrap_or((None, None))
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

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
