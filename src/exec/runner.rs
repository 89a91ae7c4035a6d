//! Starting runner processes: forked by the sandbox's zygote (the default, see
//! [`crate::zygote`]) or exec'd (`--spawn exec`): empty environment, cwd `/`, stdio on
//! /dev/null, its end of a socketpair at fd 3 and no other fd, killed when dropped.

use crate::context::limits::Limits;
use crate::error::{ErrorCode, ExecError};
use crate::exec::runner_process::{ForkedChild, RunnerProcess};
use crate::exec::zygote::{ZygoteError, ZygoteProgram, Zygotes};
use futures::StreamExt;
use sandbox_runner::protocol::{RunnerMessage, PROTOCOL_VERSION};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::time::Instant as TokioInstant;
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};

/// How to start a runner.
#[derive(Debug, Clone)]
pub struct RunnerCommand {
    pub program: PathBuf,
    /// Arguments placed before the lockdown flags (test fixtures use this for their mode).
    pub prefix_args: Vec<String>,
    /// uid/gid the runner drops to when started as root.
    pub uid: u32,
    pub gid: u32,
    /// How runners are made.
    pub spawn: SpawnMode,
    /// The zygote of this command, shared by its clones (started at the first fork).
    pub zygotes: Arc<Zygotes>,
    /// Where `program` was looked for (empty when it was named explicitly): listed by the error
    /// when it is not there.
    pub searched: Vec<String>,
}

/// How runners are made (`--spawn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpawnMode {
    /// Forked by a pre-locked zygote (the default); falls back to `Exec` when the zygote cannot
    /// start on this machine, or when `prefix_args` wraps the runner in another program.
    #[default]
    Zygote,
    /// A new process per runner: fork of the host, exec of `sandbox-runner`, full lockdown.
    Exec,
}

impl SpawnMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SpawnMode::Zygote => "zygote",
            SpawnMode::Exec => "exec",
        }
    }
}

impl std::str::FromStr for SpawnMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zygote" => Ok(SpawnMode::Zygote),
            "exec" => Ok(SpawnMode::Exec),
            other => Err(format!("unknown spawn mode '{other}'; use zygote or exec")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("{}", crate::exec::runner_path::missing_message(program, searched))]
    Missing {
        program: PathBuf,
        searched: Vec<String>,
    },
    #[error("cannot create the runner's socket: {0}")]
    Socket(std::io::Error),
    #[error("cannot start the runner {path}: {source}")]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot fork a runner from the zygote: {0}; try --spawn exec")]
    Zygote(ZygoteError),
    #[error("cannot watch the forked runner {pid}: {source}")]
    Adopt { pid: u32, source: std::io::Error },
}

impl RunnerCommand {
    /// The `sandbox-runner` this host would start by default: `MCP_SANDBOX_RUNNER` when set,
    /// else the first found of the places [`crate::exec::runner_path`] looks at.
    pub fn default_program() -> PathBuf {
        crate::exec::runner_path::locate().program
    }

    /// A command for the default runner ([`Self::default_program`]), remembering where it was
    /// looked for so that the error when it is missing names every place.
    pub fn located() -> Self {
        let found = crate::exec::runner_path::locate();
        RunnerCommand {
            searched: found.searched,
            ..RunnerCommand::new(found.program)
        }
    }

    /// A relative `program` is taken from the host's current directory (the runner itself starts
    /// in `/`, where a relative path would name another file).
    pub fn new(program: PathBuf) -> Self {
        RunnerCommand {
            program: absolute(program),
            prefix_args: Vec::new(),
            uid: 65534,
            gid: 65534,
            spawn: SpawnMode::default(),
            zygotes: Arc::default(),
            searched: Vec::new(),
        }
    }

