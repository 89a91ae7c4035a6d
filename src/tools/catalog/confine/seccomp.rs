//! The seccomp filter of a confined server: the system calls an MCP server never needs return
//! `EPERM` (everything else is allowed: servers are Node, Python, Go… and an allow-list would
//! break one of them on each upgrade). bubblewrap loads it (`--seccomp FD`) just before it runs
//! the server, after its own set-up, and `no_new_privs` is set by then.

use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The refused calls: tracing and reading other processes, mounting, kernel modules and
/// images, BPF, keyrings, perf, userfaultfd, swap, reboot, clock and quota changes, raw I/O
/// ports, file handles (`open_by_handle_at` escapes a bind mount) and namespaces.
const REFUSED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_bpf,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_syslog,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_fanotify_init,
    libc::SYS_setns,
    libc::SYS_unshare,
    libc::SYS_vhangup,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("the seccomp filter could not be built: {0}")]
    Build(String),
    #[error("the seccomp filter could not be handed to bubblewrap: {0}")]
    Io(#[from] std::io::Error),
}

fn arch() -> Result<seccompiler::TargetArch, SeccompError> {
    std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| SeccompError::Build(e.to_string()))
}

/// The compiled filter, as the bytes of its `sock_filter` array.
pub fn program() -> Result<Vec<u8>, SeccompError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let build = |e: seccompiler::BackendError| SeccompError::Build(e.to_string());
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|n| (*n, Vec::new())).collect();
    // Typing into the gateway's terminal (`TIOCSTI`, `TIOCLINUX`): the server keeps the
    // gateway's session (bubblewrap's --new-session would split its process group).
    let ioctl = [libc::TIOCSTI, libc::TIOCLINUX]
        .iter()
        .map(|req| {
            // The ioctl request's C type differs between libcs (c_ulong, c_int).
            #[allow(clippy::unnecessary_cast)]
            let cond =
                SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *req as u64)
                    .map_err(build)?;
            SeccompRule::new(vec![cond]).map_err(build)
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(build)?;
    let prog: seccompiler::BpfProgram = filter.try_into().map_err(build)?;
    let mut bytes = Vec::with_capacity((prog.len() + 3) * 8);
    // First, before seccompiler's program (its jumps are relative, so they stay right): any
    // number with the x32 bit (0x40000000) is refused, or the denied calls would be reachable
    // through their x32 numbers on a kernel with the x32 ABI.
    let x32 = [
        (0x20u16, 0u8, 0u8, 0u32), // ld [0]: the syscall number
        (0x35, 0, 1, 0x4000_0000), // jge 0x40000000 ? next : skip one
        (0x06, 0, 0, 0x0005_0000 | libc::EPERM as u32), // ret ERRNO(EPERM)
    ];
    for (code, jt, jf, k) in x32 {
        bytes.extend_from_slice(&code.to_ne_bytes());
        bytes.push(jt);
        bytes.push(jf);
        bytes.extend_from_slice(&k.to_ne_bytes());
    }
    for insn in prog {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    Ok(bytes)
}

/// A memory file holding the filter, read from its start by bubblewrap. Close-on-exec: the
/// spawn's `pre_exec` clears that flag for bubblewrap only (see [`inherit`]).
pub fn memfd() -> Result<OwnedFd, SeccompError> {
    static PROGRAM: std::sync::OnceLock<Result<Vec<u8>, String>> = std::sync::OnceLock::new();
    let bytes = PROGRAM
        .get_or_init(|| program().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| SeccompError::Build(e.clone()))?;
    // SAFETY: memfd_create with a NUL-terminated name and flags; the result is checked.
    let fd = unsafe { libc::memfd_create(c"mcp-server-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned);
    file.write_all(bytes)?;
    file.rewind()?;
    Ok(file.into())
}

/// A `pre_exec` step: lets bubblewrap inherit `fd` (only fcntl, async-signal-safe).
pub fn inherit(fd: &OwnedFd) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    let raw = fd.as_raw_fd();
    move || {
        // SAFETY: fcntl on an fd number valid in the forked child; no allocation.
        if unsafe { libc::fcntl(raw, libc::F_SETFD, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}
