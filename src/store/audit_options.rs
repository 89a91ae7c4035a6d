//! What the audit log keeps: the options (config `sandbox.audit`, `--audit-*` flags) and the
//! arguments each call notes at the door ([`ArgsSink`], carried by every provider call so a
//! capability's nested calls land in the caller's record). The host side that writes records
//! is `exec::audit`; the table is [`super::audit`].

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
    /// The arguments' JSON too (up to 64 KiB a call and 1 MiB an execution; past that, the
    /// digest only).
    // (This text is `--help`'s: plain words, no doc links. The sizes are the constants
    // `MAX_FULL_ARGS_PER_CALL` and `MAX_FULL_ARGS_PER_EXECUTION`; a unit test keeps them equal.)
    Full,
}

/// Whether the log keeps what `mcp-sandbox replay` needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AuditRecordMode {
    /// Nothing more than the record.
    #[default]
    Off,
    /// The code, the context, each tool call's arguments and answer (tool results, which may be
    /// sensitive), the seed and the clock values, for `mcp-sandbox replay`.
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
    /// `"full"`: keep what `mcp-sandbox replay` needs (tool results included).
    #[serde(default)]
    pub record: Option<AuditRecordMode>,
    /// Records older than this many days are deleted when the host starts (and hourly by
    /// `serve`).
    #[serde(default)]
    pub retain_days: Option<u32>,
    /// Only the newest this many records are kept (pruned like `retain_days`).
    #[serde(default)]
    pub retain_records: Option<u64>,
    /// While a record cannot be written (the state store is unreachable): `true` (the default)
    /// withholds the outcome and makes no tool call (`SANDBOX_UNAVAILABLE`); `false` runs on,
    /// counting and logging each lost record.
    #[serde(default)]
    pub required: Option<bool>,
    /// The operator's Ed25519 audit key (`mcp-sandbox audit keygen --key-file PATH`): signs
    /// retention's checkpoints and exports; relative to the config file's directory.
    #[serde(default)]
    pub key_file: Option<std::path::PathBuf>,
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
    /// Audit log: also keep what `mcp-sandbox replay` needs (`full`: the context, each tool
    /// call's arguments and result, which may be sensitive, the seed and clock values; default
    /// `off`).
    #[arg(long, value_enum, value_name = "MODE")]
    pub audit_record: Option<AuditRecordMode>,
    /// Audit log: delete records older than this many days (default: keep everything).
    #[arg(long, value_name = "DAYS")]
    pub audit_retain_days: Option<u32>,
    /// Audit log: keep only the newest this many records (default: keep everything).
    #[arg(long, value_name = "N")]
    pub audit_retain_records: Option<u64>,
    /// Audit log: the operator's Ed25519 key (`audit keygen`), which signs the checkpoint
    /// retention leaves where the chain starts (default: sandbox.audit.key_file).
    #[arg(long, value_name = "PATH")]
    pub audit_key_file: Option<std::path::PathBuf>,
}

impl AuditFlags {
    /// Whether any `--audit-*` flag was given.
    pub fn given(&self) -> bool {
        self.audit_code.is_some()
            || self.audit_args.is_some()
            || self.audit_record.is_some()
            || self.audit_retain_days.is_some()
            || self.audit_retain_records.is_some()
            || self.audit_key_file.is_some()
    }

    /// The audit key of `--audit-key-file`, else of the config's `sandbox.audit.key_file`
    /// (resolved against `base_dir`, the config file's directory), loaded; `None` when neither
    /// names one.
    pub fn key(
        &self,
        config: Option<&AuditConfig>,
        base_dir: &std::path::Path,
    ) -> Result<Option<super::audit_key::AuditKey>, super::audit_key::AuditKeyError> {
        key_of(self.audit_key_file.as_deref(), config, base_dir)
    }

    /// The flags over the config's `sandbox.audit`.
    pub fn options(&self, config: Option<&AuditConfig>) -> AuditOptions {
        let c = config.cloned().unwrap_or_default();
        AuditOptions {
            code: self.audit_code.or(c.code).unwrap_or_default(),
            args: self.audit_args.or(c.args).unwrap_or_default(),
            record: self.audit_record.or(c.record).unwrap_or_default(),
            retain_days: self.audit_retain_days.or(c.retain_days),
            retain_records: self.audit_retain_records.or(c.retain_records),
            loss_allowed: c.required == Some(false),
        }
    }
}

/// The audit key of `flag`, else of `config`'s `key_file` (against `base_dir`), loaded.
pub fn key_of(
    flag: Option<&std::path::Path>,
    config: Option<&AuditConfig>,
    base_dir: &std::path::Path,
) -> Result<Option<super::audit_key::AuditKey>, super::audit_key::AuditKeyError> {
    let path = match (flag, config.and_then(|c| c.key_file.as_ref())) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(p)) => base_dir.join(p),
        (None, None) => return Ok(None),
    };
    super::audit_key::AuditKey::load(&path).map(Some)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditOptions {
    pub code: AuditCode,
    pub args: AuditArgs,
    pub record: AuditRecordMode,
    pub retain_days: Option<u32>,
    pub retain_records: Option<u64>,
    /// `sandbox.audit.required: false`: a record that cannot be written is a counted, logged
    /// loss instead of a withheld outcome.
    pub loss_allowed: bool,
}