    /// How this command makes runners now: `Zygote` only if asked, not wrapped in another
    /// program, and the zygote has not proven unusable here.
    pub fn effective_spawn(&self) -> SpawnMode {
        if self.spawn == SpawnMode::Zygote
            && self.prefix_args.is_empty()
            && self.zygotes.unusable().is_none()
        {
            SpawnMode::Zygote
        } else {
            SpawnMode::Exec
        }
    }
}

/// `path` made absolute against the current directory (unchanged if that cannot be read).
fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::path::absolute(&path).unwrap_or(path)
}

/// A started runner: the process and the host's end of the socket.
pub struct SpawnedRunner {
    pub child: RunnerProcess,
    pub socket: tokio::net::UnixStream,
    pub pid: u32,
}

/// Frames arriving from a runner, each at most the frame limit long.
pub type Frames = FramedRead<OwnedReadHalf, LengthDelimitedCodec>;

/// How long a runner may take to exit once it should.
pub const EXIT_GRACE: Duration = Duration::from_millis(1000);

/// The rlimits a runner was started with: a runner can serve an execution only if its backstops
/// are at least what that execution's limits need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backstops {
    pub address_space_mb: u64,
    pub cpu_seconds: u64,
    pub frame_bytes: u64,
}

impl Backstops {
    pub fn for_limits(limits: &Limits) -> Self {
        Backstops {
            address_space_mb: address_space_mb(limits),
            cpu_seconds: limits.cpu_ms.div_ceil(1000) + 1,
            frame_bytes: limits.frame_bytes,
        }
    }

    /// Whether a runner started with `self` can run an execution that needs `need`.
    pub fn covers(&self, need: &Backstops) -> bool {
        self.address_space_mb >= need.address_space_mb
            && self.cpu_seconds >= need.cpu_seconds
            && self.frame_bytes == need.frame_bytes
    }
}

/// A runner that is locked down, said `ready`, and waits for its `execute` frame.
pub struct ReadyRunner {
    pub child: RunnerProcess,
    pub frames: Frames,
    /// Taken by the session that uses the runner.
    pub writer: Option<OwnedWriteHalf>,
    /// Layer → `enforced…` or `unavailable: reason`, as the kernel shows it in `/proc` (see
    /// [`crate::exec::isolation`]); layers `/proc` cannot show are the runner's word, marked so.
    pub isolation: BTreeMap<String, String>,
    pub pid: u32,
    pub backstops: Backstops,
}

