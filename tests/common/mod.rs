//! Shared helpers for the integration tests: locating the real binaries built by
//! `cargo build --workspace`, and building catalogs with real MCP servers.
#![allow(dead_code)]

mod hang;
pub use hang::*;
mod cli_run;
pub use cli_run::*;
mod notes;
pub use notes::*;
mod server_process;
pub use server_process::*;
pub mod replay;

use mcp_sandbox::config::Config;
use mcp_sandbox::tools::catalog::start_mcp_servers;
use mcp_sandbox::{
    Catalog, ExecError, ExecRequest, InProcessServer, Limits, Outcome, RunnerCommand,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A binary of the workspace, next to the test executable's parent (`target/debug`).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` before the tests (scripts/test.sh does)",
        path.display()
    );
    path
}

pub fn runner() -> RunnerCommand {
    RunnerCommand::new(bin("sandbox-runner"))
}

/// A fake runner (tests/fixtures) in the given mode.
pub fn fake_runner(mode: &str) -> RunnerCommand {
    let mut r = RunnerCommand::new(bin("fake-runner"));
    r.prefix_args = vec![mode.to_string()];
    r
}

/// In-process tools: `local.echo` (returns its arguments), `local.sleep {ms}`.
pub fn local_server() -> InProcessServer {
    InProcessServer::new("local")
        .tool(
            "echo",
            "Returns its arguments",
            json!({"type": "object"}),
            |args| async move { Ok::<Value, ExecError>(args) },
        )
        .tool(
            "sleep",
            "Sleeps ms milliseconds",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
            |args| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<Value, ExecError>(json!({"slept": ms}))
            },
        )
}

/// The fixture rmcp server as `mcp.fixture`.
pub fn fixture_config() -> Config {
    let text =
        json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}}});
    Config::parse(&text.to_string(), &repo_root()).expect("fixture config")
}

/// The MCP servers of `mcp_servers` (a config's `mcpServers` object, relative paths from the
/// repository root), started within `within`; every one must start.
pub async fn mcp_catalog(mcp_servers: Value, within: Duration) -> Catalog {
    let text = json!({ "mcpServers": mcp_servers });
    let config = Config::parse(&text.to_string(), &repo_root()).expect("config");
    servers_catalog(&config, within).await
}

async fn servers_catalog(config: &Config, within: Duration) -> Catalog {
    let (servers, failed) = start_mcp_servers(config, within).await;
    assert!(failed.is_empty(), "MCP servers failed to start: {failed:?}");
    let mut c = Catalog::new();
    for s in servers {
        c.add(s).unwrap();
    }
    c
}

/// A catalog with the fixture MCP server and the in-process `local` server.
pub async fn fixture_catalog() -> Catalog {
    let mut c = servers_catalog(&fixture_config(), Duration::from_secs(20)).await;
    c.add(Arc::new(local_server())).unwrap();
    c
}

/// The log lines the fixture's `chatty` tool sends for `steps` steps, as an outcome shows them.
pub fn chatty_logs(steps: u64) -> Vec<Value> {
    (1..=steps)
        .map(|i| {
            json!({
                "level": if i == steps { "warn" } else { "info" },
                "message": format!("[fixture] chatty: working on step {i}"),
            })
        })
        .collect()
}

pub fn local_catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(Arc::new(local_server())).unwrap();
    c
}

pub async fn run_with(catalog: &Catalog, code: &str, limits: Limits) -> Outcome {
    mcp_sandbox::execute(
        catalog,
        &runner(),
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(limits),
            code: code.to_string(),
            ..Default::default()
        },
    )
    .await
}

pub async fn run(catalog: &Catalog, code: &str) -> Outcome {
    run_with(catalog, code, Limits::default()).await
}

/// The error code of a failed outcome, or a panic with the outcome.
pub fn code(o: &Outcome) -> &'static str {
    match &o.error {
        Some(e) => e.code.as_str(),
        None => panic!("expected a failure, got {o:?}"),
    }
}

/// Children of this process that have not been reaped (zombies) or still run, except live
/// zygotes (`sandbox-runner --zygote`, one per sandbox for its lifetime: see [`zygote_pids`]).
pub fn child_pids() -> Vec<u32> {
    let zygotes = zygote_pids();
    all_child_pids()
        .into_iter()
        .filter(|p| !zygotes.contains(p))
        .collect()
}

/// Waits (bounded by `within`) until [`child_pids`] is empty and returns what is left: a runner
/// whose result arrived is killed and reaped in the background (issue 18), so right after an
/// outcome it may still be listed for a moment.
pub async fn children_left(within: Duration) -> Vec<u32> {
    let end = std::time::Instant::now() + within;
    loop {
        let left = child_pids();
        if left.is_empty() || std::time::Instant::now() >= end {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Live (not zombie) children of this process named `sandbox-zygote` (the zygote renames
/// itself at start; its forked runners, whose command line is the zygote's, rename themselves
/// back to `sandbox-runner`).
pub fn zygote_pids() -> Vec<u32> {
    all_child_pids()
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.contains(" (sandbox-zygote) ")
                && !stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, r)| r.starts_with('Z'))
        })
        .collect()
}

