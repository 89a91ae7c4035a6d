//! `mcp-sandbox audit` (the audit log's records), and `audit verify`, `audit export` and `audit
//! keygen`: the log's proof that it was not edited (`store::audit_chain`), checked in the store
//! or offline in an export file.

use crate::front::cli::team::{time_text, TeamStoreArgs};
use crate::front::cli::{UsageError, EXIT_FAILED};
use crate::store::audit::{AuditFilter, AuditRecord};
use crate::store::audit_export::{verify_export, ExportError};
use crate::store::audit_key::{AuditKey, PublicKey};
use crate::term::field;
use crate::term::{errln, escape, outln};
use clap::{Args, Subcommand};
use std::borrow::Cow;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check that no audit record was changed, removed, inserted or reordered since it was
    /// written: in the state store, or in an export file (`--file`, offline). Exit 0 when
    /// intact, 1 naming the first record that is not.
    Verify(VerifyArgs),
    /// Write the records (all, or those the filters select), their chain hashes and a head
    /// signed with the audit key, as JSON lines on stdout, for `audit verify --file`.
    Export(ExportArgs),
    /// Make an audit key: writes the private key to --key-file (mode 0600, never over an
    /// existing file) and prints the public key, one line, for the auditor.
    Keygen {
        #[arg(long, value_name = "PATH")]
        key_file: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Check this export file (offline: no state store is opened) instead of the store.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// The public key (the line `audit keygen` printed, or a file holding it) that must have
    /// signed the export or the store's checkpoints.
    #[arg(long, value_name = "KEY")]
    pub public_key: Option<String>,
    /// The private audit key; its public key is used (default: sandbox.audit.key_file).
    #[arg(long, value_name = "PATH")]
    pub audit_key_file: Option<PathBuf>,
    #[command(flatten)]
    pub store: TeamStoreArgs,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The private audit key that signs the export (default: sandbox.audit.key_file).
    #[arg(long, value_name = "PATH")]
    pub audit_key_file: Option<PathBuf>,
    /// Only records from this long ago (30m, 24h, 7d) or since this time (RFC 3339).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only records before this long ago (30m, 24h, 7d) or this time (RFC 3339).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only this principal.
    #[arg(long, value_name = "NAME")]
    pub principal: Option<String>,
    /// Only this tenant.
    #[arg(long, value_name = "NAME")]
    pub tenant: Option<String>,
    /// Only executions that called this tool (`server:tool`).
    #[arg(long, value_name = "SERVER:TOOL")]
    pub tool: Option<String>,
    /// Only executions whose outcome, or one of whose calls, has this error code.
    #[arg(long, value_name = "CODE")]
    pub error: Option<String>,
    /// Only the record of this execution (`execution_id` in `audit --json`).
    #[arg(long, value_name = "ID")]
    pub execution_id: Option<String>,
    #[command(flatten)]
    pub store: TeamStoreArgs,
}

pub fn run(command: AuditCommand) -> Result<i32, UsageError> {
    match command {
        AuditCommand::Keygen { key_file } => {
            let key = AuditKey::generate(&key_file).map_err(|e| UsageError(e.to_string()))?;
            outln(&key.public().line());
            errln(&format!(
                "mcp-sandbox: audit key written to {} (mode 0600); give the line above to the auditor",
                escape(&key_file.display().to_string())
            ));
            Ok(0)
        }
        AuditCommand::Verify(args) => verify(args),
        AuditCommand::Export(args) => export(args),
    }
}

/// The private key of `flag`, else of the config's `sandbox.audit.key_file`.
fn private_key(
    flag: Option<&std::path::Path>,
    store: &TeamStoreArgs,
) -> Result<Option<AuditKey>, UsageError> {
    let config = match &store.config {
        Some(p) => Some(crate::config::Config::load(p).map_err(|e| UsageError(e.to_string()))?),
        None => None,
    };
    let audit = config.as_ref().and_then(|c| c.sandbox.audit.as_ref());
    let base = config
        .as_ref()
        .map(|c| c.base_dir.clone())
        .unwrap_or_default();
    crate::store::audit_options::key_of(flag, audit, &base).map_err(|e| UsageError(e.to_string()))
}

