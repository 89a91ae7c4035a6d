//! `escape-probe`: a test-only binary, never shipped and unreachable from JavaScript.
//!
//! It is set up like the runner (socket at fd 3, started by the test with an empty environment,
//! cwd `/`), applies the **same** `sandbox_runner::lockdown::apply`, then performs exactly one
//! operation natively and reports on fd 1, one JSON object per line:
//!
//! 1. `{"event":"locked","report":{layer: status},"pid":N}` — right after the lockdown;
//! 2. `{"event":"result","op":"…","result":"ok"|"errno","errno":N,"detail":"…"}` — after the op.
//!
//! When the op is killed by seccomp, line 2 never comes and the test sees SIGSYS in the wait
//! status. Usage: `escape-probe [--no-lockdown | --without-seccomp | --forked |
//! --forked-without-seccomp] <op> [path]`.
//! `--without-seccomp` applies every layer but the last, to show what the inner layers stop on
//! their own; `--no-lockdown` shows that each op does something real on an open machine.
//! `--forked` does what the zygote does: the shared layers (`lockdown::apply_shared`, then not
//! dumpable and no_new_privs for itself) in this process, then a fork whose child applies its
//! own layers (`lockdown::apply_own`) and makes the attempt; this process waits and ends the
//! same way as the child (exit status, or the same signal). For `*_sibling` ops a first child,
//! forked and locked down the same way, waits on the socket as the target (a sibling runner).

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;

use sandbox_runner::lockdown::{self, LockdownConfig};
use serde_json::json;

const SOCKET_FD: i32 = 3;

/// What one operation did.
enum Outcome {
    Ok(String),
    Errno(i32),
}

/// Everything an op may need, gathered before the lockdown (getpid/getppid are not allowed
/// after it).
struct Ctx {
    pid: i32,
    ppid: i32,
    path: String,
    /// In `--forked` mode, another runner forked from the same parent (for `*_sibling` ops).
    sibling: i32,
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.first().map(String::as_str) {
        Some("--no-lockdown")
        | Some("--without-seccomp")
        | Some("--forked")
        | Some("--forked-without-seccomp") => args.remove(0),
        _ => String::new(),
    };
    let Some(op) = args.first().cloned() else {
        eprintln!("usage: escape-probe [--no-lockdown | --without-seccomp] <op> [path]");
        std::process::exit(2);
    };
    // SAFETY: getpid/getppid take no arguments and cannot fail.
    let ctx = Ctx {
        pid: unsafe { libc::getpid() },
        ppid: unsafe { libc::getppid() },
        path: args.get(1).cloned().unwrap_or_default(),
        sibling: 0,
    };

    let cfg = LockdownConfig {
        host_pid: None,
        socket_fd: SOCKET_FD,
        uid: 65534,
        gid: 65534,
        address_space_bytes: 256 << 20,
        cpu_seconds: 5,
    };
    let mut ctx = ctx;
    let report = match mode.as_str() {
        "--forked" | "--forked-without-seccomp" => {
            let with_seccomp = mode == "--forked";
            forked_probe(&cfg, &op, &mut ctx, with_seccomp)
        }
        "--no-lockdown" => Default::default(),
        "--without-seccomp" => {
            // The same layer functions `apply` calls, in the same order, minus seccomp.
            let mut r = lockdown::IsolationReport::new();
            let status = |res: lockdown::LayerResult| lockdown::LayerStatus::from(res).to_string();
            r.insert("fds".into(), status(lockdown::fds::apply(cfg.socket_fd)));
            r.insert(
                "uid".into(),
                status(lockdown::identity::apply(cfg.uid, cfg.gid)),
            );
            let (ns, root) = lockdown::namespaces::apply_with_root();
            r.insert("namespaces".into(), status(ns));
            r.insert("empty_root".into(), status(root));
            r.insert("landlock".into(), status(lockdown::landlock::apply()));
            r.insert("rlimits".into(), status(lockdown::rlimits::apply(&cfg)));
            r.insert("no_new_privs".into(), status(lockdown::prctl::apply()));
            r
        }
        _ => lockdown::apply(&cfg),
    };
    emit(&json!({"event": "locked", "report": report, "pid": ctx.pid}));

