//! Layer 7 (installed last): a seccomp-BPF **allowlist**.
//!
//! Only the system calls listed in [`allowlist`] are allowed, some only with safe arguments.
//! Everything else — and any call made with another architecture's numbering (x32, i386) —
//! kills the whole process with SIGSYS (`SECCOMP_RET_KILL_PROCESS`). The host sees the runner
//! die from SIGSYS and reports `RUNNER_CRASHED` naming the signal.
//!
//! Why kill rather than fail with EPERM: an attacker who controls the engine gets no oracle to
//! probe the filter call by call, an attempted escape cannot be retried or hidden (it is always
//! visible as a crash), and no code path in the runner has to handle an unexpected EPERM
//! correctly. The cost: a forbidden call made by mistake (a new dependency, `abort()` which uses
//! `tgkill`) also ends as SIGSYS, which is why the list was measured and is tested natively.
//!
//! After this layer the process cannot open or create anything (no `open*`, `socket`, `pipe`,
//! `dup*`, `memfd_create`…), cannot start processes or threads (`clone*`, `fork`, `exec*`),
//! cannot signal anyone (`kill`, `tgkill`), cannot map executable memory, and cannot change or
//! add a seccomp filter (`prctl` and `seccomp` are not allowed).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::{LayerResult, LockdownError};

/// A condition on one argument under which a call is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgRule {
    /// `(arg & mask) == value` — one of the listed alternatives must hold.
    MaskedEq {
        arg: u8,
        mask: u32,
        values: &'static [u32],
    },
    /// The (pointer-sized) argument `arg` is 0 (NULL).
    IsZero { arg: u8 },
    /// Every `(arg & mask) == value` of the list holds (one rule, all conditions).
    AllOf(&'static [(u8, u32, u32)]),
}

/// `mmap` flags that must be clear: shared mappings (`MAP_SHARED`, `MAP_SHARED_VALIDATE`),
/// huge pages (`MAP_HUGETLB` and its size bits), stacks that grow down (`MAP_GROWSDOWN`),
/// locked, synchronous or uninitialized memory. `MAP_PRIVATE | MAP_ANONYMOUS` must be set.
const MMAP_FLAGS_CHECKED: u32 = (libc::MAP_SHARED
    | libc::MAP_PRIVATE
    | libc::MAP_ANONYMOUS
    | libc::MAP_GROWSDOWN
    | libc::MAP_HUGETLB
    | libc::MAP_LOCKED
    | libc::MAP_SYNC
    | libc::MAP_32BIT) as u32
    | 0x0400_0000 // MAP_UNINITIALIZED
    | (0x3f << 26); // MAP_HUGE_SHIFT: the huge page size bits
const MMAP_FLAGS_REQUIRED: u32 = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u32;

/// One entry of the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowedSyscall {
    pub name: &'static str,
    pub nr: i64,
    /// `None`: allowed with any arguments.
    pub only: Option<ArgRule>,
    /// What the arguments must be, for people (empty when unrestricted).
    pub arguments: &'static str,
    /// Why the runner needs it.
    pub reason: &'static str,
}

const FUTEX_CMD_MASK: u32 = !((libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME) as u32);