impl ReadyRunner {
    /// Kills and reaps the runner.
    pub async fn discard(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// Ends a runner whose execution is over (its `execution_complete` arrived and was checked):
/// kills it at once and reaps it in the background, so the caller does not wait for its exit.
/// A runner that had already died abnormally is logged; the outcome stands.
pub fn retire(mut ready: ReadyRunner) {
    let pid = ready.pid;
    if let Ok(Some(status)) = ready.child.try_wait() {
        if !status.success() {
            let (message, _, _) = describe_exit(&status);
            tracing::warn!(
                pid,
                "{message} (after sending a complete result; the outcome stands)"
            );
        }
        return;
    }
    let _ = ready.child.start_kill();
    tokio::spawn(async move {
        // Reaped once this worker has nothing ready to run: the execution's answer first
        // (see the pool's refill).
        tokio::task::yield_now().await;
        let _ = ready.child.wait().await;
    });
}

/// For whom a runner is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// An execution waits for it: ready as soon as possible.
    Now,
    /// It will wait in the pool: a forked runner also maps the code it will run before it says
    /// `ready` (slower to start, faster to execute; see `sandbox_runner::prefault`).
    Pool,
}

/// Spawns a runner and waits (until `deadline`) for its `ready`, checking the protocol version.
/// `on_spawn` is called with the pid right after the process starts, before it is ready.
pub async fn start(
    cmd: &RunnerCommand,
    limits: &Limits,
    deadline: TokioInstant,
    on_spawn: Option<&(dyn Fn(u32) + Send + Sync)>,
) -> Result<ReadyRunner, ExecError> {
    start_for(Purpose::Now, cmd, limits, deadline, on_spawn).await
}

/// [`start`] for a given [`Purpose`].
pub async fn start_for(
    purpose: Purpose,
    cmd: &RunnerCommand,
    limits: &Limits,
    deadline: TokioInstant,
    on_spawn: Option<&(dyn Fn(u32) + Send + Sync)>,
) -> Result<ReadyRunner, ExecError> {
    let unavailable = |e: String| ExecError::new(ErrorCode::SandboxUnavailable, e);
    // A runner for the pool is started off the async workers: asking the zygote to fork waits
    // for its answer (a blocking read, ~0.1-0.3 ms), and with one worker (`serve` over stdio)
    // that wait would delay the next request. An execution waiting for its runner asks inline:
    // a hand-off to a blocking thread and back would add to its latency.
    let spawned = match purpose {
        Purpose::Pool => {
            let (cmd, limits) = (cmd.clone(), *limits);
            tokio::task::spawn_blocking(move || spawn(&cmd, &limits, purpose))
                .await
                .map_err(|e| unavailable(format!("starting a runner failed: {e}")))?
        }
        Purpose::Now => spawn(cmd, limits, purpose),
    };
    let SpawnedRunner {
        mut child,
        socket,
        pid,
    } = spawned.map_err(|e| unavailable(e.to_string()))?;
    if let Some(hook) = on_spawn {
        hook(pid);
    }
    let max_frame = usize::try_from(limits.frame_bytes).unwrap_or(usize::MAX);
    let (read_half, writer) = socket.into_split();
    let codec = LengthDelimitedCodec::builder()
        .big_endian()
        .length_field_length(4)
        .max_frame_length(max_frame)
        .new_codec();
    let mut frames = FramedRead::new(read_half, codec);
    let isolation = match tokio::time::timeout_at(deadline, frames.next()).await {
        Err(_) => Err(ExecError::new(
            ErrorCode::ExecutionTimeout,
            format!(
                "the runner did not become ready within the {} ms time limit; it was killed",
                limits.timeout_ms
            ),
        )),
        Ok(None) => Err(crashed(&mut child, "before it was ready").await),
        Ok(Some(Err(e))) => Err(frame_error(&mut child, e, "before it was ready").await),
        Ok(Some(Ok(payload))) => match sandbox_runner::protocol::decode_from_runner(&payload) {
            Ok(RunnerMessage::Ready {
                protocol,
                isolation,
                ..
            }) if protocol == PROTOCOL_VERSION => Ok(isolation),
            Ok(RunnerMessage::Ready { protocol, .. }) => Err(protocol_error(format!(
                "runner speaks protocol {protocol}, this host speaks {PROTOCOL_VERSION}; install matching mcp-sandbox and sandbox-runner binaries"
            ))),
            Ok(_) => Err(protocol_error("its first frame was not ready".into())),
            Err(e) => Err(protocol_error(e.to_string())),
        },
    };
    // The runner's word is a claim: each layer is taken from what the kernel shows (a pooled
    // runner's ~15 `/proc` reads off the async workers, as above).
    let check = move |claimed: BTreeMap<String, String>| {
        crate::exec::isolation::verify(&claimed, &crate::exec::isolation::observe(pid))
    };
    let isolation = match (isolation, purpose) {
        (Ok(claimed), Purpose::Pool) => tokio::task::spawn_blocking(move || check(claimed))
            .await
            .map_err(|e| unavailable(format!("checking a runner's isolation failed: {e}"))),
        (isolation, _) => isolation.map(check),
    };
    match isolation {
        Ok(isolation) => Ok(ReadyRunner {
            child,
            frames,
            writer: Some(writer),
            isolation,
            pid,
            backstops: Backstops::for_limits(limits),
        }),
        Err(e) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            Err(e)
        }
    }
}

