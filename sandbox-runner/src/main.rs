//! `sandbox-runner`: spawned by the `mcp-sandbox` host with an empty environment, cwd `/`, and
//! its end of a socketpair at fd 3. It creates the QuickJS engine, locks itself down, says
//! `ready`, and only then reads the one script it will run. It exits after `execution_complete`.
//!
//! Usage (the host passes these; a person never needs to):
//! `sandbox-runner [--zygote] [--uid N] [--gid N] [--address-space-mb N] [--cpu-seconds N] [--max-frame N]`
//!
//! With `--zygote`, fd 3 is a control socket instead: the process applies the shared layers
//! once and forks a runner per request (see `sandbox_runner::zygote`); each runner then runs
//! exactly as below from its own lockdown layers on.

use sandbox_runner::engine::{channel::Channel, Engine, ExecuteRequest};
use sandbox_runner::lockdown::{self, LockdownConfig};
use sandbox_runner::protocol::{
    decode_payload, HostMessage, Language, RunnerMessage, DEFAULT_MAX_FRAME, PROTOCOL_VERSION,
    RUNNER_SOCKET_FD,
};
use sandbox_runner::{zygote, zygote_wire};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;

/// Counts live bytes for the Python engine's memory limit (see `python::alloc`).
#[global_allocator]
static ALLOCATOR: sandbox_runner::python::alloc::Counting = sandbox_runner::python::alloc::Counting;

/// Exit statuses the host can tell apart.
const EXIT_USAGE: i32 = 2;
const EXIT_NO_SOCKET: i32 = 3;
const EXIT_ENGINE: i32 = 4;
const EXIT_CHANNEL: i32 = 5;

struct Args {
    lockdown: LockdownConfig,
    max_frame: usize,
    zygote: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut cfg = LockdownConfig {
        socket_fd: RUNNER_SOCKET_FD,
        uid: 65534,
        gid: 65534,
        address_space_bytes: 1024 * 1024 * 1024,
        cpu_seconds: 30,
        // The parent now: the host set PR_SET_PDEATHSIG before exec, so had it died since,
        // this process would have been killed.
        host_pid: Some(std::os::unix::process::parent_id()),
    };
    let mut max_frame = DEFAULT_MAX_FRAME;
    let mut zygote = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--zygote" {
            zygote = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num: u64 = value
            .parse()
            .map_err(|_| format!("{flag}: '{value}' is not a number"))?;
        match flag.as_str() {
            "--uid" => cfg.uid = u32::try_from(num).map_err(|_| "--uid out of range")?,
            "--gid" => cfg.gid = u32::try_from(num).map_err(|_| "--gid out of range")?,
            "--address-space-mb" => cfg.address_space_bytes = num.saturating_mul(1024 * 1024),
            "--cpu-seconds" => cfg.cpu_seconds = num.max(1),
            "--max-frame" => {
                max_frame = usize::try_from(num).map_err(|_| "--max-frame out of range")?
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Args {
        lockdown: cfg,
        max_frame,
        zygote,
    })
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("sandbox-runner: {msg}");
            std::process::exit(EXIT_USAGE);
        }
    };
    if args.zygote {
        // At once, so nothing looking for runners by name takes the zygote for one.
        zygote::set_name(c"sandbox-zygote");
    }
    // SAFETY: F_GETFD only reads the descriptor flags of fd 3; it has no memory effects.
    if unsafe { libc::fcntl(RUNNER_SOCKET_FD, libc::F_GETFD) } < 0 {
        eprintln!("sandbox-runner: fd {RUNNER_SOCKET_FD} is not open; the runner is started by mcp-sandbox");
        std::process::exit(EXIT_NO_SOCKET);
    }
    // The engine is created before lockdown: it reads no user input, and afterwards far fewer
    // system calls are needed.
    let engine = match Engine::new() {
        Ok(e) => e,
        Err(_) => std::process::exit(EXIT_ENGINE),
    };
    // State the C library would otherwise load lazily after the seccomp filter is in place.
    sandbox_runner::engine::preload::time_zone();
    sandbox_runner::python::preload();
    // The zygote's data pages, while /proc can still be read (see `prefault`).
    let prefault = args
        .zygote
        .then(sandbox_runner::prefault::Prefault::capture)
        .unwrap_or_default();
    // Only the pages an execution touches, learned by one probe (see `prefault_probe`); all of
    // them if the probe fails.
    let prefault = match args.zygote {
        true => sandbox_runner::prefault_probe::learn(&engine, &prefault)
            .map(sandbox_runner::prefault::Prefault::narrowed)
            .unwrap_or(prefault),
        false => prefault,
    };
    let shared = lockdown::apply_shared(&args.lockdown);
    if args.zygote {
        // Not dumpable and no_new_privs for the zygote itself; each runner sets both again.
        if let Err(e) = zygote::harden_self() {
            eprintln!("sandbox-runner --zygote: {e}");
        }
        // The uid drop cleared the death signal the host set: set it again.
        if let Some(host) = args.lockdown.host_pid {
            lockdown::parent_death::die_with(host);
        }
        let mut run_child = |cfg: LockdownConfig, req: &zygote_wire::ForkRequest| {
            let pid = std::process::id();
            prefault.populate(req.pooled);
            // A seed of its own, drawn after the fork (the zygote's memory is every runner's).
            if engine.seed().is_err() {
                std::process::exit(EXIT_ENGINE);
            }
            let isolation = lockdown::apply_own(&cfg, &shared);
            let max_frame = usize::try_from(req.max_frame).unwrap_or(DEFAULT_MAX_FRAME);
            run(&engine, pid, isolation, max_frame)
        };
        let status = match zygote::serve(RUNNER_SOCKET_FD, &args.lockdown, &mut run_child) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("sandbox-runner --zygote: {e}");
                EXIT_CHANNEL
            }
        };
        std::process::exit(status);
    }
    let pid = std::process::id();
    if engine.seed().is_err() {
        std::process::exit(EXIT_ENGINE);
    }
    let isolation = lockdown::apply_own(&args.lockdown, &shared);
    run(&engine, pid, isolation, args.max_frame)
}

