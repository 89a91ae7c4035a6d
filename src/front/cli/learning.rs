//! The command line of learning: `mcp-sandbox graph …` and `mcp-sandbox capability …`, and how
//! every command finds the state file.

// Human output goes through `crate::term`: untrusted strings escaped, no panic on a closed pipe.
macro_rules! println {
    ($($t:tt)*) => { $crate::term::outln(&$crate::term::escape_lines(&format!($($t)*))) };
}
macro_rules! print {
    ($($t:tt)*) => { $crate::term::out(&$crate::term::escape_lines(&format!($($t)*))) };
}
macro_rules! eprintln {
    ($($t:tt)*) => { $crate::term::errln(&$crate::term::escape_lines(&format!($($t)*))) };
}

use super::{UsageError, EXIT_FAILED};
use crate::config::Config;
use crate::script::analysis;
use crate::store::location::state_location;
use crate::store::{self, split_name, GraphSnapshot, NewCapability, Store};
use clap::{Args, Subcommand};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest capability source or schema file accepted.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Args, Clone, Default)]
pub struct StateArgs {
    /// The state file (default: the config's sandbox.state, else
    /// $XDG_DATA_HOME/mcp-sandbox/state.db), or a PostgreSQL database
    /// (`postgres://user@host/db`, its password in PGPASSWORD or PGPASSWORD_FILE, never in the URL).
    #[arg(long, value_name = "PATH", value_parser = StateParser)]
    pub state: Option<PathBuf>,
}

/// `--state`'s parser. Unlike a plain function parser, its error does not repeat the value: a
/// refused PostgreSQL URL may hold a password, which must not be echoed to the terminal or a log.
#[derive(Clone)]
struct StateParser;

impl clap::builder::TypedValueParser for StateParser {
    type Value = PathBuf;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<PathBuf, clap::Error> {
        let refuse = |message: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value for '--state <PATH>': {message}\n"),
            )
            .with_cmd(cmd)
        };
        match value.to_str() {
            Some(text) => state_location(text).map_err(refuse),
            // Not UTF-8: a file path (a URL is always UTF-8).
            None => Ok(PathBuf::from(value)),
        }
    }
}

#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(flatten)]
    pub state: StateArgs,
    /// Configuration file, for its sandbox.state key.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

impl StateArgs {
    /// `--state`, else the config's `sandbox.state`, else the XDG default.
    pub fn path(&self, config: Option<&Config>) -> Result<PathBuf, store::StoreError> {
        if let Some(p) = &self.state {
            return Ok(p.clone());
        }
        if let Some(c) = config {
            if let Some(p) = c.state_path() {
                return Ok(p);
            }
        }
        store::default_path()
    }

    pub fn open(&self, config: Option<&Config>) -> Result<Store, UsageError> {
        let path = self.path(config).map_err(|e| UsageError(e.to_string()))?;
        Store::open(&path).map_err(|e| UsageError(e.to_string()))
    }
}

impl StoreArgs {
    fn open(&self) -> Result<Store, UsageError> {
        Ok(self.open_audited()?.0)
    }

