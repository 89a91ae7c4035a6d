//! The host owns the whole process tree of every MCP server it starts:
//!
//! - Each server is the leader of its own process group (`setpgid(0, 0)` before exec), so
//!   everything it starts without leaving the group (an `npx` wrapper's `node`, a `sh -c`
//!   child) is signalled with it: SIGTERM to the group when the host is done with the server
//!   (end of `run`, `serve` shutdown, restart after a death, a start that failed or timed out),
//!   SIGKILL to the group after a short grace.
//! - The server gets `PR_SET_PDEATHSIG(SIGKILL)`: if the host dies without cleaning up (SIGKILL,
//!   abort), the kernel kills the server. The signal fires when the *thread* that forked the
//!   server exits, not the process: servers are started from the one spawning thread that
//!   lives as long as the process ([`super::spawn_thread`]). A server's own children do not
//!   inherit the setting: the group watcher ([`super::group_reaper`]) kills the server's whole
//!   process group when the host dies.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::time::Duration;

/// Makes the command's process the leader of a new process group that dies with the host.
pub fn own_tree(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls; see `die_with_host`.
    unsafe {
        cmd.pre_exec(die_with_host());
    }
}

/// A `pre_exec` step: `PR_SET_PDEATHSIG(SIGKILL)`, then a check that the host is still the
/// parent (if it died between fork and prctl the signal would never come: the start fails).
/// Only prctl and getppid, async-signal-safe system calls; it allocates nothing (OS errors are
/// stored inline). The setting survives exec, and the kernel sends it when the forking
/// *thread* exits: fork from [`super::spawn_thread`].
pub fn die_with_host() -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    let parent = std::process::id();
    move || {
        // SAFETY: plain system calls on integers, valid in a forked child before exec.
        unsafe {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        Ok(())
    }
}

/// A server's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessGroup(i32);

impl ProcessGroup {
    /// The group led by `pid` (a process started with [`own_tree`]).
    pub fn of_leader(pid: u32) -> Option<ProcessGroup> {
        i32::try_from(pid).ok().filter(|p| *p > 1).map(ProcessGroup)
    }

    /// The group's id (its leader's pid).
    pub fn id(&self) -> i32 {
        self.0
    }

    /// Sends `signal` to every process of the group (a group already gone is fine).
    pub fn signal(&self, signal: Signal) {
        match killpg(Pid::from_raw(self.0), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => tracing::warn!(
                pgid = self.0,
                "cannot send {signal} to the process group: {e}"
            ),
        }
    }

    /// Whether a process of the group still runs. Zombies do not count: an exited process
    /// stays in the group until its parent reaps it, which may be after this wait.
    pub fn exists(&self) -> bool {
        if killpg(Pid::from_raw(self.0), None).is_err() {
            return false;
        }
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return true;
        };
        dir.flatten().any(|e| {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                return false;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // pid (comm) state ppid pgrp ...
            let mut fields = stat
                .rsplit_once(") ")
                .map(|(_, r)| r)
                .unwrap_or("")
                .split(' ');
            let state = fields.next().unwrap_or("Z");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
            pgrp == Some(self.0) && state != "Z" && state != "X"
        })
    }

    /// Waits until the group is empty, at most `within`. Returns whether it is.
    pub async fn wait_gone(&self, within: Duration) -> bool {
        let end = tokio::time::Instant::now() + within;
        loop {
            if !self.exists() {
                return true;
            }
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Kills the group when dropped, unless [`GroupGuard::disarm`]ed: a server that failed to start
/// (or whose start was abandoned) leaves nothing behind.
pub struct GroupGuard(pub Option<ProcessGroup>);

impl GroupGuard {
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            group.signal(Signal::SIGKILL);
        }
    }
}
