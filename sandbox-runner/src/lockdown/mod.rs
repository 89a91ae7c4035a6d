//! OS lockdown of the runner, applied in the design's order before any user code is read.
//!
//! One file per layer, applied by [`apply`] in this order:
//!
//! 1. [`fds`] — close every fd but 0, 1, 2 and the socket.
//! 2. [`identity`] — when root: no supplementary groups, then gid and uid of an unprivileged id;
//!    any other user: [`subordinate_ids`] maps the new user namespace (step 3) to one id of the
//!    user's `/etc/subuid` range and switches to it.
//! 3. [`namespaces`] — new user+net+ipc+uts+mount namespaces in one call; [`empty_root`] pivots
//!    into an empty read-only tmpfs (reported as its own layer); then every capability the new
//!    user namespace granted is dropped.
//! 4. [`landlock`] — every filesystem and TCP right handled and none granted, plus scopes.
//! 5. [`rlimits`] — address space, CPU seconds, open files, processes 0, core 0.
//! 6. [`prctl`] — not dumpable, `no_new_privs`.
//! 7. [`seccomp`] — a syscall allowlist whose default action kills the process (SIGSYS).
//!
//! Each layer reports exactly `"enforced"` (optionally followed by a parenthesised detail) or
//! `"unavailable: <reason>"`. A layer that only partly holds is reported as unavailable, with
//! what is missing in the reason: nothing is ever reported stronger than it is.
//!
//! `apply` must be called while the process is single-threaded (Landlock and the capability
//! drop act on the calling thread; `unshare(CLONE_NEWUSER)` refuses multi-threaded callers).
//! After it returns, the process can no longer open files, create fds, spawn threads or
//! processes, or send signals; see `docs/security-model.md`.

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use nix::errno::Errno;

pub mod empty_root;
pub mod fds;
pub mod identity;
pub mod landlock;
pub mod namespaces;
pub mod parent_death;
pub mod prctl;
pub mod rlimits;
pub mod seccomp;
pub mod subordinate_ids;

pub use seccomp::{allowlist, AllowedSyscall};

/// What the host asked for at spawn time (passed on the runner's command line).
#[derive(Debug, Clone)]
pub struct LockdownConfig {
    /// The runner's socket fd; the only fd kept open besides 0, 1, 2.
    pub socket_fd: i32,
    /// uid/gid to drop to when started as root.
    pub uid: u32,
    pub gid: u32,
    /// RLIMIT_AS in bytes (a backstop above the QuickJS heap limit).
    pub address_space_bytes: u64,
    /// RLIMIT_CPU in seconds (a hard backstop above the JS CPU budget).
    pub cpu_seconds: u64,
    /// The host's pid: the process dies with it ([`parent_death`]); `None` skips that.
    pub host_pid: Option<u32>,
}

/// Layer name → `"enforced"` or `"unavailable: <reason>"`.
pub type IsolationReport = BTreeMap<String, String>;

/// Layers without which the host must refuse to run code (`SANDBOX_UNAVAILABLE`).
pub const REQUIRED_LAYERS: &[&str] = &["rlimits", "no_new_privs", "seccomp"];

/// Layers applied when the machine allows them; the host may be told to require them too.
pub const BEST_EFFORT_LAYERS: &[&str] = &["fds", "uid", "namespaces", "empty_root", "landlock"];

/// Every report key, in the order the layers are applied.
pub const ALL_LAYERS: &[&str] = &[
    "fds",
    "uid",
    "namespaces",
    "empty_root",
    "landlock",
    "rlimits",
    "no_new_privs",
    "seccomp",
];

/// Why a layer is not (fully) in force. Its `Display` is the text after `"unavailable: "`.
#[derive(Debug, thiserror::Error)]
pub enum LockdownError {
    /// A system call failed; `hint` tells a person what to look at.
    #[error("{call} failed: {}{}", errno_text(*.errno), hint_text(.hint))]
    Syscall {
        call: &'static str,
        errno: Errno,
        hint: Option<String>,
    },
    /// The calls succeeded but checking afterwards shows the layer does not (fully) hold.
    #[error("{0}")]
    NotHeld(String),
    /// The kernel or the configuration does not offer this layer.
    #[error("{0}")]
    Unsupported(String),
}