    /// The store, and the audit record of a capability write by the local principal (the code
    /// kept as the config's `sandbox.audit.code` says).
    fn open_audited(&self) -> Result<(Store, store::audit::AuditRecord), UsageError> {
        let config = match &self.config {
            Some(p) => Some(Config::load(p).map_err(|e| UsageError(e.to_string()))?),
            None => None,
        };
        let keep = crate::store::audit_options::AuditFlags::default()
            .options(config.as_ref().and_then(|c| c.sandbox.audit.as_ref()))
            .code;
        let caller = crate::context::principal::Caller {
            front: "run",
            ..Default::default()
        };
        let record = crate::exec::capability_author::write_record(keep, &caller, "");
        Ok((self.state.open(config.as_ref())?, record))
    }
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct GraphArgs {
    #[command(subcommand)]
    pub command: Option<GraphCommand>,
    /// Print as JSON ({tools, edges}).
    #[arg(long, conflicts_with = "mermaid")]
    pub json: bool,
    /// Print as a Mermaid flowchart.
    #[arg(long)]
    pub mermaid: bool,
    /// Only this tool (`server:tool`), its edges and its neighbours.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Rank the tools most likely to follow TOOL (`server:tool`).
    Next {
        tool: String,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Debug, Args)]
pub struct CapabilityArgs {
    #[command(subcommand)]
    pub command: CapabilityCommand,
}

#[derive(Debug, Subcommand)]
pub enum CapabilityCommand {
    /// Save code as a capability NAME (`namespace:action`), callable as `mcp.namespace.action(args)`.
    Save {
        name: String,
        /// The code (a file, or - for standard input).
        #[arg(
            long,
            value_name = "PATH",
            required_unless_present = "from_last",
            conflicts_with = "from_last"
        )]
        file: Option<String>,
        /// The code of the last `mcp-sandbox run` (allowed only if it and all its tool calls succeeded).
        #[arg(long)]
        from_last: bool,
        /// The language of the code (default: python for a .py file, the last run's with
        /// --from-last, else javascript).
        #[arg(long, value_name = "LANG", value_parser = ["javascript", "python"])]
        language: Option<String>,
        #[arg(long, value_name = "TEXT")]
        description: Option<String>,
        /// JSON Schema file for `args`.
        #[arg(long, value_name = "PATH")]
        schema: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List capabilities (latest version of each).
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Show a capability by name (latest version) or id, with its code.
    Show {
        name_or_id: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Remove every version of a name, or one version by id.
    Rm {
        name_or_id: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

fn read_limited(path: &str, what: &str) -> Result<String, UsageError> {
    let mut bytes = Vec::new();
    let read = if path == "-" {
        std::io::stdin()
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map(|_| ())
    } else {
        std::fs::File::open(path).and_then(|f| {
            f.take(MAX_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map(|_| ())
        })
    };
    read.map_err(|e| UsageError(format!("cannot read {what} {path}: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(UsageError(format!(
            "{what} {path} is larger than {MAX_FILE_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| UsageError(format!("{what} {path} is not valid UTF-8")))
}

fn json_out<T: serde::Serialize>(v: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into())
    );
}

/// `mcp-sandbox graph`.
pub fn graph(args: GraphArgs) -> Result<i32, UsageError> {
    if let Some(GraphCommand::Next { tool, json, store }) = args.command {
        let ranked = store
            .open()?
            .next_tools(&tool)
            .map_err(|e| UsageError(e.to_string()))?;
        if json {
            json_out(&ranked);
        } else if ranked.is_empty() {
            println!("no tool has followed {tool} yet");
        } else {
            let width = ranked
                .iter()
                .map(|n| n.tool.len())
                .max()
                .unwrap_or(4)
                .max(4);
            println!("{:<width$}  {:>6}  {:>11}", "TOOL", "COUNT", "PROBABILITY");
            for n in ranked {
                println!(
                    "{:<width$}  {:>6}  {:>11.3}",
                    n.tool, n.count, n.probability
                );
            }
        }
        return Ok(0);
    }
    let g = args
        .store
        .open()?
        .graph(args.tool.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    if args.json {
        json_out(&g);
    } else if args.mermaid {
        print!("{}", store::mermaid(&g));
    } else {
        print!("{}", table(&g));
    }
    Ok(0)
}

fn table(g: &GraphSnapshot) -> String {
    let width = g
        .tools
        .iter()
        .map(|t| t.tool.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:<width$}  {:>6}  {:>6}  {:>6}  {:>9}  {:>9}\n",
        "TOOL", "CALLS", "OK", "FAILED", "MEAN_MS", "P95_MS"
    );
    for t in &g.tools {
        out.push_str(&format!(
            "{:<width$}  {:>6}  {:>6}  {:>6}  {:>9.2}  {:>9.2}\n",
            t.tool, t.calls, t.successes, t.failures, t.mean_ms, t.p95_ms
        ));
    }
    out.push_str("\nEDGES\n");
    for e in &g.edges {
        out.push_str(&format!("{} -> {}  {}\n", e.source, e.target, e.count));
    }
    out
}

/// `mcp-sandbox capability …`.
pub fn capability(args: CapabilityArgs) -> Result<i32, UsageError> {
    match args.command {
        CapabilityCommand::Save {
            name,
            file,
            from_last,
            language,
            description,
            schema,
            store,
        } => {
            split_name(&name).map_err(|e| UsageError(e.to_string()))?;
            let (store, mut audit) = store.open_audited()?;
            let (code, language) = if from_last {
                let last = store
                    .last_execution()
                    .map_err(|e| UsageError(e.to_string()))?
                    .ok_or_else(|| {
                        UsageError("--from-last: no execution has been run with this state file yet; run one with `mcp-sandbox run`".into())
                    })?;
                if !last.success || last.failed_calls > 0 {
                    return Err(UsageError(format!(
                        "--from-last: the last execution {} ({} of {} tool calls failed); only an execution whose tool calls all succeeded can be saved",
                        if last.success { "succeeded" } else { "failed" },
                        last.failed_calls,
                        last.tool_calls
                    )));
                }
                let language = match language.as_deref() {
                    Some(name) => {
                        sandbox_runner::protocol::Language::parse(name).unwrap_or_default()
                    }
                    None => last.language,
                };
                (last.code, language)
            } else {
                let path = file.as_deref().unwrap_or("-");
                let language = match language.as_deref() {
                    Some(name) => {
                        sandbox_runner::protocol::Language::parse(name).unwrap_or_default()
                    }
                    None if path.ends_with(".py") => sandbox_runner::protocol::Language::Python,
                    None => sandbox_runner::protocol::Language::Javascript,
                };
                (read_limited(path, "capability code")?, language)
            };
            if let Err(e) = analysis::references_in(&code, language) {
                return Err(UsageError(format!(
                    "the capability code does not parse: {}",
                    e.message
                )));
            }
            let input_schema = match &schema {
                Some(p) => Some(load_schema(p)?),
                None => None,
            };
            // The local principal (the operator) is the author; the save is audited with it.
            audit.code_sha256 = crate::store::audit_options::sha256_hex(code.as_bytes());
            if audit.code.is_some() {
                audit.code = Some(code.clone());
            }
            let rec = store
                .save_capability_audited(
                    &NewCapability {
                        name,
                        code,
                        description,
                        input_schema,
                        author: "local".into(),
                        author_policies: Vec::new(),
                        language,
                    },
                    &store::CapabilityQuota::default(),
                    Some(audit),
                )
                .map_err(|e| UsageError(e.to_string()))?;
            println!(
                "saved {} version {} as {} (author {})",
                rec.name,
                rec.version,
                rec.id,
                rec.author_shown()
            );
            Ok(0)
        }
        CapabilityCommand::List { json, store } => {
            let caps = store
                .open()?
                .list_capabilities()
                .map_err(|e| UsageError(e.to_string()))?;
            if json {
                json_out(&caps);
                return Ok(0);
            }
            if caps.is_empty() {
                println!("no capabilities saved; save one with `mcp-sandbox capability save NAME --file code.js`");
                return Ok(0);
            }
            let width = caps.iter().map(|c| c.name.len()).max().unwrap_or(4).max(4);
            let authors = caps
                .iter()
                .map(|c| crate::term::escape(c.author_shown()).len())
                .max()
                .unwrap_or(6)
                .max(6);
            println!(
                "{:<width$}  {:>7}  {:<32}  {:<authors$}  DESCRIPTION",
                "NAME", "VERSION", "ID", "AUTHOR"
            );
            for c in caps {
                println!(
                    "{:<width$}  {:>7}  {:<32}  {:<authors$}  {}",
                    c.name,
                    c.version,
                    c.id,
                    crate::term::escape(c.author_shown()),
                    c.description.as_deref().unwrap_or_default()
                );
            }
            Ok(0)
        }
        CapabilityCommand::Show {
            name_or_id,
            json,
            store,
        } => {
            let Some(c) = store
                .open()?
                .find_capability(&name_or_id)
                .map_err(|e| UsageError(e.to_string()))?
            else {
                eprintln!(
                    "mcp-sandbox: no capability {name_or_id}; see `mcp-sandbox capability list`"
                );
                return Ok(EXIT_FAILED);
            };
            if json {
                json_out(&c);
                return Ok(0);
            }
            println!("name:        {}", c.name);
            println!("id:          {}", c.id);
            println!("version:     {}", c.version);
            println!("author:      {}", crate::term::escape(c.author_shown()));
            if !c.author_policies.is_empty() {
                println!(
                    "policies:    {}",
                    crate::term::escape(&c.author_policies.join(", "))
                );
            }
            println!("description: {}", c.description.as_deref().unwrap_or(""));
            if let Some(s) = &c.input_schema {
                println!("schema:      {s}");
            }
            println!("code:\n{}", c.code);
            Ok(0)
        }
        CapabilityCommand::Rm { name_or_id, store } => {
            let (store, audit) = store.open_audited()?;
            let n = store
                .remove_capability_audited(&name_or_id, Some(audit))
                .map_err(|e| UsageError(e.to_string()))?;
            if n == 0 {
                eprintln!(
                    "mcp-sandbox: no capability {name_or_id}; see `mcp-sandbox capability list`"
                );
                return Ok(EXIT_FAILED);
            }
            println!("removed {n} version(s) of {name_or_id}");
            Ok(0)
        }
    }
}

fn load_schema(path: &Path) -> Result<Value, UsageError> {
    let text = read_limited(&path.to_string_lossy(), "schema")?;
    let schema: Value = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("schema {} is not JSON: {e}", path.display())))?;
    if !schema.is_object() {
        return Err(UsageError(format!(
            "schema {} must be a JSON Schema object, like {{\"type\": \"object\"}}",
            path.display()
        )));
    }
    jsonschema::validator_for(&schema).map_err(|e| {
        UsageError(format!(
            "schema {} is not a valid JSON Schema: {e}",
            path.display()
        ))
    })?;
    Ok(schema)
}
