//! Kills the process groups of the host's MCP servers when the host dies, whatever killed it.
//!
//! A server itself gets `PR_SET_PDEATHSIG(SIGKILL)` ([`super::process_tree::own_tree`]), but
//! what it starts does not inherit that: `npx` → `sh` → `node` would outlive a SIGKILLed host,
//! reparented to init, until it noticed its stdin had closed (if ever). Those processes stay in
//! the server's process group, so a small watcher process kills the groups:
//!
//! - On first use the host maps a shared table of [`SLOTS`] process-group ids
//!   (`MAP_SHARED | MAP_ANONYMOUS`) and a pipe, and forks the watcher (from the spawning
//!   thread; no exec). The watcher closes every fd but the pipe's read end and blocks in
//!   `read`. Only the host holds the write end (close-on-exec: no child keeps it).
//! - The host writes a server's group id into the table when it starts the server and clears
//!   it when the group is gone.
//! - When the host dies, for any reason, the kernel closes the write end: `read` returns 0, the
//!   watcher sends SIGKILL to every group in the table and exits. The same happens when the
//!   host exits normally (groups it has ended are no longer in the table).
//!
//! The watcher runs only async-signal-safe system calls on memory mapped before the fork (the
//! host is multi-threaded), and allocates nothing. If it cannot be started the host works as
//! before, with a warning: servers still die with the host, their children later.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

/// How many server process groups the table holds (more are not watched, with a warning).
pub const SLOTS: usize = 1024;

struct Watcher {
    slots: &'static [AtomicI32; SLOTS],
    /// The pipe's write end; held (never written) for the life of the host.
    _keep: std::os::fd::OwnedFd,
}

fn watcher() -> Option<&'static Watcher> {
    static WATCHER: OnceLock<Option<Watcher>> = OnceLock::new();
    WATCHER
        .get_or_init(|| match super::spawn_thread::on_spawn_thread(start) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(
                    "cannot start the watcher that kills servers' child processes when the host \
                     dies: {e}; they will outlive a killed host until their stdin closes"
                );
                None
            }
        })
        .as_ref()
}

fn start() -> std::io::Result<Watcher> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let bytes = std::mem::size_of::<[AtomicI32; SLOTS]>();
    // SAFETY: a new anonymous shared mapping; the kernel picks the address; nothing aliases it.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the mapping is zeroed, page-aligned, `bytes` long and never unmapped, so a
    // 'static reference to an array of atomics (valid when all-zero) is sound.
    let slots: &'static [AtomicI32; SLOTS] = unsafe { &*map.cast::<[AtomicI32; SLOTS]>() };
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // SAFETY: fork of a multi-threaded process: the child below only makes async-signal-safe
    // system calls (close, close_range, prctl, read, kill, _exit) on integers and the shared
    // mapping, takes no lock and allocates nothing.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: see above; the child never returns into Rust code.
        unsafe { watch(read_end, write_end, slots) }
    }
    // SAFETY: the parent owns its copy of the read end and closes it; the write end is kept.
    unsafe { libc::close(read_end) };
    // SAFETY: `write_end` is a new fd owned from here on by the watcher record.
    let keep = unsafe { OwnedFd::from_raw_fd(write_end) };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Watcher { slots, _keep: keep })
}

/// The watcher process: waits for the host's end of the pipe to close, then kills every
/// group in the table.
///
/// # Safety
/// Call only in a freshly forked child; it ends the process.
unsafe fn watch(read_end: i32, write_end: i32, slots: &[AtomicI32; SLOTS]) -> ! {
    libc::close(write_end);
    // Every inherited fd but the read end goes (sockets, servers' pipes, listeners).
    if read_end > 3 {
        libc::syscall(libc::SYS_close_range, 3u32, (read_end - 1) as u32, 0u32);
    }
    libc::syscall(libc::SYS_close_range, (read_end + 1) as u32, u32::MAX, 0u32);
    libc::prctl(libc::PR_SET_NAME, c"sandbox-reaper".as_ptr());
    let mut byte = 0u8;
    loop {
        let n = libc::read(read_end, (&mut byte as *mut u8).cast(), 1);
        if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
            break;
        }
    }
    for slot in slots.iter() {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 1 {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    libc::_exit(0)
}

/// Watches the process group `pgid` (a server's): it is killed if the host dies.
pub fn watch_group(pgid: i32) {
    let Some(w) = watcher() else { return };
    if pgid <= 1 {
        return;
    }
    let placed = w.slots.iter().any(|s| {
        s.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    });
    if !placed {
        tracing::warn!(
            pgid,
            "more than {SLOTS} server process groups: this one's children may outlive a killed host"
        );
    }
}

/// Stops watching `pgid` (call once the group is gone: its id may then be reused).
pub fn unwatch_group(pgid: i32) {
    let Some(w) = watcher() else { return };
    for s in w.slots.iter() {
        let _ = s.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}
