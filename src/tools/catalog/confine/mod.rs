//! Every stdio MCP server starts confined unless its entry says `"confine": false`: bubblewrap
//! (`bwrap`, what Flatpak uses) runs it in namespaces of its own, and this module says with
//! what (see docs/server-sandbox.md):
//!
//! - user namespace (the server is uid/gid 65534 inside, with no capability; no namespace of
//!   its own may be made inside), PID, IPC, UTS and cgroup namespaces, a network namespace
//!   with only loopback (`network` decides), `--die-with-parent`;
//! - a mount namespace built from nothing: `/usr`, `/bin`, `/sbin`, `/lib*` and `/etc` (its
//!   secrets masked) read-only, the server's install roots ([`install`]) read-only, the
//!   entry's `files.read` read-only and `files.write` read-write, a private home per scope
//!   ([`home`]) read-write, a size-bounded tmpfs `/tmp`, its own `/proc` and a minimal `/dev`;
//!   the gateway's own files ([`crate::store::private_paths`]), the state directory and the
//!   other servers' homes are masked wherever a visible directory holds them;
//! - rlimits (address space, processes, open files, file size, no core dumps) set before
//!   bubblewrap starts, a seccomp filter ([`seccomp`]) loaded by bubblewrap before it runs the
//!   server, `no_new_privs` (bubblewrap sets it);
//! - a Landlock ruleset ([`landlock`]) the server's first process applies to itself inside the
//!   sandbox (the mcp-sandbox executable as a wrapper) before it execs the server: writes only
//!   where the entry may write, `/tmp` and `/dev/shm` (both size-bounded tmpfs), signals and
//!   abstract sockets scoped to the sandbox.

pub mod home;
pub mod home_quota;
pub mod install;
pub mod landlock;
pub mod limits;
pub mod pids;
pub mod probe;
pub mod seccomp;

use crate::config::ServerConfig;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where the private home appears inside the sandbox (`HOME`).
pub const INNER_HOME: &str = "/home/server";
/// The server's uid and gid inside its user namespace.
pub const INNER_ID: u32 = 65534;
/// At most this many entries of a script's directory are shown in its writable layer (more:
/// the directory stays read-only).
const MAX_LAYER_ENTRIES: usize = 512;

/// The stable code of a confined server that cannot be started confined.
pub const UNAVAILABLE: &str = "SERVER_CONFINEMENT_UNAVAILABLE";

#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("{UNAVAILABLE}: server '{server}' is confined but {why}")]
    Unavailable { server: String, why: String },
    #[error(
        "{UNAVAILABLE}: server '{server}': its private home holds {used_mb} MiB, over limits.homeMb ({limit_mb} MiB); remove files under {} or raise limits.homeMb",
        path.display()
    )]
    HomeFull {
        server: String,
        path: PathBuf,
        used_mb: u64,
        limit_mb: u64,
    },
    #[error("{UNAVAILABLE}: server '{server}': {source}")]
    Seccomp {
        server: String,
        source: seccomp::SeccompError,
    },
    /// Worded as an unconfined start that does not find its program.
    #[error("cannot start `{command}`: No such file or directory (os error 2)")]
    NoProgram { command: String },
    #[error("server '{server}': its private directory {path} cannot be made: {source}")]
    Home {
        server: String,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A server command wrapped in bubblewrap, and what must live until it is spawned or as long
/// as the server runs.
pub struct Confined {
    pub command: tokio::process::Command,
    /// The seccomp filter bubblewrap reads at start (closed after the spawn).
    pub seccomp: OwnedFd,
    /// Kept as long as the server process lives: its egress proxy, its pids cgroup.
    pub keep: Vec<Box<dyn std::any::Any + Send + Sync>>,
}

/// Whether the server's network namespace is its own (`--unshare-net`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    Own,
    Host,
}

