//! CPU time a runner has used, read by the host from `/proc/<pid>/stat` (user + system), never
//! from the runner's own word. Read while the runner is alive or a zombie not yet reaped (only
//! this process reaps its runners, so the pid cannot have been reused).

/// Milliseconds of CPU `pid` has used, or `None` when it cannot be read.
pub fn used_ms(pid: u32) -> Option<u64> {
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
    #[test]
    fn reads_this_process() {
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(60) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        let ms = super::used_ms(std::process::id()).unwrap();
        assert!(ms >= 30, "{ms}");
    }
}
