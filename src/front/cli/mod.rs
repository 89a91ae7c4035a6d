//! The command line: `mcp-sandbox run`, `check`, `tools`, `serve`, `graph`, `capability`.
//! This file holds what every subcommand shares (the usage error and exit statuses, the runner
//! and policy flags, loading the catalog); each subcommand has its own file, and [`command`]
//! puts them together for clap. Children import this file; it imports none of them.

pub mod approve_tty;
pub mod audit;
pub mod auth;
pub mod check;
pub mod check_servers;
pub mod command;
pub mod entry;
pub mod labels;
pub mod learning;
pub mod migrate;
pub mod policy;
pub mod progress;
pub mod replay;
pub mod run;
pub mod run_output;
pub mod team;
pub mod tools;
pub mod ui;

use crate::config::Config;
use crate::context::policy::{Policy, Rules};
use crate::exec::runner::RunnerCommand;
use crate::tools::catalog::{start_some_mcp_servers, Catalog};
use clap::Args;
use std::path::PathBuf;
/// Exit status for a usage or configuration error.
pub const EXIT_USAGE: i32 = 2;
/// Exit status when the execution failed (the outcome has an error).
pub const EXIT_FAILED: i32 = 1;

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// The sandbox-runner binary (default: $MCP_SANDBOX_RUNNER, else the first found beside this
    /// executable, in cargo's bin directory, or on $PATH).
    #[arg(long, value_name = "PATH")]
    pub runner: Option<PathBuf>,
    /// Isolation layers that must be enforced besides seccomp, rlimits and no_new_privs:
    /// `all`, or a comma-separated list of uid,namespaces,empty_root,landlock.
    #[arg(long, value_name = "LAYERS")]
    pub require_isolation: Option<String>,
    /// How runners are made: `zygote` (forked from one pre-locked parent per sandbox; falls
    /// back to exec where it cannot start) or `exec` (a new process per runner).
    #[arg(long, value_name = "MODE", default_value = "zygote")]
    pub spawn: crate::exec::runner::SpawnMode,
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
    /// Calls of tools matching this `server:tool` glob wait for a person's approval (repeatable;
    /// added to the config's `sandbox.ask`; deny > ask > allow).
    #[arg(long, value_name = "GLOB")]
    pub ask: Vec<String>,
    /// Calls matching this `server:tool` glob that need approval are approved without asking
    /// (repeatable; the way to approve without a terminal or a client that can answer).
    #[arg(long, value_name = "GLOB")]
    pub approve: Vec<String>,
    /// How long a call waits for approval before it is denied ("not approved in time").
    #[arg(long, value_name = "N", default_value_t = crate::gate::approval::DEFAULT_APPROVAL_TIMEOUT_MS)]
    pub approval_timeout_ms: u64,
    /// Refuse what is otherwise a warning: any policy glob that matches none of the tools its
    /// server lists (not only `deny`/`ask`, which refuse by default), also when the config says
    /// `"strict_policy": false`; and (under `run`) a tool call that is neither awaited nor
    /// returned nor assigned (`UNAWAITED_CALL`).
    #[arg(long)]
    pub strict: bool,
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
        let policy = policy
            .with_ask("--ask", &self.ask)
            .map_err(|e| UsageError(format!("--ask: {e}")))?;
        // After the patterns' syntax: a rule that names a server not configured.
        crate::config::rule_names::check_servers(
            &self.named_rules(config),
            config.servers.keys().map(String::as_str),
        )
        .map_err(UsageError)?;
        Ok(policy)
    }

    /// Every rule of the config and of these flags, by where it was written.
    fn named_rules(&self, config: &Config) -> Vec<crate::config::rule_names::NamedRule> {
        crate::config::rule_names::rules_of(
            config,
            &[
                ("--allow", &self.allow),
                ("--deny", &self.deny),
                ("--ask", &self.ask),
            ],
        )
    }

    /// Checks the rules' globs against the tools the started servers list. A `deny` or `ask`
    /// glob that matches none fails open, so it refuses the start (exit 2) unless the config
    /// says `"strict_policy": false` (then a warning on stderr); any other unmatched glob is a
    /// warning, refused under `--strict`. Later re-listings (`list_changed`) are checked again:
    /// a warning in the log, counted (`mcp_sandbox_policy_globs_unmatched_after_relist`).
    pub fn check_globs(&self, config: &Config, catalog: &Catalog) -> Result<(), UsageError> {
        use crate::config::rule_names::{count_unmatched_after_relist, unmatched};
        let rules = self.named_rules(config);
        let listed: Vec<String> = config
            .servers
            .keys()
            .filter(|s| catalog.provider(s).is_some())
            .cloned()
            .collect();
        let all = catalog.tools();
        let tools: Vec<String> = all
            .iter()
            .map(|t| format!("{}:{}", t.server, t.name))
            .collect();
        let found = unmatched(&rules, &listed, &tools);
        let strict_config = config.sandbox.strict_policy();
        let refused: Vec<String> = found
            .iter()
            .filter(|(rule, _)| self.strict || (rule.guard.is_some() && strict_config))
            .map(|(rule, message)| {
                let hint = rule
                    .exact_tool()
                    .map(|(server, tool)| {
                        crate::gate::suggest::closest(
                            server,
                            tool,
                            all.iter().map(|t| (t.server.as_str(), t.name.as_str())),
                        )
                    })
                    .and_then(|s| s.into_iter().next())
                    .map(|best| format!("; did you mean {}?", crate::term::escape(&best)))
                    .unwrap_or_default();
                let why = if self.strict {
                    "refused under --strict".to_string()
                } else {
                    format!(
                        "a {} rule that matches nothing fails open, so it is refused: fix the tool name, or set \"sandbox\": {{\"strict_policy\": false}} to only warn",
                        rule.guard.unwrap_or("deny")
                    )
                };
                format!("{message}{hint} ({why})")
            })
            .collect();
        if !refused.is_empty() {
            return Err(UsageError(refused.join("; ")));
        }
        for (_, message) in &found {
            crate::term::errln(&format!(
                "mcp-sandbox: warning: {}",
                crate::term::escape(message)
            ));
        }
        crate::tools::catalog::on_relist(Box::new(move |server, tools| {
            let tools: Vec<String> = tools
                .iter()
                .map(|t| format!("{server}:{}", t.name))
                .collect();
            for (_, message) in unmatched(&rules, &[server.to_string()], &tools) {
                count_unmatched_after_relist();
                tracing::warn!(server, "after list_changed: {message}");
            }
        }));
        Ok(())
    }

    /// The `--approve` patterns.
    pub fn pre_approved(&self) -> Result<crate::context::policy::PreApproved, UsageError> {
        crate::context::policy::PreApproved::new(&self.approve)
            .map_err(|e| UsageError(format!("--approve: {e}")))
    }

    pub fn approval_timeout(&self) -> Result<std::time::Duration, UsageError> {
        if self.approval_timeout_ms == 0 {
            return Err(UsageError(
                "--approval-timeout-ms must be at least 1 (milliseconds)".into(),
            ));
        }
        Ok(std::time::Duration::from_millis(self.approval_timeout_ms))
    }
}

