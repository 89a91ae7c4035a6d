//! A runner process as the host sees it, however it was made: an exec'd child
//! (`tokio::process::Child`) or a runner forked by the zygote with `CLONE_PARENT`, which is
//! also this process's child and is watched through a pidfd. Either way the host can kill it,
//! learns of its death at once, and reaps it with its exit status.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use tokio::io::unix::AsyncFd;

/// A runner process. The method names follow `tokio::process::Child`.
#[derive(Debug)]
pub enum RunnerProcess {
    Exec(tokio::process::Child),
    Forked(ForkedChild),
}

impl RunnerProcess {
    /// Sends SIGKILL (a no-op once it has been reaped).
    pub fn start_kill(&mut self) -> io::Result<()> {
        match self {
            RunnerProcess::Exec(c) => c.start_kill(),
            RunnerProcess::Forked(c) => c.start_kill(),
        }
    }

    /// Waits for it to exit and reaps it.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            RunnerProcess::Exec(c) => c.wait().await,
            RunnerProcess::Forked(c) => c.wait().await,
        }
    }

    /// Reaps it if it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            RunnerProcess::Exec(c) => c.try_wait(),
            RunnerProcess::Forked(c) => c.try_wait(),
        }
    }
}

/// A runner forked by the zygote: a child of this process (`CLONE_PARENT`), watched through a
/// pidfd (readable when it exits), killed with `pidfd_send_signal`, reaped with `waitpid`.
/// Dropping it unreaped kills and reaps it.
#[derive(Debug)]
pub struct ForkedChild {
    pid: i32,
    pidfd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
}

impl ForkedChild {
    /// Takes over the child `pid` (it must be a child of this process, not yet reaped, so its
    /// pid cannot have been reused). Call from a tokio runtime.
    pub fn adopt(pid: u32) -> io::Result<Self> {
        let pid = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this new fd; nothing else owns it.
        let owned = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other(
                "a forked runner is watched from a tokio runtime",
            ));
        }
        // SAFETY: `owned` is a valid, open pidfd owned by the AsyncFd for its whole life; it is
        // never closed or replaced while registered.
        let pidfd = unsafe { AsyncFd::register(owned) }?;
        Ok(ForkedChild {
            pid,
            pidfd,
            status: None,
        })
    }

    fn start_kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        // SAFETY: sends SIGKILL through our own pidfd; no memory is passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.get_ref().as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            // ESRCH: it already exited (a zombie waiting to be reaped).
            if e.raw_os_error() != Some(libc::ESRCH) {
                return Err(e);
            }
        }
        Ok(())
    }

    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        reap(self.pid, &mut self.status)
    }

    async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(s) = reap(self.pid, &mut self.status)? {
                return Ok(s);
            }
            let mut guard = self.pidfd.readable().await?;
            match reap(self.pid, &mut self.status)? {
                Some(s) => return Ok(s),
                None => guard.clear_ready(),
            }
        }
    }
}

/// Reaps `pid` if it has exited, remembering its status.
fn reap(pid: i32, status: &mut Option<ExitStatus>) -> io::Result<Option<ExitStatus>> {
    if let Some(s) = *status {
        return Ok(Some(s));
    }
    let mut raw = 0;
    // SAFETY: waitpid on our own unreaped child, writing into a local integer.
    let rc = unsafe { libc::waitpid(pid, &mut raw, libc::WNOHANG) };
    match rc {
        0 => Ok(None),
        r if r == pid => {
            let s = ExitStatus::from_raw(raw);
            *status = Some(s);
            Ok(Some(s))
        }
        _ => Err(io::Error::last_os_error()),
    }
}

impl Drop for ForkedChild {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.start_kill();
            let mut raw = 0;
            // SAFETY: reaps our own child, just sent SIGKILL (works on stopped processes too),
            // so this returns as soon as the kernel has torn it down.
            unsafe { libc::waitpid(self.pid, &mut raw, 0) };
        }
    }
}

/// What a spawned runner or zygote does between fork and exec: its end of the socket becomes fd
/// [`RUNNER_SOCKET_FD`] (kept across exec) and every other inherited fd above it is closed. Only
/// async-signal-safe system calls (dup2, fcntl, close_range) on integers: it allocates nothing
/// and takes no lock, so it is fit for `pre_exec`.
pub fn socket_at_fd3(raw: std::os::fd::RawFd) -> impl FnMut() -> io::Result<()> + Send + Sync {
    use sandbox_runner::protocol::RUNNER_SOCKET_FD;
    move || {
        // SAFETY: plain system calls on integers, valid in the forked child before exec.
        unsafe {
            if raw == RUNNER_SOCKET_FD {
                // Already at fd 3: only clear close-on-exec.
                if libc::fcntl(raw, libc::F_SETFD, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(raw, RUNNER_SOCKET_FD) < 0 {
                return Err(io::Error::last_os_error());
            }
            // Every other inherited fd above 3 goes; errors are harmless (they are close-on-exec).
            libc::syscall(
                libc::SYS_close_range,
                (RUNNER_SOCKET_FD + 1) as libc::c_uint,
                libc::c_uint::MAX,
                0 as libc::c_uint,
            );
        }
        Ok(())
    }
}
