//! `mcp-sandbox labels show|clear --principal NAME`: the data-flow labels a principal's
//! sessionless (MCP 2026-07-28) executions read, which stay with the principal for the session
//! TTL (`front::mcp::handles`): the refusals they cause say which execution read what; an
//! operator who has checked that nothing leaks can clear them. A clear is written to the audit
//! log (front `cli`, principal `local`: the operator at this machine), with the labels cleared.

use super::team::TeamStoreArgs;
use super::UsageError;
use crate::context::session::SessionScope;
use clap::{Args, Subcommand};
use serde_json::json;

#[derive(Debug, Args)]
pub struct LabelsArgs {
    #[command(subcommand)]
    pub command: LabelsCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabelsCommand {
    /// The labels a principal's sessionless executions read, and which execution read each.
    Show(Target),
    /// Forget them (audited): the principal's next executions start clean.
    Clear(Target),
}

#[derive(Debug, Args)]
pub struct Target {
    /// The principal (`token:NAME`, `jwt:SUBJECT`, `anonymous`).
    #[arg(long, value_name = "NAME")]
    pub principal: String,
    /// Its tenant (default: a token's own tenant, else `default`).
    #[arg(long, value_name = "NAME")]
    pub tenant: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: TeamStoreArgs,
}

/// The labels `principal` (in `tenant`, else its own) holds now.
pub(super) fn held(
    store: &crate::store::Store,
    principal: &str,
    tenant: Option<&str>,
) -> Result<Vec<crate::context::flow::LabelSource>, UsageError> {
    let tenant = tenant_of(store, principal, tenant)?;
    store
        .session_labels(&SessionScope::labels_of_principal(&tenant, principal))
        .map_err(|e| UsageError(e.to_string()))
}

fn tenant_of(
    store: &crate::store::Store,
    principal: &str,
    tenant: Option<&str>,
) -> Result<String, UsageError> {
    if let Some(tenant) = tenant {
        return Ok(tenant.to_string());
    }
    if let Some(name) = principal.strip_prefix("token:") {
        let tokens = store.list_tokens().map_err(|e| UsageError(e.to_string()))?;
        return match tokens.into_iter().find(|r| r.name == name) {
            Some(r) => Ok(r.tenant),
            None => Err(UsageError(format!(
                "--principal {:?}: no token named {:?} in this state store (see mcp-sandbox token list), or pass --tenant",
                crate::term::escape(principal),
                crate::term::escape(name)
            ))),
        };
    }
    Ok(crate::context::principal::DEFAULT_TENANT.to_string())
}

pub fn command(args: LabelsArgs) -> Result<i32, UsageError> {
    let (t, clear) = match args.command {
        LabelsCommand::Show(t) => (t, false),
        LabelsCommand::Clear(t) => (t, true),
    };
    let (store, _) = t.store.open()?;
    let tenant = tenant_of(&store, &t.principal, t.tenant.as_deref())?;
    let scope = SessionScope::labels_of_principal(&tenant, &t.principal);
    let failed = |e: crate::store::StoreError| UsageError(e.to_string());
    let labels = if clear {
        let what = format!("labels clear --principal {} --tenant {tenant}", t.principal);
        store
            .clear_labels_on_record(&scope, "local", "cli", what)
            .map_err(failed)?
    } else {
        store.session_labels(&scope).map_err(failed)?
    };
    if t.json {
        println!(
            "{}",
            json!({"principal": t.principal, "tenant": tenant, "labels": labels, "cleared": clear && !labels.is_empty()})
        );
        return Ok(0);
    }
    if labels.is_empty() {
        println!(
            "{} ({tenant}) holds no labels",
            crate::term::escape(&t.principal)
        );
    }
    for l in &labels {
        let by = l
            .execution
            .as_deref()
            .map_or(String::new(), |e| format!(" by execution {e}"));
        println!(
            "{}{}: read from {}{by}",
            if clear { "cleared " } else { "" },
            crate::term::escape(&l.label),
            crate::term::escape(&l.tool)
        );
    }
    Ok(0)
}