impl LockdownError {
    /// A failed call with the current `errno`.
    pub(crate) fn last(call: &'static str) -> Self {
        LockdownError::Syscall {
            call,
            errno: Errno::last(),
            hint: None,
        }
    }

    pub(crate) fn errno(call: &'static str, errno: Errno) -> Self {
        LockdownError::Syscall {
            call,
            errno,
            hint: None,
        }
    }

    /// Adds a hint to a `Syscall` error (other variants are returned unchanged).
    pub(crate) fn with_hint(self, hint: impl Into<String>) -> Self {
        match self {
            LockdownError::Syscall { call, errno, .. } => LockdownError::Syscall {
                call,
                errno,
                hint: Some(hint.into()),
            },
            other => other,
        }
    }
}

fn errno_text(errno: Errno) -> String {
    // `Errno`'s Display is "EPERM: Operation not permitted".
    errno.to_string()
}

fn hint_text(hint: &Option<String>) -> String {
    match hint {
        Some(h) => format!(" ({h})"),
        None => String::new(),
    }
}

/// What a layer function returns: an optional detail when enforced, or why it is not.
pub type LayerResult = Result<Option<String>, LockdownError>;

/// The report value of one layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerStatus {
    Enforced(Option<String>),
    Unavailable(String),
}

impl fmt::Display for LayerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerStatus::Enforced(None) => f.write_str("enforced"),
            LayerStatus::Enforced(Some(d)) => write!(f, "enforced ({d})"),
            LayerStatus::Unavailable(why) => write!(f, "unavailable: {why}"),
        }
    }
}

impl From<LayerResult> for LayerStatus {
    fn from(r: LayerResult) -> Self {
        match r {
            Ok(detail) => LayerStatus::Enforced(detail),
            Err(e) => LayerStatus::Unavailable(e.to_string()),
        }
    }
}

/// True when a report value says the layer holds (`"enforced"` or `"enforced (…)"`).
pub fn is_enforced(value: &str) -> bool {
    value == "enforced" || value.starts_with("enforced (")
}

/// The required layers that are not enforced in `report` (missing keys count as not enforced).
pub fn missing_required(report: &IsolationReport) -> Vec<&'static str> {
    REQUIRED_LAYERS
        .iter()
        .copied()
        .filter(|l| !report.get(*l).is_some_and(|v| is_enforced(v)))
        .collect()
}

/// Runs one layer, turning a panic (a bug) into "unavailable" instead of unwinding out of `apply`.
fn run_layer(f: impl FnOnce() -> LayerResult) -> String {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => LayerStatus::from(r).to_string(),
        Err(_) => LayerStatus::Unavailable("internal error: the layer panicked".into()).to_string(),
    }
}

/// Applies every layer it can and reports each one. Never panics.
///
/// Every layer is attempted even when an earlier one failed: a missing layer never weakens
/// the others. The seccomp program is compiled first (it only allocates) and installed last,
/// because the earlier layers need system calls it forbids.
pub fn apply(cfg: &LockdownConfig) -> IsolationReport {
    apply_own(cfg, &apply_shared(cfg))
}

/// What [`apply_shared`] leaves for [`apply_own`]: the shared layers' report and the compiled
/// (not yet installed) seccomp program.
#[derive(Clone)]
pub struct Shared {
    pub report: IsolationReport,
    program: Result<seccompiler::BpfProgram, String>,
}

