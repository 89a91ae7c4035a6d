//! The host's side of the zygote: starts `sandbox-runner --zygote` once per sandbox, asks it to
//! fork each runner, and replaces it when it dies, hangs or has forked enough.
//!
//! - A runner is forked with `CLONE_PARENT`, so it is this process's child: the caller adopts
//!   its pid with a pidfd ([`crate::exec::runner_process::ForkedChild`]) and kills, watches and reaps
//!   it like an exec'd runner. Its socket is a fresh socketpair whose runner end travels to the
//!   zygote with `SCM_RIGHTS`.
//! - A zygote that is dead (EOF, EPIPE, reaped), stopped or hung (no reply within
//!   [`FORK_TIMEOUT`]) is SIGKILLed and reaped, and the request is retried once on a new one.
//! - ASLR: forked runners share the zygote's address-space layout. The zygote is therefore
//!   re-exec'd (a new process with fresh randomisation) after [`MAX_FORKS`] forks or
//!   [`MAX_AGE`], whichever comes first.
//! - If the very first zygote cannot start (an old runner binary, a wrapper in `prefix_args`),
//!   the zygote is marked unusable and runners are exec'd, with one warning.

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
use sandbox_runner::zygote_wire::{self, ForkRequest, REPLY_LEN};
use std::io::{IoSlice, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a zygote may take to apply its shared layers and say hello.
pub const START_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a fork may take before the zygote counts as hung.
pub const FORK_TIMEOUT: Duration = Duration::from_secs(1);
/// Forks after which the zygote is re-exec'd (fresh ASLR layout).
pub const MAX_FORKS: u64 = 1024;
/// Age after which the zygote is re-exec'd (fresh ASLR layout).
pub const MAX_AGE: Duration = Duration::from_secs(300);

/// What a zygote is started from: the runner program and the ids its runners drop to (the parts
/// of a `RunnerCommand` the zygote needs; the command holds the zygote, so this file does not
/// import it).
#[derive(Debug, Clone, Copy)]
pub struct ZygoteProgram<'a> {
    pub program: &'a std::path::Path,
    pub uid: u32,
    pub gid: u32,
}

/// Why a runner could not be forked.
#[derive(Debug, thiserror::Error)]
pub enum ZygoteError {
    #[error("the zygote cannot be used on this machine: {0}")]
    Unusable(String),
    #[error("cannot start the zygote {program}: {why}")]
    Start { program: String, why: String },
    #[error("the zygote failed a fork request: {0}")]
    Fork(String),
}

/// One running zygote.
struct Zygote {
    child: Child,
    control: UnixStream,
    forks: u64,
    started: Instant,
}

impl Zygote {
    fn stale(&self) -> bool {
        self.forks >= MAX_FORKS || self.started.elapsed() >= MAX_AGE
    }

    /// Kills and reaps it (SIGKILL works on a stopped process too).
    fn end(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

#[derive(Default)]
struct State {
    current: Option<Zygote>,
    /// Set when the first zygote could not start: runners are exec'd from then on.
    unusable: Option<String>,
    /// Whether any zygote ever said hello.
    worked: bool,
    /// Zygotes started so far (for tests and diagnostics).
    started: u64,
}

/// The zygote of one runner command (one per sandbox); shared by its clones.
#[derive(Default)]
pub struct Zygotes {
    state: Mutex<State>,
}

impl std::fmt::Debug for Zygotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Zygotes")
    }
}

