//! `mcp-sandbox policy explain`: what the gateway would decide for one call under a config's
//! policy — allow, ask or deny, the rule that decided it and why — without starting anything.
//! It uses the same code as the gate (`Policy::decide`: rules, conditions on the arguments,
//! ask rules), narrowed by the principal policies named with `--policy` as the gateway narrows
//! a principal's. The tool's inputSchema is not checked (no server is started).

use super::UsageError;
use crate::config::Config;
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
    /// Print `{decision, rule_or_reason, call}` as JSON.
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

pub fn command(args: PolicyArgs) -> Result<i32, UsageError> {
    let PolicyCommand::Explain(args) = args.command;
    let config = Config::load(&args.config).map_err(|e| UsageError(e.to_string()))?;
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
    let (decision, why) = match policy.decide(&server, &tool, &call_args) {
        Decision::Allow => (
            "allow",
            "no rule refuses it or asks for approval".to_string(),
        ),
        Decision::Ask(rule) => ("ask", format!("it waits for approval: {rule}")),
        Decision::Deny(reason) => ("deny", reason),
    };
    if args.json {
        println!(
            "{}",
            json!({"decision": decision, "why": why, "call": {"tool": format!("{server}:{tool}"), "args": call_args}, "policies": args.policies})
        );
    } else {
        println!("{decision}: {}", crate::term::escape(&why));
    }
    Ok(0)
}