/// A usage or configuration error: printed as one line, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl RunnerArgs {
    pub fn command(&self) -> RunnerCommand {
        let mut cmd = match &self.runner {
            Some(program) => RunnerCommand::new(program.clone()),
            None => RunnerCommand::located(),
        };
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
    let catalog = start_catalog(config, only).await?;
    for (name, reason) in catalog.unavailable() {
        report_unavailable(name, reason);
    }
    Ok(catalog)
}

/// The one report of a server that could not be started.
pub fn report_unavailable(name: &str, reason: &str) {
    crate::term::errln(&format!(
        "mcp-sandbox: warning: MCP server '{name}' is unavailable: {}",
        crate::term::escape(reason)
    ));
}

/// Like [`load_catalog_of`], without reporting the unavailable servers (the caller does).
pub async fn start_catalog(
    config: &Config,
    only: Option<&std::collections::BTreeSet<String>>,
) -> Result<Catalog, UsageError> {
    let mut catalog = Catalog::new();
    let (servers, failed) = start_some_mcp_servers(config, only, None).await;
    for s in servers {
        catalog.add(s).map_err(|e| UsageError(e.to_string()))?;
    }
    for (name, reason) in failed {
        catalog.add_unavailable(name, reason);
    }
    for (name, server) in &config.servers {
        if let Some(bytes) = server.max_arg_bytes {
            catalog.set_max_arg_bytes(name.clone(), bytes);
        }
    }
    Ok(catalog)
}
