//! Layer 5: resource limits — hard backstops the process cannot raise again.
//!
//! - `RLIMIT_AS`: the address space (a backstop above the QuickJS heap limit).
//! - `RLIMIT_CPU`: soft = the budget (SIGXCPU), hard = budget + 1 s (SIGKILL).
//! - `RLIMIT_NOFILE`: socket fd + 1, so no new fd number is available.
//! - `RLIMIT_NPROC`: 0, so no process or thread can be created (counted per real uid; root
//!   ignores it, which is one reason the uid drop comes first).
//! - `RLIMIT_CORE`: 0, no core dump with the script's data.
//!
//! Not `RLIMIT_FSIZE`: it kills with SIGXFSZ when a process writes to a redirected stdout or
//! stderr file, and the runner cannot create files anyway.
//!
//! Soft and hard are set to the same value (CPU: hard one second above), so the limits cannot
//! be raised again without CAP_SYS_RESOURCE in the initial user namespace. When the current
//! hard limit is already lower than asked, the lower one is kept (it is stronger).

use nix::sys::resource::{getrlimit, setrlimit, Resource};

use super::{LayerResult, LockdownConfig, LockdownError};

/// The limits this layer sets: (resource, name, soft, hard).
pub fn planned(cfg: &LockdownConfig) -> Vec<(Resource, &'static str, u64, u64)> {
    let nofile = (cfg.socket_fd.max(2) as u64) + 1;
    vec![
        (
            Resource::RLIMIT_AS,
            "RLIMIT_AS",
            cfg.address_space_bytes,
            cfg.address_space_bytes,
        ),
        (
            Resource::RLIMIT_CPU,
            "RLIMIT_CPU",
            cfg.cpu_seconds,
            cfg.cpu_seconds.saturating_add(1),
        ),
        (Resource::RLIMIT_NOFILE, "RLIMIT_NOFILE", nofile, nofile),
        (Resource::RLIMIT_NPROC, "RLIMIT_NPROC", 0, 0),
        (Resource::RLIMIT_CORE, "RLIMIT_CORE", 0, 0),
    ]
}

/// Sets and checks every limit.
pub fn apply(cfg: &LockdownConfig) -> LayerResult {
    let mut failures = Vec::new();
    let mut applied = Vec::new();
    for (res, name, soft, hard) in planned(cfg) {
        match set_one(res, soft, hard) {
            Ok((s, h)) => applied.push((name, s, h)),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    if !failures.is_empty() {
        return Err(LockdownError::NotHeld(failures.join("; ")));
    }
    let show = |name: &str| {
        let (_, s, h) = applied
            .iter()
            .find(|(n, ..)| *n == name)
            .copied()
            .unwrap_or_default();
        if s == h {
            s.to_string()
        } else {
            format!("{s}/{h}")
        }
    };
    Ok(Some(format!(
        "as {} bytes, cpu {} s, nofile {}, nproc {}, core {}",
        show("RLIMIT_AS"),
        show("RLIMIT_CPU"),
        show("RLIMIT_NOFILE"),
        show("RLIMIT_NPROC"),
        show("RLIMIT_CORE")
    )))
}

/// Lowers one limit to (soft, hard), never above the current hard limit, and reads it back.
fn set_one(res: Resource, soft: u64, hard: u64) -> Result<(u64, u64), String> {
    let (_, cur_hard) = getrlimit(res).map_err(|e| format!("getrlimit: {e}"))?;
    let hard = hard.min(cur_hard);
    let soft = soft.min(hard);
    setrlimit(res, soft, hard).map_err(|e| format!("setrlimit({soft}, {hard}): {e}"))?;
    let (s, h) = getrlimit(res).map_err(|e| format!("getrlimit: {e}"))?;
    if s != soft || h != hard {
        return Err(format!("is {s}/{h} after setting {soft}/{hard}"));
    }
    Ok((s, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_matches_the_design() {
        let cfg = LockdownConfig {
            host_pid: None,
            socket_fd: 3,
            uid: 65534,
            gid: 65534,
            address_space_bytes: 256 << 20,
            cpu_seconds: 5,
        };
        let plan = planned(&cfg);
        let get = |n: &str| plan.iter().find(|p| p.1 == n).map(|p| (p.2, p.3));
        assert_eq!(get("RLIMIT_AS"), Some((256 << 20, 256 << 20)));
        assert_eq!(get("RLIMIT_CPU"), Some((5, 6)));
        assert_eq!(get("RLIMIT_NOFILE"), Some((4, 4)));
        assert_eq!(get("RLIMIT_NPROC"), Some((0, 0)));
        assert_eq!(get("RLIMIT_CORE"), Some((0, 0)));
        assert!(plan.iter().all(|p| p.1 != "RLIMIT_FSIZE"));
    }
}