impl Zygotes {
    /// Why the zygote cannot be used here, once that is known.
    pub fn unusable(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.unusable.clone())
    }

    /// The pid of the current zygote, if one runs (for tests and `check`).
    pub fn pid(&self) -> Option<u32> {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.current.as_ref().map(|z| z.child.id()))
    }

    /// How many zygotes were started so far.
    pub fn started(&self) -> u64 {
        self.state.lock().map(|s| s.started).unwrap_or(0)
    }

    /// Forks a runner: its pid (a child of this process) and the host's end of its socket.
    pub fn fork(
        &self,
        cmd: ZygoteProgram<'_>,
        req: ForkRequest,
    ) -> Result<(u32, UnixStream), ZygoteError> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| ZygoteError::Fork("internal error: a poisoned lock".into()))?;
        if let Some(why) = &state.unusable {
            return Err(ZygoteError::Unusable(why.clone()));
        }
        let mut last = None;
        for _attempt in 0..2 {
            let keep = match state.current.as_mut() {
                Some(z) => z.alive() && !z.stale(),
                None => false,
            };
            if !keep {
                if let Some(old) = state.current.take() {
                    old.end();
                }
                match start(cmd) {
                    Ok(z) => {
                        state.current = Some(z);
                        state.worked = true;
                        state.started += 1;
                    }
                    Err(e) if !state.worked => {
                        tracing::warn!("runners will be exec'd: {e}");
                        state.unusable = Some(e.to_string());
                        return Err(ZygoteError::Unusable(e.to_string()));
                    }
                    Err(e) => return Err(e),
                }
            }
            let Some(z) = state.current.as_mut() else {
                continue;
            };
            match fork_one(z, req) {
                Ok(r) => {
                    z.forks += 1;
                    return Ok(r);
                }
                Err((e, host_end)) => {
                    tracing::warn!("replacing the zygote: {e}");
                    if let Some(old) = state.current.take() {
                        old.end();
                    }
                    if let Some(host_end) = host_end {
                        reap_unannounced(host_end);
                    }
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| ZygoteError::Fork("no zygote".into())))
    }

    /// Kills the current zygote (the next fork starts a new one).
    pub fn shutdown(&self) {
        if let Ok(mut s) = self.state.lock() {
            if let Some(z) = s.current.take() {
                z.end();
            }
        }
    }
}