    let outcome = run(&op, &ctx);
    let line = match outcome {
        Outcome::Ok(detail) => {
            json!({"event": "result", "op": op, "result": "ok", "detail": detail})
        }
        Outcome::Errno(e) => json!({"event": "result", "op": op, "result": "errno", "errno": e}),
    };
    emit(&line);
    let code = match op.as_str() {
        "exit_code" => 42,
        _ => 0,
    };
    std::process::exit(code);
}

/// The zygote's layers here, then a fork; returns (in the child only) its full report. The
/// parent waits for the child and ends as it did.
fn forked_probe(
    cfg: &LockdownConfig,
    op: &str,
    ctx: &mut Ctx,
    with_seccomp: bool,
) -> lockdown::IsolationReport {
    let shared = lockdown::apply_shared(cfg);
    let _ = lockdown::prctl::apply();
    let own = |shared: &lockdown::Shared| {
        if with_seccomp {
            lockdown::apply_own(cfg, shared)
        } else {
            let status = |res: lockdown::LayerResult| lockdown::LayerStatus::from(res).to_string();
            let mut r = shared.report.clone();
            r.insert("landlock".into(), status(lockdown::landlock::apply()));
            r.insert("rlimits".into(), status(lockdown::rlimits::apply(cfg)));
            r.insert("no_new_privs".into(), status(lockdown::prctl::apply()));
            r
        }
    };
    let mut sibling = 0;
    if op.ends_with("_sibling") {
        // SAFETY: this process is single-threaded; the child only runs the lockdown and then
        // blocks in read(2) until it is killed.
        sibling = unsafe { libc::fork() };
        if sibling == 0 {
            let _ = own(&shared);
            let mut b = [0u8; 1];
            loop {
                // SAFETY: reads into a local buffer from the socket (which never sends).
                if unsafe { libc::read(SOCKET_FD, b.as_mut_ptr().cast(), 1) } <= 0 {
                    std::process::exit(0);
                }
            }
        }
    }
    // SAFETY: as above; the child continues with the attempt.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: getpid/getppid take no arguments and cannot fail.
        ctx.pid = unsafe { libc::getpid() };
        ctx.ppid = unsafe { libc::getppid() };
        ctx.sibling = sibling;
        return own(&shared);
    }
    let mut status = 0;
    // SAFETY: waits for our own child, writing into a local integer.
    unsafe { libc::waitpid(child, &mut status, 0) };
    if sibling > 0 {
        // SAFETY: kills and reaps our own first child.
        unsafe {
            libc::kill(sibling, libc::SIGKILL);
            libc::waitpid(sibling, std::ptr::null_mut(), 0);
        }
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restores the default action and raises the child's signal on ourselves, so the
        // test sees the same wait status; this process has no seccomp filter.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    std::process::exit(libc::WEXITSTATUS(status));
}

