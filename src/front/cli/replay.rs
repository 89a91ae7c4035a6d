//! `mcp-sandbox replay EXECUTION_ID`: runs a recorded execution (`--audit-record full`) again in
//! a fresh locked-down runner, every tool call answered from the recording (no MCP server is
//! started or contacted), with the recorded seed and clock values, and prints its outcome beside
//! the recorded one. `--code FILE` replays other code against the same recording; `--file`
//! reads the recording from an `audit export` file instead of the store.
//!
//! Exit 0 when the outcomes match (result, error, logs, calls), 1 when not (a call that
//! differs from the recorded one stops the replay with `REPLAY_DIVERGED`), 2 on a usage or
//! store error.

use super::team::TeamStoreArgs;
use super::{RunnerArgs, UsageError, EXIT_FAILED};
use crate::context::limits::Limits;
use crate::context::policy::Policy;
use crate::context::principal::Caller;
use crate::context::{Client, RequestContext};
use crate::exec::recording::{outcome_of, Recorder};
use crate::exec::session::ExecRequest;
use crate::sandbox::{QueueOptions, Sandbox};
use crate::script::transpile::{to_javascript_mapped, Language};
use crate::store::audit::{AuditDetail, AuditFilter};
use crate::store::audit_chain::Canonical;
use crate::store::audit_export::ExportLink;
use crate::store::audit_recording::{RecordedOutcome, Recording, RECORDING_VERSION};
use crate::term::{escape, outln};
use crate::trace::TraceFormat;
use clap::Args;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The execution to replay (`execution_id` in `audit --json`), or `last`: the newest
    /// record of the store.
    pub execution_id: String,
    /// Read the recording from this `audit export` file instead of the state store (check the
    /// file first with `audit verify --file`).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Replay this script instead of the recorded code, against the same recording (its
    /// language from its extension: .py is Python, .ts TypeScript, else JavaScript).
    #[arg(long, value_name = "FILE")]
    pub code: Option<PathBuf>,
    /// Print `{"matches", "recorded", "replayed"}` as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Print the replay's tool-call traces on stderr.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub trace: Option<TraceFormat>,
    #[command(flatten)]
    pub store: TeamStoreArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

/// The execution id that names the newest record of the store.
const LAST: &str = "last";

/// Longest line read from an export file (as `audit verify --file` reads it).
const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// `mcp-sandbox replay`.
pub async fn command(args: ReplayArgs) -> Result<i32, UsageError> {
    let (recording, limits) = match &args.file {
        Some(path) => (from_file(path, &args.execution_id)?, config_limits(&args)?),
        None => {
            let (store, config) = args.store.open()?;
            let limits = config.and_then(|c| c.sandbox.limits).unwrap_or_default();
            (from_store(&store, &args.execution_id)?, limits)
        }
    };
    if recording.version != RECORDING_VERSION {
        return Err(UsageError(format!(
            "the recording of {} has format version {}; this mcp-sandbox replays version {RECORDING_VERSION}",
            args.execution_id, recording.version
        )));
    }
    let (code, language) = match &args.code {
        Some(path) => code_file(path)?,
        None if recording.code.is_empty() => {
            return Err(UsageError(format!(
                "the record of {} keeps only the code's SHA-256 (--audit-code hash): pass --code FILE with the script",
                args.execution_id
            )))
        }
        None => (
            recording.code.clone(),
            sandbox_runner::protocol::Language::parse(&recording.language)
                .unwrap_or_default(),
        ),
    };
    let recorded = recording.outcome.clone();
    let context = recording.context.clone();
    let recording = Arc::new(recording);
    let catalog = crate::exec::replay::catalog(recording.clone())
        .map_err(|e| UsageError(format!("the recording names a server that cannot be: {e}")))?;
    let sandbox = Sandbox::new(
        Arc::new(catalog),
        args.runner.command(),
        QueueOptions {
            max_running: 1 + crate::context::tree::MAX_NESTED_RUNNERS,
            max_queued: 0,
            pool_size: 0,
        },
    );
    let request = ExecRequest {
        code,
        language,
        context,
        request: RequestContext::new(Client::Cli, limits, Policy::default()).with_caller(Caller {
            front: "replay",
            ..Default::default()
        }),
        require_layers: args.runner.required_layers()?,
        record: Some(Arc::new(Recorder::replay(recording))),
        ..Default::default()
    };
    let outcome = sandbox.execute(request).await;
    sandbox.shutdown(Duration::from_secs(5)).await;
    let replayed = outcome_of(&outcome);
    let differs = recorded.differences(&replayed);
    if let Some(format) = args.trace {
        crate::term::err(&crate::trace::render(&outcome.traces, format));
    }
    if args.json {
        let answer = serde_json::json!({
            "matches": differs.is_empty(),
            "recorded": recorded,
            "replayed": replayed,
        });
        outln(&answer.to_string());
    } else {
        outln(&format!("recorded: {}", summary(&recorded)));
        outln(&format!("replayed: {}", summary(&replayed)));
        if differs.is_empty() {
            outln("equal: the replay has the recorded result, error, logs and calls");
        } else {
            outln(&format!("differs: {}", differs.join(", ")));
        }
    }
    Ok(if differs.is_empty() { 0 } else { EXIT_FAILED })
}

