//! The command line: `mcp-sandbox run`, `check`, `tools`, `serve`.

use crate::catalog::{start_some_mcp_servers, Catalog};
use crate::config::Config;
use crate::limits::Limits;
use crate::outcome::Outcome;
use crate::policy::{Policy, Rules};
use crate::runner::RunnerCommand;
use crate::sandbox::{QueueOptions, Sandbox};
use crate::session::ExecRequest;
use crate::shutdown::{execute_until_signal, SignalListener};
use crate::trace::{render, TraceFormat};
use crate::transpile::{to_javascript, Language};
use clap::{Args, Parser, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Exit status for a usage or configuration error.
pub const EXIT_USAGE: i32 = 2;
/// Exit status when the execution failed (the outcome has an error).
pub const EXIT_FAILED: i32 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "mcp-sandbox",
    version,
    about = "Run untrusted JavaScript in an OS-isolated runner whose only way out is traced MCP tool calls"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a script (a file, or - for standard input) and print its result.
    Run(RunArgs),
    /// Show which isolation layers this machine enforces on the runner.
    Check(CheckArgs),
    /// List the tools of the configured MCP servers (plain, --json or --typescript).
    Tools(ToolsArgs),
    /// Be an MCP server (stdio, or streamable HTTP with --http) offering execute_code and
    /// search_tools over the configured MCP servers.
    Serve(crate::server::ServeArgs),
    /// Show the tool graph learned from executions (or `graph next TOOL`).
    Graph(crate::learning_cli::GraphArgs),
    /// Save, list, show and remove capabilities (code callable as `mcp.namespace.action()`).
    Capability(crate::learning_cli::CapabilityArgs),
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// MCP servers configuration (`{"mcpServers": {...}}`).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Every tool with its schemas, policy verdict, and the unavailable servers, as JSON.
    #[arg(long, conflicts_with = "typescript")]
    pub json: bool,
    /// TypeScript declarations of the `mcp` API.
    #[arg(long)]
    pub typescript: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// The sandbox-runner binary (default: next to this executable, or $MCP_SANDBOX_RUNNER).
    #[arg(long, value_name = "PATH")]
    pub runner: Option<PathBuf>,
    /// Isolation layers that must be enforced besides seccomp, rlimits and no_new_privs:
    /// `all`, or a comma-separated list of uid,namespaces,empty_root,landlock.
    #[arg(long, value_name = "LAYERS")]
    pub require_isolation: Option<String>,
    /// How runners are made: `zygote` (forked from one pre-locked parent per sandbox; falls
    /// back to exec where it cannot start) or `exec` (a new process per runner).
    #[arg(long, value_name = "MODE", default_value = "zygote")]
    pub spawn: crate::runner::SpawnMode,
}

/// Per-execution tool policy on top of the config's `sandbox.allow`/`sandbox.deny`.
#[derive(Debug, Args, Default)]
pub struct PolicyArgs {
    /// Only tools matching one of these `server:tool` globs may be called (repeatable;
    /// `*` and `?` wildcards; `memory` means `memory:*`). Narrows the config, never widens it.
    #[arg(long, value_name = "GLOB")]
    pub allow: Vec<String>,
    /// Tools matching this `server:tool` glob may not be called (repeatable; deny wins).
    #[arg(long, value_name = "GLOB")]
    pub deny: Vec<String>,
}

impl PolicyArgs {
    /// The config's policy, narrowed by these flags.
    pub fn policy(&self, config: &Config) -> Result<Policy, UsageError> {
        let mut policy = config.policy();
        if !self.allow.is_empty() || !self.deny.is_empty() {
            let allow = (!self.allow.is_empty()).then_some(self.allow.as_slice());
            let rules = Rules::new("--allow/--deny", allow, &self.deny)
                .map_err(|e| UsageError(e.to_string()))?;
            policy = policy.with(rules);
        }
        Ok(policy)
    }
}

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
    /// Print the whole outcome as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// The script's language (default: typescript for .ts files, else javascript). TypeScript is
    /// stripped to JavaScript before it runs.
    #[arg(long, value_enum, value_name = "LANG")]
    pub language: Option<LanguageArg>,
    /// Print the tool-call traces (to stderr; inside the JSON with --json).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub trace: Option<TraceFormat>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub state: crate::learning_cli::StateArgs,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LanguageArg {
    Javascript,
    Typescript,
}

