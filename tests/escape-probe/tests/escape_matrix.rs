//! The escape matrix: the runner's lockdown, tested natively at the system-call level.
//!
//! Each operation runs in its own `escape-probe` process, set up like the runner (socket at
//! fd 3, empty environment, cwd `/`, stdin /dev/null), which applies the same
//! `sandbox_runner::lockdown::apply` and then makes exactly one attempt. Forbidden operations
//! must end the probe with SIGSYS (the seccomp allowlist's default action); the calls the runner
//! needs must still work; a held probe's `/proc/<pid>/status` must show the lockdown.
//!
//! These tests need what the runner needs on this machine: root (for the uid drop), user
//! namespaces and Landlock. They assert every layer "enforced", so a machine lacking a layer
//! fails here loudly instead of passing on a weaker sandbox.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const PROBE: &str = env!("CARGO_BIN_EXE_escape-probe");
const SIGSYS: i32 = libc::SIGSYS; // 31 on x86_64 and aarch64
const DEADLINE: Duration = Duration::from_secs(15);

/// Every layer the probe must report, with the start of the value expected on this machine.
const LAYERS: &[&str] = &[
    "fds",
    "uid",
    "namespaces",
    "empty_root",
    "landlock",
    "rlimits",
    "no_new_privs",
    "seccomp",
];

/// Forbidden operations. `path` names what the op acts on inside a fresh scratch directory.
const FORBIDDEN: &[(&str, Option<&str>)] = &[
    // filesystem
    ("open_passwd", None),
    ("openat_passwd", None),
    ("openat2_passwd", None),
    ("open_tmp", Some("existing")),
    ("openat_tmp", Some("existing")),
    ("creat", Some("new-file")),
    ("unlink", Some("existing")),
    ("unlinkat", Some("existing")),
    ("mkdir", Some("new-dir")),
    ("stat_passwd", None),
    ("open_proc_self_mem", None),
    ("open_by_handle_at", None),
    // network and fds passing
    ("socket_inet", None),
    ("socket_inet6", None),
    ("socket_unix", None),
    ("socket_netlink", None),
    ("socketpair", None),
    ("connect_inet", None),
    ("connect_abstract_unix", None),
    ("bind", None),
    ("sendmsg_scm_rights", None),
    // processes and signals
    ("execve", None),
    ("execveat", None),
    ("fork", None),
    ("vfork", None),
    ("clone", None),
    ("clone3", None),
    ("thread_spawn", None),
    ("ptrace_parent", None),
    ("ptrace_traceme", None),
    ("kill_init", None),
    ("kill_parent", None),
    ("tgkill_parent", None),
    ("tkill_parent", None),
    ("pidfd_open_parent", None),
    // namespaces, mounts, identity
    ("mount", Some("mnt")),
    ("umount2", Some("mnt")),
    ("pivot_root", Some("mnt")),
    ("chroot", Some("mnt")),
    ("unshare", None),
    ("setns", None),
    ("setuid0", None),
    ("setgid0", None),
    ("setresuid0", None),
    ("capset", None),
    // seccomp and prctl
    ("prctl_set_seccomp", None),
    ("seccomp_syscall", None),
    ("prctl_no_new_privs_0", None),
    ("prctl_dumpable_1", None),
    // kernel attack surface
    ("io_uring_setup", None),
    ("bpf", None),
    ("perf_event_open", None),
    ("userfaultfd", None),
    ("keyctl", None),
    ("add_key", None),
    ("init_module", None),
    ("finit_module", None),
    ("kexec_load", None),
    ("reboot", None),
    ("process_vm_readv", None),
    ("process_vm_writev", None),
    ("memfd_create", None),
    ("send_oob", None),
    ("send_plain", None),
    ("recv_oob", None),
    ("mmap_shared", None),
    ("mmap_hugetlb", None),
    ("mmap_growsdown", None),
    ("mmap_socket", None),
    ("mremap_fixed", None),
    ("mremap_dontunmap", None),
    ("mmap_exec", None),
    ("mprotect_exec", None),
    ("pkey_mprotect_exec", None),
    ("personality", None),
    ("ioctl_tiocsti", None),
    // fds and limits
    ("pipe", None),
    ("pipe2", None),
    ("dup", None),
    ("dup2_100", None),
    ("dup3_100", None),
    ("fcntl_dupfd_100", None),
    ("setrlimit_raise", None),
    ("prlimit_raise", None),
    // glibc's abort raises SIGABRT with tgkill: documented to end as SIGSYS
    ("abort", None),
];

