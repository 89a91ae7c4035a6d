//! The command line: `mcp-sandbox run`, `mcp-sandbox check`.

use crate::catalog::{start_mcp_servers, Catalog};
use crate::config::Config;
use crate::limits::Limits;
use crate::outcome::Outcome;
use crate::runner::RunnerCommand;
use crate::session::{execute, ExecRequest};
use crate::trace::{render, TraceFormat};
use clap::{Args, Parser, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Exit status for a usage or configuration error.
pub const EXIT_USAGE: i32 = 2;
/// Exit status when the execution failed (the outcome has an error).
pub const EXIT_FAILED: i32 = 1;

/// How long `run` waits for each configured MCP server to start.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(30);

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
    /// Show the tool graph learned from executions (or `graph next TOOL`).
    Graph(crate::learning_cli::GraphArgs),
    /// Save, list, show and remove capabilities (code callable as `mcp.namespace.action()`).
    Capability(crate::learning_cli::CapabilityArgs),
}

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// The sandbox-runner binary (default: next to this executable, or $MCP_SANDBOX_RUNNER).
    #[arg(long, value_name = "PATH")]
    pub runner: Option<PathBuf>,
    /// Isolation layers that must be enforced besides seccomp, rlimits and no_new_privs:
    /// `all`, or a comma-separated list of uid,namespaces,landlock.
    #[arg(long, value_name = "LAYERS")]
    pub require_isolation: Option<String>,
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
    /// Print the whole outcome as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print the tool-call traces (to stderr; inside the JSON with --json).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub trace: Option<TraceFormat>,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub state: crate::learning_cli::StateArgs,
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
        RunnerCommand::new(
            self.runner
                .clone()
                .unwrap_or_else(RunnerCommand::default_program),
        )
    }

    pub fn required_layers(&self) -> Result<Vec<String>, UsageError> {
        const OPTIONAL: [&str; 3] = ["uid", "namespaces", "landlock"];
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
                            "--require-isolation: unknown layer '{l}'; use all, or a list of uid,namespaces,landlock"
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
    let mut catalog = Catalog::new();
    let (servers, failed) = start_mcp_servers(config, SERVER_START_TIMEOUT).await;
    for s in servers {
        catalog
            .add(Arc::new(s))
            .map_err(|e| UsageError(e.to_string()))?;
    }
    for (name, reason) in failed {
        eprintln!("mcp-sandbox: warning: MCP server '{name}' is unavailable: {reason}");
        catalog.add_unavailable(name, reason);
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
    limits.validate().map_err(|e| UsageError(e.to_string()))?;
    let require_layers = args.runner.required_layers()?;
    let runner = args.runner.command();

    // Learning is best effort: without a usable state file the script still runs (without
    // capabilities), and the reason is printed.
    let store = match args.state.open(args.config.as_ref().map(|_| &config)) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("mcp-sandbox: warning: running without the state store: {e}");
            None
        }
    };
    let catalog = load_catalog(&config).await?;
    let req = ExecRequest {
        code: code.clone(),
        context,
        limits,
        require_layers: require_layers.clone(),
        parent_trace_id: None,
    };
    let outcome = match &store {
        Some(store) => {
            let caps = crate::capability::Capabilities {
                require_layers,
                ..crate::capability::Capabilities::new(store.clone(), runner.clone())
            };
            let outcome = caps.execute(&catalog, req).await;
            crate::capability::record(store, &outcome, Some(&code)).await;
            outcome
        }
        None => execute(&catalog, &runner, req).await,
    };
    catalog.shutdown().await;
    print_outcome(&outcome, args.json, args.trace);
    Ok(if outcome.success { 0 } else { EXIT_FAILED })
}

fn print_outcome(outcome: &Outcome, json: bool, trace: Option<TraceFormat>) {
    if json {
        println!(
            "{}",
            serde_json::to_string(outcome).unwrap_or_else(|_| "{}".into())
        );
        return;
    }
    for line in &outcome.logs {
        eprintln!("[{}] {}", line.level, line.message);
    }
    if let Some(format) = trace {
        eprint!("{}", render(&outcome.traces, format));
    }
    match &outcome.error {
        None => println!(
            "{}",
            serde_json::to_string_pretty(&outcome.result).unwrap_or_else(|_| "null".into())
        ),
        Some(e) => {
            eprintln!("error: {}: {}", e.code, e.message);
            if let Some(alts) = e.alternatives.as_ref().filter(|a| !a.is_empty()) {
                eprintln!("  did you mean: {}", alts.join(", "));
            }
            if let Some(stack) = &e.stack {
                eprintln!("{stack}");
            }
        }
    }
}

/// `mcp-sandbox check`. Exit 0 when the required layers hold.
pub async fn check(args: CheckArgs) -> Result<i32, UsageError> {
    let required = args.runner.required_layers()?;
    let report = crate::check::check(&args.runner.command(), &required)
        .await
        .map_err(|e| UsageError(format!("check failed: {e}")))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", crate::check::render(&report));
    }
    Ok(if report.ok { 0 } else { EXIT_FAILED })
}
