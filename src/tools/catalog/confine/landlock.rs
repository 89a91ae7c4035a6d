//! Landlock inside a confined server's sandbox. bubblewrap has no Landlock option, and a ruleset
//! applied before bubblewrap would forbid its own mounts; so bubblewrap runs the mcp-sandbox
//! executable (bound read-only at [`EXE`]) as `mcp-sandbox __server-landlock RULES -- SERVER…`,
//! which restricts itself with Landlock and then execs the server (the ruleset is inherited
//! across `execve` and by every child). bubblewrap has set `no_new_privs` and loaded the seccomp
//! filter by then; the Landlock calls are not in that filter.
//!
//! What the ruleset adds to the mount view: the mount view decides what exists; Landlock
//! decides where the server may write and what it may execute. Read (and execute) under the
//! system and install roots, `files.read` and the executable itself; read, write and execute
//! under the private home, `files.write`, the writable layer and the egress socket directory;
//! read and write without execute under `/tmp` and `/dev/shm`; the device files of `/dev`
//! (read, write, their ioctls; nothing created there); `/proc` read-only; every directory
//! listable. Nothing else: bubblewrap's root and `/dev` are tmpfs the server could otherwise
//! write (unbounded, outside `limits.tmpMb`). Signals and abstract Unix sockets are scoped to the
//! sandbox (Landlock ABI 6).
//!
//! Best effort per kernel: the ruleset asks for ABI [`ABI_ASKED`]; a kernel with less enforces
//! what it knows, and the wrapper says what held in [`REPORT_VAR`] of the server's environment
//! (`check --config` shows it). A kernel without Landlock runs the server with the rest of the
//! sandbox and the report says so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "__server-landlock";
/// Where the mcp-sandbox executable is bound inside the sandbox (the egress bridge's too).
pub const EXE: &str = crate::tools::egress::EgressPlan::BRIDGE_EXE;
/// The variable of the server's environment holding the wrapper's report.
pub const REPORT_VAR: &str = "MCP_SANDBOX_LANDLOCK";
/// The newest Landlock ABI this ruleset is written for (filesystem rights of ABI 5, scopes of 6).
pub const ABI_ASKED: i32 = 6;

/// The paths of one server's ruleset, each with its class of rights.
#[derive(Debug, Default, Clone)]
pub struct Rules {
    /// Read and execute.
    pub rx: Vec<PathBuf>,
    /// Read, write and execute.
    pub rwx: Vec<PathBuf>,
    /// Read and write, no execute.
    pub rw: Vec<PathBuf>,
    /// Device files: read, write, ioctl; nothing made.
    pub dev: Vec<PathBuf>,
    /// Read only.
    pub ro: Vec<PathBuf>,
}

impl Rules {
    /// The argv put before the server's program inside the sandbox.
    pub fn wrapper_argv(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![EXE.into(), SUBCOMMAND.into()];
        for (flag, paths) in [
            ("--rx", &self.rx),
            ("--rwx", &self.rwx),
            ("--rw", &self.rw),
            ("--dev", &self.dev),
            ("--ro", &self.ro),
        ] {
            for p in paths {
                argv.push(flag.into());
                argv.push(p.into());
            }
        }
        argv.push("--".into());
        argv
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WrapperError {
    #[error("landlock ruleset: {0}")]
    Ruleset(#[from] ::landlock::RulesetError),
    #[error("cannot run the server `{program}`: {source}")]
    Exec {
        program: String,
        source: std::io::Error,
    },
    #[error("no server command after `--`")]
    NoCommand,
}

/// Restricts this process with `rules`; the report of what held.
pub fn restrict(rules: &Rules) -> Result<String, WrapperError> {
    use ::landlock::{
        path_beneath_rules, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, ABI,
    };
    let abi = ABI::from(ABI_ASKED);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let rx = read | AccessFs::Execute;
    let rw = read | AccessFs::from_write(abi);
    let rwx = rw | AccessFs::Execute;
    let dev = read | AccessFs::WriteFile | AccessFs::IoctlDev;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?
        // Every directory may be listed (the mount view decides what is there).
        .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))?
        .add_rules(path_beneath_rules(&rules.rx, rx))?
        .add_rules(path_beneath_rules(&rules.rwx, rwx))?
        .add_rules(path_beneath_rules(&rules.rw, rw))?
        .add_rules(path_beneath_rules(&rules.dev, dev))?
        .add_rules(path_beneath_rules(&rules.ro, read))?
        .restrict_self()?;
    let held = match status.ruleset {
        RulesetStatus::FullyEnforced => "fully enforced",
        RulesetStatus::PartiallyEnforced => "partially enforced",
        RulesetStatus::NotEnforced => "not enforced",
    };
    Ok(match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => {
            let kernel = kernel_abi.unwrap_or(effective_abi as i32);
            format!("{held} (ruleset abi {ABI_ASKED}, kernel abi {kernel})")
        }
        LandlockStatus::NotEnabled => format!("{held}: Landlock is not enabled in this kernel"),
        LandlockStatus::NotImplemented => format!("{held}: this kernel has no Landlock"),
    })
}

/// `__server-landlock`: restricts itself, then becomes the server (returns only on failure,
/// with the exit status: 125 like `env` when it cannot run the command).
pub fn run(rules: &Rules, command: &[OsString]) -> i32 {
    match restrict_and_exec(rules, command) {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("mcp-sandbox {SUBCOMMAND}: {e}");
            125
        }
    }
}

fn restrict_and_exec(
    rules: &Rules,
    command: &[OsString],
) -> Result<std::convert::Infallible, WrapperError> {
    use std::os::unix::process::CommandExt;
    let (program, args) = command.split_first().ok_or(WrapperError::NoCommand)?;
    let report = restrict(rules)?;
    let source = std::process::Command::new(program)
        .args(args)
        .env(REPORT_VAR, report)
        .exec();
    Err(WrapperError::Exec {
        program: Path::new(program).display().to_string(),
        source,
    })
}
