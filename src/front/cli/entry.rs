//! The `mcp-sandbox` binary's `main`: parse the command line, start the runtime, run the command,
//! exit with its status. It lives in the library, not in `src/main.rs`: the binary crate then has
//! nothing to compile but a call, where it used to instantiate the runtime, the subscriber and
//! every command's future again (81 s of a release build on the CI machine, on the critical path
//! after the library's 144 s; measured 0.7 s after the move).
use crate::front::cli::command::{self, Cli, Command};
use crate::front::cli::{self, EXIT_USAGE};
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Parses the command line, runs the command, exits with its status.
pub fn main() -> ! {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: no escape codes in a log file or a pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            EnvFilter::try_from_env("MCP_SANDBOX_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .init();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    // `serve --worker-threads`, TOKIO_WORKER_THREADS (checked here: Tokio panics on garbage),
    // `serve`'s default per front; the other commands take Tokio's otherwise.
    let env = std::env::var_os(command::WORKER_THREADS_ENV);
    match cli.runtime_workers(env.as_deref()) {
        Ok(Some(n)) => {
            builder.worker_threads(n);
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!("mcp-sandbox: {e}");
            std::process::exit(EXIT_USAGE);
        }
    }
    let runtime = match builder.build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-sandbox: cannot start the async runtime: {e}");
            std::process::exit(EXIT_USAGE);
        }
    };
    let status = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => cli::run::command(args).await,
            Command::Check(args) => cli::check::command(args).await,
            Command::Tools(args) => cli::tools::command(args).await,
            Command::Serve(args) => crate::front::mcp::serve(args).await,
            Command::Graph(args) => crate::front::cli::learning::graph(args),
            Command::Capability(args) => crate::front::cli::learning::capability(args),
            Command::Auth(args) => cli::auth::command(args).await,
            Command::Token(args) => cli::team::token(args),
            Command::Audit(args) => cli::audit::audit(args),
            Command::Labels(args) => cli::labels::command(args),
            Command::Policy(args) => cli::policy::command(args).await,
            Command::Ui(args) => cli::ui::command(args).await,
            Command::Migrate(args) => cli::migrate::command(args),
        }
    });
    match status {
        Ok(code) => std::process::exit(crate::term::exit_status(code)),
        Err(e) => {
            crate::term::errln(&format!(
                "mcp-sandbox: {}",
                crate::term::escape_lines(&e.to_string())
            ));
            std::process::exit(crate::term::exit_status(EXIT_USAGE));
        }
    }
}