/// Largest arguments kept whole for one call with `--audit-args full`.
pub const MAX_FULL_ARGS_PER_CALL: usize = 64 * 1024;
/// Largest total of arguments kept whole for one execution.
pub const MAX_FULL_ARGS_PER_EXECUTION: usize = 1024 * 1024;
/// Calls noted per execution (the execution's own `max_calls` is lower by default).
const MAX_NOTES: usize = 100_000;

/// Where the session notes each call's arguments (digest, or JSON) by trace id, at the door;
/// and the write-ahead record every call waits for before it leaves the host.
#[derive(Debug, Clone, Default)]
pub struct ArgsSink {
    full: bool,
    notes: Arc<Mutex<Notes>>,
    ahead: Option<Arc<WriteAhead>>,
}

/// The write-ahead audit record of one execution: committed once, when its first tool call is
/// about to leave the host (an execution without calls costs nothing more); every call waits
/// for it, and none is made if it cannot be committed.
#[derive(Debug)]
struct WriteAhead {
    store: super::Store,
    header: super::audit::AuditRecord,
    /// Calls go on when the record cannot be written (`sandbox.audit.required: false`).
    loss_allowed: bool,
    /// The record's id, or why it could not be written (and whether the store refused its
    /// content rather than failed: [`super::StoreError::refused_content`]); `None` inside
    /// while the write runs, no receiver before it started. The write runs in a task of its
    /// own: a call dropped while it waits (the script returned before the call left) does not
    /// cancel it, and the final record completes the one it wrote instead of adding a second
    /// (issue 47: a `RUNNING` record left beside the real one).
    done: Mutex<Option<tokio::sync::watch::Receiver<Option<AheadResult>>>>,
}

type AheadResult = Result<i64, (String, bool)>;

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
            ahead: None,
        }
    }

    /// Calls wait for `header` (the execution's record, outcome `RUNNING`, no calls) to be
    /// committed to `store` before the first of them leaves the host.
    pub fn with_write_ahead(
        mut self,
        store: super::Store,
        header: super::audit::AuditRecord,
        loss_allowed: bool,
    ) -> Self {
        self.ahead = Some(Arc::new(WriteAhead {
            store,
            header,
            loss_allowed,
            done: Mutex::new(None),
        }));
        self
    }

    /// Waits until the write-ahead record is committed (writing it on the first call); `Err`
    /// says why it could not be, and then no call may be made. `Ok` without a write-ahead.
    pub async fn before_call(&self) -> Result<(), String> {
        let Some(ahead) = &self.ahead else {
            return Ok(());
        };
        let mut rx = {
            let mut started = ahead.done.lock().unwrap_or_else(|p| p.into_inner());
            match &*started {
                Some(rx) => rx.clone(),
                None => {
                    let (tx, rx) = tokio::sync::watch::channel(None);
                    let a = ahead.clone();
                    tokio::spawn(async move {
                        let header = a.header.clone();
                        let written = a
                            .store
                            .clone()
                            .run(move |s| s.begin_audit(&header))
                            .await
                            .map_err(|e| (e.to_string(), e.refused_content()));
                        let _ = tx.send(Some(written));
                    });
                    *started = Some(rx.clone());
                    rx
                }
            }
        };
        let done = match rx.wait_for(Option::is_some).await {
            Ok(done) => done.clone().unwrap_or_else(|| Err(ended())),
            Err(_) => Err(ended()),
        };
        match done {
            Err(_) if ahead.loss_allowed => Ok(()),
            done => done.map(|_| ()).map_err(|(e, _)| e),
        }
    }

    /// Waits for a write-ahead record whose write started (it may outlive the call that
    /// started it), so that [`ArgsSink::written_ahead`] and [`ArgsSink::write_ahead_failed`]
    /// then tell how it went.
    pub async fn settled(&self) {
        let rx = self
            .ahead
            .as_ref()
            .and_then(|a| a.done.lock().unwrap_or_else(|p| p.into_inner()).clone());
        if let Some(mut rx) = rx {
            let _ = rx.wait_for(Option::is_some).await;
        }
    }

    /// The write-ahead's result, once written.
    fn ahead_result(&self) -> Option<AheadResult> {
        let a = self.ahead.as_ref()?;
        let rx = a.done.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        let r = rx.borrow().clone();
        r
    }

    /// Why the write-ahead record could not be written, if it was tried and failed.
    pub fn write_ahead_failure(&self) -> Option<String> {
        self.write_ahead_failed().map(|(e, _)| e)
    }

    /// Why the write-ahead record could not be written, and whether the store refused its
    /// content (rather than failed), if it was tried and failed.
    pub fn write_ahead_failed(&self) -> Option<(String, bool)> {
        self.ahead_result().and_then(|r| r.err())
    }

    /// The id of the committed write-ahead record, if one was written.
    pub fn written_ahead(&self) -> Option<i64> {
        self.ahead_result().and_then(|r| r.ok())
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

    pub fn take(&self, trace_id: &str) -> (Option<String>, Option<String>) {
        let mut notes = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        notes.by_trace.remove(trace_id).unwrap_or((None, None))
    }
}

/// Why a write-ahead task ended without an answer (it panicked, or the runtime stopped).
fn ended() -> (String, bool) {
    (
        "the audit write-ahead ended without an answer (the host is stopping?)".to_string(),
        false,
    )
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod help_text_tests {
    #[test]
    fn help_sizes_match_the_constants() {
        assert_eq!(super::MAX_FULL_ARGS_PER_CALL, 64 * 1024);
        assert_eq!(super::MAX_FULL_ARGS_PER_EXECUTION, 1024 * 1024);
    }
}
