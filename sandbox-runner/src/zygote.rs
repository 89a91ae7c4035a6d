//! `sandbox-runner --zygote`: one pre-locked parent that forks runners.
//!
//! Started once per sandbox by the host (empty environment, cwd `/`, control socket at fd 3),
//! the zygote creates the QuickJS engine, applies the layers every runner shares
//! ([`lockdown::apply_shared`]: fds, uid drop, the namespaces with the empty root), makes
//! itself not dumpable and sets `no_new_privs`, and says hello ([`zygote_wire::hello`]). Then,
//! for each [`ForkRequest`] (with the runner's socket as `SCM_RIGHTS`), it forks with
//! `CLONE_PARENT` — no exec, no dynamic loading, no new namespace — so the runner is the host's
//! child: the host kills it, reaps it and learns its exit status exactly as for an exec'd runner.
//! The child moves its socket to fd 3, closes the control socket and everything else, applies
//! its own layers ([`lockdown::apply_own`]: Landlock, rlimits, no_new_privs, seccomp) and only
//! then says `ready` and reads user code, like an exec'd runner.
//!
//! The zygote must stay single-threaded (a fork copies only the calling thread), and runs no
//! user code. It exits when the host closes the control socket.

use crate::lockdown::{self, LockdownConfig};
use crate::zygote_wire::{self, ForkRequest, REQUEST_LEN};
use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use std::io::{IoSliceMut, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// What the zygote does for a forked child: everything from here on runs in the child.
/// It is not expected to return; if it does, the child exits with status 127.
pub type RunChild<'a> = &'a mut dyn FnMut(LockdownConfig, &ForkRequest);

/// Why the zygote stopped (it then exits; the host starts a new one).
#[derive(Debug, thiserror::Error)]
pub enum ZygoteError {
    #[error("control socket: {0}")]
    Control(String),
}

/// Serves fork requests until the host hangs up. `run_child` is called in each forked child
/// with its lockdown config and its request, and never returns.
pub fn serve(
    control_fd: RawFd,
    base: &LockdownConfig,
    run_child: RunChild<'_>,
) -> Result<(), ZygoteError> {
    // SAFETY: `control_fd` is the inherited control socket; this function owns it from here on.
    let mut control = unsafe { UnixStream::from_raw_fd(control_fd) };
    // `ps` and tools that look for runners by name tell the zygote from its runners.
    set_name(c"sandbox-zygote");
    control
        .write_all(&zygote_wire::hello())
        .map_err(|e| ZygoteError::Control(e.to_string()))?;
    loop {
        let (req, fd) = match receive(control_fd)? {
            Some(r) => r,
            None => return Ok(()),
        };
        let pid = fork_parent();
        if pid == 0 {
            // The child: its socket becomes fd 3 (replacing its copy of the control socket).
            set_name(c"sandbox-runner");
            let fd = into_fd3(fd);
            let cfg = LockdownConfig {
                socket_fd: fd,
                address_space_bytes: req.address_space_bytes,
                cpu_seconds: req.cpu_seconds.max(1),
                ..base.clone()
            };
            run_child(cfg, &req);
            std::process::exit(127);
        }
        drop(fd);
        let reply = if pid > 0 {
            pid
        } else {
            -i64::from(nix::errno::Errno::last_raw())
        };
        control
            .write_all(&zygote_wire::encode_reply(reply))
            .map_err(|e| ZygoteError::Control(e.to_string()))?;
    }
}

/// One request and the fd it carries; `None` when the host closed the socket.
fn receive(control_fd: RawFd) -> Result<Option<(ForkRequest, OwnedFd)>, ZygoteError> {
    let mut buf = [0u8; REQUEST_LEN];
    let mut cmsg = nix::cmsg_space!([RawFd; 1]);
    let (n, fd) = loop {
        let mut iov = [IoSliceMut::new(&mut buf)];
        match recvmsg::<()>(
            control_fd,
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => {
                let mut fd = None;
                for c in msg
                    .cmsgs()
                    .map_err(|e| ZygoteError::Control(e.to_string()))?
                {
                    if let ControlMessageOwned::ScmRights(fds) = c {
                        for raw in fds {
                            // SAFETY: the kernel just installed these fds in this process; each
                            // is owned once here (extra ones are closed on drop).
                            let owned = unsafe { OwnedFd::from_raw_fd(raw) };
                            if fd.is_none() {
                                fd = Some(owned);
                            }
                        }
                    }
                }
                break (msg.bytes, fd);
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(ZygoteError::Control(e.to_string())),
        }
    };
    if n == 0 {
        return Ok(None);
    }
    match fd {
        Some(fd) if n == REQUEST_LEN => Ok(Some((ForkRequest::decode(&buf), fd))),
        _ => Err(ZygoteError::Control(format!(
            "a request of {n} bytes without exactly one fd (expected {REQUEST_LEN} and one)"
        ))),
    }
}

/// Forks this (single-threaded) process with `CLONE_PARENT`: the child's parent is the host.
/// Returns the child's pid in the parent, 0 in the child, -1 on failure (errno set).
fn fork_parent() -> i64 {
    // SAFETY: a raw clone without a new stack behaves like fork(2): the child continues on a
    // copy of this (only) thread's stack. The zygote is single-threaded and holds no lock
    // while it forks, so the child's copy of the allocator and stdio state is consistent.
    // glibc's cached thread id in the child stays the zygote's; the child never uses
    // pthread_kill/raise before its seccomp filter forbids signals anyway.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    rc as i64
}

/// In the child: moves `fd` to fd 3 and closes every other fd above 2.
fn into_fd3(fd: OwnedFd) -> RawFd {
    use std::os::fd::IntoRawFd;
    let target = crate::protocol::RUNNER_SOCKET_FD;
    let raw = fd.into_raw_fd();
    if raw != target {
        // SAFETY: dup2 onto fd 3 closes the child's copy of the control socket (which no Rust
        // object uses in the child from here on), and `raw` was owned by us.
        unsafe {
            libc::dup2(raw, target);
            libc::close(raw);
        }
    } else {
        // SAFETY: clears close-on-exec on our own fd; no memory effects.
        unsafe { libc::fcntl(raw, libc::F_SETFD, 0) };
    }
    // SAFETY: closes only descriptors above the socket, which nothing in the child owns.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            (target + 1) as libc::c_uint,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        )
    };
    target
}

/// The zygote's own extra hardening after the shared layers: not dumpable (runners, which run
/// as the same uid, cannot ptrace it or read its memory) and `no_new_privs`.
pub fn harden_self() -> Result<(), String> {
    lockdown::prctl::apply()
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Sets this process's name (`comm`, at most 15 bytes).
pub fn set_name(name: &std::ffi::CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from a live CStr.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
}