/// The full allowlist, with the reason for every entry.
pub fn allowlist() -> Vec<AllowedSyscall> {
    let any = |name, nr, reason| AllowedSyscall {
        name,
        nr,
        only: None,
        arguments: "",
        reason,
    };
    let no_exec = ArgRule::MaskedEq {
        arg: 2,
        mask: libc::PROT_EXEC as u32,
        values: &[0],
    };
    vec![
        any(
            "read",
            libc::SYS_read,
            "receive frames on the socket (std's UnixStream::read is read(2))",
        ),
        any(
            "readv",
            libc::SYS_readv,
            "vectored reads of the socket (std's read_vectored); same power as read",
        ),
        any(
            "write",
            libc::SYS_write,
            "send frames on the socket; a panic message to stderr (/dev/null)",
        ),
        any(
            "writev",
            libc::SYS_writev,
            "vectored writes (std's write_vectored, LineWriter); same power as write",
        ),
        any(
            "close",
            libc::SYS_close,
            "dropping the socket or a std handle; only fds 0-3 exist and none can be created",
        ),
        AllowedSyscall {
            name: "fcntl",
            nr: libc::SYS_fcntl,
            only: Some(ArgRule::MaskedEq {
                arg: 1,
                mask: u32::MAX,
                values: &[libc::F_GETFD as u32],
            }),
            arguments: "cmd F_GETFD only (no F_DUPFD*, F_SETFL, F_SETOWN, leases, locks…)",
            reason: "std checks an fd is open (F_GETFD) before closing it in debug builds; \
                     without it dropping the socket ends as SIGSYS",
        },
        any("brk", libc::SYS_brk, "malloc grows the heap"),
        AllowedSyscall {
            name: "mmap",
            nr: libc::SYS_mmap,
            only: Some(ArgRule::AllOf(&[
                (2, libc::PROT_EXEC as u32, 0),
                (3, MMAP_FLAGS_CHECKED, MMAP_FLAGS_REQUIRED),
            ])),
            arguments: "prot without PROT_EXEC; flags MAP_PRIVATE|MAP_ANONYMOUS (no file, no \
                        MAP_SHARED, MAP_HUGETLB, MAP_GROWSDOWN, MAP_LOCKED)",
            reason: "malloc of large blocks; the QuickJS heap",
        },
        AllowedSyscall {
            name: "mprotect",
            nr: libc::SYS_mprotect,
            only: Some(no_exec),
            arguments: "prot without PROT_EXEC",
            reason: "glibc malloc arenas and guard pages change RW/none protections",
        },
        any("munmap", libc::SYS_munmap, "free of large blocks"),
        AllowedSyscall {
            name: "mremap",
            nr: libc::SYS_mremap,
            only: Some(ArgRule::MaskedEq {
                arg: 3,
                mask: u32::MAX,
                values: &[0, libc::MREMAP_MAYMOVE as u32],
            }),
            arguments: "flags 0 or MREMAP_MAYMOVE (no MREMAP_FIXED, MREMAP_DONTUNMAP)",
            reason: "realloc of large blocks (growing arrays and strings); cannot add PROT_EXEC",
        },
        AllowedSyscall {
            name: "madvise",
            nr: libc::SYS_madvise,
            only: Some(ArgRule::MaskedEq {
                arg: 2,
                mask: u32::MAX,
                values: &[libc::MADV_DONTNEED as u32, libc::MADV_FREE as u32],
            }),
            arguments: "advice MADV_DONTNEED or MADV_FREE",
            reason: "free returns memory to the kernel (glibc trims heaps with MADV_DONTNEED)",
        },
        any(
            "sigaltstack",
            libc::SYS_sigaltstack,
            "Rust's stack-overflow guard (set up and torn down around threads and main)",
        ),
        any(
            "rt_sigreturn",
            libc::SYS_rt_sigreturn,
            "return from a signal handler installed before lockdown (SIGSEGV guard)",
        ),
        any(
            "rt_sigprocmask",
            libc::SYS_rt_sigprocmask,
            "glibc blocks signals around some internal operations; changes only this process",
        ),
        AllowedSyscall {
            name: "futex",
            nr: libc::SYS_futex,
            only: Some(ArgRule::MaskedEq {
                arg: 1,
                mask: FUTEX_CMD_MASK,
                values: &[
                    libc::FUTEX_WAIT as u32,
                    libc::FUTEX_WAKE as u32,
                    libc::FUTEX_WAIT_BITSET as u32,
                    libc::FUTEX_WAKE_BITSET as u32,
                ],
            }),
            arguments: "op FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET or FUTEX_WAKE_BITSET \
                        (private or not); no requeue or PI operations",
            reason: "std's Mutex/Once/OnceLock and glibc's locks on contention",
        },
        any(
            "clock_gettime",
            libc::SYS_clock_gettime,
            "Instant::now()/time for the CPU budget; normally served by the vDSO, this is the \
             fallback",
        ),
        any(
            "getrandom",
            libc::SYS_getrandom,
            "HashMap's RandomState and Math.random seeding",
        ),
        any(
            "sched_yield",
            libc::SYS_sched_yield,
            "spin-then-yield loops in std and allocators; affects only scheduling of this thread",
        ),
        any(
            "gettid",
            libc::SYS_gettid,
            "Rust's panic message names the thread by id; without it a panic ends as SIGSYS",
        ),
        any("exit", libc::SYS_exit, "a thread ending"),
        any(
            "exit_group",
            libc::SYS_exit_group,
            "the runner exiting after execution_complete",
        ),
    ]
}