fn verify(args: VerifyArgs) -> Result<i32, UsageError> {
    let key = match &args.public_key {
        Some(text) => Some(PublicKey::parse_or_read(text).map_err(|e| UsageError(e.to_string()))?),
        None => private_key(args.audit_key_file.as_deref(), &args.store)?.map(|k| k.public()),
    };
    if let Some(path) = &args.file {
        let Some(key) = key else {
            return Err(UsageError(
                "audit verify --file needs the public key that signed the export: --public-key KEY (the line `audit keygen` printed, or a file holding it)".into(),
            ));
        };
        let file = std::fs::File::open(path).map_err(|e| {
            UsageError(format!(
                "cannot read {}: {e}",
                escape(&path.display().to_string())
            ))
        })?;
        let found = verify_export(&mut std::io::BufReader::new(file), &key).map_err(|e| {
            UsageError(format!(
                "cannot read {}: {e}",
                escape(&path.display().to_string())
            ))
        })?;
        return Ok(match found {
            Ok(ok) => {
                let span = match (&ok.first, &ok.last) {
                    (Some(f), Some(l)) => format!(
                        " from #{} ({}) to #{} ({})",
                        f.0,
                        time_of(&f.1),
                        l.0,
                        time_of(&l.1)
                    ),
                    _ => String::new(),
                };
                outln(&format!(
                    "intact: {} records{span}, exported {} and signed by {}",
                    ok.records,
                    time_of(&ok.exported_at),
                    key.line()
                ));
                0
            }
            Err(why) => {
                outln(&format!("AUDIT_TAMPERED: {}", escape(&why)));
                EXIT_FAILED
            }
        });
    }
    let (store, _) = args.store.open()?;
    let found = store
        .verify_audit(key.as_ref())
        .map_err(|e| UsageError(e.to_string()))?;
    Ok(match found {
        Ok(ok) => {
            let span = match (ok.first, ok.last) {
                (Some(f), Some(l)) => format!(
                    " from #{} ({}) to #{} ({})",
                    f.0,
                    time_text(f.1),
                    l.0,
                    time_text(l.1)
                ),
                _ => String::new(),
            };
            let mut notes = Vec::new();
            if ok.chains > 1 {
                notes.push(format!("{} chains (one per gateway)", ok.chains));
            }
            if ok.checkpoints > 0 {
                notes.push(format!(
                    "{} chain(s) start at a checkpoint signed by the key",
                    ok.checkpoints
                ));
            }
            if ok.running > 0 {
                notes.push(format!(
                    "{} left running by a host that stopped",
                    ok.running
                ));
            }
            if ok.unchained > 0 {
                notes.push(format!(
                    "{} older records written before the chain existed are not covered",
                    ok.unchained
                ));
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!("; {}", notes.join("; "))
            };
            outln(&format!("intact: {} records{span}{notes}", ok.records));
            0
        }
        Err(f) => {
            outln(&format!("AUDIT_TAMPERED: {}", escape(&f.to_string())));
            EXIT_FAILED
        }
    })
}

/// A time the export writes (ms since the epoch, as text) as RFC 3339.
fn time_of(ms: &str) -> String {
    ms.parse::<f64>()
        .map(time_text)
        .unwrap_or_else(|_| escape(ms).into_owned())
}

fn export(args: ExportArgs) -> Result<i32, UsageError> {
    let Some(key) = private_key(args.audit_key_file.as_deref(), &args.store)? else {
        return Err(UsageError(
            "audit export signs its head: pass --audit-key-file PATH (made by `mcp-sandbox audit keygen`) or set sandbox.audit.key_file".into(),
        ));
    };
    if let Some(code) = &args.error {
        if crate::error::ErrorCode::parse(code).is_none() {
            return Err(UsageError(format!(
                "--error {:?} is not an error code (e.g. PERMISSION_DENIED, TOOL_ERROR)",
                escape(code)
            )));
        }
    }
    let filter = AuditFilter {
        since_ms: args.since.as_deref().map(since_ms).transpose()?,
        until_ms: args.until.as_deref().map(since_ms).transpose()?,
        principal: args.principal.clone(),
        tenant: args.tenant.clone(),
        tool: args.tool.clone(),
        error: args.error.clone(),
        execution_id: args.execution_id.clone(),
        limit: 0,
    };
    let (store, _) = args.store.open()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match store.export_audit(&filter, &key, &mut out) {
        Ok(done) => {
            errln(&format!(
                "mcp-sandbox: exported {} records ({} links), signed by {}",
                done.records,
                done.links,
                key.public().line()
            ));
            Ok(0)
        }
        Err(ExportError::Broken(f)) => {
            errln(&format!(
                "AUDIT_TAMPERED: {}; nothing exported",
                escape(&f.to_string())
            ));
            Ok(EXIT_FAILED)
        }
        Err(e) => Err(UsageError(e.to_string())),
    }
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: Option<AuditCommand>,
    /// Only records from this long ago (30m, 24h, 7d) or since this time (RFC 3339).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only this principal (`token:NAME`, `jwt:SUBJECT`, `local`, `anonymous`).
    #[arg(long, value_name = "NAME")]
    pub principal: Option<String>,
    /// Only this tenant.
    #[arg(long, value_name = "NAME")]
    pub tenant: Option<String>,
    /// Only executions that called this tool (`server:tool`).
    #[arg(long, value_name = "SERVER:TOOL")]
    pub tool: Option<String>,
    /// Only executions whose outcome, or one of whose calls, has this error code.
    #[arg(long, value_name = "CODE")]
    pub error: Option<String>,
    /// At most this many records (the newest).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit: usize,
    /// One JSON array of the records.
    #[arg(long)]
    pub json: bool,
    /// Also what each execution logged (its code's output and its servers' log lines, such as
    /// a confined server's refused connection), as the web view shows it: one indented line
    /// each under the record; with --json, each record's `detail` (trace events, logs, error).
    #[arg(long)]
    pub detail: bool,
    #[command(flatten)]
    pub store: TeamStoreArgs,
}

