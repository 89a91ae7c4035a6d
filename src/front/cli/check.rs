//! `mcp-sandbox check`: start a runner, read the isolation it reports and what the kernel says
//! about it in `/proc/<pid>/status`, then let it go.

use super::{RunnerArgs, UsageError, EXIT_FAILED};
use crate::context::limits::Limits;
use crate::exec::isolation_fixes;
use crate::exec::runner::{spawn, RunnerCommand};
use crate::exec::session::REQUIRED_LAYERS;
use clap::Args;
use futures::StreamExt;
use sandbox_runner::protocol::{decode_payload, RunnerMessage, PROTOCOL_VERSION};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub runner: String,
    pub protocol: u32,
    /// How the checked runner was made: `zygote` (forked from a pre-locked zygote) or `exec`;
    /// the layers below are those of that runner.
    pub spawn: String,
    /// The checked runner's parent as `/proc/<pid>/status` shows it (`PPid:`), and the zygote's
    /// pid when it was forked: with `CLONE_PARENT` the parent is the host, not the zygote.
    pub ppid: Option<String>,
    pub zygote_pid: Option<u32>,
    /// Layer → `enforced…` or `unavailable: reason`, as the kernel shows them in `/proc`
    /// (`crate::exec::isolation`, the same check every execution makes).
    pub layers: BTreeMap<String, String>,
    /// The same layers as the runner itself reported them in its `ready` frame.
    pub claimed: BTreeMap<String, String>,
    /// The kernel's Landlock ABI version (0 = not supported).
    pub landlock_abi: i64,
    /// Fields of the running runner's `/proc/<pid>/status`.
    pub uid: Option<String>,
    pub seccomp: Option<String>,
    pub no_new_privs: Option<String>,
    pub cap_eff: Option<String>,
    pub cap_prm: Option<String>,
    /// Layers required but not enforced (empty when the machine is fit to run code).
    pub missing: Vec<String>,
    pub ok: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Spawn(#[from] crate::exec::runner::SpawnError),
    #[error("the runner did not report ready: {0}")]
    NoReady(String),
}

/// The kernel's Landlock ABI version, or 0.
pub fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attr, size 0 and the VERSION flag, landlock_create_ruleset only returns
    // the ABI version (or an error); it reads and writes no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    v.max(0)
}

pub async fn check(
    runner: &RunnerCommand,
    extra_required: &[String],
) -> Result<CheckReport, CheckError> {
    let limits = Limits::default();
    let mut spawned = spawn(runner, &limits, crate::exec::runner::Purpose::Now)?;
    let codec = LengthDelimitedCodec::builder()
        .big_endian()
        .length_field_length(4)
        .max_frame_length(1024 * 1024)
        .new_codec();
    let mut frames = FramedRead::new(&mut spawned.socket, codec);
    let first = tokio::time::timeout(Duration::from_secs(5), frames.next()).await;
    let payload = match first {
        Ok(Some(Ok(p))) => p,
        Ok(Some(Err(e))) => return Err(CheckError::NoReady(e.to_string())),
        Ok(None) => return Err(CheckError::NoReady("the runner exited".into())),
        Err(_) => return Err(CheckError::NoReady("no answer within 5 s".into())),
    };
    let (protocol, layers) = match decode_payload::<RunnerMessage>(&payload) {
        Ok(RunnerMessage::Ready {
            protocol,
            isolation,
            ..
        }) => (protocol, isolation),
        Ok(_) => return Err(CheckError::NoReady("its first frame was not ready".into())),
        Err(e) => return Err(CheckError::NoReady(e.to_string())),
    };
    // The runner is now locked down and blocked reading its execute frame.
    let seen = crate::exec::isolation::observe(spawned.pid);
    let ppid = std::fs::read_to_string(format!("/proc/{}/status", spawned.pid))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .map(|v| v.trim().to_string())
        });
    let forked = matches!(
        spawned.child,
        crate::exec::runner_process::RunnerProcess::Forked(_)
    );
    drop(frames);
    let _ = spawned.child.start_kill();
    let _ = spawned.child.wait().await;
    let claimed = layers;
    let layers = crate::exec::isolation::verify(&claimed, &seen);
    let missing: Vec<String> = REQUIRED_LAYERS
        .iter()
        .map(|s| s.to_string())
        .chain(extra_required.iter().cloned())
        .filter(|l| !layers.get(l).is_some_and(|v| v.starts_with("enforced")))
        .collect();
    Ok(CheckReport {
        runner: runner.program.display().to_string(),
        protocol,
        spawn: if forked { "zygote" } else { "exec" }.to_string(),
        ppid,
        zygote_pid: if forked { runner.zygotes.pid() } else { None },
        ok: missing.is_empty() && protocol == PROTOCOL_VERSION,
        layers,
        claimed,
        landlock_abi: landlock_abi(),
        uid: seen
            .uid
            .map(|u| u.split_whitespace().collect::<Vec<_>>().join(" ")),
        seccomp: seen.seccomp,
        no_new_privs: seen.no_new_privs,
        cap_eff: seen.cap_eff,
        cap_prm: seen.cap_prm,
        missing,
    })
}

