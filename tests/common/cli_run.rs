//! Running the real `mcp-sandbox` binary and measuring its own peak RSS.

use super::bin;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// What one `mcp-sandbox` process did: its exit status, output, peak RSS and run time.
pub struct CliRun {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Peak resident set of that process alone (its VmHWM, sampled every 2 ms), KiB.
    pub max_rss_kib: u64,
    pub elapsed: Duration,
}

impl CliRun {
    /// The `--json` outcome on stdout.
    pub fn outcome(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON outcome ({e}); stderr: {}",
                String::from_utf8_lossy(&self.stderr)
            )
        })
    }
}

/// Runs the real `mcp-sandbox` binary with `args` (stdin closed) and measures its own peak RSS
/// (not its children's).
/// `mcp-sandbox run --json <flags> --config C --state S --runner <release runner> <script>`.
pub fn cli_run_script(flags: &[&str], config: &Path, state: &Path, script: &Path) -> CliRun {
    let runner = bin("sandbox-runner");
    let mut args = vec!["run", "--json"];
    args.extend_from_slice(flags);
    args.extend([
        "--config",
        config.to_str().expect("utf-8 path"),
        "--state",
        state.to_str().expect("utf-8 path"),
        "--runner",
        runner.to_str().expect("utf-8 path"),
        script.to_str().expect("utf-8 path"),
    ]);
    cli_run(&args)
}

pub fn cli_run(args: &[&str]) -> CliRun {
    cli_run_env(args, &[])
}

/// [`cli_run`] with these variables added to the host's environment.
pub fn cli_run_env(args: &[&str], env: &[(&str, &str)]) -> CliRun {
    use std::io::Read;
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new(bin("mcp-sandbox"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mcp-sandbox");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let pid = child.id() as libc::pid_t;
    // The host's own peak: VmHWM of its /proc status, sampled until it exits (wait4's ru_maxrss
    // would also count the MCP servers and runners it reaped).
    let hwm = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let hwm = hwm.clone();
        std::thread::spawn(move || loop {
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                return;
            };
            let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            else {
                return; // a zombie has no memory left to measure
            };
            hwm.fetch_max(kib, std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(2));
        })
    };
    let mut status = 0;
    // SAFETY: pid is our own unreaped child; status points to a live local.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid, "waitpid: {}", std::io::Error::last_os_error());
    let _ = sampler.join();
    let elapsed = started.elapsed();
    let status = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    // The child is reaped; `Child` must not wait for it again.
    std::mem::forget(child);
    CliRun {
        status,
        stdout: out_thread.join().unwrap_or_default(),
        stderr: err_thread.join().unwrap_or_default(),
        max_rss_kib: hwm.load(std::sync::atomic::Ordering::Relaxed),
        elapsed,
    }
}
