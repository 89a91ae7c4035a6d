//! `mcp-sandbox check --config FILE`: each stdio server of the config started confined, as it
//! is for real (`tools::catalog::confine`), and each layer read from `/proc/<pid>` of the
//! server's own process (inside bubblewrap's), the way `check` reads the runner's
//! (`exec::isolation`); then the server is stopped. A server with `"confine": false` is named.

use crate::config::{Config, ServerConfig};
use crate::exec::isolation::observe;
use crate::store::private_paths;
use crate::tools::catalog::confine;
use crate::tools::catalog::process_tree::{own_tree, ProcessGroup};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// One server's layers as the kernel shows them.
#[derive(Debug, Serialize)]
pub struct ServerReport {
    pub server: String,
    pub confined: bool,
    /// Layer → what `/proc` shows; a layer that does not hold starts with `NOT`.
    pub layers: BTreeMap<String, String>,
    /// Why the server could not be checked (it did not start confined).
    pub error: Option<String>,
}

impl ServerReport {
    /// Whether every layer holds.
    pub fn ok(&self) -> bool {
        self.confined && self.error.is_none() && self.layers.values().all(|v| !v.starts_with("NOT"))
    }
}

/// The reports of every stdio server of `config`, checked one after the other.
pub async fn check_servers(config: &Config) -> Vec<ServerReport> {
    let mut out = Vec::new();
    for (name, server) in &config.servers {
        if server.is_remote() || server.is_openapi() {
            continue;
        }
        let cwd = config.server_cwd(server);
        out.push(check_one(name, server, &cwd).await);
    }
    out
}

async fn check_one(name: &str, server: &ServerConfig, cwd: &std::path::Path) -> ServerReport {
    let mut report = ServerReport {
        server: name.to_string(),
        confined: server.is_confined(),
        layers: BTreeMap::new(),
        error: None,
    };
    if !report.confined {
        report.error =
            Some("\"confine\": false: it runs with everything the gateway can reach".into());
        return report;
    }
    // As the process of the default tenant (the one the CLI's own calls reach).
    let instance = crate::config::server_entry::for_scope(
        server,
        crate::context::principal::DEFAULT_TENANT,
        None,
    );
    match observe_started(name, &instance, cwd).await {
        Ok(layers) => report.layers = layers,
        Err(e) => report.error = Some(e),
    }
    report
}