fn since_ms(text: &str) -> Result<f64, UsageError> {
    if let Ok(d) = humantime::parse_duration(text) {
        return Ok(crate::trace::now_ms() - d.as_secs_f64() * 1000.0);
    }
    let t: SystemTime = humantime::parse_rfc3339_weak(text).map_err(|_| {
        UsageError(format!(
            "--since {:?}: use a duration (30m, 24h, 7d) or an RFC 3339 time (2026-11-23T10:00:00Z)",
            escape(text)
        ))
    })?;
    Ok(t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0))
}

pub fn audit(args: AuditArgs) -> Result<i32, UsageError> {
    if let Some(command) = args.command {
        return run(command);
    }
    if let Some(code) = &args.error {
        if crate::error::ErrorCode::parse(code).is_none() {
            return Err(UsageError(format!(
                "--error {:?} is not an error code (e.g. PERMISSION_DENIED, TOOL_ERROR)",
                escape(code)
            )));
        }
    }
    let filter = AuditFilter {
        since_ms: args.since.as_deref().map(since_ms).transpose()?,
        until_ms: None,
        principal: args.principal.clone(),
        tenant: args.tenant.clone(),
        tool: args.tool.clone(),
        error: args.error.clone(),
        execution_id: None,
        limit: args.limit.clamp(1, 100_000),
    };
    let (store, _) = args.store.open()?;
    let mut records = store
        .query_audit(&filter)
        .map_err(|e| UsageError(e.to_string()))?;
    if args.detail {
        for r in &mut records {
            r.detail = store
                .audit_record(r.id)
                .map_err(|e| UsageError(e.to_string()))?
                .and_then(|full| full.detail);
        }
    }
    if args.json {
        outln(&serde_json::to_string_pretty(&records).unwrap_or_default());
    } else {
        for r in &records {
            outln(&escape(&render(r)));
            for log in r.detail.iter().flat_map(|d| &d.logs) {
                outln(&format!(
                    "    {} {}",
                    field(&log.level),
                    escape(&log.message)
                ));
            }
        }
    }
    Ok(0)
}

/// One line per record. Every field that came from a client or a server (principal, tenant,
/// client name, tool names, approvers) is a [`field`]: quoted when it holds a separator, so
/// it cannot shift the columns or forge a neighbouring field.
fn render(r: &AuditRecord) -> String {
    let calls: Vec<String> = r
        .calls
        .iter()
        .map(|c| {
            let call = match &c.error {
                None => field(&c.tool).into_owned(),
                Some(e) => format!("{}={}", field(&c.tool), field(e)),
            };
            match &c.approval {
                None => call,
                Some(a) => format!("{call} ({})", field(a)),
            }
        })
        .collect();
    format!(
        "#{} {} {} tenant={} via={} client={} {} {:.1}ms code={} calls=[{}]",
        r.id,
        time_text(r.ts),
        field(&r.principal),
        field(&r.tenant),
        field(&r.front),
        r.client.as_deref().map_or(Cow::Borrowed("-"), field),
        field(&r.outcome),
        r.duration_ms,
        field(r.code_sha256.get(..12).unwrap_or(&r.code_sha256)),
        calls.join(", ")
    )
}
