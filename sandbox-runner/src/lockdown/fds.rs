//! Layer 1: every fd but 0, 1, 2 and the socket is closed.
//!
//! The host already spawns the runner with only those fds; this layer makes sure of it, so an
//! fd leaked by a parent (a log file, a listening socket, a directory) cannot be reached from
//! inside. `RLIMIT_NOFILE` does not close fds above the limit, and seccomp still allows `read`
//! and `write` on any open fd: this layer is what keeps that set to the four expected ones.

use std::collections::BTreeSet;

use super::{LayerResult, LockdownError};

/// Closes every fd except 0, 1, 2 and `socket_fd`, then checks `/proc/self/fd`.
pub fn apply(socket_fd: i32) -> LayerResult {
    if socket_fd < 3 {
        return Err(LockdownError::Unsupported(format!(
            "socket fd {socket_fd} is one of 0, 1, 2; it must be 3 or above"
        )));
    }
    let sock = socket_fd as libc::c_uint;
    let mut ranges = vec![(sock + 1, libc::c_uint::MAX)];
    if sock > 3 {
        ranges.push((3, sock - 1));
    }
    let mut used_close_range = true;
    for (first, last) in ranges {
        // SAFETY: close_range only closes descriptors of this process; no Rust object owns
        // an fd in this range at this point (the caller keeps only the socket, which is
        // excluded), so no owner is left holding a closed number.
        let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint) };
        if rc != 0 {
            used_close_range = false;
        }
    }

    // Check (and, on kernels without close_range, close) what is still open.
    let open = match list_open_fds() {
        Ok(open) => open,
        Err(e) if used_close_range => {
            return Ok(Some(format!(
                "closed all but 0, 1, 2, {socket_fd} with close_range; not re-checked: {e}"
            )))
        }
        Err(e) => {
            return Err(LockdownError::NotHeld(format!(
                "close_range is unavailable (kernel older than 5.9?) and {e}, so other fds \
                 could not be found and closed"
            )))
        }
    };
    let mut leftovers = Vec::new();
    for fd in open {
        if fd > 2 && fd != socket_fd {
            // SAFETY: closing an fd that the kernel lists as open and that is not one this
            // layer keeps; nothing in this process owns it (see above).
            unsafe { libc::close(fd) };
            if fd_is_open(fd) {
                leftovers.push(fd);
            }
        }
    }
    if !leftovers.is_empty() {
        return Err(LockdownError::NotHeld(format!(
            "fds {leftovers:?} are still open after closing them"
        )));
    }
    let mut kept: Vec<String> = [0, 1, 2, socket_fd]
        .iter()
        .filter(|fd| fd_is_open(**fd))
        .map(|fd| fd.to_string())
        .collect();
    if kept.is_empty() {
        kept.push("none".into());
    }
    Ok(Some(format!("open: {}", kept.join(", "))))
}

/// Whether `fd` is an open descriptor of this process.
pub(crate) fn fd_is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads the descriptor flags; an invalid fd yields EBADF.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

/// The fds listed in `/proc/self/fd`, without the one used to read the directory.
fn list_open_fds() -> Result<BTreeSet<i32>, String> {
    let listed: BTreeSet<i32> = std::fs::read_dir("/proc/self/fd")
        .map_err(|e| format!("/proc/self/fd cannot be read ({e}; is /proc mounted?)"))?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    // The directory's own fd appears in the listing but is closed once the iterator is dropped.
    Ok(listed.into_iter().filter(|fd| fd_is_open(*fd)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_is_open_and_a_bogus_fd_is_not() {
        assert!(fd_is_open(0) || fd_is_open(1) || fd_is_open(2));
        assert!(!fd_is_open(1 << 20));
    }

    #[test]
    fn rejects_socket_on_stdio() {
        assert!(apply(1).is_err());
    }
}