/// Every child of this process that has not been reaped (zombies) or still runs, except the
/// server watcher (`sandbox-reaper`).
pub fn all_child_pids() -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...
            let after = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
            let ppid: u32 = after
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            // The host's one watcher of its servers' process groups (`group_reaper`) lives as
            // long as the process that started an MCP server: not a leak.
            if ppid == me && !stat.contains(" (sandbox-reaper) ") {
                out.push(pid);
            }
        }
    }
    out
}

pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The runner of one execution, captured by a [`mcp_sandbox::SpawnHook`] through a pidfd (so a
/// signal can never reach a recycled pid), with the moment it was last signalled.
#[derive(Default)]
pub struct RunnerHandle {
    pidfd: std::sync::Mutex<Option<std::os::fd::OwnedFd>>,
    pid: std::sync::atomic::AtomicU32,
    signalled_at: std::sync::Mutex<Option<std::time::Instant>>,
}

impl RunnerHandle {
    /// A handle and the hook that fills it.
    pub fn hook() -> (Arc<RunnerHandle>, mcp_sandbox::SpawnHook) {
        let handle = Arc::new(RunnerHandle::default());
        let h = handle.clone();
        let hook = mcp_sandbox::SpawnHook::new(move |pid| h.attach(pid));
        (handle, hook)
    }

    pub fn attach(&self, pid: u32) {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        assert!(fd >= 0, "pidfd_open({pid}) failed");
        self.pid.store(pid, std::sync::atomic::Ordering::SeqCst);
        // SAFETY: fd is a fresh pidfd that nothing else owns.
        *self.pidfd.lock().unwrap() = Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) });
    }

    pub fn pid(&self) -> u32 {
        self.pid.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sends `sig` to the runner; false if it is already gone (or was never spawned).
    pub fn signal(&self, sig: i32) -> bool {
        use std::os::fd::AsRawFd;
        let guard = self.pidfd.lock().unwrap();
        let Some(fd) = guard.as_ref() else {
            return false;
        };
        // SAFETY: pidfd_send_signal on a pidfd we own, no siginfo.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if r == 0 {
            *self.signalled_at.lock().unwrap() = Some(std::time::Instant::now());
        }
        r == 0
    }

    /// When the last successful signal was sent.
    pub fn signalled_at(&self) -> Option<std::time::Instant> {
        *self.signalled_at.lock().unwrap()
    }

    /// Closes the pidfd (for fd accounting).
    pub fn release(&self) {
        self.pidfd.lock().unwrap().take();
    }
}

/// In-process tools that signal the current runner from the host: `faults.kill {delay_ms}` and
/// `faults.stop {delay_ms}` (SIGKILL / SIGSTOP after the delay, on a thread; they answer at once).
pub fn fault_server(handle: Arc<RunnerHandle>) -> InProcessServer {
    let tool = |server: InProcessServer, name: &'static str, sig: i32| {
        let handle = handle.clone();
        server.tool(
            name,
            "Signals the runner after delay_ms",
            json!({"type": "object", "properties": {"delay_ms": {"type": "integer"}}}),
            move |args| {
                let handle = handle.clone();
                async move {
                    let delay = args["delay_ms"].as_u64().unwrap_or(0);
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(delay));
                        handle.signal(sig);
                    });
                    Ok::<Value, ExecError>(json!("scheduled"))
                }
            },
        )
    };
    let s = InProcessServer::new("faults");
    let s = tool(s, "kill", libc::SIGKILL);
    tool(s, "stop", libc::SIGSTOP)
}

/// Runs `code` on the real runner with the hook attached.
pub async fn run_hooked(
    catalog: &Catalog,
    code: &str,
    limits: Limits,
    hook: mcp_sandbox::SpawnHook,
) -> Outcome {
    mcp_sandbox::execute(
        catalog,
        &runner(),
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(limits),
            code: code.to_string(),
            on_spawn: Some(hook),
            ..Default::default()
        },
    )
    .await
}

/// The `tool_end` events of an outcome as (tool, error code or "ok").
pub fn tool_ends(o: &Outcome) -> Vec<(String, String)> {
    o.traces
        .iter()
        .filter(|t| t.kind == mcp_sandbox::trace::TraceKind::ToolEnd)
        .map(|t| {
            (
                t.tool.clone(),
                t.error
                    .as_ref()
                    .map(|e| e.code.as_str().to_string())
                    .unwrap_or_else(|| "ok".into()),
            )
        })
        .collect()
}

/// VmRSS of this process in KiB.
pub fn rss_kib() -> u64 {
    status_field("VmRSS:")
}

/// Threads of this process.
pub fn threads() -> u64 {
    status_field("Threads:")
}