/// Writes one JSON line to fd 1 with plain write(2) calls.
fn emit(v: &serde_json::Value) {
    let mut bytes = v.to_string().into_bytes();
    bytes.push(b'\n');
    let mut off = 0;
    while off < bytes.len() {
        // SAFETY: the pointer and length describe the live `bytes` buffer.
        let n = unsafe { libc::write(1, bytes[off..].as_ptr().cast(), bytes.len() - off) };
        if n <= 0 {
            return;
        }
        off += n as usize;
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

/// Turns a raw syscall return value into an outcome. In a child created by a fork-like op
/// (return value 0 for those), the caller exits at once.
fn rc(ret: libc::c_long) -> Outcome {
    if ret < 0 {
        Outcome::Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Outcome::Ok(format!("returned {ret}"))
    }
}

/// For fork-like ops: the child exits immediately, the parent reports.
fn forked(ret: libc::c_long) -> Outcome {
    if ret == 0 {
        // SAFETY: _exit ends the child at once without running any handler.
        unsafe { libc::_exit(0) };
    }
    rc(ret)
}

fn sockaddr_in_loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn abstract_unix(name: &[u8]) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (i, b) in name.iter().enumerate() {
        a.sun_path[i + 1] = *b as libc::c_char; // sun_path[0] = 0: abstract namespace
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
    (a, len as libc::socklen_t)
}

/// A one-instruction classic BPF program that allows everything.
fn allow_all_filter() -> (Box<[libc::sock_filter; 1]>, libc::sock_fprog) {
    let prog = Box::new([libc::sock_filter {
        code: 0x06, // BPF_RET | BPF_K
        jt: 0,
        jf: 0,
        k: 0x7fff_0000, // SECCOMP_RET_ALLOW
    }]);
    let fprog = libc::sock_fprog {
        len: 1,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    (prog, fprog)
}

/// Runs one operation. Every raw syscall below passes pointers to live local buffers of the
/// size the kernel expects, or integers; the kernel validates everything else.
fn run(op: &str, ctx: &Ctx) -> Outcome {
    use libc::*;
    let path = cstr(&ctx.path);
    let passwd = cstr("/etc/passwd");
    let tru = cstr("/bin/true");
    let argv = [tru.as_ptr(), std::ptr::null()];
    let envp: [*const c_char; 1] = [std::ptr::null()];
    let empty = cstr("");
    // SAFETY (for every unsafe block in this match): each syscall gets integers and pointers
    // to live, correctly sized local values; the probe is a throwaway process whose only job
    // is to make these calls, and any effect they could have is confined to it or refused.
    match op {
        // ---- filesystem ----
        "open_passwd" => rc(unsafe { syscall(SYS_open, passwd.as_ptr(), O_RDONLY) }),
        "openat_passwd" => rc(unsafe { syscall(SYS_openat, AT_FDCWD, passwd.as_ptr(), O_RDONLY) }),
        "openat2_passwd" => {
            let how = [O_RDONLY as u64, 0u64, 0u64]; // struct open_how
            rc(unsafe {
                syscall(
                    SYS_openat2,
                    AT_FDCWD,
                    passwd.as_ptr(),
                    how.as_ptr(),
                    24usize,
                )
            })
        }
        "open_tmp" => rc(unsafe { syscall(SYS_open, path.as_ptr(), O_RDWR) }),
        "openat_tmp" => rc(unsafe { syscall(SYS_openat, AT_FDCWD, path.as_ptr(), O_RDONLY) }),
        "creat" => rc(unsafe { syscall(SYS_creat, path.as_ptr(), 0o644) }),
        "unlink" => rc(unsafe { syscall(SYS_unlink, path.as_ptr()) }),
        "unlinkat" => rc(unsafe { syscall(SYS_unlinkat, AT_FDCWD, path.as_ptr(), 0) }),
        "mkdir" => rc(unsafe { syscall(SYS_mkdir, path.as_ptr(), 0o755) }),
        "stat_passwd" => {
            let mut st = [0u8; 256];
            rc(unsafe {
                syscall(
                    SYS_newfstatat,
                    AT_FDCWD,
                    passwd.as_ptr(),
                    st.as_mut_ptr(),
                    0,
                )
            })
        }
        "open_proc_self_mem" => {
            let mem = cstr("/proc/self/mem");
            rc(unsafe { syscall(SYS_open, mem.as_ptr(), O_RDWR) })
        }
        "open_by_handle_at" => {
            let mut handle = [0u8; 136]; // struct file_handle + 128 bytes
            handle[0] = 8; // handle_bytes
            rc(unsafe {
                syscall(
                    SYS_open_by_handle_at,
                    SOCKET_FD,
                    handle.as_mut_ptr(),
                    O_RDONLY,
                )
            })
        }
        // ---- network ----
        "socket_inet" => rc(unsafe { syscall(SYS_socket, AF_INET, SOCK_STREAM, 0) }),
        "socket_inet6" => rc(unsafe { syscall(SYS_socket, AF_INET6, SOCK_STREAM, 0) }),
        "socket_unix" => rc(unsafe { syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0) }),
        "socket_netlink" => rc(unsafe { syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0) }),
        "socketpair" => {
            let mut fds = [0i32; 2];
            rc(unsafe { syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, fds.as_mut_ptr()) })
        }
        "connect_inet" => {
            let a = sockaddr_in_loopback(9);
            let len = std::mem::size_of::<sockaddr_in>();
            rc(unsafe { syscall(SYS_connect, SOCKET_FD, &a as *const sockaddr_in, len) })
        }
        "connect_abstract_unix" => {
            let (a, len) = abstract_unix(b"escape-probe");
            rc(unsafe { syscall(SYS_connect, SOCKET_FD, &a as *const sockaddr_un, len) })
        }
        "bind" => {
            let (a, len) = abstract_unix(b"escape-probe-bind");
            rc(unsafe { syscall(SYS_bind, SOCKET_FD, &a as *const sockaddr_un, len) })
        }
        "sendmsg_scm_rights" => {
            // Try to pass fd 0 to the other end: needs sendmsg, which is not allowed.
            let mut byte = [b'x'];
            let mut iov = iovec {
                iov_base: byte.as_mut_ptr().cast(),
                iov_len: 1,
            };
            let mut cbuf = [0u64; 4];
            // SAFETY: msghdr is plain old data; all-zero is valid.
            let mut msg: msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = unsafe { CMSG_SPACE(4) } as usize;
            unsafe {
                let cm = CMSG_FIRSTHDR(&msg);
                (*cm).cmsg_level = SOL_SOCKET;
                (*cm).cmsg_type = SCM_RIGHTS;
                (*cm).cmsg_len = CMSG_LEN(4) as usize;
                *(CMSG_DATA(cm) as *mut i32) = 0;
            }
            rc(unsafe { syscall(SYS_sendmsg, SOCKET_FD, &msg as *const msghdr, 0) })
        }
        // ---- processes ----
        "execve" => rc(unsafe { syscall(SYS_execve, tru.as_ptr(), argv.as_ptr(), envp.as_ptr()) }),
        "execveat" => rc(unsafe {
            syscall(
                SYS_execveat,
                AT_FDCWD,
                tru.as_ptr(),
                argv.as_ptr(),
                envp.as_ptr(),
                0,
            )
        }),
        "fork" => forked(unsafe { fork() } as c_long),
        "vfork" => forked(unsafe { syscall(SYS_vfork) }),
        "clone" => forked(unsafe { syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) }),
        "clone3" => {
            let mut args = [0u64; 8]; // struct clone_args, CLONE_ARGS_SIZE_VER0
            args[4] = SIGCHLD as u64; // exit_signal
            forked(unsafe { syscall(SYS_clone3, args.as_mut_ptr(), 64usize) })
        }
        "thread_spawn" => match std::thread::Builder::new().spawn(|| ()) {
            Ok(h) => {
                let _ = h.join();
                Outcome::Ok("thread ran".into())
            }
            Err(e) => Outcome::Errno(e.raw_os_error().unwrap_or(0)),
        },
        "ptrace_parent" => rc(unsafe { syscall(SYS_ptrace, PTRACE_SEIZE, ctx.ppid, 0, 0) }),
        "ptrace_traceme" => rc(unsafe { syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0) }),
        // SIGCONT: harmless to a running process even if it were delivered.
        "kill_init" => rc(unsafe { syscall(SYS_kill, 1, SIGCONT) }),
        "kill_parent" => rc(unsafe { syscall(SYS_kill, ctx.ppid, SIGCONT) }),
        "kill_sibling" => rc(unsafe { syscall(SYS_kill, ctx.sibling, SIGCONT) }),
        "ptrace_sibling" => rc(unsafe { syscall(SYS_ptrace, PTRACE_SEIZE, ctx.sibling, 0, 0) }),
        "pidfd_open_sibling" => rc(unsafe { syscall(SYS_pidfd_open, ctx.sibling, 0) }),
        "tgkill_parent" => rc(unsafe { syscall(SYS_tgkill, ctx.ppid, ctx.ppid, SIGCONT) }),
        "tkill_parent" => rc(unsafe { syscall(SYS_tkill, ctx.ppid, SIGCONT) }),
        "pidfd_open_parent" => rc(unsafe { syscall(SYS_pidfd_open, ctx.ppid, 0) }),
        "abort" => {
            // glibc's abort raises SIGABRT with tgkill, which is not allowed.
            std::process::abort();
        }
        // ---- namespaces, mounts, identity ----
        "mount" => {
            let (none, tmpfs) = (cstr("none"), cstr("tmpfs"));
            rc(unsafe {
                syscall(
                    SYS_mount,
                    none.as_ptr(),
                    path.as_ptr(),
                    tmpfs.as_ptr(),
                    0,
                    0,
                )
            })
        }
        "umount2" => rc(unsafe { syscall(SYS_umount2, path.as_ptr(), 0) }),
        "pivot_root" => rc(unsafe { syscall(SYS_pivot_root, path.as_ptr(), path.as_ptr()) }),
        "chroot" => rc(unsafe { syscall(SYS_chroot, path.as_ptr()) }),
        "unshare" => rc(unsafe { syscall(SYS_unshare, CLONE_NEWUSER) }),
        "setns" => rc(unsafe { syscall(SYS_setns, SOCKET_FD, 0) }),
        "setuid0" => rc(unsafe { syscall(SYS_setuid, 0) }),
        "setgid0" => rc(unsafe { syscall(SYS_setgid, 0) }),
        "setresuid0" => rc(unsafe { syscall(SYS_setresuid, 0, 0, 0) }),
        "capset" => {
            let mut hdr = [0x2008_0522u32, 0]; // _LINUX_CAPABILITY_VERSION_3, pid 0
            let data = [u32::MAX; 6];
            rc(unsafe { syscall(SYS_capset, hdr.as_mut_ptr(), data.as_ptr()) })
        }
        // ---- seccomp and prctl ----
        "prctl_set_seccomp" => {
            let (_prog, fprog) = allow_all_filter();
            rc(unsafe {
                syscall(
                    SYS_prctl,
                    PR_SET_SECCOMP,
                    2,
                    &fprog as *const sock_fprog,
                    0,
                    0,
                )
            })
        }
        "seccomp_syscall" => {
            let (_prog, fprog) = allow_all_filter();
            rc(unsafe { syscall(SYS_seccomp, 1, 0, &fprog as *const sock_fprog) })
        }
        "prctl_no_new_privs_0" => {
            rc(unsafe { syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0) })
        }
        "prctl_dumpable_1" => rc(unsafe { syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0) }),
        // ---- kernel attack surface ----
        "io_uring_setup" => {
            let mut params = [0u8; 120];
            rc(unsafe { syscall(SYS_io_uring_setup, 8, params.as_mut_ptr()) })
        }
        "bpf" => {
            let mut attr = [0u32; 32]; // BPF_MAP_CREATE: type ARRAY, key 4, value 4, 1 entry
            attr[..4].copy_from_slice(&[2, 4, 4, 1]);
            rc(unsafe { syscall(SYS_bpf, 0, attr.as_mut_ptr(), 128usize) })
        }
        "perf_event_open" => {
            let mut attr = [0u32; 34]; // struct perf_event_attr, PERF_ATTR_SIZE_VER8 = 136
            attr[0] = 1; // PERF_TYPE_SOFTWARE (config 0: PERF_COUNT_SW_CPU_CLOCK)
            attr[1] = 136;
            rc(unsafe { syscall(SYS_perf_event_open, attr.as_mut_ptr(), 0, -1, -1, 0) })
        }
        "userfaultfd" => rc(unsafe { syscall(SYS_userfaultfd, O_CLOEXEC) }),
        "keyctl" => rc(unsafe { syscall(SYS_keyctl, 0, -3, 1) }), // GET_KEYRING_ID(session)
        "add_key" => {
            let (ty, desc) = (cstr("user"), cstr("escape-probe"));
            rc(unsafe {
                syscall(
                    SYS_add_key,
                    ty.as_ptr(),
                    desc.as_ptr(),
                    b"x".as_ptr(),
                    1,
                    -2,
                )
            })
        }
        "init_module" => {
            let image = [0u8; 64];
            rc(unsafe { syscall(SYS_init_module, image.as_ptr(), 64usize, empty.as_ptr()) })
        }
        "finit_module" => rc(unsafe { syscall(SYS_finit_module, 0, empty.as_ptr(), 0) }),
        // Invalid flags / command: harmless even where the call itself were allowed.
        "kexec_load" => rc(unsafe { syscall(SYS_kexec_load, 0, 0, 0, 0xdead_0000u64) }),
        "reboot" => rc(unsafe {
            syscall(
                SYS_reboot,
                LINUX_REBOOT_MAGIC1,
                LINUX_REBOOT_MAGIC2,
                0x0bad_c0de,
                0,
            )
        }),
        "process_vm_readv" => {
            let mut buf = [0u8; 8];
            let local = iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: 8,
            };
            let remote = iovec {
                iov_base: 0x40_0000 as *mut c_void,
                iov_len: 8,
            };
            rc(unsafe { syscall(SYS_process_vm_readv, ctx.ppid, &local, 1, &remote, 1, 0) })
        }
        "process_vm_writev" => {
            // Into this very process, so it is harmless even if it were allowed.
            let src = [1u8; 8];
            let mut dst = [0u8; 8];
            let local = iovec {
                iov_base: src.as_ptr() as *mut c_void,
                iov_len: 8,
            };
            let remote = iovec {
                iov_base: dst.as_mut_ptr().cast(),
                iov_len: 8,
            };
            rc(unsafe { syscall(SYS_process_vm_writev, ctx.pid, &local, 1, &remote, 1, 0) })
        }
        "memfd_create" => {
            let name = cstr("escape");
            rc(unsafe { syscall(SYS_memfd_create, name.as_ptr(), 0) })
        }
        // The socket is used with read/write only: send/recv (and MSG_OOB) are not allowed.
        // What is in view: after the pivot into an empty root, nothing.
        "stat_proc_self" => stat_path("/proc/self/status"),
        "stat_etc" => stat_path("/etc"),
        "list_root" => match std::fs::read_dir("/") {
            Ok(d) => Outcome::Ok(format!("{} entries", d.count())),
            Err(e) => Outcome::Errno(e.raw_os_error().unwrap_or(0)),
        },
        "send_oob" => {
            rc(unsafe { syscall(SYS_sendto, SOCKET_FD, b"!".as_ptr(), 1usize, MSG_OOB, 0, 0) })
        }
        "send_plain" => {
            rc(unsafe { syscall(SYS_sendto, SOCKET_FD, b"!".as_ptr(), 1usize, 0, 0, 0) })
        }
        "recv_oob" => {
            let mut b = [0u8; 1];
            rc(unsafe {
                syscall(
                    SYS_recvfrom,
                    SOCKET_FD,
                    b.as_mut_ptr(),
                    1usize,
                    MSG_OOB | MSG_DONTWAIT,
                    0,
                    0,
                )
            })
        }
        // Memory: private anonymous mappings only.
        "mmap_shared" => rc(unsafe {
            syscall(
                SYS_mmap,
                0,
                4096,
                PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS,
                -1,
                0,
            )
        }),
        "mmap_hugetlb" => rc(unsafe {
            syscall(
                SYS_mmap,
                0,
                2 << 20,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                -1,
                0,
            )
        }),
        "mmap_growsdown" => rc(unsafe {
            syscall(
                SYS_mmap,
                0,
                4096,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN,
                -1,
                0,
            )
        }),
        "mmap_socket" => {
            rc(unsafe { syscall(SYS_mmap, 0, 4096, PROT_READ, MAP_PRIVATE, SOCKET_FD, 0) })
        }
        "mremap_fixed" | "mremap_dontunmap" => {
            let p = unsafe {
                syscall(
                    SYS_mmap,
                    0,
                    8192,
                    PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p < 0 {
                return rc(p);
            }
            let flags = if op == "mremap_fixed" {
                MREMAP_MAYMOVE | MREMAP_FIXED
            } else {
                MREMAP_MAYMOVE | MREMAP_DONTUNMAP
            };
            rc(unsafe { syscall(SYS_mremap, p, 4096, 4096, flags, p + 4096) })
        }
        "mmap_exec" => rc(unsafe {
            syscall(
                SYS_mmap,
                0,
                4096,
                PROT_READ | PROT_EXEC,
                MAP_PRIVATE | MAP_ANONYMOUS,
                -1,
                0,
            )
        }),
        "mprotect_exec" => {
            let p = unsafe {
                syscall(
                    SYS_mmap,
                    0,
                    4096,
                    PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p < 0 {
                return rc(p);
            }
            rc(unsafe { syscall(SYS_mprotect, p, 4096, PROT_READ | PROT_EXEC) })
        }
        "pkey_mprotect_exec" => {
            let p = unsafe {
                syscall(
                    SYS_mmap,
                    0,
                    4096,
                    PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p < 0 {
                return rc(p);
            }
            rc(unsafe { syscall(SYS_pkey_mprotect, p, 4096, PROT_READ | PROT_EXEC, -1) })
        }
        "personality" => rc(unsafe { syscall(SYS_personality, 0x0040_0000) }), // READ_IMPLIES_EXEC
        "ioctl_tiocsti" => {
            let c = b'x';
            rc(unsafe { syscall(SYS_ioctl, 0, TIOCSTI, &c as *const u8) })
        }
        // ---- fds and limits ----
        "pipe" => {
            let mut fds = [0i32; 2];
            rc(unsafe { syscall(SYS_pipe, fds.as_mut_ptr()) })
        }
        "pipe2" => {
            let mut fds = [0i32; 2];
            rc(unsafe { syscall(SYS_pipe2, fds.as_mut_ptr(), 0) })
        }
        "dup" => rc(unsafe { syscall(SYS_dup, SOCKET_FD) }),
        "dup2_100" => rc(unsafe { syscall(SYS_dup2, SOCKET_FD, 100) }),
        "dup3_100" => rc(unsafe { syscall(SYS_dup3, SOCKET_FD, 100, 0) }),
        "fcntl_dupfd_100" => rc(unsafe { syscall(SYS_fcntl, SOCKET_FD, F_DUPFD, 100) }),
        "setrlimit_raise" => {
            let lim = rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            rc(unsafe { syscall(SYS_setrlimit, RLIMIT_NOFILE, &lim as *const rlimit) })
        }
        "prlimit_raise" => {
            let lim = rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            rc(unsafe { syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &lim as *const rlimit, 0) })
        }
        // ---- what the runner needs: must keep working ----
        "roundtrip" => roundtrip(),
        "memory" => memory(),
        "sigaltstack" => {
            let mut old: stack_t = unsafe { std::mem::zeroed() };
            if unsafe { syscall(SYS_sigaltstack, std::ptr::null::<stack_t>(), &mut old) } != 0 {
                return rc(-1);
            }
            let mut mem = vec![0u8; 64 * 1024];
            let new = stack_t {
                ss_sp: mem.as_mut_ptr().cast(),
                ss_flags: 0,
                ss_size: mem.len(),
            };
            if unsafe { syscall(SYS_sigaltstack, &new, std::ptr::null_mut::<stack_t>()) } != 0 {
                return rc(-1);
            }
            rc(unsafe { syscall(SYS_sigaltstack, &old, std::ptr::null_mut::<stack_t>()) })
        }
        "clock" => {
            let start = std::time::Instant::now();
            let mut ts = timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // The raw syscall, bypassing the vDSO: the allowlisted fallback.
            if unsafe { syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &mut ts) } != 0 {
                return rc(-1);
            }
            while start.elapsed() < std::time::Duration::from_millis(2) {
                std::hint::spin_loop();
            }
            Outcome::Ok(format!(
                "{:?} elapsed, monotonic {}s",
                start.elapsed(),
                ts.tv_sec
            ))
        }
        "misc_allowed" => {
            let mut buf = [0u8; 16];
            if unsafe { syscall(SYS_getrandom, buf.as_mut_ptr(), 16usize, 0) } != 16 {
                return rc(-1);
            }
            if unsafe { syscall(SYS_sched_yield) } != 0 {
                return rc(-1);
            }
            let word = 0u32;
            let wake = FUTEX_WAKE | FUTEX_PRIVATE_FLAG;
            if unsafe { syscall(SYS_futex, &word as *const u32, wake, 1, 0, 0, 0) } < 0 {
                return rc(-1);
            }
            let mut set: sigset_t = unsafe { std::mem::zeroed() };
            let none = std::ptr::null::<sigset_t>();
            rc(unsafe { syscall(SYS_rt_sigprocmask, SIG_BLOCK, none, &mut set, 8usize) })
        }
        "stdio" => {
            // std's own printing paths (LineWriter, write_all) on fds 1 and 2.
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"");
            let _ = out.flush();
            eprintln!("escape-probe: stderr still works");
            Outcome::Ok("stderr written".into())
        }
        "panic" => {
            // An unwinding panic must end as exit code 101, not as SIGSYS.
            let r = std::panic::catch_unwind(|| panic!("escape-probe test panic"));
            if r.is_err() {
                Outcome::Ok("caught".into())
            } else {
                Outcome::Errno(0)
            }
        }
        "panic_uncaught" => panic!("escape-probe uncaught panic: must exit 101, not SIGSYS"),
        "leaked_fd" => {
            // The test leaks a pipe at fd 7 into the probe; the fds layer must have closed it.
            rc(unsafe { syscall(SYS_write, 7, b"leak".as_ptr(), 4usize) })
        }
        "hold" => {
            // Block on the socket until the test is done looking at /proc/<pid>/status.
            let mut b = [0u8; 1];
            rc(unsafe { syscall(SYS_read, SOCKET_FD, b.as_mut_ptr(), 1usize) })
        }
        "exit_code" => Outcome::Ok("exiting with 42".into()),
        "noop" => Outcome::Ok(String::new()),
        _ => {
            eprintln!("escape-probe: unknown op {op}");
            std::process::exit(2);
        }
    }
}

/// Reads one frame (u32 big-endian length + bytes) from the socket with plain read(2) and
/// writes it back, as the runner's loop does.
fn roundtrip() -> Outcome {
    // Like the runner's channel: plain read/write on the socket (a `File`), never send/recv.
    // SAFETY: fd 3 is the socket the test passed in; this file becomes its only owner.
    let mut s = unsafe { std::fs::File::from_raw_fd(SOCKET_FD) };
    let mut len = [0u8; 4];
    if let Err(e) = s.read_exact(&mut len) {
        return Outcome::Errno(e.raw_os_error().unwrap_or(0));
    }
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    if let Err(e) = s.read_exact(&mut body) {
        return Outcome::Errno(e.raw_os_error().unwrap_or(0));
    }
    let mut reply = Vec::with_capacity(4 + body.len());
    reply.extend_from_slice(&len);
    reply.extend_from_slice(&body);
    if let Err(e) = s.write_all(&reply).and_then(|_| s.flush()) {
        return Outcome::Errno(e.raw_os_error().unwrap_or(0));
    }
    Outcome::Ok(format!("echoed {} bytes", body.len()))
}

/// brk, mmap/munmap/mremap of RW memory, a large Vec growing (realloc → mremap), madvise.
fn memory() -> Outcome {
    use libc::*;
    // SAFETY: brk(0) only queries the program break; growing it by one page is what malloc
    // does, and the page is released again right after.
    unsafe {
        let cur = syscall(SYS_brk, 0);
        let grown = syscall(SYS_brk, cur + 4096);
        if grown != cur + 4096 {
            return Outcome::Errno(ENOMEM);
        }
        syscall(SYS_brk, cur);
    }
    // SAFETY: anonymous private RW mappings owned by this function only; every pointer used
    // below comes from the preceding successful call.
    unsafe {
        let p = syscall(
            SYS_mmap,
            0,
            1 << 20,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS,
            -1,
            0,
        );
        if p < 0 {
            return rc(p);
        }
        *(p as *mut u8) = 7;
        let q = syscall(SYS_mremap, p, 1 << 20, 8 << 20, MREMAP_MAYMOVE);
        if q < 0 {
            return rc(q);
        }
        if *(q as *const u8) != 7 {
            return Outcome::Errno(EFAULT);
        }
        if syscall(SYS_madvise, q, 8 << 20, MADV_DONTNEED) != 0 {
            return rc(-1);
        }
        if syscall(SYS_mprotect, q, 4096, PROT_READ) != 0 {
            return rc(-1);
        }
        if syscall(SYS_munmap, q, 8 << 20) != 0 {
            return rc(-1);
        }
    }
    // A 64 MiB Vec grown by doubling: glibc realloc uses mremap for large blocks.
    let mut v: Vec<u64> = Vec::new();
    for i in 0..(8u64 << 20) {
        v.push(i);
    }
    let sum: u64 = v.iter().step_by(4096).sum();
    drop(v);
    // Many small allocations, freed (brk heap, trimming).
    let boxes: Vec<Box<[u8; 100]>> = (0..10_000).map(|_| Box::new([1u8; 100])).collect();
    let n = boxes.len();
    drop(boxes);
    Outcome::Ok(format!("vec checksum {sum}, {n} small boxes"))
}

/// stat(2) of a path: ok when it exists.
fn stat_path(p: &str) -> Outcome {
    let cp = cstr(p);
    // SAFETY: `st` is a valid, writable stat buffer and `cp` a NUL-terminated path.
    let r = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::syscall(
            libc::SYS_newfstatat,
            libc::AT_FDCWD,
            cp.as_ptr(),
            &mut st,
            0,
        )
    };
    rc(r)
}
