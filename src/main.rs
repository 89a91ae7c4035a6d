use clap::Parser;
use mcp_sandbox::cli::{self, Cli, Command, EXIT_USAGE};
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_env("MCP_SANDBOX_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-sandbox: cannot start the async runtime: {e}");
            std::process::exit(EXIT_USAGE);
        }
    };
    let status = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => cli::run(args).await,
            Command::Check(args) => cli::check(args).await,
            Command::Tools(args) => cli::tools(args).await,
            Command::Serve(args) => mcp_sandbox::server::serve(args).await,
            Command::Graph(args) => mcp_sandbox::learning_cli::graph(args),
            Command::Capability(args) => mcp_sandbox::learning_cli::capability(args),
            Command::Token(args) => mcp_sandbox::team_cli::token(args),
            Command::Audit(args) => mcp_sandbox::team_cli::audit(args),
        }
    });
    match status {
        Ok(code) => std::process::exit(mcp_sandbox::term::exit_status(code)),
        Err(e) => {
            mcp_sandbox::term::errln(&format!(
                "mcp-sandbox: {}",
                mcp_sandbox::term::escape_lines(&e.to_string())
            ));
            std::process::exit(mcp_sandbox::term::exit_status(EXIT_USAGE));
        }
    }
}