/// What one probe run produced.
struct Run {
    op: String,
    status: ExitStatus,
    lines: Vec<Value>,
    stderr: String,
}

impl Run {
    fn locked(&self) -> Option<&Value> {
        self.lines.iter().find(|l| l["event"] == "locked")
    }
    fn result(&self) -> Option<&Value> {
        self.lines.iter().find(|l| l["event"] == "result")
    }
    fn describe(&self) -> String {
        format!(
            "{}: status {:?} (signal {:?}), result {:?}, stderr {:?}",
            self.op,
            self.status,
            self.status.signal(),
            self.result(),
            self.stderr.trim()
        )
    }
    /// Checks that the lockdown ran and reported every layer enforced before the op.
    fn check_locked(&self) -> Result<(), String> {
        let report = self
            .locked()
            .map(|l| &l["report"])
            .ok_or_else(|| format!("no 'locked' line: {}", self.describe()))?;
        for layer in LAYERS {
            let v = report[*layer].as_str().unwrap_or("<missing>");
            if !(v == "enforced" || v.starts_with("enforced (")) {
                return Err(format!("{}: layer {layer} is {v:?}", self.op));
            }
        }
        Ok(())
    }
}

struct Options<'a> {
    mode: Option<&'a str>,
    path: Option<PathBuf>,
    leak_fd: bool,
}

/// A fresh scratch directory with `existing` (a file) and `mnt` (a directory) in it.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("escape-probe-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir_all(dir.join("mnt")).unwrap();
        std::fs::write(dir.join("existing"), b"secret").unwrap();
        Scratch(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Duplicates `fd` to a number ≥ 100 with close-on-exec, so the pre_exec dup2 calls never
/// collide with the target numbers 3 and 7.
fn high_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: F_DUPFD_CLOEXEC returns a new fd owned by nobody else; checked before wrapping.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100) };
    assert!(new >= 100, "F_DUPFD_CLOEXEC failed");
    // SAFETY: `new` is a fresh, valid fd that we now own.
    unsafe { OwnedFd::from_raw_fd(new) }
}

/// A spawned probe: the test's end of the socket, and the read end of the leakable pipe.
struct Spawned {
    child: Child,
    sock: UnixStream,
    _pipe_read: OwnedFd,
}

/// Spawns the probe with its socket at fd 3 (and, if asked, a leaked pipe at fd 7).
fn spawn(op: &str, opts: &Options) -> Spawned {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let sock = high_fd(theirs.as_raw_fd());
    drop(theirs);
    let mut pipe = [0; 2];
    // SAFETY: pipe2 writes two fds into the array.
    assert_eq!(
        unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    // SAFETY: both fds are fresh and owned here.
    let (pr, pw) = unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    let leak = high_fd(pw.as_raw_fd());
    drop(pw);

    let mut cmd = Command::new(PROBE);
    if let Some(m) = opts.mode {
        cmd.arg(m);
    }
    cmd.arg(op);
    if let Some(p) = &opts.path {
        cmd.arg(p);
    }
    cmd.env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (sock_fd, leak_fd, do_leak) = (sock.as_raw_fd(), leak.as_raw_fd(), opts.leak_fd);
    // SAFETY: only async-signal-safe dup2 calls in the forked child; the sources are ≥ 100 and
    // close-on-exec, the copies at 3 and 7 are not.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(sock_fd, 3) != 3 {
                return Err(std::io::Error::last_os_error());
            }
            if do_leak && libc::dup2(leak_fd, 7) != 7 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn escape-probe");
    drop((sock, leak));
    Spawned {
        child,
        sock: ours,
        _pipe_read: pr,
    }
}

