//! `mcp-sandbox tools`: the configured servers' tools, plain, as JSON, as TypeScript, or as Python
//! stubs.

use super::{load_catalog, PolicyArgs, UsageError};
use crate::config::Config;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// MCP servers configuration (`{"mcpServers": {...}}`).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Every tool with its schemas, policy verdict, and the unavailable servers, as JSON.
    #[arg(long, conflicts_with_all = ["typescript", "python"])]
    pub json: bool,
    /// TypeScript declarations of the `mcp` API.
    #[arg(long, conflicts_with = "python")]
    pub typescript: bool,
    /// Python stubs of the `mcp` API (for Python scripts).
    #[arg(long)]
    pub python: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// `mcp-sandbox tools`. Unavailable servers are reported, not fatal.
pub async fn command(args: ToolsArgs) -> Result<i32, UsageError> {
    let config = match &args.config {
        Some(p) => Config::load(p).map_err(|e| UsageError(e.to_string()))?,
        None => Config::default(),
    };
    let policy = args.policy.policy(&config)?;
    if let Some(path) = config.state_path() {
        crate::tools::catalog::oauth::use_state_file(path);
    }
    let catalog = load_catalog(&config).await?;
    let text = if args.json {
        serde_json::to_string_pretty(&crate::tools::discovery::to_json(&catalog, &policy))
            .unwrap_or_default()
            + "\n"
    } else if args.typescript {
        crate::tools::discovery::render(&catalog, &policy, &catalog.tools(), true)
    } else if args.python {
        use crate::tools::discovery::{render_as, Stubs};
        render_as(&catalog, &policy, &catalog.tools(), true, Stubs::Python)
    } else {
        crate::tools::discovery::to_text(&catalog, &policy)
    };
    catalog.shutdown().await;
    if args.json {
        crate::term::out(&crate::term::json_safe(&text));
    } else {
        crate::term::out(&crate::term::escape_lines(&text));
    }
    Ok(0)
}