/// One line for an outcome: `OK <result>` or `<CODE> <message>`, with its calls and logs
/// counted.
fn summary(o: &RecordedOutcome) -> String {
    let head = match &o.error {
        Some(e) => format!("{} {}", e.code, escape(&e.message)),
        None if o.result_dropped => "OK (result not kept: over the recording's size bound)".into(),
        None => format!(
            "OK {}",
            escape(&crate::term::clip(&o.result.to_string(), 400))
        ),
    };
    let failed = o.calls.iter().filter(|c| c.error.is_some()).count();
    format!(
        "{head} ({} call{}, {failed} failed; {} log line{})",
        o.calls.len(),
        if o.calls.len() == 1 { "" } else { "s" },
        o.logs.len(),
        if o.logs.len() == 1 { "" } else { "s" }
    )
}

/// `--config`'s `sandbox.limits` (the defaults without one).
fn config_limits(args: &ReplayArgs) -> Result<Limits, UsageError> {
    match &args.store.config {
        Some(p) => Ok(crate::config::Config::load(p)
            .map_err(|e| UsageError(e.to_string()))?
            .sandbox
            .limits
            .unwrap_or_default()),
        None => Ok(Limits::default()),
    }
}

/// The script of `--code`, as the engine runs it.
fn code_file(path: &Path) -> Result<(String, sandbox_runner::protocol::Language), UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read --code {}: {e}", path.display())))?;
    let language = Language::from_path(path);
    let (code, _) = to_javascript_mapped(&text, language)
        .map_err(|e| UsageError(format!("--code {}: {}", path.display(), e.message)))?;
    Ok((code, language.engine()))
}

fn no_recording(id: &str) -> UsageError {
    UsageError(format!(
        "the record of execution {id} has no recording: it ran without --audit-record full (or sandbox.audit.record: \"full\")"
    ))
}

/// The recording of `id` in the store.
fn from_store(store: &crate::store::Store, id: &str) -> Result<Recording, UsageError> {
    let found = store
        .query_audit(&AuditFilter {
            execution_id: (id != LAST).then(|| id.to_string()),
            limit: 1,
            ..Default::default()
        })
        .map_err(|e| UsageError(format!("cannot read the audit log: {e}")))?;
    let Some(record) = found.first() else {
        return Err(UsageError(format!(
            "no audit record of execution {id} in this store (see `mcp-sandbox audit --json` for execution ids)"
        )));
    };
    let full = store
        .audit_record(record.id)
        .map_err(|e| UsageError(format!("cannot read the audit log: {e}")))?;
    let id = record.execution_id.as_deref().unwrap_or(id);
    full.and_then(|r| r.detail)
        .and_then(|d| d.recording)
        .ok_or_else(|| no_recording(id))
}

/// The recording of `id` in an `audit export` file: the end link of its record.
fn from_file(path: &Path, id: &str) -> Result<Recording, UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let mut input = std::io::BufReader::new(file);
    let mut found = false;
    loop {
        let mut line = Vec::new();
        let read = std::io::Read::take(&mut input, MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
        if read == 0 {
            break;
        }
        let Ok(l) = serde_json::from_slice::<ExportLink<Canonical<String>>>(&line) else {
            continue; // the head, or a line `audit verify --file` would name
        };
        if l.link.execution_id.as_deref() != Some(id) {
            continue;
        }
        found = true;
        let detail = l
            .link
            .detail
            .as_deref()
            .and_then(|t| serde_json::from_str::<AuditDetail>(t).ok());
        if let Some(recording) = detail.and_then(|d| d.recording) {
            return Ok(recording);
        }
    }
    if found {
        return Err(no_recording(id));
    }
    Err(UsageError(format!(
        "no record of execution {id} in {}",
        path.display()
    )))
}