/// The report for a person.
pub fn render(r: &CheckReport) -> String {
    let mut out = format!("runner: {} (protocol {})\n", r.runner, r.protocol);
    match r.zygote_pid {
        Some(z) => out.push_str(&format!(
            "spawn: zygote (the runner checked was forked from zygote pid {z}; its layers as the kernel shows them)\n"
        )),
        None => out.push_str(&format!("spawn: {}\n", r.spawn)),
    }
    for (layer, state) in &r.layers {
        let req = if REQUIRED_LAYERS.contains(&layer.as_str()) {
            "required"
        } else {
            "best effort"
        };
        let fix = (!isolation_fixes::holds(state)).then(|| isolation_fixes::fix_for(layer, state));
        let (layer, state) = (crate::term::escape(layer), crate::term::escape(state));
        out.push_str(&format!("  {layer:<13} {state}  [{req}]\n"));
        if let Some(fix) = fix {
            out.push_str(&format!("                fix: {fix}\n"));
        }
    }
    let opt = |v: &Option<String>| {
        v.as_deref()
            .map(|s| crate::term::escape(s).into_owned())
            .unwrap_or_else(|| "?".into())
    };
    out.push_str(&format!("landlock ABI: {}\n", r.landlock_abi));
    out.push_str(&format!(
        "runner uid (real, effective, saved, fs): {}\n",
        opt(&r.uid)
    ));
    out.push_str(&format!(
        "/proc status: Seccomp: {}  NoNewPrivs: {}  CapEff: {}  CapPrm: {}\n",
        opt(&r.seccomp),
        opt(&r.no_new_privs),
        opt(&r.cap_eff),
        opt(&r.cap_prm)
    ));
    let not_held: Vec<&str> = isolation_fixes::not_held(&r.layers)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    if r.ok && not_held.is_empty() {
        out.push_str("ok: every layer is enforced\n");
    } else if r.ok {
        out.push_str(&format!(
            "degraded: the required layers are enforced, but {} do not hold (each with its fix above); `--require-isolation all` refuses to run here\n",
            not_held.join(", ")
        ));
    } else {
        out.push_str(&format!("NOT OK: missing {}\n", r.missing.join(", ")));
    }
    out
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub runner: RunnerArgs,
    /// Also start each stdio MCP server of this config confined and show its layers.
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
}

/// `mcp-sandbox check`. Exit 0 when the required layers hold (with `--require-isolation all`
/// and `--config`, every stdio server confined with every layer holding too).
pub async fn command(args: CheckArgs) -> Result<i32, UsageError> {
    let required = args.runner.required_layers()?;
    let report = check(&args.runner.command(), &required)
        .await
        .map_err(|e| UsageError(format!("check failed: {e}")))?;
    let servers = match &args.config {
        Some(path) => {
            let config =
                crate::config::Config::load(path).map_err(|e| UsageError(e.to_string()))?;
            super::check_servers::check_servers(&config).await
        }
        None => Vec::new(),
    };
    let require_all = args.runner.require_isolation.as_deref() == Some("all");
    let servers_ok = servers.iter().all(|s| s.ok());
    if args.json {
        let mut json = serde_json::to_value(&report).unwrap_or_default();
        json["servers"] = serde_json::to_value(&servers).unwrap_or_default();
        crate::term::outln(&serde_json::to_string_pretty(&json).unwrap_or_default());
    } else {
        crate::term::out(&render(&report));
        crate::term::out(&super::check_servers::render(&servers));
        if !servers_ok {
            let names: Vec<&str> = servers
                .iter()
                .filter(|s| !s.ok())
                .map(|s| s.server.as_str())
                .collect();
            crate::term::out(&format!(
                "{}: MCP servers not fully confined: {}\n",
                if require_all { "NOT OK" } else { "warning" },
                names.join(", ")
            ));
        }
    }
    Ok(if report.ok && (servers_ok || !require_all) {
        0
    } else {
        EXIT_FAILED
    })
}

/// The runner's layers, checked once when `serve` starts: fewer layers is never silent. With
/// `--require-isolation` (`strict`), a required layer that does not hold stops the start (exit 1,
/// `SANDBOX_UNAVAILABLE`, each layer with its fix: the `Err` the caller prints) rather than serve with fewer; otherwise each
/// layer that does not hold is named once on stderr with its fix. A runner that cannot be
/// checked here is refused by every execution anyway, which says why; under `strict` it stops
/// the start too.
pub async fn at_start(
    runner: &RunnerCommand,
    required: &[String],
    strict: bool,
) -> Result<(), String> {
    let report = match check(runner, required).await {
        Ok(r) => r,
        Err(e) if strict => {
            return Err(format!(
                "SANDBOX_UNAVAILABLE: refusing to start: --require-isolation was given but the runner's isolation could not be checked ({e}); run `mcp-sandbox check`"
            ))
        }
        Err(e) => {
            crate::term::errln(&format!(
                "mcp-sandbox: warning: the runner's isolation could not be checked at start ({e}); every execution checks it again"
            ));
            return Ok(());
        }
    };
    if strict && !report.missing.is_empty() {
        let mut why = format!(
            "SANDBOX_UNAVAILABLE: refusing to start: --require-isolation needs {} but {} do not hold here:\n",
            required_names(required),
            report.missing.join(", ")
        );
        for layer in &report.missing {
            let state = report.layers.get(layer).map_or("not reported", |s| s);
            why.push_str(&format!(
                "  {layer}: {}\n    fix: {}\n",
                crate::term::escape(state),
                isolation_fixes::fix_for(layer, state)
            ));
        }
        why.push_str("  `mcp-sandbox check` shows each layer as the kernel does");
        return Err(why);
    }
    if let Some(warning) = isolation_fixes::startup_warning(&report.layers) {
        eprint!("{warning}");
    }
    Ok(())
}

fn required_names(extra: &[String]) -> String {
    REQUIRED_LAYERS
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .collect::<Vec<_>>()
        .join(", ")
}