fn status_field(name: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Peak RSS of this process (VmHWM) in KiB.
pub fn peak_rss_kib() -> u64 {
    status_field("VmHWM:")
}

/// Live (not zombie) processes whose environment holds exactly `var` (`NAME=value`), as
/// `(pid, comm)`: how a test finds every process a server tree started, wrappers included.
pub fn processes_with_env(var: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if !env.split(|b| *b == 0).any(|kv| kv == var.as_bytes()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let comm = head
            .split_once(" (")
            .map(|(_, c)| c)
            .unwrap_or("")
            .to_string();
        if !rest.starts_with('Z') && !rest.starts_with('X') {
            out.push((pid, comm));
        }
    }
    out
}

/// Waits (bounded by `within`) until no process holds `var`; returns those still alive.
pub fn processes_left(var: &str, within: Duration) -> Vec<(u32, String)> {
    let end = std::time::Instant::now() + within;
    loop {
        let left = processes_with_env(var);
        if left.is_empty() || std::time::Instant::now() >= end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A runner program for `--runner`: a shell script that starts `fake-runner MODE` with the
/// arguments the host passes (the host gives the runner no environment, so the mode travels in
/// the script). Kept alive as long as the returned directory.
pub fn fake_runner_program(mode: &str) -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(format!("fake-{mode}"));
    let script = format!(
        "#!/bin/sh\nexec '{}' {mode} \"$@\"\n",
        bin("fake-runner").display()
    );
    std::fs::write(&path, script).expect("write runner script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (dir, path)
}

/// A config file with the fixture server as `mcp.fixture` (plus `extra` keys in its entry).
pub fn fixture_config_file(dir: &Path, extra: Value) -> PathBuf {
    let mut entry = json!({"command": bin("fixture-mcp-server"), "args": []});
    if let (Some(e), Some(x)) = (entry.as_object_mut(), extra.as_object()) {
        for (k, v) in x {
            e.insert(k.clone(), v.clone());
        }
    }
    let path = dir.join("config.json");
    std::fs::write(&path, json!({"mcpServers": {"fixture": entry}}).to_string())
        .expect("write config");
    path
}

/// The real `mcp-sandbox run - <args>` with `script` on stdin (the real runner), as finished
/// process output.
pub fn run_stdin(args: &[&std::ffi::OsStr], script: &str) -> std::process::Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["run".as_ref(), "-".as_ref()];
    all.extend_from_slice(args);
    cli_stdin(&all, script, &[])
}

/// The real `mcp-sandbox ARGS` with `input` on stdin and `envs` added to its environment (the
/// real runner), as finished process output.
pub fn cli_stdin(
    args: &[&std::ffi::OsStr],
    input: &str,
    envs: &[(&str, &str)],
) -> std::process::Output {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(args)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-sandbox");
    // A usage error may end the process before it reads stdin: a broken pipe is fine then.
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes());
    child.wait_with_output().expect("mcp-sandbox output")
}

/// A free local TCP port (bound and released; good enough for a test's own server).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A server process started by a test that says "listening on port N" on stderr when ready;
/// killed on drop.
pub struct Listening {
    child: std::process::Child,
    pub port: u16,
}

/// The reference `everything` server (npm) in its streamableHttp mode.
pub type Everything = Listening;

impl Listening {
    /// The `everything` server on a free port.
    pub fn start() -> Listening {
        Listening::start_on(free_port())
    }

    /// The `everything` server on `port`.
    pub fn start_on(port: u16) -> Listening {
        let mut cmd =
            std::process::Command::new(repo_root().join("node_modules/.bin/mcp-server-everything"));
        cmd.arg("streamableHttp").env("PORT", port.to_string());
        Listening::spawn(cmd, port)
    }

    /// tests/python/bearer_server.py (official Python SDK) on a free port, demanding
    /// `Authorization: Bearer <token>`; HTTPS with `tls = Some((cert, key))`.
    pub fn bearer(token: &str, tls: Option<(&Path, &Path)>) -> Listening {
        let port = free_port();
        let mut cmd = std::process::Command::new(repo_root().join(".venv/bin/python"));
        cmd.arg(repo_root().join("tests/python/bearer_server.py"))
            .arg(port.to_string())
            .env("BEARER_SERVER_TOKEN", token);
        if let Some((cert, key)) = tls {
            cmd.arg(cert).arg(key);
        }
        Listening::spawn(cmd, port)
    }

    /// Starts `cmd` and waits (at most 20 s) until it says it listens.
    pub fn spawn(mut cmd: std::process::Command, port: u16) -> Listening {
        use std::io::BufRead;
        let mut child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the test server (run scripts/setup.sh)");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut said = Vec::new();
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if line.contains("listening on port") {
                    let _ = tx.send(Ok(()));
                }
                said.push(line);
            }
            let _ = tx.send(Err(said.join("\n")));
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(())) => {}
            other => panic!("the test server did not listen within 20 s: {other:?}"),
        }
        Listening { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Kills it (SIGKILL) and waits until it is gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.kill();
    }
}