/// System calls that must never be in the allowlist (checked by the unit tests).
pub fn never_allowed() -> Vec<(&'static str, i64)> {
    let mut v = vec![
        ("openat", libc::SYS_openat),
        ("openat2", libc::SYS_openat2),
        ("open_by_handle_at", libc::SYS_open_by_handle_at),
        ("socket", libc::SYS_socket),
        ("socketpair", libc::SYS_socketpair),
        ("connect", libc::SYS_connect),
        ("bind", libc::SYS_bind),
        ("listen", libc::SYS_listen),
        ("accept4", libc::SYS_accept4),
        ("sendmsg", libc::SYS_sendmsg),
        ("recvmsg", libc::SYS_recvmsg),
        ("sendto", libc::SYS_sendto),
        ("recvfrom", libc::SYS_recvfrom),
        ("execve", libc::SYS_execve),
        ("execveat", libc::SYS_execveat),
        ("clone", libc::SYS_clone),
        ("clone3", libc::SYS_clone3),
        ("ptrace", libc::SYS_ptrace),
        ("kill", libc::SYS_kill),
        ("tkill", libc::SYS_tkill),
        ("tgkill", libc::SYS_tgkill),
        ("rt_sigqueueinfo", libc::SYS_rt_sigqueueinfo),
        ("rt_tgsigqueueinfo", libc::SYS_rt_tgsigqueueinfo),
        ("pidfd_open", libc::SYS_pidfd_open),
        ("pidfd_send_signal", libc::SYS_pidfd_send_signal),
        ("pidfd_getfd", libc::SYS_pidfd_getfd),
        ("mount", libc::SYS_mount),
        ("umount2", libc::SYS_umount2),
        ("pivot_root", libc::SYS_pivot_root),
        ("chroot", libc::SYS_chroot),
        ("unshare", libc::SYS_unshare),
        ("setns", libc::SYS_setns),
        ("setuid", libc::SYS_setuid),
        ("setgid", libc::SYS_setgid),
        ("setresuid", libc::SYS_setresuid),
        ("setresgid", libc::SYS_setresgid),
        ("setgroups", libc::SYS_setgroups),
        ("capset", libc::SYS_capset),
        ("prctl", libc::SYS_prctl),
        ("seccomp", libc::SYS_seccomp),
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("keyctl", libc::SYS_keyctl),
        ("add_key", libc::SYS_add_key),
        ("request_key", libc::SYS_request_key),
        ("init_module", libc::SYS_init_module),
        ("finit_module", libc::SYS_finit_module),
        ("delete_module", libc::SYS_delete_module),
        ("kexec_load", libc::SYS_kexec_load),
        ("kexec_file_load", libc::SYS_kexec_file_load),
        ("reboot", libc::SYS_reboot),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("process_vm_writev", libc::SYS_process_vm_writev),
        ("memfd_create", libc::SYS_memfd_create),
        ("personality", libc::SYS_personality),
        ("ioctl", libc::SYS_ioctl),
        ("pipe2", libc::SYS_pipe2),
        ("dup", libc::SYS_dup),
        ("dup3", libc::SYS_dup3),
        ("prlimit64", libc::SYS_prlimit64),
        ("setrlimit", libc::SYS_setrlimit),
        ("pkey_mprotect", libc::SYS_pkey_mprotect),
        ("rt_sigaction", libc::SYS_rt_sigaction),
        ("landlock_create_ruleset", libc::SYS_landlock_create_ruleset),
        ("name_to_handle_at", libc::SYS_name_to_handle_at),
        ("mknodat", libc::SYS_mknodat),
        ("unlinkat", libc::SYS_unlinkat),
        ("mkdirat", libc::SYS_mkdirat),
        ("newfstatat", libc::SYS_newfstatat),
        ("statx", libc::SYS_statx),
        ("getdents64", libc::SYS_getdents64),
        ("fanotify_init", libc::SYS_fanotify_init),
        ("inotify_init1", libc::SYS_inotify_init1),
        ("move_mount", libc::SYS_move_mount),
        ("open_tree", libc::SYS_open_tree),
        ("fsopen", libc::SYS_fsopen),
        ("mbind", libc::SYS_mbind),
        ("migrate_pages", libc::SYS_migrate_pages),
        ("move_pages", libc::SYS_move_pages),
        ("swapon", libc::SYS_swapon),
        ("acct", libc::SYS_acct),
        ("settimeofday", libc::SYS_settimeofday),
        ("clock_settime", libc::SYS_clock_settime),
        ("sethostname", libc::SYS_sethostname),
        ("syslog", libc::SYS_syslog),
        ("quotactl", libc::SYS_quotactl),
        ("lookup_dcookie", libc::SYS_lookup_dcookie),
        ("kcmp", libc::SYS_kcmp),
        ("uname", libc::SYS_uname),
        ("getpid", libc::SYS_getpid),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        ("open", libc::SYS_open),
        ("creat", libc::SYS_creat),
        ("unlink", libc::SYS_unlink),
        ("mkdir", libc::SYS_mkdir),
        ("fork", libc::SYS_fork),
        ("vfork", libc::SYS_vfork),
        ("pipe", libc::SYS_pipe),
        ("dup2", libc::SYS_dup2),
        ("modify_ldt", libc::SYS_modify_ldt),
        ("arch_prctl", libc::SYS_arch_prctl),
        ("iopl", libc::SYS_iopl),
        ("ioperm", libc::SYS_ioperm),
        ("uselib", libc::SYS_uselib),
    ]);
    v
}

