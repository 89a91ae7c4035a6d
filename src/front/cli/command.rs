//! The whole command line as clap sees it: one variant per subcommand, each parsed into the
//! arguments its own file defines.

use super::auth::AuthArgs;
use super::check::CheckArgs;
use super::learning::{CapabilityArgs, GraphArgs};
use super::policy::PolicyArgs as PolicyCommandArgs;
use super::run::RunArgs;
use super::team::{AuditArgs, TokenArgs};
use super::tools::ToolsArgs;
use super::ui::UiArgs;
use clap::{Parser, Subcommand};

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
    Serve(crate::front::mcp::ServeArgs),
    /// Show the tool graph learned from executions (or `graph next TOOL`).
    Graph(GraphArgs),
    /// Save, list, show and remove capabilities (code callable as `mcp.namespace.action()`).
    Capability(CapabilityArgs),
    /// OAuth logins for remote MCP servers (`auth login NAME`, `auth status`, `auth logout NAME`).
    Auth(AuthArgs),
    /// Create, list and revoke API tokens for `serve --http`.
    Token(TokenArgs),
    /// Query the audit log (one record per execution).
    Audit(AuditArgs),
    /// Test a policy before deploying it: `policy explain --config F --call 'server:tool {json}'`.
    Policy(PolicyCommandArgs),
    /// Serve the web view of a state store (executions, waterfalls, the tool graph,
    /// capabilities) at http://ADDR/ui, loopback only; `serve --http` serves it too.
    Ui(UiArgs),
}
