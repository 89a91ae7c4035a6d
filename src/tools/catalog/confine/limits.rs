//! A confined server's rlimits, set in the forked child before bubblewrap runs (and inherited
//! by the server): address space, processes, open files, largest file, no core dumps.

use crate::config::confine_entry::Limits;

/// A `pre_exec` step setting `limits` (only setrlimit, async-signal-safe; no allocation).
pub fn apply(limits: Limits) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    move || {
        let all = [
            (libc::RLIMIT_AS, limits.address_space_bytes),
            (libc::RLIMIT_NPROC, limits.processes),
            (libc::RLIMIT_NOFILE, limits.open_files),
            (libc::RLIMIT_FSIZE, limits.file_size_bytes),
            (libc::RLIMIT_CORE, 0),
        ];
        for (resource, value) in all {
            let lim = libc::rlimit {
                rlim_cur: value as libc::rlim_t,
                rlim_max: value as libc::rlim_t,
            };
            // SAFETY: setrlimit with a valid pointer to a stack value.
            if unsafe { libc::setrlimit(resource, &lim) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}