/// Waits for the child with a deadline (killing it when exceeded) and collects its output.
fn finish(op: &str, mut child: Child) -> Run {
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    Run {
        op: op.to_string(),
        status,
        lines: out
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        stderr: err,
    }
}

fn run(op: &str, opts: &Options) -> Run {
    let s = spawn(op, opts);
    finish(op, s.child)
}

/// Runs `ops` in parallel batches; returns the runs in order.
fn run_all(ops: &[(&str, Option<&str>)], mode: Option<&str>) -> Vec<Run> {
    let scratch = Scratch::new(mode.unwrap_or("full").trim_start_matches('-'));
    let mut runs = Vec::new();
    for chunk in ops.chunks(8) {
        let batch: Vec<Run> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|(op, p)| {
                    let path = p.map(|p| scratch.path(p));
                    s.spawn(move || {
                        run(
                            op,
                            &Options {
                                mode,
                                path,
                                leak_fd: false,
                            },
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        runs.extend(batch);
    }
    runs
}

#[test]
fn every_forbidden_operation_kills_the_probe_with_sigsys() {
    let scratch_check = Scratch::new("check");
    let runs = run_all(FORBIDDEN, None);
    let mut failures = Vec::new();
    for r in &runs {
        if let Err(e) = r.check_locked() {
            failures.push(e);
        } else if r.status.signal() != Some(SIGSYS) || r.result().is_some() {
            failures.push(format!("not killed by SIGSYS: {}", r.describe()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} forbidden operations were not denied as expected:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
    drop(scratch_check);
}

#[test]
fn forbidden_operations_had_no_effect_on_the_filesystem() {
    let scratch = Scratch::new("fs-effects");
    for (op, p) in [
        ("creat", "new-file"),
        ("unlink", "existing"),
        ("mkdir", "new-dir"),
    ] {
        let r = run(
            op,
            &Options {
                mode: None,
                path: Some(scratch.path(p)),
                leak_fd: false,
            },
        );
        assert_eq!(r.status.signal(), Some(SIGSYS), "{}", r.describe());
    }
    assert!(!scratch.path("new-file").exists());
    assert!(!scratch.path("new-dir").exists());
    assert_eq!(std::fs::read(scratch.path("existing")).unwrap(), b"secret");
}

fn assert_ok(r: &Run, code: i32) {
    r.check_locked().unwrap();
    assert_eq!(r.status.code(), Some(code), "{}", r.describe());
    if code != 101 {
        let res = r.result().unwrap_or_else(|| panic!("{}", r.describe()));
        assert_eq!(res["result"], "ok", "{}", r.describe());
    }
}

fn plain() -> Options<'static> {
    Options {
        mode: None,
        path: None,
        leak_fd: false,
    }
}

#[test]
fn what_the_runner_needs_still_works() {
    for op in [
        "noop",
        "memory",
        "sigaltstack",
        "clock",
        "misc_allowed",
        "stdio",
        "panic",
    ] {
        assert_ok(&run(op, &plain()), 0);
    }
    // exit_group with a chosen code, and an uncaught panic unwinding out of main.
    assert_ok(&run("exit_code", &plain()), 42);
    let r = run("panic_uncaught", &plain());
    assert_ok(&r, 101);
    assert!(r.stderr.contains("uncaught panic"), "{}", r.describe());
}

#[test]
fn socket_round_trip_after_lockdown() {
    let Spawned {
        child, mut sock, ..
    } = spawn("roundtrip", &plain());
    let body = br#"{"type":"execute","code":"1+1"}"#.repeat(1000);
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    sock.write_all(&frame).unwrap();
    sock.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut echoed = vec![0u8; frame.len()];
    let read = sock.read_exact(&mut echoed);
    let r = finish("roundtrip", child);
    assert!(read.is_ok(), "{read:?}: {}", r.describe());
    assert_eq!(echoed, frame);
    assert_ok(&r, 0);
}

#[test]
fn an_fd_leaked_by_the_parent_is_closed() {
    let r = run(
        "leaked_fd",
        &Options {
            mode: None,
            path: None,
            leak_fd: true,
        },
    );
    r.check_locked().unwrap();
    let res = r.result().unwrap_or_else(|| panic!("{}", r.describe()));
    assert_eq!(res["result"], "errno", "{}", r.describe());
    assert_eq!(res["errno"], libc::EBADF, "{}", r.describe());
    assert_eq!(r.status.code(), Some(0));
    // Without the lockdown the same write goes through: the op is real.
    let r = run(
        "leaked_fd",
        &Options {
            mode: Some("--no-lockdown"),
            path: None,
            leak_fd: true,
        },
    );
    assert_eq!(r.result().unwrap()["result"], "ok", "{}", r.describe());
}

fn proc_status(pid: i32) -> BTreeMap<String, String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(":\t"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_locked_probe_shows_the_lockdown_in_proc_status() {
    let Spawned {
        mut child,
        mut sock,
        ..
    } = spawn("hold", &plain());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let locked: Value = serde_json::from_str(&line).expect("locked line");
    let pid = locked["pid"].as_i64().unwrap() as i32;
    assert_eq!(pid as u32, child.id());
    let st = proc_status(pid);
    let ids = "65534\t65534\t65534\t65534";
    let expect = [
        ("Seccomp", "2"),
        ("NoNewPrivs", "1"),
        ("CapEff", "0000000000000000"),
        ("CapPrm", "0000000000000000"),
        ("CapInh", "0000000000000000"),
        ("CapBnd", "0000000000000000"),
        ("CapAmb", "0000000000000000"),
        ("Uid", ids),
        ("Gid", ids),
        ("Groups", ""),
        ("Threads", "1"),
    ];
    let mismatches: Vec<String> = expect
        .iter()
        .filter(|(k, v)| st.get(*k).map(|s| s.trim_end()) != Some(*v))
        .map(|(k, v)| format!("{k}: expected {v:?}, got {:?}", st.get(*k)))
        .collect();
    // Its namespaces differ from ours.
    for ns in ["user", "net", "ipc", "uts", "mnt"] {
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/{ns}")).unwrap();
        let ours = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        assert_ne!(theirs, ours, "{ns} namespace is shared with the test");
    }
    // Only fds 0-3 are open.
    let mut fds: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort();
    // Limits as configured.
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    sock.write_all(b"x").unwrap();
    let status = child.wait().unwrap();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert_eq!(fds, vec![0, 1, 2, 3]);
    for (name, value) in [
        ("Max cpu time", "5                    6"),
        ("Max processes", "0                    0"),
        ("Max open files", "4                    4"),
        ("Max core file size", "0                    0"),
        ("Max address space", "268435456            268435456"),
        ("Max file size", "unlimited"),
    ] {
        let l = limits
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in limits"));
        assert!(l.contains(value), "{name}: {l}");
    }
    assert_eq!(status.code(), Some(0));
    // The report on this machine: every layer enforced.
    let report = &locked["report"];
    for layer in LAYERS {
        let v = report[*layer].as_str().unwrap_or_default();
        assert!(v.starts_with("enforced"), "{layer}: {v}");
    }
    assert!(report["landlock"]
        .as_str()
        .unwrap()
        .starts_with("enforced (abi "));
}

/// With every layer but seccomp, the inner layers still deny these on their own (defense in
/// depth): Landlock (EACCES), RLIMIT_NPROC (EAGAIN), RLIMIT_NOFILE (EMFILE), the uid drop and
/// capability drop (EPERM), unmapped ids in the new user namespace (EINVAL).
#[test]
fn inner_layers_deny_on_their_own_without_seccomp() {
    use libc::{EAGAIN, EINVAL, EMFILE, ENOENT, EPERM};
    let expected: &[(&str, Option<&str>, i32)] = &[
        // The empty root: the paths do not exist in the runner's view (Landlock would refuse
        // them with EACCES behind it):
        ("unlink", Some("existing"), ENOENT),
        ("unlinkat", Some("existing"), ENOENT),
        ("mkdir", Some("new-dir"), ENOENT),
        ("execve", None, ENOENT),
        ("execveat", None, ENOENT),
        ("mount", Some("mnt"), ENOENT),
        ("umount2", Some("mnt"), ENOENT),
        ("chroot", Some("mnt"), ENOENT),
        // RLIMIT_NOFILE = 4 with fds 0-3 open: no fd can be created (the kernel reserves the
        // fd before it looks at the path, so opens fail with EMFILE before Landlock's EACCES).
        ("open_passwd", None, EMFILE),
        ("openat_passwd", None, EMFILE),
        ("openat2_passwd", None, EMFILE),
        ("open_tmp", Some("existing"), EMFILE),
        ("creat", Some("new-file"), EMFILE),
        ("open_proc_self_mem", None, EMFILE),
        ("socket_inet", None, EMFILE),
        ("socket_unix", None, EMFILE),
        ("socket_netlink", None, EMFILE),
        ("socketpair", None, EMFILE),
        ("pipe2", None, EMFILE),
        ("memfd_create", None, EMFILE),
        ("io_uring_setup", None, EMFILE),
        // RLIMIT_NPROC = 0 at uid 65534:
        ("fork", None, EAGAIN),
        ("clone", None, EAGAIN),
        ("clone3", None, EAGAIN),
        // uid drop, no capabilities, Landlock signal scope, not dumpable:
        ("ptrace_parent", None, EPERM),
        ("kill_init", None, EPERM),
        ("kill_parent", None, EPERM),
        ("tgkill_parent", None, EPERM),
        ("process_vm_readv", None, EPERM),
        ("pivot_root", Some("mnt"), EPERM),
        ("capset", None, EPERM),
        ("bpf", None, EPERM),
        ("userfaultfd", None, EPERM),
        ("reboot", None, EPERM),
        ("setrlimit_raise", None, EPERM),
        ("prlimit_raise", None, EPERM),
        // the new user namespace has no uid/gid map: no nested namespace, no id 0.
        ("unshare", None, EPERM),
        ("setuid0", None, EINVAL),
        ("setgid0", None, EINVAL),
    ];
    let ops: Vec<(&str, Option<&str>)> = expected.iter().map(|(o, p, _)| (*o, *p)).collect();
    let runs = run_all(&ops, Some("--without-seccomp"));
    let mut failures = Vec::new();
    for (r, (_, _, errno)) in runs.iter().zip(expected) {
        let report = r.locked().map(|l| l["report"].clone()).unwrap_or_default();
        if report.get("seccomp").is_some() {
            failures.push(format!("{}: seccomp was applied", r.op));
        }
        let got = r
            .result()
            .map(|v| (v["result"].clone(), v["errno"].clone()));
        if got != Some((Value::from("errno"), Value::from(*errno))) {
            failures.push(format!("expected errno {errno}: {}", r.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Even without seccomp (and whatever Landlock allows), the runner's view of the filesystem is
/// an empty root: no `/proc`, no `/etc`. With the full lockdown the same ops die by SIGSYS.
#[test]
fn the_locked_down_view_has_no_proc_and_no_etc() {
    use libc::ENOENT;
    // (Listing `/` needs an fd, which RLIMIT_NOFILE refuses; the layer itself checks at
    // lockdown that the new root is empty.)
    let ops = [("stat_proc_self", None), ("stat_etc", None)];
    let runs = run_all(&ops, Some("--without-seccomp"));
    for r in &runs {
        let report = r.locked().map(|l| l["report"].clone()).unwrap_or_default();
        assert!(
            report["empty_root"]
                .as_str()
                .unwrap_or("")
                .starts_with("enforced"),
            "{}",
            r.describe()
        );
        let res = r.result().unwrap_or_else(|| panic!("{}", r.describe()));
        assert_eq!(
            (res["result"].as_str(), res["errno"].as_i64()),
            (Some("errno"), Some(ENOENT as i64)),
            "{}",
            r.describe()
        );
    }
    // Without the lockdown they are there (the ops are real).
    for op in ["stat_proc_self", "stat_etc"] {
        let r = run(
            op,
            &Options {
                mode: Some("--no-lockdown"),
                path: None,
                leak_fd: false,
            },
        );
        assert_eq!(
            r.result().map(|v| v["result"].clone()),
            Some(Value::from("ok")),
            "{}",
            r.describe()
        );
    }
    // And with it, looking is a forbidden system call.
    for r in run_all(&ops, None) {
        assert_eq!(r.status.signal(), Some(SIGSYS), "{}", r.describe());
    }
}

/// The probe's operations are real: without the lockdown a sample of them succeeds (only ones
/// harmless to the machine running the tests).
#[test]
fn without_lockdown_the_same_operations_succeed() {
    let scratch = Scratch::new("open");
    let harmless: &[(&str, Option<&Path>)] = &[
        ("open_passwd", None),
        ("open_tmp", Some(&scratch.path("existing"))),
        ("socket_inet", None),
        ("memfd_create", None),
        ("mmap_exec", None),
        ("send_oob", None),
        ("mmap_shared", None),
        ("mmap_growsdown", None),
        ("mremap_fixed", None),
        ("fork", None),
        ("pipe2", None),
        ("personality", None),
    ];
    for (op, path) in harmless {
        let r = run(
            op,
            &Options {
                mode: Some("--no-lockdown"),
                path: path.map(Path::to_path_buf),
                leak_fd: false,
            },
        );
        assert_eq!(
            r.result().map(|v| v["result"].clone()),
            Some(Value::from("ok")),
            "{}",
            r.describe()
        );
    }
}

/// Issue 18: the whole matrix against a runner made the zygote's way (`--forked`: the shared
/// layers applied once in a parent, the runner forked from it applying its own), plus attempts
/// on a sibling runner forked from the same parent. Every one dies by SIGSYS.
#[test]
fn every_forbidden_operation_kills_a_forked_runner_with_sigsys() {
    let mut ops = FORBIDDEN.to_vec();
    ops.extend([
        ("kill_sibling", None),
        ("ptrace_sibling", None),
        ("pidfd_open_sibling", None),
    ]);
    let runs = run_all(&ops, Some("--forked"));
    let mut failures = Vec::new();
    for r in &runs {
        if let Err(e) = r.check_locked() {
            failures.push(e);
        } else if r.status.signal() != Some(SIGSYS) || r.result().is_some() {
            failures.push(format!("not killed by SIGSYS: {}", r.describe()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} forbidden operations on a forked runner were not denied as expected:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
}

/// Issue 18: runners forked from one zygote share its uid and namespaces, so what keeps them
/// from signalling or tracing each other and the zygote, behind seccomp, is each runner's own
/// Landlock domain (signal scope; ptrace only into nested domains) and not being dumpable.
/// Without seccomp every such attempt still fails with EPERM.
#[test]
fn forked_runners_cannot_signal_or_trace_each_other_or_the_zygote_without_seccomp() {
    use libc::EPERM;
    let expected: &[(&str, i32)] = &[
        ("kill_sibling", EPERM),
        ("ptrace_sibling", EPERM),
        ("kill_parent", EPERM),
        ("tgkill_parent", EPERM),
        ("ptrace_parent", EPERM),
        ("process_vm_readv", EPERM),
    ];
    let ops: Vec<(&str, Option<&str>)> = expected.iter().map(|(o, _)| (*o, None)).collect();
    let runs = run_all(&ops, Some("--forked-without-seccomp"));
    let mut failures = Vec::new();
    for (r, (_, errno)) in runs.iter().zip(expected) {
        let report = r.locked().map(|l| l["report"].clone()).unwrap_or_default();
        if report.get("seccomp").is_some() {
            failures.push(format!("{}: seccomp was applied", r.op));
        }
        if report["landlock"]
            .as_str()
            .is_none_or(|v| !v.starts_with("enforced"))
        {
            failures.push(format!("{}: no landlock domain: {report}", r.op));
        }
        let got = r
            .result()
            .map(|v| (v["result"].clone(), v["errno"].clone()));
        if got != Some((Value::from("errno"), Value::from(*errno))) {
            failures.push(format!("expected errno {errno}: {}", r.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