impl From<LanguageArg> for Language {
    fn from(l: LanguageArg) -> Language {
        match l {
            LanguageArg::Javascript => Language::Javascript,
            LanguageArg::Typescript => Language::Typescript,
        }
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub runner: RunnerArgs,
}

/// A usage or configuration error: printed as one line, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl RunnerArgs {
    pub fn command(&self) -> RunnerCommand {
        let mut cmd = RunnerCommand::new(
            self.runner
                .clone()
                .unwrap_or_else(RunnerCommand::default_program),
        );
        cmd.spawn = self.spawn;
        cmd
    }

    pub fn required_layers(&self) -> Result<Vec<String>, UsageError> {
        const OPTIONAL: [&str; 4] = ["uid", "namespaces", "empty_root", "landlock"];
        match self.require_isolation.as_deref() {
            None | Some("") => Ok(Vec::new()),
            Some("all") => Ok(OPTIONAL.iter().map(|s| s.to_string()).collect()),
            Some(list) => list
                .split(',')
                .map(|l| {
                    let l = l.trim();
                    if OPTIONAL.contains(&l) {
                        Ok(l.to_string())
                    } else {
                        Err(UsageError(format!(
                            "--require-isolation: unknown layer '{l}'; use all, or a list of uid,namespaces,empty_root,landlock"
                        )))
                    }
                })
                .collect(),
        }
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

/// Builds the catalog from the config's MCP servers; reports unavailable ones on stderr.
pub async fn load_catalog(config: &Config) -> Result<Catalog, UsageError> {
    load_catalog_of(config, None).await
}

/// Like [`load_catalog`], starting only the servers in `only` (all when `None`), in parallel,
/// each within its `startupTimeoutMs`.
pub async fn load_catalog_of(
    config: &Config,
    only: Option<&std::collections::BTreeSet<String>>,
) -> Result<Catalog, UsageError> {
    let mut catalog = Catalog::new();
    let (servers, failed) = start_some_mcp_servers(config, only, None).await;
    for s in servers {
        catalog
            .add(Arc::new(s))
            .map_err(|e| UsageError(e.to_string()))?;
    }
    for (name, reason) in failed {
        crate::term::errln(&format!(
            "mcp-sandbox: warning: MCP server '{name}' is unavailable: {}",
            crate::term::escape(&reason)
        ));
        catalog.add_unavailable(name, reason);
    }
    for (name, server) in &config.servers {
        if let Some(bytes) = server.max_arg_bytes {
            catalog.set_max_arg_bytes(name.clone(), bytes);
        }
    }
    Ok(catalog)
}

/// `mcp-sandbox run`. Returns the process exit status.
pub async fn run(args: RunArgs) -> Result<i32, UsageError> {
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
    let require_layers = args.runner.required_layers()?;
    let runner = args.runner.command();
    let policy = args.policy.policy(&config)?;

    let language = args
        .language
        .map(Language::from)
        .unwrap_or_else(|| Language::from_path(std::path::Path::new(&args.file)));
    let code = match to_javascript(&code, language) {
        Ok(js) => js,
        Err(e) => {
            print_outcome(&Outcome::failed(e), args.json, args.trace);
            return Ok(EXIT_FAILED);
        }
    };

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
    let reach = match crate::analysis::servers_reached(&code) {
        crate::analysis::Reach::Servers(names)
            if names.iter().all(|n| config.servers.contains_key(n)) =>
        {
            Some(names)
        }
        _ => None,
    };
    let catalog = load_catalog_of(&config, reach.as_ref()).await?;
    let mut sandbox = Sandbox::new(
        Arc::new(catalog),
        runner.clone(),
        QueueOptions {
            max_running: 1,
            max_queued: 0,
            // One script: a pre-started runner would only be wasted.
            pool_size: 0,
        },
    );
    if let Some(store) = store {
        let caps = crate::capability::Capabilities {
            require_layers: require_layers.clone(),
            ..crate::capability::Capabilities::new(store, runner.clone())
        };
        // `capability save --from-last` saves the code of the CLI's last execution.
        sandbox = sandbox.with_learning(caps).remember_last_code();
    }
    let request = ExecRequest {
        code,
        context,
        limits,
        require_layers,
        policy,
        ..Default::default()
    };
    let grace = Duration::from_millis(args.shutdown_grace_ms);
    let (outcome, signal) = execute_until_signal(&sandbox, request, &mut signals, grace).await;
    // The outcome goes out first; the MCP servers (and their process trees) are shut down after.
    print_outcome(&outcome, args.json, args.trace);
    sandbox.shutdown(grace).await;
    if let Some(sig) = signal {
        // A requested shutdown that completed cleanly is a success, whatever the script did.
        crate::term::errln(&format!("mcp-sandbox: {sig}: shut down cleanly"));
        return Ok(0);
    }
    Ok(if outcome.success { 0 } else { EXIT_FAILED })
}

/// Prints an outcome: exact JSON on stdout with `--json`; otherwise the result as JSON on stdout
/// and everything else for a person on stderr, with the runner's strings escaped.
fn print_outcome(outcome: &Outcome, json: bool, trace: Option<TraceFormat>) {
    use crate::term::{err, errln, escape, escape_lines, outln};
    if json {
        outln(&serde_json::to_string(outcome).unwrap_or_else(|_| "{}".into()));
        return;
    }
    for line in &outcome.logs {
        errln(&format!(
            "[{}] {}",
            escape(&line.level),
            escape(&line.message)
        ));
    }
    if let Some(format) = trace {
        err(&render(&outcome.traces, format));
    }
    match &outcome.error {
        None => {
            outln(&serde_json::to_string_pretty(&outcome.result).unwrap_or_else(|_| "null".into()))
        }
        Some(e) => {
            errln(&format!("error: {}: {}", e.code, escape(&e.message)));
            if let Some(alts) = e.alternatives.as_ref().filter(|a| !a.is_empty()) {
                errln(&format!("  did you mean: {}", escape(&alts.join(", "))));
            }
            if let Some(stack) = &e.stack {
                errln(&escape_lines(stack));
            }
        }
    }
}

/// `mcp-sandbox tools`. Unavailable servers are reported, not fatal.
pub async fn tools(args: ToolsArgs) -> Result<i32, UsageError> {
    let config = match &args.config {
        Some(p) => Config::load(p).map_err(|e| UsageError(e.to_string()))?,
        None => Config::default(),
    };
    let policy = args.policy.policy(&config)?;
    let catalog = load_catalog(&config).await?;
    let text = if args.json {
        serde_json::to_string_pretty(&crate::discovery::to_json(&catalog, &policy))
            .unwrap_or_default()
            + "\n"
    } else if args.typescript {
        crate::discovery::render(&catalog, &policy, &catalog.tools(), true)
    } else {
        crate::discovery::to_text(&catalog, &policy)
    };
    catalog.shutdown().await;
    crate::term::out(&crate::term::escape_lines(&text));
    Ok(0)
}

/// `mcp-sandbox check`. Exit 0 when the required layers hold.
pub async fn check(args: CheckArgs) -> Result<i32, UsageError> {
    let required = args.runner.required_layers()?;
    let report = crate::check::check(&args.runner.command(), &required)
        .await
        .map_err(|e| UsageError(format!("check failed: {e}")))?;
    if args.json {
        crate::term::outln(&serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        crate::term::out(&crate::check::render(&report));
    }
    Ok(if report.ok { 0 } else { EXIT_FAILED })
}
