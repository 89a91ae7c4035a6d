//! The bound on disk of a confined server's private home and writable layer together
//! (`limits.homeMb`). A per-directory quota needs a filesystem set up for it, which a gateway
//! cannot count on; so the gateway measures: before the server starts (one over its bound does
//! not start, with the path to clean) and, while it runs, every [`POLL`] from a thread of its
//! own. A server found over its bound is killed (SIGKILL to the bubblewrap process, whose
//! sandbox dies with it), logged, and not started again until its files are removed. What it
//! can write between two looks is bounded by its write speed over [`POLL`], and each file by
//! `limits.fileSizeMb`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a running server's home is measured.
pub const POLL: Duration = Duration::from_millis(250);
/// More entries than this count as over any bound (a walk must end, and millions of empty
/// files fill a disk's inodes as surely as bytes fill its blocks).
pub const MAX_ENTRIES: u64 = 100_000;

/// Bytes on disk (allocated blocks, so a sparse file counts what it takes) under `dirs`, not
/// following symbolic links; `u64::MAX` past [`MAX_ENTRIES`]. Unreadable entries are skipped
/// (the server's own files are the gateway user's, so none are).
pub fn used(dirs: &[&Path]) -> u64 {
    let mut total: u64 = 0;
    let mut entries: u64 = 0;
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                return u64::MAX;
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            total = total.saturating_add(meta.blocks().saturating_mul(512));
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// The watch of one server process's home; stops when dropped (with the process).
pub struct HomeQuota {
    stop: Arc<AtomicBool>,
    pid: Arc<AtomicU32>,
}

/// Where the spawner puts the server's pid once it has one.
#[derive(Clone)]
pub struct PidSlot(Arc<AtomicU32>);

impl PidSlot {
    pub fn set(&self, pid: u32) {
        self.0.store(pid, Ordering::Release);
    }
}

/// A home over its bound at start: what it holds.
#[derive(Debug)]
pub struct OverAtStart {
    pub used: u64,
}

impl HomeQuota {
    /// Measures `dirs` now (over `limit` bytes: refused) and starts the watch of the process
    /// whose pid [`HomeQuota::pid_slot`] will receive.
    pub fn start(server: &str, dirs: Vec<PathBuf>, limit: u64) -> Result<HomeQuota, OverAtStart> {
        let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
        let now = used(&refs);
        if now > limit {
            return Err(OverAtStart { used: now });
        }
        let stop = Arc::new(AtomicBool::new(false));
        let pid = Arc::new(AtomicU32::new(0));
        let (s, p, server) = (stop.clone(), pid.clone(), server.to_string());
        let spawned = std::thread::Builder::new()
            .name("home-quota".into())
            .stack_size(64 * 1024)
            .spawn(move || watch(&server, &dirs, limit, &s, &p));
        if let Err(e) = spawned {
            // Without the watch the bound would not hold: say so (the start check did hold).
            tracing::warn!(error = %e, "the home watch of a confined server could not start");
        }
        Ok(HomeQuota { stop, pid })
    }

    pub fn pid_slot(&self) -> PidSlot {
        PidSlot(self.pid.clone())
    }
}

impl Drop for HomeQuota {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

fn watch(server: &str, dirs: &[PathBuf], limit: u64, stop: &AtomicBool, pid: &AtomicU32) {
    let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    loop {
        std::thread::sleep(POLL);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let now = used(&refs);
        if now <= limit {
            continue;
        }
        let target = pid.load(Ordering::Acquire);
        if target == 0 {
            continue;
        }
        if stop.load(Ordering::Acquire) {
            return;
        }
        let target = nix::unistd::Pid::from_raw(target as i32);
        let _ = nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGKILL);
        tracing::warn!(
            server,
            used_mb = now / (1024 * 1024),
            limit_mb = limit / (1024 * 1024),
            home = %refs.first().map(|d| d.display().to_string()).unwrap_or_default(),
            "a confined server's home went over limits.homeMb: the server was killed"
        );
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn used_counts_allocated_blocks_below_every_directory_and_not_through_links() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("f"), vec![7u8; 1 << 20]).unwrap();
        // A sparse file of 1 GiB takes no blocks for its hole.
        let sparse = std::fs::File::create(d.path().join("sparse")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![1u8; 4 << 20]).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
        let n = used(&[d.path()]);
        assert!((1 << 20..(1 << 20) + (256 << 10)).contains(&n), "{n}");
    }

    #[test]
    fn a_home_over_its_bound_does_not_start() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), vec![7u8; 2 << 20]).unwrap();
        let over = HomeQuota::start("s", vec![d.path().to_path_buf()], 1 << 20)
            .err()
            .unwrap();
        assert!(over.used >= 2 << 20, "{}", over.used);
        assert!(HomeQuota::start("s", vec![d.path().to_path_buf()], 8 << 20).is_ok());
    }
}
