//! Finding a confined MCP server's process on the host. A confined server runs in a PID
//! namespace of its own, so the pid it reports (the fixture's `pid`) is a small number of that
//! namespace, the same for every confined process. The fixture's `pid_ns` tool reports who it is
//! instead: `{pid, ns, start}` (its pid as it sees it, its PID namespace, its start time in clock
//! ticks after boot). On the host, the one live process in that namespace with that innermost
//! pid and that start time is the server. The start time keeps the identity exact over time: the
//! kernel reuses a freed namespace's number for the next namespace at once, and the inner pids
//! repeat, but a restarted server starts later than the process it replaces.

use serde_json::Value;
use std::time::{Duration, Instant};

/// The host pid of the live process `id` (the fixture's `pid_ns` answer), or `None` when no
/// live process is that one (it ended, or is a zombie).
pub fn server_process(id: &Value) -> Option<u32> {
    let ns = id["ns"].as_str()?;
    let inner = id["pid"].as_u64()?;
    let start = id["start"].as_u64()?;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let same_ns = std::fs::read_link(format!("/proc/{pid}/ns/pid"))
            .is_ok_and(|l| l.to_string_lossy() == ns);
        if same_ns
            && innermost_pid(pid) == Some(inner)
            && start_time(pid) == Some(start)
            && !is_zombie(pid)
        {
            return Some(pid);
        }
    }
    None
}

/// Whether the process `id` (the fixture's `pid_ns` answer) still runs.
pub fn server_alive(id: &Value) -> bool {
    server_process(id).is_some()
}

/// Waits (bounded by `within`) until the process `id` no longer runs; whether it ended.
pub fn server_ended(id: &Value, within: Duration) -> bool {
    let end = Instant::now() + within;
    loop {
        if !server_alive(id) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (bounded by `within`) until no process `pid` is listed any more (ended and reaped by
/// its parent); whether it went.
pub fn process_gone(pid: u32, within: Duration) -> bool {
    let end = Instant::now() + within;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The ancestor of `pid` (itself included) that is a child of this process: for a confined
/// server, the `bwrap` the catalog started. `None` when the chain does not reach this process.
pub fn my_child_above(pid: u32) -> Option<u32> {
    let me = std::process::id();
    let mut at = pid;
    for _ in 0..64 {
        let parent = parent_pid(at)?;
        if parent == me {
            return Some(at);
        }
        if parent <= 1 {
            return None;
        }
        at = parent;
    }
    None
}

/// The last pid of the `NSpid:` line (the pid in the process's own, innermost namespace).
fn innermost_pid(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))?
        .split_whitespace()
        .last()?
        .parse()
        .ok()
}

/// Whether the process has ended and waits to be reaped (state `Z` or `X`).
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z') || r.starts_with('X'))
    })
}

/// Field 22 of /proc/PID/stat (starttime, clock ticks after boot).
fn start_time(pid: u32) -> Option<u64> {
    stat_field(pid, 22)
}

/// Field 4 of /proc/PID/stat (ppid).
fn parent_pid(pid: u32) -> Option<u32> {
    stat_field(pid, 4).and_then(|p| u32::try_from(p).ok())
}

/// Numeric field `n` (1-based, as proc(5) counts) of /proc/PID/stat, for n ≥ 3.
fn stat_field(pid: u32, n: usize) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(n - 3)?.parse().ok()
}
