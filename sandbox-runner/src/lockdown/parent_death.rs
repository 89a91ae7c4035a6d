//! The runner (and the zygote) die with the host: `PR_SET_PDEATHSIG(SIGKILL)`.
//!
//! The host sets the signal before exec, but the kernel clears it whenever the process's
//! credentials change — the uid drop of the `uid` layer, entering a user namespace — and a
//! process forked by the zygote does not inherit it at all. So it is set again here, after the
//! last credential change and before the seccomp filter (which forbids `prctl`), and the
//! parent is checked afterwards: if the host died before the call, the signal will never
//! come, and the process exits at once instead of running on as an orphan.
//!
//! Not an isolation layer (it protects the host's resources, not the host from the script),
//! so it is not in the isolation report. The kernel sends the signal when the parent *thread*
//! exits; the host forks runners and the zygote from one thread that lives as long as it does.

/// Exit status of a process whose host was gone before it could tie itself to it.
pub const EXIT_ORPHANED: i32 = 6;

/// Sets `PR_SET_PDEATHSIG(SIGKILL)` and exits if the parent is no longer `host`.
pub fn die_with(host: u32) {
    // SAFETY: prctl with integer arguments; changes only this process's death signal.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    // SAFETY: getppid has no arguments and cannot fail.
    let parent = unsafe { libc::getppid() };
    if rc != 0 || u32::try_from(parent).ok() != Some(host) {
        std::process::exit(EXIT_ORPHANED);
    }
}