/// The bubblewrap command that runs `config`'s server confined, from `cwd`, with the network
/// its `network` key gives it (an egress proxy started for an allow list).
pub async fn command(
    name: &str,
    config: &ServerConfig,
    cwd: &Path,
) -> Result<Confined, ConfineError> {
    use crate::tools::egress::{self, NetworkPolicy};
    let mut extra = Extra::default();
    let mut keep: Vec<Box<dyn std::any::Any + Send + Sync>> = Vec::new();
    let net = match &config.network {
        NetworkPolicy::Host => Net::Host,
        NetworkPolicy::None => Net::Own,
        NetworkPolicy::Allow(allow) => {
            let tenant = config.env.get(crate::config::server_entry::TENANT_VAR);
            let principal = config.env.get(crate::config::server_entry::PRINCIPAL_VAR);
            let scope = egress::EgressScope {
                server: name,
                tenant: tenant.map(String::as_str),
                principal: principal.map(String::as_str),
            };
            let state = home::all_homes();
            let state = state.parent().unwrap_or(&state);
            let (plan, guard) = egress::start(scope, allow, state).await.map_err(|e| {
                ConfineError::Unavailable {
                    server: name.to_string(),
                    why: format!("its egress proxy could not start: {e}"),
                }
            })?;
            extra
                .rw_binds
                .push((plan.host_dir.clone(), plan.inner_dir.clone()));
            extra.env = plan.env.clone();
            extra.prefix = plan.wrapper_argv.clone();
            keep.push(Box::new(guard));
            Net::Own
        }
    };
    let mut confined = build(name, config, cwd, net, &extra)?;
    // `build` made the private directories; their bound on disk is watched as the server runs.
    let dirs = home::Dirs::of(name, config).map_err(|(path, source)| ConfineError::Home {
        server: name.to_string(),
        path,
        source,
    })?;
    let limit = config.limits.resolved().home_bytes;
    let base = dirs
        .home
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or(dirs.home.clone());
    let quota =
        home_quota::HomeQuota::start(name, vec![dirs.home, dirs.layer], limit).map_err(|over| {
            ConfineError::HomeFull {
                server: name.to_string(),
                path: base,
                used_mb: over.used.div_ceil(1024 * 1024),
                limit_mb: limit / (1024 * 1024),
            }
        })?;
    keep.push(Box::new(quota));
    let processes = config.limits.resolved().processes;
    if let Some(cg) = pids::PidsCgroup::create(processes) {
        // SAFETY: the step only opens and writes a path made before the fork.
        unsafe {
            confined.command.pre_exec(cg.join());
        }
        keep.push(Box::new(cg));
    }
    confined.keep = keep;
    Ok(confined)
}

/// The `mcp-sandbox` executable (the Landlock wrapper and the egress bridge are its hidden
/// subcommands), bound at [`landlock::EXE`] in every sandbox: this program
/// when it is `mcp-sandbox`, else the one beside it or one level up (a test binary in
/// `target/<profile>/deps`).
fn bridge_exe() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    if exe.file_name().is_some_and(|n| n == "mcp-sandbox") {
        return Some(exe);
    }
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join("mcp-sandbox"))
        .find(|p| p.is_file())
}

