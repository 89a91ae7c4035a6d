//! `mcp-sandbox policy explain`: what the gateway would decide for one call under a config's
//! policy — allow, ask or deny, the rule that decided it and why — without starting anything.
//! It uses the same code as the gate (`Policy::decide`: rules, conditions on the arguments,
//! ask rules), narrowed by the principal policies named with `--policy` as the gateway narrows
//! a principal's, then the data-flow rules (`context::flow::FlowPolicy::decide`) with the labels
//! of the tools named by `--after` as read. A rule naming a server that is not configured is a
//! config error, as for `run` and `serve`. Only the call's server is started, to say whether it
//! lists the tool (the verdict is given either way); its inputSchema is not checked.

use super::UsageError;
use crate::config::Config;
use crate::context::flow::FlowVerdict;
use crate::context::policy::Decision;
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Decide one call: `--call 'payments:refund {"amount": 150}'`.
    Explain(ExplainArgs),
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The configuration file whose `sandbox` policy decides.
    #[arg(long, value_name = "PATH")]
    pub config: PathBuf,
    /// Decide as a principal with this policy of `sandbox.policies` (repeatable; all narrow).
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// The call: `server:tool` followed by its arguments as a JSON object (default `{}`).
    #[arg(long, value_name = "'SERVER:TOOL {JSON}'")]
    pub call: String,
    /// A tool whose answer the execution read before this call (repeatable): its data-flow
    /// labels count for the config's flow rules, as the gateway counts them.
    #[arg(long = "after", value_name = "SERVER:TOOL")]
    pub after: Vec<String>,
    /// Count the data-flow labels this principal's sessionless (MCP 2026-07-28) executions
    /// read, as the gateway counts them for its next execution (`token:NAME`; the state store of
    /// `--state` or the config's `sandbox.state`).
    #[arg(long, value_name = "NAME")]
    pub principal: Option<String>,
    /// The principal's tenant (default: a token's own tenant, else `default`).
    #[arg(long, value_name = "NAME", requires = "principal")]
    pub tenant: Option<String>,
    /// The state store holding the principal's labels.
    #[arg(long, value_name = "PATH", requires = "principal")]
    pub state: Option<PathBuf>,
    /// Print `{decision, why, call, policies, labels_read}` as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `server:tool {json}` → its parts.
fn parse_call(call: &str) -> Result<(String, String, Value), UsageError> {
    let call = call.trim();
    let (name, rest) = call.split_once(char::is_whitespace).unwrap_or((call, ""));
    let Some((server, tool)) = name
        .split_once(':')
        .filter(|(s, t)| !s.is_empty() && !t.is_empty())
    else {
        if let Some(hint) = crate::config::rule_names::dot_form_hint(name) {
            return Err(UsageError(format!("--call: {hint}")));
        }
        return Err(UsageError(format!(
            "--call {name:?}: start with server:tool, then the arguments as JSON, e.g. 'payments:refund {{\"amount\": 150}}'"
        )));
    };
    let args: Value = if rest.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(rest.trim())
            .map_err(|e| UsageError(format!("--call: the arguments are not JSON ({e})")))?
    };
    if !args.is_object() {
        return Err(UsageError(
            "--call: the arguments must be a JSON object, like {\"path\": \"/srv/out/a\"}".into(),
        ));
    }
    Ok((server.to_string(), tool.to_string(), args))
}

/// Code of the note that the call's tool does not exist.
pub const POLICY_TOOL_UNKNOWN: &str = "POLICY_TOOL_UNKNOWN";

