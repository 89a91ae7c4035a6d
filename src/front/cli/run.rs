//! `mcp-sandbox run FILE|-`: one script, its outcome on stdout, traces on stderr (or inside the
//! JSON), an exit status that says whether it succeeded.

use super::learning::StateArgs;
use super::run_output::print_outcome;
use super::{start_catalog, PolicyArgs, RunnerArgs, UsageError, EXIT_FAILED};
use crate::config::Config;
use crate::context::limits::Limits;
use crate::context::principal::Caller;
use crate::context::session::SessionScope;
use crate::context::{Client, RequestContext};
use crate::exec::outcome::Outcome;
use crate::exec::session::ExecRequest;
use crate::front::shutdown::{execute_until_signal, SignalListener};
use crate::sandbox::{QueueOptions, Sandbox};
use crate::script::transpile::{to_javascript_mapped, Language};
use crate::trace::TraceFormat;
use clap::Args;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Script file, or - to read standard input.
    pub file: String,
    /// MCP servers configuration (`{"mcpServers": {...}}`).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// JSON object whose keys become variables in the script.
    #[arg(long, value_name = "JSON")]
    pub context: Option<String>,
    /// Wall-clock limit for the whole execution.
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
    /// CPU time the JavaScript may use (waiting on tools does not count).
    #[arg(long, value_name = "N")]
    pub cpu_ms: Option<u64>,
    /// QuickJS heap limit.
    #[arg(long, value_name = "N")]
    pub memory_mb: Option<u64>,
    /// Limit for one tool call.
    #[arg(long, value_name = "N")]
    pub call_timeout_ms: Option<u64>,
    /// Maximum number of tool calls.
    #[arg(long, value_name = "N")]
    pub max_calls: Option<u64>,
    /// Largest serialized arguments of one tool call (default 1 MiB); a server's `maxArgBytes`
    /// in the config replaces it for that server.
    #[arg(long, value_name = "N")]
    pub max_arg_bytes: Option<u64>,
    /// Largest serialized result of one tool call passed to the script (default 8 MiB).
    #[arg(long, value_name = "N")]
    pub max_tool_result_bytes: Option<u64>,
    /// On SIGINT/SIGTERM, how long the running script may still take before its runner is killed.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub shutdown_grace_ms: u64,
    /// Cut what is printed (stdout and stderr together) to this many bytes, by the rule of
    /// serve's execute_code: traces summarised, then logs cut, then the result replaced by a
    /// preview of its shape. Without it everything is printed.
    #[arg(long, value_name = "BYTES")]
    pub max_output_bytes: Option<u64>,
    /// Keep session state (`store`/`load` in the script) under this name in the state store,
    /// for later runs with the same name (idle TTL: sandbox.session.ttl_ms, default 1 h).
    /// Without it the script has no session and store()/load() fail with PERMISSION_DENIED.
    #[arg(long, value_name = "NAME", value_parser = session_name)]
    pub session: Option<String>,
    /// Print the whole outcome as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// With `sandbox.sensitive` in the config: print the real values the detectors found
    /// instead of their placeholders (for the person at the terminal; the audit log still
    /// keeps placeholders).
    #[arg(long)]
    pub reveal: bool,
    /// The script's language (default: typescript for .ts files, python for .py files, else
    /// javascript). TypeScript is stripped to JavaScript before it runs; Python runs on monty, a
    /// subset of Python (docs/python.md).
    #[arg(long, value_enum, value_name = "LANG")]
    pub language: Option<LanguageArg>,
    /// No live progress line on stderr (it is shown only when stderr is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the tool-call traces (to stderr; inside the JSON with --json).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub trace: Option<TraceFormat>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub state: StateArgs,
    #[command(flatten)]
    pub audit: crate::exec::audit::AuditFlags,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LanguageArg {
    Javascript,
    Typescript,
    Python,
}

impl From<LanguageArg> for Language {
    fn from(l: LanguageArg) -> Language {
        match l {
            LanguageArg::Javascript => Language::Javascript,
            LanguageArg::Typescript => Language::Typescript,
            LanguageArg::Python => Language::Python,
        }
    }
}

/// `--session`: 1 to 64 letters, digits, `-`, `_` or `.`.
fn session_name(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(value.to_string())
    } else {
        Err("a session name is 1 to 64 letters, digits, '-', '_' or '.'".into())
    }
}

fn read_script(file: &str) -> Result<String, UsageError> {
    let mut bytes = Vec::new();
    let read = if file == "-" {
        std::io::stdin()
            .take(64 * 1024 * 1024)
            .read_to_end(&mut bytes)
            .map(|_| ())
    } else {
        std::fs::File::open(file)
            .and_then(|f| f.take(64 * 1024 * 1024).read_to_end(&mut bytes).map(|_| ()))
    };
    read.map_err(|e| UsageError(format!("cannot read script {file}: {e}")))?;
    String::from_utf8(bytes).map_err(|_| UsageError(format!("script {file} is not valid UTF-8")))
}