/// The bubblewrap command of [`command`], for a chosen network.
pub fn build(
    name: &str,
    config: &ServerConfig,
    cwd: &Path,
    net: Net,
    extra: &Extra,
) -> Result<Confined, ConfineError> {
    let bwrap = probe::bwrap().map_err(|why| ConfineError::Unavailable {
        server: name.to_string(),
        why,
    })?;
    let path_var = config
        .env
        .get("PATH")
        .cloned()
        .or_else(|| std::env::var("PATH").ok());
    let program =
        install::resolve_command(&config.command, cwd, path_var.as_deref()).ok_or_else(|| {
            ConfineError::NoProgram {
                command: config.command.clone(),
            }
        })?;
    let exe = bridge_exe().ok_or_else(|| ConfineError::Unavailable {
        server: name.to_string(),
        why: "its Landlock wrapper (and egress bridge) is the mcp-sandbox executable, which was not found beside this program".into(),
    })?;
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let dirs = home::Dirs::of(name, config).map_err(|(path, source)| ConfineError::Home {
        server: name.to_string(),
        path,
        source,
    })?;
    let mut args = Args::default();
    args.namespaces(net);
    args.system();
    // First: a declared path under /tmp is bound over it, not hidden by it.
    let tmp = config.limits.resolved().tmp_bytes.to_string();
    args.push_all(["--perms", "1777", "--size", &tmp, "--tmpfs", "/tmp"]);
    // POSIX shared memory (Python's multiprocessing locks): bounded like /tmp, not bubblewrap's
    // unbounded /dev.
    args.push_all(["--perms", "1777", "--size", &tmp, "--tmpfs", "/dev/shm"]);
    let mut rules = landlock::Rules {
        rx: vec![PathBuf::from("/usr"), PathBuf::from(landlock::EXE)],
        rw: vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")],
        dev: vec![PathBuf::from("/dev")],
        ro: vec![PathBuf::from("/etc"), PathBuf::from("/proc")],
        ..Default::default()
    };
    rules
        .rx
        .extend(["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"].map(PathBuf::from));
    for root in install::roots(&program, &config.args, &cwd) {
        args.bind("--ro-bind", &root, &root);
        rules.rx.push(root);
    }
    for path in &config.files.read {
        let p = expand_path(path, &cwd);
        args.bind("--ro-bind-try", &p, &p);
        rules.rx.push(p);
    }
    for path in &config.files.write {
        let p = expand_path(path, &cwd);
        if !p.exists() {
            let _ = home::make_private_dir(&p);
        }
        args.bind("--bind-try", &p, &p);
        rules.rwx.push(p);
    }
    args.bind("--ro-bind", &exe, Path::new(landlock::EXE));
    for (src, dest) in &extra.ro_binds {
        args.bind("--ro-bind", src, dest);
        rules.rx.push(dest.clone());
    }
    for (src, dest) in &extra.rw_binds {
        args.bind("--bind", src, dest);
        rules.rwx.push(dest.clone());
    }
    args.mask(&hidden(&dirs));
    if let Some(dir) = install::script_dir(&program, &config.args, &cwd) {
        if args.writable_layer(&dir, &dirs.layer, &hidden(&dirs)) {
            rules.rwx.push(dir);
        }
    }
    args.bind("--bind", &dirs.home, Path::new(INNER_HOME));
    rules.rwx.push(PathBuf::from(INNER_HOME));
    args.push_all(["--setenv", "HOME", INNER_HOME, "--setenv", "TMPDIR", "/tmp"]);
    for (k, v) in &extra.env {
        args.push_all(["--setenv", k, v]);
    }
    if !args.shows(&cwd) {
        args.push("--dir");
        args.push(&cwd);
    }
    args.push("--chdir");
    args.push(&cwd);
    let filter = seccomp::memfd().map_err(|source| ConfineError::Seccomp {
        server: name.to_string(),
        source,
    })?;
    args.push("--seccomp");
    args.push(filter.as_raw_fd().to_string());
    args.push("--");
    for a in rules.wrapper_argv() {
        args.push(a);
    }
    for a in &extra.prefix {
        args.push(a);
    }
    args.push(&program);
    for a in &config.args {
        args.push(a);
    }
    let mut cmd = tokio::process::Command::new(bwrap);
    cmd.args(args.0).current_dir(&cwd);
    let limits = config.limits.resolved();
    // SAFETY: both steps run in the forked child before exec and make only async-signal-safe
    // system calls (fcntl, setrlimit) on values computed before the fork.
    unsafe {
        cmd.pre_exec(seccomp::inherit(&filter));
        cmd.pre_exec(limits::apply(limits));
    }
    Ok(Confined {
        command: cmd,
        seccomp: filter,
        keep: Vec::new(),
    })
}

/// What another part (the egress proxy) adds to a confined server's sandbox.
#[derive(Debug, Default, Clone)]
pub struct Extra {
    pub ro_binds: Vec<(PathBuf, PathBuf)>,
    pub rw_binds: Vec<(PathBuf, PathBuf)>,
    pub env: Vec<(String, String)>,
    /// argv put before the server's program inside the sandbox.
    pub prefix: Vec<String>,
}

/// A `files` path: `~/` is the gateway's home, a relative path is from the server's `cwd`.
fn expand_path(path: &str, cwd: &Path) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    cwd.join(path)
}

/// What a confined server must never see: the gateway's files (config, state store) and every
/// server's private directories. The state directory itself is not bound unless a `files` entry
/// names it or a directory above it; then these are masked in it.
fn hidden(dirs: &home::Dirs) -> Vec<PathBuf> {
    let mut out = crate::store::private_paths::hidden();
    out.push(dirs.all_homes.clone());
    out
}

/// bubblewrap's arguments, and the destinations bound so far.
#[derive(Default)]
struct Args(Vec<OsString>, Vec<PathBuf>);

