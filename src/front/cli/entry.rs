//! The `mcp-sandbox` binary's `main`: parse the command line, start the runtime, run the command,
//! exit with its status. It lives in the library, not in `src/main.rs`: the binary crate then has
//! nothing to compile but a call, where it used to instantiate the runtime, the subscriber and
//! every command's future again (81 s of a release build on the CI machine, on the critical path
//! after the library's 144 s; measured 0.7 s after the move).
use crate::front::cli::command::{self, Cli, Command};
use crate::front::cli::{self, EXIT_USAGE};
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// The MCP library's targets that log whole messages (requests, results, notifications: session
/// handles, task ids, `requestState`s and what scripts returned), at `debug`, `trace` and even
/// `info`: kept to their warnings and errors whatever `MCP_SANDBOX_LOG` asks (added last, so a
/// directive of the same target there is replaced).
pub const PAYLOAD_TARGETS: [&str; 2] = ["rmcp::service", "rmcp::transport::streamable_http_server"];

fn quiet_payloads(mut filter: EnvFilter) -> EnvFilter {
    for target in PAYLOAD_TARGETS {
        if let Ok(d) = format!("{target}=warn").parse() {
            filter = filter.add_directive(d);
        }
    }
    filter
}

/// Parses the command line, runs the command, exits with its status.
pub fn main() -> ! {
    let cli = Cli::parse();
    if let Command::EgressBridge(args) = &cli.command {
        // No runtime, no subscriber: the bridge is threads beside a confined server.
        let status = crate::tools::egress::bridge::run(&args.socket, args.listen, &args.command);
        std::process::exit(status);
    }
    if let Command::ServerLandlock(args) = &cli.command {
        // No runtime, no subscriber: it becomes the confined server.
        let rules = crate::tools::catalog::confine::landlock::Rules {
            rx: args.rx.clone(),
            rwx: args.rwx.clone(),
            rw: args.rw.clone(),
            dev: args.dev.clone(),
            ro: args.ro.clone(),
        };
        let status = crate::tools::catalog::confine::landlock::run(&rules, &args.command);
        std::process::exit(status);
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: no escape codes in a log file or a pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(quiet_payloads(
            EnvFilter::try_from_env("MCP_SANDBOX_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        ))
        .init();
    fewer_malloc_arenas_under_an_address_space_limit();
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
            Command::Replay(args) => cli::replay::command(args).await,
            Command::Labels(args) => cli::labels::command(args),
            Command::Policy(args) => cli::policy::command(args).await,
            Command::Ui(args) => cli::ui::command(args).await,
            Command::Migrate(args) => cli::migrate::command(args),
            // Run before the runtime started (above); never reached.
            Command::EgressBridge(_) | Command::ServerLandlock(_) => Ok(EXIT_USAGE),
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

/// Under an address-space limit (`prlimit --as`, `ulimit -v`), glibc's malloc gives each thread
/// that allocates an arena of its own, reserving 64 MiB of address space apiece (up to 8 per
/// core): with one runtime worker per core the reservations pass the limit and a worker thread
/// cannot be spawned (the runtime panics, measured with 64 workers under 1 GB). With a finite
/// limit, the threads share 2 arenas instead.
fn fewer_malloc_arenas_under_an_address_space_limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let limited = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_AS)
            .is_ok_and(|(soft, _)| soft != nix::sys::resource::RLIM_INFINITY);
        if limited {
            // SAFETY: mallopt only changes a malloc tunable; called before any other thread
            // exists (the runtime is not built yet).
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, 2);
            }
        }
    }
}
