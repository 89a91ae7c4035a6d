//! `mcp-sandbox auth`: OAuth logins for remote MCP servers whose config entry has `"oauth"`.
//!
//! - `auth login NAME` prints the authorization URL to open, waits for the loopback redirect,
//!   and stores the tokens encrypted in the state file (key: `MCP_SANDBOX_KEY_FILE` or
//!   `MCP_SANDBOX_KEY`).
//! - `auth status` shows, per oauth server, whether tokens are stored and when the access token
//!   expires (no token is printed).
//! - `auth logout NAME` forgets the server's tokens.

use super::learning::StateArgs;
use super::UsageError;
use crate::config::{Config, ServerConfig};
use crate::tools::catalog::oauth;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    pub command: AuthCommand,
}

#[derive(Debug, Args)]
pub struct AuthCommon {
    /// MCP servers configuration (`{"mcpServers": {...}}`).
    #[arg(long, value_name = "PATH")]
    pub config: PathBuf,
    #[command(flatten)]
    pub state: StateArgs,
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Authorize mcp-sandbox at a remote server (OAuth authorization code + PKCE): prints the
    /// URL to open and waits for the redirect to a loopback port.
    Login {
        /// The server's name in the config.
        server: String,
        #[command(flatten)]
        common: AuthCommon,
        /// How long to wait for the redirect, in seconds.
        #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout_secs: u64,
    },
    /// Show which oauth servers have stored tokens.
    Status {
        #[command(flatten)]
        common: AuthCommon,
    },
    /// Forget a server's stored tokens.
    Logout {
        server: String,
        #[command(flatten)]
        common: AuthCommon,
    },
}

fn load(common: &AuthCommon) -> Result<Config, UsageError> {
    let config = Config::load(&common.config).map_err(|e| UsageError(e.to_string()))?;
    let state = common
        .state
        .path(Some(&config))
        .map_err(|e| UsageError(e.to_string()))?;
    oauth::use_state_file(state);
    Ok(config)
}

fn oauth_server<'a>(config: &'a Config, name: &str) -> Result<&'a ServerConfig, UsageError> {
    let server = config.servers.get(name).ok_or_else(|| {
        UsageError(format!(
            "no server '{name}' in the config (servers: {})",
            config
                .servers
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    if server.oauth.is_none() {
        return Err(UsageError(format!(
            "server '{name}' does not use OAuth: add \"oauth\": {{}} to its entry (a url server)"
        )));
    }
    Ok(server)
}

/// Runs an `auth` subcommand; the exit status.
pub async fn command(args: AuthArgs) -> Result<i32, UsageError> {
    match args.command {
        AuthCommand::Login {
            server,
            common,
            timeout_secs,
        } => {
            let config = load(&common)?;
            let entry = oauth_server(&config, &server)?;
            let shown = |url: &str| {
                crate::term::outln(&format!(
                    "Open this URL to authorize mcp-sandbox at '{}':\n{}",
                    crate::term::escape(&server),
                    crate::term::escape(url)
                ));
            };
            oauth::login(
                &server,
                entry,
                &config.base_dir,
                Duration::from_secs(timeout_secs),
                shown,
            )
            .await
            .map_err(|e| UsageError(format!("auth login {server}: {e}")))?;
            crate::term::outln(&format!(
                "Logged in to '{}'; the tokens are stored encrypted in the state file.",
                crate::term::escape(&server)
            ));
            Ok(0)
        }
        AuthCommand::Status { common } => {
            let config = load(&common)?;
            let mut any = false;
            for (name, entry) in config.servers.iter().filter(|(_, s)| s.oauth.is_some()) {
                any = true;
                crate::term::outln(&crate::term::escape(&oauth::status_line(name, entry)));
            }
            if !any {
                crate::term::outln("no server in the config uses OAuth");
            }
            Ok(0)
        }
        AuthCommand::Logout { server, common } => {
            let config = load(&common)?;
            let entry = oauth_server(&config, &server)?;
            let removed = oauth::logout(&server, entry).map_err(UsageError)?;
            crate::term::outln(&if removed {
                format!("Logged out of '{}'.", crate::term::escape(&server))
            } else {
                format!(
                    "No tokens were stored for '{}'.",
                    crate::term::escape(&server)
                )
            });
            Ok(0)
        }
    }
}