/// `mcp-sandbox run`. Returns the process exit status.
pub async fn command(args: RunArgs) -> Result<i32, UsageError> {
    let code = read_script(&args.file)?;
    let config = match &args.config {
        Some(p) => Config::load(p).map_err(|e| UsageError(e.to_string()))?,
        None => Config::default(),
    };
    let context = match &args.context {
        None => serde_json::Map::new(),
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(_) => {
                return Err(UsageError(
                    "--context must be a JSON object, like '{\"name\": 1}'".into(),
                ))
            }
            Err(e) => return Err(UsageError(format!("--context is not valid JSON: {e}"))),
        },
    };
    let mut limits: Limits = config.sandbox.limits.unwrap_or_default();
    if let Some(v) = args.timeout_ms {
        limits.timeout_ms = v;
    }
    if let Some(v) = args.cpu_ms {
        limits.cpu_ms = v;
    }
    if let Some(v) = args.memory_mb {
        limits.memory_mb = v;
    }
    if let Some(v) = args.call_timeout_ms {
        limits.call_timeout_ms = v;
    }
    if let Some(v) = args.max_calls {
        limits.max_calls = v;
    }
    if let Some(v) = args.max_arg_bytes {
        limits.max_arg_bytes = v;
    }
    if let Some(v) = args.max_tool_result_bytes {
        limits.max_tool_result_bytes = v;
    }
    limits.validate().map_err(|e| UsageError(e.to_string()))?;
    // The config's max_output_bytes is serve's; `run` cuts its output only when asked here.
    let max_output = args.max_output_bytes;
    if let Some(n) = max_output {
        Limits {
            max_output_bytes: n,
            ..Limits::default()
        }
        .validate()
        .map_err(|e| UsageError(format!("--max-output-bytes: {e}")))?;
    }
    let require_layers = args.runner.required_layers()?;
    let runner = args.runner.command();
    let policy = args.policy.policy(&config)?;
    // The live progress line, on a terminal only: what it shows comes from the execution's
    // live view (the hook `serve`'s progress notifications use).
    let live = super::progress::wanted(args.quiet)
        .then(|| Arc::new(crate::exec::live::LiveView::new(limits.log_bytes)));
    let line = live.clone().map(super::progress::ProgressLine::new);
    let approvals = Arc::new(super::approve_tty::approvals(
        args.policy.pre_approved()?,
        args.policy.approval_timeout()?,
        line.clone(),
    ));

    let language = args
        .language
        .map(Language::from)
        .unwrap_or_else(|| Language::from_path(std::path::Path::new(&args.file)));
    let (code, positions) = match to_javascript_mapped(&code, language) {
        Ok((js, positions)) => (js, positions.map(Arc::new)),
        Err(e) => {
            print_outcome(&Outcome::failed(e), args.json, args.trace, max_output);
            return Ok(EXIT_FAILED);
        }
    };

    // --strict: a call that nothing waits for is refused before anything starts.
    if args.policy.strict {
        if let Some(call) = crate::script::analysis::unawaited_calls(&code).first() {
            return Err(UsageError(format!(
                "{}: mcp.{}.{}(…) is neither awaited nor returned nor assigned, so the script may return before it ends and it is cancelled: write `await mcp.{}.{}(…)` (refused under --strict)",
                crate::exec::session::UNAWAITED_CALL,
                call.server,
                call.tool,
                call.server,
                call.tool
            )));
        }
    }
    if let Ok(path) = args.state.path(args.config.as_ref().map(|_| &config)) {
        crate::tools::catalog::oauth::use_state_file(path);
    }
    // Learning is best effort: without a usable state file the script still runs (without
    // capabilities), and the reason is printed.
    let store = match args.state.open(args.config.as_ref().map(|_| &config)) {
        Ok(s) => Some(s),
        Err(e) => {
            crate::term::errln(&format!(
                "mcp-sandbox: warning: running without the state store: {}",
                crate::term::escape(&e.to_string())
            ));
            None
        }
    };
    // Listen before starting servers so an early signal still shuts them down cleanly.
    let mut signals = SignalListener::install();
    // Only the servers the script can reach are started: a broken server it never calls does
    // not delay it. A name that is not a configured server may be a capability, whose code can
    // reach any server.
    let reach = match crate::script::analysis::servers_reached(&code) {
        crate::script::analysis::Reach::Servers(names)
            if names.iter().all(|n| config.servers.contains_key(n)) =>
        {
            Some(names)
        }
        _ => None,
    };
    if config.servers.is_empty() {
        let uses_mcp = match &reach {
            Some(names) => !names.is_empty(),
            None => true,
        };
        if uses_mcp {
            let why = match &args.config {
                None => "no --config was given".to_string(),
                Some(p) => format!("{} has no mcpServers section", p.display()),
            };
            crate::term::errln(&format!(
                "mcp-sandbox: warning: {}: no MCP server is configured ({}), so mcp.* reaches only saved capabilities; pass --config FILE with {{\"mcpServers\": {{...}}}}",
                crate::exec::capability::NO_SERVERS,
                crate::term::escape(&why)
            ));
        }
    }
    // A signal while the servers start ends `run` at once (they are stopped as it exits).
    let catalog = tokio::select! {
        catalog = start_catalog(&config, reach.as_ref()) => catalog?,
        sig = signals.recv() => {
            crate::term::errln(&format!("mcp-sandbox: {sig}: stopped before the script ran"));
            return Ok(0);
        }
    };
    if let Err(e) = args.policy.check_globs(&config, &catalog) {
        catalog.shutdown().await;
        return Err(e);
    }
    // Reported once: after the outcome, unless the outcome already says it (a call to it).
    let unavailable = catalog.unavailable().clone();
    let mut sandbox = Sandbox::new(
        Arc::new(catalog),
        runner.clone(),
        QueueOptions {
            // The script's runner and its capabilities' (bounded per execution).
            max_running: 1 + crate::context::tree::MAX_NESTED_RUNNERS,
            max_queued: 0,
            // One script: a pre-started runner would only be wasted.
            pool_size: 0,
        },
    );
    // Traces when a collector is configured (no metrics: one execution has no scraper).
    if let Some(t) = crate::telemetry::Telemetry::new(&config.sandbox.telemetry, false)
        .map_err(|e| UsageError(e.to_string()))?
    {
        sandbox = sandbox.with_telemetry(Arc::new(t));
    }
    if args.session.is_some() && store.is_none() {
        return Err(UsageError(
            "--session keeps state in the state store, which could not be opened (see the warning above); fix it or pass --state PATH".into(),
        ));
    }
    if let Some(store) = store {
        sandbox = sandbox.with_session_state(crate::exec::state::SessionState::new(
            store.clone(),
            config.sandbox.session,
        ));
        let caps = crate::exec::capability::Capabilities {
            require_layers: require_layers.clone(),
            ..crate::exec::capability::Capabilities::new(store, runner.clone())
        };
        // `capability save --from-last` saves the code of the CLI's last execution.
        sandbox = sandbox.with_learning(caps.clone()).remember_last_code();
        let options = args.audit.options(config.sandbox.audit.as_ref());
        let key = args
            .audit
            .key(config.sandbox.audit.as_ref(), &config.base_dir)
            .map_err(|e| UsageError(e.to_string()))?;
        match crate::exec::audit::Auditor::with_key(caps.store.clone(), options, key) {
            Ok(a) => sandbox = sandbox.with_audit(a),
            Err(e) => {
                return Err(UsageError(format!(
                    "cannot use the audit log in the state store: {e}"
                )))
            }
        }
    }
    let request = ExecRequest {
        code,
        language: language.engine(),
        positions,
        context,
        request: {
            let request = RequestContext::new(Client::Cli, limits, policy)
                .with_caller(Caller {
                    front: "run",
                    ..Default::default()
                })
                // The W3C trace context of whoever started `run` (as OTel's env carriers do).
                .with_traceparent(std::env::var("TRACEPARENT").ok().as_deref());
            match &args.session {
                Some(name) => {
                    let scope = SessionScope::new(
                        request.caller.tenant.clone(),
                        request.caller.principal.clone(),
                        name.clone(),
                    );
                    request.with_session(scope)
                }
                None => request,
            }
        },
        require_layers,
        approvals: Some(approvals),
        reveal: args.reveal,
        live,
        ..Default::default()
    };
    let grace = Duration::from_millis(args.shutdown_grace_ms);
    let drawing = line.as_ref().map(|l| l.start());
    let (outcome, signal) = execute_until_signal(&sandbox, request, &mut signals, grace).await;
    // Erased before anything else is printed.
    if let Some(l) = &line {
        l.finish();
    }
    if let Some(d) = drawing {
        d.abort();
    }
    // Fewer isolation layers than the machine could give is never silent: the layers the
    // runner did not hold, each with its fix, once, before the outcome.
    if let Some(warning) = crate::exec::isolation_fixes::startup_warning(&outcome.metrics.isolation)
    {
        eprint!("{warning}");
    }
    // The outcome goes out first; the MCP servers (and their process trees) are shut down after.
    print_outcome(&outcome, args.json, args.trace, max_output);
    for (name, reason) in &unavailable {
        let prefix = format!("{name}:");
        let told = outcome
            .traces
            .iter()
            .any(|t| t.error.is_some() && t.tool.starts_with(&prefix))
            || outcome
                .error
                .as_ref()
                .and_then(|e| e.tool.as_deref())
                .is_some_and(|t| t.starts_with(&prefix));
        if !told {
            super::report_unavailable(name, reason);
        }
    }
    sandbox.shutdown(grace).await;
    if let Some(t) = sandbox.telemetry().cloned() {
        // The spans still queued go out now, for a few seconds at most.
        let flush = tokio::task::spawn_blocking(move || t.shutdown());
        let _ = tokio::time::timeout(Duration::from_secs(6), flush).await;
    }
    if let Some(sig) = signal {
        // A requested shutdown that completed cleanly is a success, whatever the script did.
        crate::term::errln(&format!("mcp-sandbox: {sig}: shut down cleanly"));
        return Ok(0);
    }
    Ok(if outcome.success { 0 } else { EXIT_FAILED })
}
