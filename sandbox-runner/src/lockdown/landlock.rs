//! Layer 4: Landlock — no filesystem access, no TCP, and (ABI ≥ 6) scoped signals and
//! abstract unix sockets.
//!
//! The ruleset handles every access right the running kernel knows and grants none, so every
//! path-based access (open, create, remove, rename, link, truncate, ioctl on devices, execute…)
//! and every TCP bind/connect is denied, even if seccomp were bypassed. Fds that were already
//! open (the socket, 0, 1, 2) are not affected: Landlock checks at open time.
//!
//! The ABI used is the running kernel's (capped at the newest this code knows), and the
//! ruleset is built with `CompatLevel::HardRequirement`, so nothing is silently dropped. Kernels
//! below ABI 6 cannot express network rules (ABI 4) or scopes (ABI 6); there the ruleset is still
//! applied, but the layer reports "unavailable" naming what is missing.

use ::landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetStatus,
    Scope, ABI,
};
use nix::errno::Errno;

use super::{LayerResult, LockdownError};

/// Newest ABI this module has been written and tested against.
const NEWEST_KNOWN_ABI: i32 = 9;

/// The running kernel's Landlock ABI version, or why there is none.
pub fn kernel_abi() -> Result<i32, LockdownError> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns
    // the ABI version; it reads no memory and creates no fd.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if rc >= 1 {
        return Ok(rc as i32);
    }
    let e = Errno::last();
    let hint = match e {
        Errno::ENOSYS => {
            "the kernel is built without CONFIG_SECURITY_LANDLOCK (needs Linux ≥ 5.13)"
        }
        Errno::EOPNOTSUPP => {
            "Landlock is built in but not enabled: add landlock to the lsm= boot parameter"
        }
        _ => "see landlock_create_ruleset(2)",
    };
    Err(LockdownError::errno("landlock_create_ruleset(VERSION)", e).with_hint(hint))
}

/// Number of threads of this process, if `/proc` tells.
fn thread_count() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

/// Restricts this process with a deny-everything ruleset.
pub fn apply() -> LayerResult {
    let kernel = kernel_abi()?;
    if let Some(n) = thread_count().filter(|n| *n > 1) {
        return Err(LockdownError::Unsupported(format!(
            "the process has {n} threads and Landlock restricts only the calling one; apply \
             the lockdown before starting threads"
        )));
    }
    let used = kernel.min(NEWEST_KNOWN_ABI);
    let abi = ABI::from(used);
    let err = |e: ::landlock::RulesetError| {
        LockdownError::NotHeld(format!("landlock ruleset (abi {used}): {e}"))
    };

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?;
    if used >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(err)?;
    }
    if used >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(err)?;
    }
    // No rules are added: every handled right is denied everywhere.
    let status = ruleset
        .create()
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(LockdownError::NotHeld(format!(
            "the ruleset is {:?} at abi {used}",
            status.ruleset
        )));
    }

    let mut missing = Vec::new();
    if used < 4 {
        missing.push("TCP bind/connect rules (abi 4, Linux 6.7)");
    }
    if used < 6 {
        missing.push("signal and abstract-unix-socket scopes (abi 6, Linux 6.12)");
    }
    if !missing.is_empty() {
        return Err(LockdownError::Unsupported(format!(
            "kernel Landlock abi {kernel} lacks {}; the filesystem ruleset is applied",
            missing.join(" and ")
        )));
    }
    Ok(Some(if kernel > used {
        format!("abi {used}, kernel abi {kernel}")
    } else {
        format!("abi {used}")
    }))
}