impl Drop for Zygotes {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts `program --zygote` with its control socket at fd 3 and waits for its hello.
fn start(cmd: ZygoteProgram<'_>) -> Result<Zygote, ZygoteError> {
    let program = cmd.program.to_path_buf();
    let fail = |why: String| ZygoteError::Start {
        program: program.display().to_string(),
        why,
    };
    let (host_end, zygote_end) = UnixStream::pair().map_err(|e| fail(e.to_string()))?;
    let zygote_fd: OwnedFd = zygote_end.into();
    let raw = zygote_fd.as_raw_fd();
    let mut command = Command::new(&program);
    command
        .arg("--zygote")
        .arg("--uid")
        .arg(cmd.uid.to_string())
        .arg("--gid")
        .arg(cmd.gid.to_string())
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (dup2, fcntl, close_range) on integers; it allocates nothing.
    unsafe {
        command.pre_exec(crate::exec::runner_process::socket_at_fd3(raw));
        // Dies with the host: the zygote sets it again after its uid drop (which clears it).
        command.pre_exec(crate::tools::catalog::process_tree::die_with_host());
    }
    // Forked by the spawning thread, so the death signal (the zygote's, and that of the
    // runners it forks with CLONE_PARENT, whose parent is this thread) follows the process.
    let mut child = crate::tools::catalog::spawn_thread::on_spawn_thread(move || command.spawn())
        .map_err(|e| fail(e.to_string()))?;
    drop(zygote_fd);
    let mut hello = [0u8; REPLY_LEN];
    let read = host_end
        .set_read_timeout(Some(START_TIMEOUT))
        .and_then(|()| (&host_end).read_exact(&mut hello));
    if let Err(e) = read {
        let _ = child.kill();
        let status = child.wait().ok();
        return Err(fail(format!(
            "it did not say hello ({e}; it ended with {status:?}); is {} a sandbox-runner that knows --zygote?",
            program.display()
        )));
    }
    if hello != zygote_wire::hello() {
        let _ = child.kill();
        let _ = child.wait();
        return Err(fail(format!(
            "its hello {hello:?} is not this host's (a sandbox-runner of another version?)"
        )));
    }
    let _ = host_end.set_write_timeout(Some(FORK_TIMEOUT));
    let _ = host_end.set_read_timeout(Some(FORK_TIMEOUT));
    Ok(Zygote {
        child,
        control: host_end,
        forks: 0,
        started: Instant::now(),
    })
}

/// How long to wait for a runner forked by a zygote that died before naming it.
const UNANNOUNCED_WAIT: Duration = Duration::from_secs(2);

/// After a failed fork request, with the zygote killed and reaped: if it had forked the runner
/// before failing, that runner (our child, holding the other end of `host_end`) is found by its
/// `ready` frame, killed and reaped, so it never stays a zombie. With no such runner every
/// copy of the other end is closed and the read ends at once.
fn reap_unannounced(host_end: UnixStream) {
    let _ = host_end.set_read_timeout(Some(UNANNOUNCED_WAIT));
    let mut len = [0u8; 4];
    if (&host_end).read_exact(&mut len).is_err() {
        return;
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > 64 * 1024 {
        return;
    }
    let mut payload = vec![0u8; len];
    if (&host_end).read_exact(&mut payload).is_err() {
        return;
    }
    let Ok(sandbox_runner::protocol::RunnerMessage::Ready { pid, .. }) =
        sandbox_runner::protocol::decode_from_runner(&payload)
    else {
        return;
    };
    // Only a child of ours that is a runner (a runner not yet past its lockdown names itself;
    // the check keeps a wrong pid from reaching any other process).
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some((comm, rest)) = stat.split_once(") ") else {
        return;
    };
    let ppid: u32 = rest
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    if !comm.ends_with("(sandbox-runner") || ppid != std::process::id() {
        return;
    }
    tracing::warn!(
        pid,
        "a runner forked by a failed zygote was killed and reaped"
    );
    let Ok(pid) = i32::try_from(pid) else { return };
    // SAFETY: kill and waitpid on our own child, checked above; no memory is passed but a
    // local integer.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut raw = 0;
        libc::waitpid(pid, &mut raw, 0);
    }
}

/// One fork request on a live zygote. On failure, the host's end of the runner's socket is
/// returned when the zygote may have forked it already.
fn fork_one(
    z: &mut Zygote,
    req: ForkRequest,
) -> Result<(u32, UnixStream), (ZygoteError, Option<UnixStream>)> {
    let (host_end, runner_end) =
        UnixStream::pair().map_err(|e| (ZygoteError::Fork(format!("socketpair: {e}")), None))?;
    let bytes = req.encode();
    let fds = [runner_end.as_raw_fd()];
    let sent = sendmsg::<()>(
        z.control.as_raw_fd(),
        &[IoSlice::new(&bytes)],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map_err(|e| (ZygoteError::Fork(format!("sending the request: {e}")), None))?;
    if sent != bytes.len() {
        return Err((
            ZygoteError::Fork(format!("sent {sent} of {} bytes", bytes.len())),
            Some(host_end),
        ));
    }
    drop(runner_end);
    let mut reply = [0u8; REPLY_LEN];
    if let Err(e) = (&z.control).read_exact(&mut reply) {
        let why = match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
                "no answer within {} ms (stopped or hung)",
                FORK_TIMEOUT.as_millis()
            ),
            std::io::ErrorKind::UnexpectedEof => "it closed its socket (it died)".to_string(),
            _ => e.to_string(),
        };
        return Err((ZygoteError::Fork(why), Some(host_end)));
    }
    match zygote_wire::decode_reply(&reply) {
        Ok(pid) => Ok((pid, host_end)),
        Err(errno) => Err((
            ZygoteError::Fork(format!(
                "fork failed: {}",
                std::io::Error::from_raw_os_error(errno)
            )),
            None,
        )),
    }
}
