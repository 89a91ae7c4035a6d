//! The process bound of a confined server. `RLIMIT_NPROC` (set with the other rlimits) binds
//! only a gateway that does not run as root: the kernel never applies it to processes whose
//! real user is root, and a server confined by a root gateway is root outside its user
//! namespace. So each confined server also gets a cgroup of its own with `pids.max` when the
//! gateway may make one (a writable pids controller: cgroup v2's unified tree or v1's `pids`
//! hierarchy); the server joins it before bubblewrap runs. Without one, only the rlimit binds
//! (`check` says which holds).

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// One server process's pids cgroup, removed when dropped (once its processes are gone).
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
    procs: CString,
}

/// Where the gateway's cgroups go: the v1 `pids` hierarchy, or the v2 tree when it offers
/// the controller to its children.
fn base() -> Option<PathBuf> {
    let v1 = Path::new("/sys/fs/cgroup/pids");
    if v1.join("cgroup.procs").is_file() {
        return Some(v1.to_path_buf());
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.subtree_control")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "pids")
        .then(|| v2.to_path_buf())
}

impl PidsCgroup {
    /// A fresh cgroup allowing `max` processes, or `None` when none can be made here.
    pub fn create(max: u64) -> Option<PidsCgroup> {
        let parent = base()?.join("mcp-sandbox-servers");
        let _ = std::fs::create_dir(&parent);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep(&parent));
        let mut id = [0u8; 8];
        getrandom::fill(&mut id).ok()?;
        let name: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let cg = PidsCgroup {
            procs: CString::new(
                dir.join("cgroup.procs")
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .ok()?,
            dir,
        };
        std::fs::write(cg.dir.join("pids.max"), max.to_string()).ok()?;
        Some(cg)
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A `pre_exec` step moving the forked child into the cgroup (open and write only,
    /// async-signal-safe; the path was made before the fork).
    pub fn join(&self) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        let procs = self.procs.clone();
        move || {
            // SAFETY: open/write/close on a NUL-terminated path and a static buffer.
            unsafe {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if n != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        }
    }
}

/// Removes the empty cgroups that processes gone before they could remove theirs left behind
/// (a gateway killed, a CLI command that exited before its removal thread ran). Once per
/// process; only groups older than a minute, so none another gateway has just made and is
/// about to join. The kernel refuses to remove a group that still has processes.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let mut removed = 0usize;
    for e in entries.flatten() {
        let made = e.metadata().and_then(|m| m.modified());
        if made.is_ok_and(|t| t < old) && std::fs::remove_dir(e.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::debug!(removed, "empty pids cgroups of gone servers removed");
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let dir = std::mem::take(&mut self.dir);
        // The group is being killed: the cgroup empties within moments, then goes.
        std::thread::spawn(move || {
            for _ in 0..50 {
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            tracing::debug!(dir = %dir.display(), "a confined server's pids cgroup could not be removed");
        });
    }
}