/// Says `ready` on fd 3, reads the one `execute`, runs it and exits.
fn run(engine: &Engine, pid: u32, isolation: lockdown::IsolationReport, max_frame: usize) -> ! {
    // SAFETY: fd 3 is our end of the socketpair (passed by the host, or moved there by the
    // zygote), checked open at start; nothing else in this process uses it from here on.
    let sock = unsafe { UnixStream::from_raw_fd(RUNNER_SOCKET_FD) };
    let mut channel = Channel::new(sock, max_frame);
    let ready = RunnerMessage::Ready {
        protocol: PROTOCOL_VERSION,
        pid,
        isolation,
    };
    if channel.send(&ready).is_err() {
        std::process::exit(EXIT_CHANNEL);
    }
    let (language, request) = match channel.recv().map(decode_payload::<HostMessage>) {
        Ok(Ok(HostMessage::Execute {
            code,
            tools,
            unavailable,
            context,
            limits,
            language,
            determinism,
        })) => (
            language,
            ExecuteRequest {
                code,
                tools,
                unavailable,
                context,
                limits,
                determinism,
            },
        ),
        _ => std::process::exit(EXIT_CHANNEL),
    };
    channel.set_max_frame(
        usize::try_from(request.limits.max_frame_bytes)
            .unwrap_or(max_frame)
            .min(max_frame),
    );
    let executed = match language {
        Language::Javascript => engine.execute(channel, request),
        Language::Python => sandbox_runner::python::execute(channel, request),
    };
    let status = match executed {
        Ok(()) => 0,
        Err(_) => EXIT_CHANNEL,
    };
    // Exit without tearing the JS heap down: the process is single-use.
    std::process::exit(status);
}
