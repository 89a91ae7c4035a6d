//! The whole command line as clap sees it: one variant per subcommand, each parsed into the
//! arguments its own file defines.

use super::audit::AuditArgs;
use super::auth::AuthArgs;
use super::check::CheckArgs;
use super::learning::{CapabilityArgs, GraphArgs};
use super::migrate::MigrateArgs;
use super::policy::PolicyArgs as PolicyCommandArgs;
use super::run::RunArgs;
use super::team::TokenArgs;
use super::tools::ToolsArgs;
use super::ui::UiArgs;
use clap::{Parser, Subcommand};
use std::ffi::OsStr;

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
    /// List the tools of the configured MCP servers (plain, --json, --typescript or --python).
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
    /// Run a recorded execution (`--audit-record full`) again with every tool call answered
    /// from its recording, and compare the outcomes (exit 0 equal, 1 not).
    Replay(super::replay::ReplayArgs),
    /// The data-flow labels a principal's sessionless executions read: `labels show|clear
    /// --principal token:NAME` (a clear is audited).
    Labels(super::labels::LabelsArgs),
    /// Test a policy before deploying it: `policy explain --config F --call 'server:tool {json}'`.
    Policy(PolicyCommandArgs),
    /// Serve the web view of a state store (executions, waterfalls, the tool graph,
    /// capabilities) at http://ADDR/ui, loopback only; `serve --http` serves it too.
    Ui(UiArgs),
    /// Bring the state store's schema up to date and exit (run it with the PostgreSQL owner
    /// role; gateways can then run with a role that has row rights only).
    Migrate(MigrateArgs),
    /// Inside a confined server's sandbox: relay 127.0.0.1:PORT to the egress proxy's socket
    /// and run the server as a child (internal; see `tools::egress::bridge`).
    #[command(name = "__egress-bridge", hide = true)]
    EgressBridge(EgressBridgeArgs),
    /// Inside a confined server's sandbox: restrict itself with Landlock, then exec the server
    /// (internal; see `tools::catalog::confine::landlock`).
    #[command(name = "__server-landlock", hide = true)]
    ServerLandlock(ServerLandlockArgs),
}

/// `__server-landlock [--rx P]… [--rwx P]… [--rw P]… [--dev P]… [--ro P]… -- CMD ARGS...`
#[derive(Debug, clap::Args)]
pub struct ServerLandlockArgs {
    /// Read and execute beneath this path.
    #[arg(long)]
    pub rx: Vec<std::path::PathBuf>,
    /// Read, write and execute beneath this path.
    #[arg(long)]
    pub rwx: Vec<std::path::PathBuf>,
    /// Read and write beneath this path, no execute.
    #[arg(long)]
    pub rw: Vec<std::path::PathBuf>,
    /// Device files beneath this path: read, write, ioctl.
    #[arg(long)]
    pub dev: Vec<std::path::PathBuf>,
    /// Read only beneath this path.
    #[arg(long)]
    pub ro: Vec<std::path::PathBuf>,
    /// The server's command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// `__egress-bridge --socket PATH --listen 127.0.0.1:PORT -- CMD ARGS...`
#[derive(Debug, clap::Args)]
pub struct EgressBridgeArgs {
    /// The egress proxy's Unix socket (as seen inside the sandbox).
    #[arg(long)]
    pub socket: std::path::PathBuf,
    /// The loopback address to listen on.
    #[arg(long)]
    pub listen: std::net::SocketAddr,
    /// The server's command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// The variable that sets the async runtime's worker threads (Tokio's own name for it).
pub const WORKER_THREADS_ENV: &str = "TOKIO_WORKER_THREADS";

/// Most worker threads `--worker-threads` or [`WORKER_THREADS_ENV`] may ask for.
pub const MAX_WORKER_THREADS: usize = 1024;

/// The threads [`WORKER_THREADS_ENV`] asks for (`value`: its value, `None` when unset). Read
/// here rather than by Tokio, which panics at start on a value it cannot use.
pub fn workers_from_env(value: Option<&OsStr>) -> Result<Option<usize>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| (1..=MAX_WORKER_THREADS).contains(n))
        .map(Some)
        .ok_or_else(|| {
            format!(
                "{WORKER_THREADS_ENV}={} is not a number of threads from 1 to {MAX_WORKER_THREADS}; set it to one (e.g. 2) or unset it",
                value.to_string_lossy()
            )
        })
}

impl Cli {
    /// The async runtime's worker threads: `serve --worker-threads`, else
    /// [`WORKER_THREADS_ENV`], else `serve`'s default for its front; `None` for the other
    /// commands without the variable (Tokio's default: one per core).
    pub fn runtime_workers(&self, env: Option<&OsStr>) -> Result<Option<usize>, String> {
        if let Command::Serve(serve) = &self.command {
            if let Some(n) = serve.worker_threads {
                return Ok(Some(usize::from(n)));
            }
        }
        if let Some(n) = workers_from_env(env)? {
            return Ok(Some(n));
        }
        Ok(match &self.command {
            Command::Serve(serve) => Some(serve.default_workers()),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workers(args: &[&str], env: Option<&str>) -> Result<Option<usize>, String> {
        let cli = Cli::try_parse_from([&["mcp-sandbox"], args].concat()).unwrap();
        cli.runtime_workers(env.map(OsStr::new))
    }

    #[test]
    fn serve_picks_its_worker_threads() {
        assert_eq!(workers(&["serve"], None), Ok(Some(1)), "stdio: one client");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            workers(&["serve", "--http", "127.0.0.1:0"], None),
            Ok(Some((cores / 2).max(1)))
        );
        assert_eq!(
            workers(&["serve", "--worker-threads", "3"], None),
            Ok(Some(3))
        );
        // The flag wins over the variable, which wins over the defaults.
        assert_eq!(
            workers(&["serve", "--worker-threads", "5"], Some("7")),
            Ok(Some(5))
        );
        assert_eq!(workers(&["serve"], Some("7")), Ok(Some(7)));
        // Other commands: the variable, else Tokio's default.
        assert_eq!(workers(&["check"], None), Ok(None));
        assert_eq!(workers(&["check"], Some("2")), Ok(Some(2)));
        for bad in ["0", "1025", "two"] {
            let err = Cli::try_parse_from(["mcp-sandbox", "serve", "--worker-threads", bad])
                .unwrap_err()
                .to_string();
            assert!(err.contains("--worker-threads"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_bad_thread_variable_is_a_usage_error_not_a_panic() {
        for bad in ["", "0", "-1", "two", "1025", "99999999999999999999999"] {
            let err = workers(&["serve"], Some(bad)).unwrap_err();
            assert!(
                err.starts_with(&format!(
                    "{WORKER_THREADS_ENV}={bad} is not a number of threads from 1 to 1024"
                )),
                "{bad}: {err}"
            );
        }
    }
}