/// `PROTOCOL_ERROR` with a message saying the runner was killed.
pub fn protocol_error(message: String) -> ExecError {
    ExecError::new(
        ErrorCode::ProtocolError,
        format!("the runner broke the protocol ({message}); it was killed"),
    )
}

/// A frame could not be read. An oversized length is a protocol error at once; a stream that
/// ends inside a frame is a crash when the runner died abnormally (killed while writing), and a
/// protocol error when it exited 0 after writing half a frame.
pub async fn frame_error(child: &mut RunnerProcess, e: std::io::Error, when: &str) -> ExecError {
    if e.kind() == std::io::ErrorKind::InvalidData {
        return protocol_error(format!("bad frame: {e}"));
    }
    let crash = crashed(child, when).await;
    if crash.signal.is_some() || crash.exit_status.is_some_and(|s| s != 0) {
        return crash;
    }
    protocol_error(format!("bad frame: {e}"))
}

/// The runner's socket closed early: how did it end? Waits briefly, then kills.
pub async fn crashed(child: &mut RunnerProcess, when: &str) -> ExecError {
    let status = match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
        Ok(Ok(s)) => s,
        _ => {
            let _ = child.start_kill();
            match child.wait().await {
                Ok(s) => s,
                Err(e) => {
                    return ExecError::new(
                        ErrorCode::RunnerCrashed,
                        format!("the runner stopped {when} and cannot be waited for: {e}"),
                    )
                }
            }
        }
    };
    let (message, signal, exit_status) = describe_exit(&status);
    if signal == Some(libc::SIGXCPU) {
        // The kernel's CPU-time rlimit (the backstop under the runner's own CPU budget) fired:
        // the script used too much CPU in one step the engine could not interrupt.
        let mut e = ExecError::new(
            ErrorCode::CpuLimit,
            format!(
                "the script used more CPU time than allowed: the kernel's CPU-time limit stopped                  the runner ({when}); look for one very long operation (a huge sort or copy) or                  raise --cpu-ms"
            ),
        );
        e.signal = signal;
        return e;
    }
    let mut e = ExecError::new(ErrorCode::RunnerCrashed, format!("{message} ({when})"));
    e.signal = signal;
    e.exit_status = exit_status;
    e
}

/// Address space for the runner: the QuickJS heap plus room for the binary, stack and allocator.
fn address_space_mb(limits: &Limits) -> u64 {
    limits
        .memory_mb
        .saturating_mul(2)
        .max(limits.memory_mb + 256)
        + limits.frame_bytes.div_ceil(1024 * 1024) * 2
}

pub fn spawn(
    cmd: &RunnerCommand,
    limits: &Limits,
    purpose: Purpose,
) -> Result<SpawnedRunner, SpawnError> {
    // `program` may have been set directly: resolve it here too, before the cwd becomes `/`.
    let program = absolute(cmd.program.clone());
    if !program.is_file() {
        return Err(SpawnError::Missing {
            program,
            searched: cmd.searched.clone(),
        });
    }
    if cmd.effective_spawn() == SpawnMode::Zygote {
        let cmd = RunnerCommand {
            program: program.clone(),
            ..cmd.clone()
        };
        match fork(&cmd, limits, purpose) {
            Err(SpawnError::Zygote(ZygoteError::Unusable(_))) => {}
            other => return other,
        }
    }
    exec(&program, cmd, limits)
}

