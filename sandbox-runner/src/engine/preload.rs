//! State the C library loads lazily, loaded before the lockdown.
//!
//! glibc reads the time zone (`$TZ`, else `/etc/localtime`) the first time local time is used.
//! QuickJS uses local time for `Date` (`getHours`, `getTimezoneOffset`, `toString`, …); after
//! the lockdown that first read would be an `openat` the seccomp filter forbids, so the runner
//! would die from SIGSYS on ordinary JavaScript. The runner therefore fixes the zone before the
//! lockdown: scripts always run in UTC (reproducible results whatever machine hosts them).
//! `TZ=UTC0` is a POSIX zone string glibc parses without any file.

extern "C" {
    /// POSIX `tzset(3)` (not exported by the `libc` crate).
    fn tzset();
}

/// The zone every script sees.
pub const TIME_ZONE: &str = "UTC0";

/// Sets the process's time zone to UTC and makes glibc load it now. Call while the process is
/// single-threaded (it changes the environment), before the lockdown.
pub fn time_zone() {
    std::env::set_var("TZ", TIME_ZONE);
    // SAFETY: tzset only reads TZ and initialises glibc's zone state; the process has one thread.
    unsafe { tzset() };
    let now: libc::time_t = 0;
    // SAFETY: `tm` is a valid, writable struct; localtime_r writes only into it. Called once so
    // that any remaining lazy initialisation of the local-time path happens here.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
    }
}