/// Starts the server confined, finds its own process inside bubblewrap's, reads the layers,
/// and kills the whole process group.
async fn observe_started(
    name: &str,
    server: &ServerConfig,
    cwd: &std::path::Path,
) -> Result<BTreeMap<String, String>, String> {
    let confined = confine::command(name, server, cwd)
        .await
        .map_err(|e| e.to_string())?;
    let mut cmd = confined.command;
    crate::tools::catalog::server_env::apply(&mut cmd, server).map_err(|e| e.to_string())?;
    own_tree(&mut cmd);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start bubblewrap: {e}"))?;
    drop(confined.seccomp);
    let _keep = confined.keep;
    let outer = child.id().ok_or("bubblewrap exited at once")?;
    let group = ProcessGroup::of_leader(outer);
    let bwrap = std::fs::read_link(format!("/proc/{outer}/exe")).ok();
    let mut leaf = None;
    for _ in 0..100 {
        let l = deepest(outer);
        let exe = std::fs::read_link(format!("/proc/{l}/exe")).ok();
        // The Landlock wrapper puts its report in the environment of what it execs.
        if l != outer && exe.is_some() && exe != bwrap && landlock_report(l).is_some() {
            leaf = Some(l);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let layers = match leaf {
        Some(pid) => Ok(layers_of(pid)),
        None => Err(confine::probe::why_not().map_or_else(
            || "the server's process did not appear inside the sandbox within 2 s".into(),
            |why| {
                format!(
                    "{}: confinement cannot work here: {why}",
                    confine::UNAVAILABLE
                )
            },
        )),
    };
    if let Some(g) = group {
        g.signal(nix::sys::signal::Signal::SIGKILL);
    }
    drop(child);
    layers
}

/// The deepest first descendant of `pid` (bubblewrap → its init → the server).
fn deepest(pid: u32) -> u32 {
    let mut at = pid;
    for _ in 0..8 {
        let children =
            std::fs::read_to_string(format!("/proc/{at}/task/{at}/children")).unwrap_or_default();
        match children
            .split_whitespace()
            .next()
            .and_then(|c| c.parse().ok())
        {
            Some(c) => at = c,
            None => break,
        }
    }
    at
}

/// What the Landlock wrapper reported in the environment it gave process `pid`.
fn landlock_report(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{}=", confine::landlock::REPORT_VAR);
    env.split(|b| *b == 0).find_map(|kv| {
        kv.strip_prefix(key.as_bytes())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    })
}

fn read(path: String) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn limit(limits: &str, row: &str) -> String {
    limits
        .lines()
        .find_map(|l| l.strip_prefix(row))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("?")
        .to_string()
}

/// Each layer of process `pid` as `/proc` shows it.
fn layers_of(pid: u32) -> BTreeMap<String, String> {
    let seen = observe(pid);
    let mut out = BTreeMap::new();
    let state = |ok: bool, text: String| if ok { text } else { format!("NOT {text}") };
    let seccomp = seen.seccomp.clone().unwrap_or_default();
    out.insert(
        "seccomp".into(),
        state(seccomp == "2", format!("Seccomp: {seccomp}")),
    );
    let nnp = seen.no_new_privs.clone().unwrap_or_default();
    out.insert(
        "no_new_privs".into(),
        state(nnp == "1", format!("NoNewPrivs: {nnp}")),
    );
    let uid_map = read(format!("/proc/{pid}/uid_map"));
    let uid_map = uid_map.split_whitespace().collect::<Vec<_>>().join(" ");
    let cap = seen.cap_eff.clone().unwrap_or_default();
    let own_map = read("/proc/self/uid_map".into());
    out.insert(
        "uid".into(),
        state(
            cap.trim_start_matches('0').is_empty()
                && own_map.split_whitespace().collect::<Vec<_>>().join(" ") != uid_map,
            format!("uid_map: {uid_map}; CapEff: {cap}"),
        ),
    );
    let mut shared = match &seen.shared_namespaces {
        Ok(s) => s.clone(),
        Err(e) => vec![format!("? ({e})")],
    };
    let ns = |n: &str, p: String| std::fs::read_link(format!("{p}/ns/{n}")).ok();
    for extra in ["pid", "cgroup"] {
        if ns(extra, format!("/proc/{pid}")) == ns(extra, "/proc/self".into()) {
            shared.push(extra.into());
        }
    }
    out.insert(
        "namespaces".into(),
        state(
            shared.is_empty() || shared == ["net"],
            if shared.is_empty() {
                "own user, mnt, pid, ipc, uts, net, cgroup".into()
            } else {
                format!("shares the host's {}", shared.join(", "))
            },
        ),
    );
    // The kernel shows no Landlock domain in /proc: this is what the wrapper reported when it
    // applied the ruleset, just before it became the server.
    let landlock = landlock_report(pid).unwrap_or_else(|| "no report".into());
    out.insert(
        "landlock".into(),
        state(
            landlock.starts_with("fully enforced"),
            format!("{landlock} (the wrapper's report)"),
        ),
    );
    let limits = read(format!("/proc/{pid}/limits"));
    out.insert(
        "rlimits".into(),
        format!(
            "address space {}, processes {}, open files {}, file size {}",
            limit(&limits, "Max address space"),
            limit(&limits, "Max processes"),
            limit(&limits, "Max open files"),
            limit(&limits, "Max file size")
        ),
    );
    let cgroup = read(format!("/proc/{pid}/cgroup"));
    out.insert(
        "pids_cgroup".into(),
        match cgroup.lines().find(|l| l.contains("mcp-sandbox-servers/")) {
            Some(l) => format!("its own ({})", l.rsplit(':').next().unwrap_or(l)),
            None => "none (only RLIMIT_NPROC bounds processes, which does not bind a root gateway)"
                .into(),
        },
    );
    let visible: Vec<String> = private_paths::hidden()
        .into_iter()
        .filter(|p| {
            let inside = std::path::Path::new(&format!("/proc/{pid}/root"))
                .join(p.strip_prefix("/").unwrap_or(p));
            std::fs::metadata(&inside).is_ok_and(|m| m.len() > 0 || m.is_dir())
        })
        .map(|p| p.display().to_string())
        .collect();
    out.insert(
        "gateway_files".into(),
        state(
            visible.is_empty(),
            if visible.is_empty() {
                "none visible (config, state store)".into()
            } else {
                format!("visible: {}", visible.join(", "))
            },
        ),
    );
    out
}

/// The servers part of `check`'s report for a person.
pub fn render(reports: &[ServerReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let name = crate::term::escape(&r.server);
        if let Some(e) = &r.error {
            let head = if r.confined {
                "NOT CHECKED"
            } else {
                "NOT CONFINED"
            };
            out.push_str(&format!(
                "server {name}: {head}: {}\n",
                crate::term::escape(e)
            ));
            continue;
        }
        out.push_str(&format!("server {name}: confined (bubblewrap)\n"));
        for (layer, state) in &r.layers {
            out.push_str(&format!("  {layer:<14} {}\n", crate::term::escape(state)));
        }
    }
    out
}

/// At `serve`'s start: each server with `"confine": false` named on stderr; under
/// `--require-isolation all` the start is refused instead (the `Err` names them).
pub fn unconfined_at_start(config: &Config, require_all: bool) -> Result<(), String> {
    let open: Vec<&str> = config
        .servers
        .iter()
        .filter(|(_, s)| !s.is_remote() && !s.is_openapi() && !s.is_confined())
        .map(|(n, _)| n.as_str())
        .collect();
    if open.is_empty() {
        return Ok(());
    }
    if require_all {
        return Err(format!(
            "SANDBOX_UNAVAILABLE: refusing to start: --require-isolation all covers MCP servers, and {} say \"confine\": false; remove it (declare the files and network the server needs instead)",
            open.join(", ")
        ));
    }
    for name in open {
        crate::term::errln(&format!(
            "mcp-sandbox: warning: MCP server '{}' is not confined (\"confine\": false): it runs with everything the gateway can reach",
            crate::term::escape(name)
        ));
    }
    Ok(())
}
