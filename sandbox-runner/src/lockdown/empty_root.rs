//! Layer 3b: an empty, read-only root, so the host's files and `/proc` are not in the runner's
//! view at all (even if Landlock were bypassed).
//!
//! Inside the new mount namespace (layer 3, while its capabilities are still held): every mount
//! is made private, an empty tmpfs is mounted on an existing directory, the process changes into
//! it and calls `pivot_root(".", ".")`, which stacks the old root on top of the new one, then
//! detaches the old root (with everything under it, `/proc` included) and remounts the tmpfs
//! read-only. This is what bubblewrap and nsjail do; no process is forked, so the process the
//! host spawned is still the one that runs the script.
//!
//! Not done: a PID namespace. `unshare(CLONE_NEWPID)` only moves *children* into the new
//! namespace, so the runner itself would need a fork, and the host verifies, kills and reaps
//! the process it spawned. With `/proc` out of view, no process can be created and signals
//! scoped by Landlock, the runner has no use for other pids anyway.

use std::ffi::CString;

use nix::errno::Errno;

use super::{LayerResult, LockdownError};

/// Directories tried, in order, as the mount point of the new root (any existing one works:
/// the tmpfs hides it only inside the runner's own mount namespace).
const MOUNT_POINTS: &[&str] = &["/tmp", "/mnt", "/run", "/proc", "/dev"];

fn c(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

fn check(rc: libc::c_int, call: &'static str) -> Result<(), LockdownError> {
    if rc != 0 {
        return Err(LockdownError::last(call));
    }
    Ok(())
}

/// Pivots into an empty read-only tmpfs. Needs CAP_SYS_ADMIN in the user namespace that owns
/// the current mount namespace (held right after `unshare`).
pub fn apply() -> LayerResult {
    let root = c("/");
    let none = c("none");
    let tmpfs = c("tmpfs");
    let dot = c(".");
    // SAFETY (for every libc call below): the pointers are NUL-terminated strings that live
    // until the end of this function, or NULL where the call allows it; the calls only change
    // this process's mount namespace, root and cwd.
    check(
        unsafe {
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        },
        "mount(/, MS_REC|MS_PRIVATE)",
    )?;
    let dir = MOUNT_POINTS
        .iter()
        .find(|d| std::path::Path::new(d).is_dir())
        .ok_or_else(|| {
            LockdownError::Unsupported(format!(
                "none of {MOUNT_POINTS:?} exists to mount the empty root on"
            ))
        })?;
    let dir_c = c(dir);
    let opts = c("size=4k,nr_inodes=4,mode=0555");
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    check(
        unsafe {
            libc::mount(
                none.as_ptr(),
                dir_c.as_ptr(),
                tmpfs.as_ptr(),
                flags,
                opts.as_ptr().cast(),
            )
        },
        "mount(tmpfs)",
    )?;
    check(unsafe { libc::chdir(dir_c.as_ptr()) }, "chdir(new root)")?;
    let rc = unsafe { libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) };
    if rc != 0 {
        return Err(LockdownError::last("pivot_root(., .)"));
    }
    check(
        unsafe { libc::umount2(dot.as_ptr(), libc::MNT_DETACH) },
        "umount2(old root, MNT_DETACH)",
    )?;
    check(unsafe { libc::chdir(root.as_ptr()) }, "chdir(/)")?;
    check(
        unsafe {
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags,
                std::ptr::null(),
            )
        },
        "mount(/, MS_REMOUNT|MS_RDONLY)",
    )?;
    verify()
}

/// The new root must be empty, and `/proc` and `/etc` gone.
fn verify() -> LayerResult {
    let entries = std::fs::read_dir("/")
        .map_err(|e| LockdownError::NotHeld(format!("cannot list the new root: {e}")))?
        .count();
    if entries != 0 {
        return Err(LockdownError::NotHeld(format!(
            "the new root is not empty ({entries} entries)"
        )));
    }
    for p in ["/proc/self", "/etc"] {
        let cp = c(p);
        // SAFETY: `st` is a valid, writable stat buffer; `cp` a NUL-terminated path.
        let rc = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            libc::stat(cp.as_ptr(), &mut st)
        };
        if rc == 0 || Errno::last() != Errno::ENOENT {
            return Err(LockdownError::NotHeld(format!(
                "{p} is still visible after pivot_root"
            )));
        }
    }
    Ok(Some(
        "empty read-only tmpfs; no /proc, no host files".into(),
    ))
}