/// Whether `server` lists `tool` (`None`: it could not be told); the note to print when not.
async fn tool_exists(config: &Config, server: &str, tool: &str) -> (Option<bool>, Option<String>) {
    if !config.servers.contains_key(server) {
        let configured: Vec<&str> = config.servers.keys().map(String::as_str).collect();
        return (
            Some(false),
            Some(format!(
                "{POLICY_TOOL_UNKNOWN}: the server '{server}' is not configured ({}), so this call would fail with TOOL_NOT_FOUND whatever the policy says",
                if configured.is_empty() {
                    "no server is".to_string()
                } else {
                    format!("configured: {}", configured.join(", "))
                }
            )),
        );
    }
    let only = std::collections::BTreeSet::from([server.to_string()]);
    let catalog = match super::load_catalog_of(config, Some(&only)).await {
        Ok(c) => c,
        Err(e) => return (None, Some(format!("could not list {server}'s tools: {e}"))),
    };
    let answer = if let Some(reason) = catalog.unavailable().get(server) {
        (
            None,
            Some(format!(
                "could not tell whether {server} has the tool {tool}: the server did not start ({reason})"
            )),
        )
    } else if catalog.has_tool(server, tool) {
        (Some(true), None)
    } else {
        let names: Vec<String> = catalog
            .tools()
            .into_iter()
            .filter(|t| t.server == server)
            .map(|t| t.name)
            .collect();
        (
            Some(false),
            Some(format!(
                "{POLICY_TOOL_UNKNOWN}: the server '{server}' lists no tool '{tool}' (its tools: {}), so this call would fail with TOOL_NOT_FOUND; a rule written for this name matches nothing",
                names.join(", ")
            )),
        )
    };
    catalog.shutdown().await;
    answer
}

pub async fn command(args: PolicyArgs) -> Result<i32, UsageError> {
    let PolicyCommand::Explain(args) = args.command;
    let config = Config::load(&args.config).map_err(|e| UsageError(e.to_string()))?;
    crate::config::rule_names::check_servers(
        &crate::config::rule_names::rules_of(&config, &[]),
        config.servers.keys().map(String::as_str),
    )
    .map_err(UsageError)?;
    let (server, tool, call_args) = parse_call(&args.call)?;
    let mut policy = config.policy();
    for name in &args.policies {
        let Some(p) = config.sandbox.policies.get(name) else {
            return Err(UsageError(format!(
                "--policy {name:?} is not in the config's sandbox.policies"
            )));
        };
        policy = p.narrow(name, policy);
    }
    let taint = crate::context::flow::Taint::default();
    for read in &args.after {
        if !read.contains(':') {
            return Err(UsageError(format!(
                "--after {read:?}: name a tool as server:tool, e.g. --after crm:get_customer"
            )));
        }
        for label in policy.flow().labels_of(read) {
            taint.add(&label, read);
        }
    }
    if let Some(principal) = &args.principal {
        let store = super::learning::StateArgs {
            state: args.state.clone(),
        }
        .open(Some(&config))?;
        let held = super::labels::held(&store, principal, args.tenant.as_deref())?;
        taint.inherit(&held);
    }
    let read = taint.read();
    let qualified = format!("{server}:{tool}");
    // As the gate: the rules first (deny > ask > allow), then the flow rules, which can only
    // refuse or ask.
    let decided = policy.decide(&server, &tool, &call_args);
    let flow = policy.flow().decide(&qualified, &read);
    let (decision, why) = match (decided, flow) {
        (Decision::Deny(reason), _) => ("deny", reason),
        (_, FlowVerdict::Deny { message, .. }) => ("deny", message),
        (Decision::Ask(rule), _) => ("ask", format!("it waits for approval: {rule}")),
        (Decision::Allow, FlowVerdict::Ask { message, .. }) => {
            ("ask", format!("it waits for approval: {message}"))
        }
        (Decision::Allow, FlowVerdict::Allow) => (
            "allow",
            "no rule refuses it or asks for approval".to_string(),
        ),
    };
    let (exists, note) = tool_exists(&config, &server, &tool).await;
    if args.json {
        let labels: Vec<&str> = read.iter().map(|s| s.label.as_str()).collect();
        let mut answer = json!({"decision": decision, "why": why, "call": {"tool": qualified, "args": call_args}, "policies": args.policies, "labels_read": labels, "tool_exists": exists});
        if let Some(note) = &note {
            answer["note"] = json!(note);
        }
        println!("{answer}");
    } else {
        println!("{decision}: {}", crate::term::escape(&why));
        if let Some(p) = &args.principal {
            let held: Vec<String> = read
                .iter()
                .filter(|s| s.earlier)
                .map(|s| format!("{} (from {})", s.label, s.tool))
                .collect();
            let held = if held.is_empty() {
                "no labels".to_string()
            } else {
                held.join(", ")
            };
            println!(
                "{} holds {}",
                crate::term::escape(p),
                crate::term::escape(&held)
            );
        }
        if let Some(note) = &note {
            println!("note: {}", crate::term::escape(note));
        }
    }
    Ok(0)
}
