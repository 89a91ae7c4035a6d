//! CPU time a runner has used, read by the host from the kernel, never from the runner's own
//! word: the process's CPU-time clock (`clock_getcpuclockid` + `clock_gettime`, nanoseconds, one
//! system call, no file opened — about 1 µs against about 20 µs for reading `/proc/<pid>/stat`
//! on this machine), or `/proc/<pid>/stat` (user + system, in clock ticks) where the clock
//! cannot be had. Read while the runner is alive or a zombie not yet reaped (only this process
//! reaps its runners, so the pid cannot have been reused).

/// Milliseconds of CPU `pid` has used, or `None` when it cannot be read.
pub fn used_ms(pid: u32) -> Option<u64> {
    clock_ms(pid).or_else(|| stat_ms(pid))
}

/// From the process's CPU-time clock.
fn clock_ms(pid: u32) -> Option<u64> {
    let pid = libc::pid_t::try_from(pid).ok().filter(|p| *p > 0)?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is a valid, writable clockid_t for the call's duration.
    if unsafe { libc::clock_getcpuclockid(pid, &mut clock) } != 0 {
        return None;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1000).saturating_add(nanos / 1_000_000))
}

/// From `/proc/<pid>/stat` (utime + stime).
fn stat_ms(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: fields after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, utime field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf reads a configuration value; no memory is passed.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = u64::try_from(ticks).ok().filter(|t| *t > 0)?;
    Some((utime + stime).saturating_mul(1000) / ticks)
}

#[cfg(test)]
mod tests {
    /// CPU this process has used, by the kernel's own clock (not /proc).
    fn process_cpu_ms() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's duration.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0);
        ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
    }

    #[test]
    fn reads_this_process() {
        // Spin until the kernel says 80 ms of CPU were used (not 80 ms of wall clock: on a
        // loaded machine the two differ), then /proc must show it, within its 10 ms ticks.
        let start = process_cpu_ms();
        let mut x = 0u64;
        while process_cpu_ms() < start + 80 {
            for _ in 0..10_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
        }
        assert!(x > 0);
        let ms = super::used_ms(std::process::id()).unwrap();
        assert!(
            ms >= start + 60,
            "/proc says {ms} ms, the kernel's clock {}",
            process_cpu_ms()
        );
    }

    #[test]
    fn a_pid_that_does_not_exist_is_none() {
        assert_eq!(super::used_ms(u32::MAX), None);
        assert_eq!(super::clock_ms(u32::MAX), None);
        assert_eq!(super::clock_ms(0), None);
    }

    /// The clock and /proc agree (within /proc's 10 ms ticks) for a child that spent CPU and
    /// is now a zombie, as a runner is when the host reads it last.
    #[test]
    fn the_clock_and_proc_agree_on_a_zombie_child() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let pid = child.id();
        // Wait until it exited without reaping it: waitid with WNOWAIT leaves the zombie.
        // SAFETY: `info` is a valid, writable siginfo_t for the call's duration.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        assert_eq!(rc, 0);
        let clock = super::clock_ms(pid).expect("the zombie's CPU clock");
        let stat = super::stat_ms(pid).expect("the zombie's /proc stat");
        assert!(clock > 0, "the child spent CPU: {clock} ms");
        assert!(
            clock.abs_diff(stat) <= 20,
            "clock {clock} ms, /proc {stat} ms"
        );
        child.wait().unwrap();
    }
}