impl Args {
    fn push(&mut self, a: impl AsRef<std::ffi::OsStr>) {
        self.0.push(a.as_ref().to_os_string());
    }

    fn push_all<'a>(&mut self, all: impl IntoIterator<Item = &'a str>) {
        for a in all {
            self.push(a);
        }
    }

    fn bind(&mut self, how: &str, src: &Path, dest: &Path) {
        self.push(how);
        self.push(src);
        self.push(dest);
        self.1.push(dest.to_path_buf());
    }

    /// Whether `path` is inside something bound.
    fn shows(&self, path: &Path) -> bool {
        self.1.iter().any(|d| path.starts_with(d))
    }

    fn namespaces(&mut self, net: Net) {
        let id = INNER_ID.to_string();
        self.push_all([
            "--unshare-user",
            "--uid",
            &id,
            "--gid",
            &id,
            "--disable-userns",
        ]);
        self.push_all(["--unshare-pid", "--unshare-ipc", "--unshare-uts"]);
        // No --hostname: sethostname is refused by container seccomp profiles (the shipped
        // deploy/seccomp.json too); the UTS namespace alone keeps the host's name unchanged.
        self.push("--unshare-cgroup-try");
        if net == Net::Own {
            self.push("--unshare-net");
        }
        self.push_all(["--die-with-parent", "--proc", "/proc", "--dev", "/dev"]);
    }

    /// The system, read-only: `/usr`, `/etc` with its secrets masked, and `/bin`, `/sbin`,
    /// `/lib*` as the host has them (symlinks into `/usr` on a merged-usr system).
    fn system(&mut self) {
        self.bind("--ro-bind", Path::new("/usr"), Path::new("/usr"));
        for top in ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"] {
            let p = Path::new(top);
            match std::fs::read_link(p) {
                Ok(target) => {
                    self.push("--symlink");
                    self.push(target);
                    self.push(p);
                }
                Err(_) if p.is_dir() => self.bind("--ro-bind", p, p),
                Err(_) => {}
            }
        }
        self.bind("--ro-bind", Path::new("/etc"), Path::new("/etc"));
        let mut secrets: Vec<PathBuf> = [
            "/etc/shadow",
            "/etc/shadow-",
            "/etc/gshadow",
            "/etc/gshadow-",
            "/etc/sudoers",
            "/etc/sudoers.d",
            "/etc/ssl/private",
            "/etc/security/opasswd",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        if let Ok(dir) = std::fs::read_dir("/etc/ssh") {
            secrets.extend(dir.flatten().map(|e| e.path()).filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
            }));
        }
        self.mask(&secrets);
    }

    /// Covers each of `paths` that a bound directory shows: an empty tmpfs over a directory,
    /// `/dev/null` over a file.
    fn mask(&mut self, paths: &[PathBuf]) {
        for p in paths {
            if !self.shows(p) {
                continue;
            }
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => {
                    self.push_all(["--perms", "0000", "--tmpfs"]);
                    self.push(p);
                }
                Ok(_) => {
                    self.push("--ro-bind");
                    self.push("/dev/null");
                    self.push(p);
                }
                Err(_) => {}
            }
        }
    }

    /// `dir` (read-only inside an install root) made writable for this scope: `layer` is bound
    /// over it read-write and each of `dir`'s own entries bound back read-only on top, so what
    /// the server writes beside its script (the memory server's `memory.jsonl`) lands in
    /// `layer`, one per tenant, and its code stays the host's.
    /// Whether the layer was made.
    fn writable_layer(&mut self, dir: &Path, layer: &Path, hidden: &[PathBuf]) -> bool {
        let Ok(read) = std::fs::read_dir(dir) else {
            return false;
        };
        let entries: Vec<PathBuf> = read
            .flatten()
            .map(|e| e.path())
            .filter(|p| !hidden.iter().any(|h| h.starts_with(p) || p.starts_with(h)))
            .take(MAX_LAYER_ENTRIES + 1)
            .collect();
        if entries.len() > MAX_LAYER_ENTRIES || home::make_private_dir(layer).is_err() {
            return false;
        }
        self.bind("--bind", layer, dir);
        for e in entries {
            self.bind("--ro-bind", &e, &e);
        }
        true
    }
}