/// A runner forked by the zygote (a child of this process, adopted through a pidfd).
fn fork(
    cmd: &RunnerCommand,
    limits: &Limits,
    purpose: Purpose,
) -> Result<SpawnedRunner, SpawnError> {
    let req = sandbox_runner::zygote_wire::ForkRequest {
        address_space_bytes: address_space_mb(limits).saturating_mul(1024 * 1024),
        cpu_seconds: limits.cpu_ms.div_ceil(1000) + 1,
        max_frame: limits.frame_bytes,
        pooled: purpose == Purpose::Pool,
    };
    let program = ZygoteProgram {
        program: &cmd.program,
        uid: cmd.uid,
        gid: cmd.gid,
    };
    let (pid, host_end) = cmd.zygotes.fork(program, req).map_err(SpawnError::Zygote)?;
    let child = ForkedChild::adopt(pid).map_err(|source| SpawnError::Adopt { pid, source })?;
    host_end.set_nonblocking(true).map_err(SpawnError::Socket)?;
    let socket = tokio::net::UnixStream::from_std(host_end).map_err(SpawnError::Socket)?;
    Ok(SpawnedRunner {
        child: RunnerProcess::Forked(child),
        socket,
        pid,
    })
}

/// A runner exec'd as a new process (today's path, `--spawn exec`).
fn exec(
    program: &std::path::Path,
    cmd: &RunnerCommand,
    limits: &Limits,
) -> Result<SpawnedRunner, SpawnError> {
    let (host_end, runner_end) =
        std::os::unix::net::UnixStream::pair().map_err(SpawnError::Socket)?;
    let runner_fd: OwnedFd = runner_end.into();
    let raw = runner_fd.as_raw_fd();
    let mut command = tokio::process::Command::new(program);
    command
        .args(&cmd.prefix_args)
        .arg("--uid")
        .arg(cmd.uid.to_string())
        .arg("--gid")
        .arg(cmd.gid.to_string())
        .arg("--address-space-mb")
        .arg(address_space_mb(limits).to_string())
        .arg("--cpu-seconds")
        .arg((limits.cpu_ms.div_ceil(1000) + 1).to_string())
        .arg("--max-frame")
        .arg(limits.frame_bytes.to_string())
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (dup2, fcntl, close_range) on integers; it allocates nothing and touches no
    // locks.
    unsafe {
        command.pre_exec(crate::exec::runner_process::socket_at_fd3(raw));
        // Dies with the host: the runner sets it again after its own uid drop.
        command.pre_exec(crate::tools::catalog::process_tree::die_with_host());
    }
    // Forked by the spawning thread: the death signal follows the process, not a thread.
    let runtime = tokio::runtime::Handle::try_current().map_err(|e| SpawnError::Spawn {
        path: program.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    let child = crate::tools::catalog::spawn_thread::on_spawn_thread(move || {
        let _entered = runtime.enter();
        command.spawn()
    })
    .map_err(|source| SpawnError::Spawn {
        path: program.to_path_buf(),
        source,
    })?;
    drop(runner_fd);
    let pid = child.id().unwrap_or(0);
    host_end.set_nonblocking(true).map_err(SpawnError::Socket)?;
    let socket = tokio::net::UnixStream::from_std(host_end).map_err(SpawnError::Socket)?;
    Ok(SpawnedRunner {
        child: RunnerProcess::Exec(child),
        socket,
        pid,
    })
}

/// Describes how a runner ended, for `RUNNER_CRASHED`.
pub fn describe_exit(status: &std::process::ExitStatus) -> (String, Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        let name = signal_name(sig);
        let why = match sig {
            libc::SIGSYS => ": it made a system call the seccomp filter forbids",
            libc::SIGKILL => " (killed from outside, or by the kernel's out-of-memory killer)",
            libc::SIGXCPU => ": it hit the CPU-time rlimit",
            libc::SIGSEGV | libc::SIGBUS | libc::SIGABRT => ": the JavaScript engine crashed",
            _ => "",
        };
        (
            format!("the runner was killed by signal {sig} ({name}){why}"),
            Some(sig),
            None,
        )
    } else {
        let code = status.code().unwrap_or(-1);
        (
            format!("the runner exited with status {code} before finishing"),
            None,
            Some(code),
        )
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSYS => "SIGSYS",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSTOP => "SIGSTOP",
        _ => "signal",
    }
}