fn target_arch() -> Result<TargetArch, LockdownError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        LockdownError::Unsupported(format!(
            "no seccomp filter for architecture {} (seccompiler supports x86_64, aarch64, riscv64)",
            std::env::consts::ARCH
        ))
    })
}

/// Compiles the allowlist into a BPF program (allocation only, no system call is made).
pub fn build_program() -> Result<BpfProgram, LockdownError> {
    let bad = |e: seccompiler::BackendError| {
        LockdownError::NotHeld(format!("building the seccomp filter: {e}"))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for entry in allowlist() {
        let chain = match entry.only {
            None => Vec::new(),
            Some(ArgRule::MaskedEq { arg, mask, values }) => values
                .iter()
                .map(|v| {
                    let cond = SeccompCondition::new(
                        arg,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::MaskedEq(u64::from(mask)),
                        u64::from(*v),
                    )
                    .map_err(bad)?;
                    SeccompRule::new(vec![cond]).map_err(bad)
                })
                .collect::<Result<_, _>>()?,
            Some(ArgRule::AllOf(conds)) => {
                let conds = conds
                    .iter()
                    .map(|&(arg, mask, value)| {
                        SeccompCondition::new(
                            arg,
                            SeccompCmpArgLen::Dword,
                            SeccompCmpOp::MaskedEq(u64::from(mask)),
                            u64::from(value),
                        )
                        .map_err(bad)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                vec![SeccompRule::new(conds).map_err(bad)?]
            }
            Some(ArgRule::IsZero { arg }) => {
                let cond = SeccompCondition::new(arg, SeccompCmpArgLen::Qword, SeccompCmpOp::Eq, 0)
                    .map_err(bad)?;
                vec![SeccompRule::new(vec![cond]).map_err(bad)?]
            }
        };
        rules.insert(entry.nr, chain);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::KillProcess,
        SeccompAction::Allow,
        target_arch()?,
    )
    .map_err(bad)?;
    BpfProgram::try_from(filter).map_err(bad)
}

/// Installs the program on every thread of the process (TSYNC).
pub fn install(program: BpfProgram) -> LayerResult {
    seccompiler::apply_filter_all_threads(&program).map_err(|e| {
        LockdownError::NotHeld(format!(
            "installing the seccomp filter failed: {e} (kernel without CONFIG_SECCOMP_FILTER, \
             or running under a seccomp profile that forbids seccomp(2))"
        ))
    })?;
    Ok(Some(format!(
        "allowlist of {} syscalls; any other call kills the process with SIGSYS",
        allowlist().len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use seccompiler::sock_filter;

    #[test]
    fn allowlist_has_no_forbidden_call() {
        let allowed: Vec<i64> = allowlist().iter().map(|a| a.nr).collect();
        for (name, nr) in never_allowed() {
            assert!(!allowed.contains(&nr), "{name} ({nr}) is in the allowlist");
        }
    }

    #[test]
    fn allowlist_is_unique_and_documented() {
        let list = allowlist();
        for (i, a) in list.iter().enumerate() {
            assert!(!a.reason.is_empty(), "{} has no reason", a.name);
            assert_eq!(a.only.is_some(), !a.arguments.is_empty(), "{}", a.name);
            assert!(
                list[i + 1..].iter().all(|b| b.nr != a.nr),
                "{} twice",
                a.name
            );
        }
    }

    // A tiny classic-BPF interpreter for the instructions seccompiler emits, to check the
    // compiled program's decisions without installing it.
    const RET_KILL_PROCESS: u32 = 0x8000_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;

    fn run(prog: &[sock_filter], arch: u32, nr: i64, args: [u64; 6]) -> u32 {
        let mut data = Vec::new();
        data.extend_from_slice(&(nr as i32).to_ne_bytes());
        data.extend_from_slice(&arch.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes()); // instruction pointer
        for a in args {
            data.extend_from_slice(&a.to_ne_bytes());
        }
        let word = |off: u32| {
            let o = off as usize;
            u32::from_ne_bytes(data[o..o + 4].try_into().unwrap())
        };
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let ins = &prog[pc];
            pc += 1;
            match ins.code {
                0x20 => acc = word(ins.k),    // ld w abs
                0x54 => acc &= ins.k,         // alu and k
                0x05 => pc += ins.k as usize, // ja
                0x06 => return ins.k,         // ret k
                0x15 | 0x25 | 0x35 | 0x45 => {
                    let t = match ins.code {
                        0x15 => acc == ins.k,  // jeq
                        0x25 => acc > ins.k,   // jgt
                        0x35 => acc >= ins.k,  // jge
                        _ => acc & ins.k != 0, // jset
                    };
                    pc += if t { ins.jt } else { ins.jf } as usize;
                }
                c => panic!("unexpected BPF opcode {c:#x}"),
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn compiled_program_decides_as_documented() {
        let prog = build_program().unwrap();
        let rw = (libc::PROT_READ | libc::PROT_WRITE) as u64;
        let rx = (libc::PROT_READ | libc::PROT_EXEC) as u64;
        let call = |nr, args| run(&prog, ARCH, nr, args);
        assert_eq!(call(libc::SYS_read, [3, 0, 0, 0, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_exit_group, [0; 6]), RET_ALLOW);
        assert_eq!(call(libc::SYS_mmap, [0, 4096, rw, 0x22, 0, 0]), RET_ALLOW);
        assert_eq!(
            call(libc::SYS_mmap, [0, 4096, rx, 0x22, 0, 0]),
            RET_KILL_PROCESS
        );
        assert_eq!(call(libc::SYS_mprotect, [0, 4096, rw, 0, 0, 0]), RET_ALLOW);
        assert_eq!(
            call(libc::SYS_mprotect, [0, 4096, 7, 0, 0, 0]),
            RET_KILL_PROCESS
        );
        // High bits of a 32-bit argument are ignored by the kernel and by the filter.
        assert_eq!(
            call(libc::SYS_mprotect, [0, 4096, 1 << 32 | 4, 0, 0, 0]),
            RET_KILL_PROCESS
        );
        // send/recv (and so MSG_OOB) are gone: the runner uses read/write on its socket.
        assert_eq!(
            call(libc::SYS_recvfrom, [3, 0, 4, 0, 0, 0]),
            RET_KILL_PROCESS
        );
        let oob = libc::MSG_OOB as u64;
        assert_eq!(
            call(libc::SYS_sendto, [3, 0, 1, oob, 0, 0]),
            RET_KILL_PROCESS
        );
        // mmap: private anonymous only.
        let pa = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64;
        for extra in [0, libc::MAP_NORESERVE, libc::MAP_FIXED, libc::MAP_STACK] {
            let flags = pa | extra as u64;
            assert_eq!(
                call(libc::SYS_mmap, [0, 4096, rw, flags, u64::MAX, 0]),
                RET_ALLOW,
                "{flags:#x}"
            );
        }
        for bad in [
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            libc::MAP_SHARED_VALIDATE | libc::MAP_ANONYMOUS,
            libc::MAP_PRIVATE, // a file mapping
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_GROWSDOWN,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_LOCKED,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | (21 << 26), // MAP_HUGE_2MB
        ] {
            assert_eq!(
                call(libc::SYS_mmap, [0, 4096, rw, bad as u64, 3, 0]),
                RET_KILL_PROCESS,
                "{bad:#x}"
            );
        }
        assert_eq!(call(libc::SYS_mremap, [0, 4096, 8192, 1, 0, 0]), RET_ALLOW);
        assert_eq!(call(libc::SYS_mremap, [0, 4096, 8192, 0, 0, 0]), RET_ALLOW);
        for bad in [2u64, 3, 4, 5] {
            assert_eq!(
                call(libc::SYS_mremap, [0, 4096, 8192, bad, 0, 0]),
                RET_KILL_PROCESS,
                "{bad}"
            );
        }
        assert_eq!(call(libc::SYS_fcntl, [3, 1, 0, 0, 0, 0]), RET_ALLOW); // F_GETFD
        for cmd in [0, 2, 4, 1030] {
            // F_DUPFD, F_SETFD, F_SETFL, F_DUPFD_CLOEXEC
            assert_eq!(
                call(libc::SYS_fcntl, [3, cmd, 0, 0, 0, 0]),
                RET_KILL_PROCESS
            );
        }
        assert_eq!(call(libc::SYS_madvise, [0, 4096, 4, 0, 0, 0]), RET_ALLOW);
        assert_eq!(
            call(libc::SYS_madvise, [0, 4096, 100, 0, 0, 0]),
            RET_KILL_PROCESS
        ); // MADV_HWPOISON
        assert_eq!(call(libc::SYS_futex, [0, 128 | 1, 1, 0, 0, 0]), RET_ALLOW); // WAKE_PRIVATE
        assert_eq!(
            call(libc::SYS_futex, [0, 128 | 3, 1, 0, 0, 0]),
            RET_KILL_PROCESS
        ); // REQUEUE
        assert_eq!(
            call(libc::SYS_futex, [0, 128 | 6, 1, 0, 0, 0]),
            RET_KILL_PROCESS
        ); // LOCK_PI
        for (name, nr) in never_allowed() {
            assert_eq!(call(nr, [0; 6]), RET_KILL_PROCESS, "{name}");
        }
        // x32 numbering and a foreign architecture are refused.
        assert_eq!(call(libc::SYS_read | 0x4000_0000, [0; 6]), RET_KILL_PROCESS);
        assert_eq!(run(&prog, 0x4000_0003, 3, [0; 6]), RET_KILL_PROCESS); // AUDIT_ARCH_I386
    }
}