/// Layers 1–3 (fds, uid, namespaces with the empty root): the ones a zygote applies once and
/// every runner forked from it shares. The seccomp program is compiled here too.
pub fn apply_shared(cfg: &LockdownConfig) -> Shared {
    let mut report = IsolationReport::new();
    let program = catch_unwind(seccomp::build_program)
        .unwrap_or_else(|_| {
            Err(LockdownError::NotHeld(
                "internal error: building the filter panicked".into(),
            ))
        })
        .map_err(|e| e.to_string());

    report.insert("fds".into(), run_layer(|| fds::apply(cfg.socket_fd)));
    // Root drops to the configured uid now; any other user is mapped to a subordinate id of
    // its own range once the user namespace exists (the namespaces layer does it).
    let plan = if identity::started_as_root() {
        report.insert(
            "uid".into(),
            run_layer(|| identity::apply(cfg.uid, cfg.gid)),
        );
        None
    } else {
        Some(subordinate_ids::Plan::find())
    };
    let (ns, root, uid) = catch_unwind(AssertUnwindSafe(move || {
        namespaces::apply_with_root_mapped(plan)
    }))
    .unwrap_or_else(|_| {
        let panicked = || LockdownError::NotHeld("internal error: the layer panicked".into());
        (Err(panicked()), Err(panicked()), Some(Err(panicked())))
    });
    if let Some(uid) = uid {
        report.insert("uid".into(), LayerStatus::from(uid).to_string());
    }
    report.insert("namespaces".into(), LayerStatus::from(ns).to_string());
    report.insert("empty_root".into(), LayerStatus::from(root).to_string());
    Shared { report, program }
}

/// Layers 4–7 (Landlock, rlimits, no_new_privs and not dumpable, seccomp): each runner's own,
/// applied by a runner forked from a zygote before it reads any user code (and by an exec'd
/// runner right after [`apply_shared`]). Returns the whole report.
pub fn apply_own(cfg: &LockdownConfig, shared: &Shared) -> IsolationReport {
    let mut report = shared.report.clone();
    let program = shared.program.clone();
    report.insert("landlock".into(), run_layer(landlock::apply));
    report.insert("rlimits".into(), run_layer(|| rlimits::apply(cfg)));
    report.insert("no_new_privs".into(), run_layer(prctl::apply));
    // After the last credential change (which would clear it), before seccomp forbids prctl.
    if let Some(host) = cfg.host_pid {
        parent_death::die_with(host);
    }
    report.insert(
        "seccomp".into(),
        run_layer(move || seccomp::install(program.map_err(LockdownError::NotHeld)?)),
    );
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_strings() {
        assert_eq!(LayerStatus::Enforced(None).to_string(), "enforced");
        assert_eq!(
            LayerStatus::Enforced(Some("abi 7".into())).to_string(),
            "enforced (abi 7)"
        );
        let e = LockdownError::errno("unshare(CLONE_NEWUSER|…)", Errno::EPERM)
            .with_hint("user namespaces disabled?");
        assert_eq!(
            LayerStatus::from(Err(e)).to_string(),
            "unavailable: unshare(CLONE_NEWUSER|…) failed: EPERM: Operation not permitted \
             (user namespaces disabled?)"
        );
    }

    #[test]
    fn enforced_parsing() {
        assert!(is_enforced("enforced"));
        assert!(is_enforced("enforced (abi 7)"));
        assert!(!is_enforced("enforcedx"));
        assert!(!is_enforced("unavailable: enforced"));
    }

    #[test]
    fn layers_partition() {
        let mut all: Vec<&str> = REQUIRED_LAYERS
            .iter()
            .chain(BEST_EFFORT_LAYERS)
            .copied()
            .collect();
        all.sort();
        let mut expected = ALL_LAYERS.to_vec();
        expected.sort();
        assert_eq!(all, expected);
    }

    #[test]
    fn missing_required_layers() {
        let mut r = IsolationReport::new();
        r.insert("rlimits".into(), "enforced".into());
        r.insert("seccomp".into(), "unavailable: no".into());
        assert_eq!(missing_required(&r), vec!["no_new_privs", "seccomp"]);
    }
}
