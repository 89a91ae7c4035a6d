//! The in-sandbox half: `mcp-sandbox __egress-bridge --socket PATH --listen 127.0.0.1:PORT --
//! CMD ARGS...` listens on loopback inside the server's network namespace, relays every
//! connection to the proxy's Unix socket (bound into the sandbox), runs CMD as its child with
//! stdio inherited, forwards SIGTERM/SIGINT/SIGHUP to it and exits with its status. Plain
//! threads (no async runtime): it runs beside the server for the server's whole life and
//! should cost little.

use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::ffi::OsString;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;

/// The hidden subcommand's name.
pub const SUBCOMMAND: &str = "__egress-bridge";
/// Connections relayed at once; more are closed as they come.
pub const MAX_RELAYS: usize = 128;
/// Exit status when the bridge itself cannot start (the child never ran).
pub const EXIT_BRIDGE_FAILED: i32 = 125;

const RELAY_STACK: usize = 64 * 1024;

static CHILD: AtomicI32 = AtomicI32::new(0);
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe; `pid` is our child's.
        unsafe { libc::kill(pid, sig) };
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// Runs the bridge and its child; returns the exit status to exit with.
pub fn run(socket: &Path, listen: SocketAddr, argv: &[OsString]) -> i32 {
    let fail = |what: String| {
        eprintln!("mcp-sandbox {SUBCOMMAND}: {what}");
        EXIT_BRIDGE_FAILED
    };
    if !listen.ip().is_loopback() {
        return fail(format!("--listen {listen} is not a loopback address"));
    }
    let Some((program, args)) = argv.split_first() else {
        return fail("no command after --".into());
    };
    let listener = match TcpListener::bind(listen) {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot listen on {listen}: {e}")),
    };
    let socket = socket.to_path_buf();
    let accept = std::thread::Builder::new()
        .name("egress-accept".into())
        .stack_size(RELAY_STACK)
        .spawn(move || accept_loop(listener, socket));
    if let Err(e) = accept {
        return fail(format!("cannot start the relay thread: {e}"));
    }
    let action = SigAction::new(
        SigHandler::Handler(forward),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // SAFETY: the handler only reads atomics and calls kill(2), both async-signal-safe.
        if let Err(e) = unsafe { signal::sigaction(sig, &action) } {
            return fail(format!("cannot forward {sig}: {e}"));
        }
    }
    let mut child = match std::process::Command::new(program).args(args).spawn() {
        Ok(c) => c,
        Err(e) => {
            return fail(format!(
                "cannot start {}: {e}",
                Path::new(program).display()
            ))
        }
    };
    let pid = i32::try_from(child.id()).unwrap_or(0);
    CHILD.store(pid, Ordering::SeqCst);
    let pending = PENDING.swap(0, Ordering::SeqCst);
    if pending != 0 && pid > 0 {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(pid, pending) };
    }
    match child.wait() {
        Ok(status) => status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(EXIT_BRIDGE_FAILED),
        Err(e) => fail(format!("cannot wait for the command: {e}")),
    }
}

fn accept_loop(listener: TcpListener, socket: PathBuf) {
    let live = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(tcp) = conn else { continue };
        if live.fetch_add(1, Ordering::SeqCst) >= MAX_RELAYS {
            live.fetch_sub(1, Ordering::SeqCst);
            drop(tcp);
            continue;
        }
        let socket = socket.clone();
        let done = live.clone();
        let spawned = std::thread::Builder::new()
            .name("egress-relay".into())
            .stack_size(RELAY_STACK)
            .spawn(move || {
                if let Err(e) = relay(tcp, &socket) {
                    eprintln!(
                        "mcp-sandbox {SUBCOMMAND}: relay to {}: {e}",
                        socket.display()
                    );
                }
                done.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Copies both ways between one loopback connection and a new connection to the proxy.
fn relay(tcp: TcpStream, socket: &Path) -> io::Result<()> {
    let unix = UnixStream::connect(socket)?;
    let (mut tcp_r, mut unix_w) = (tcp.try_clone()?, unix.try_clone()?);
    let up = std::thread::Builder::new()
        .name("egress-up".into())
        .stack_size(RELAY_STACK)
        .spawn(move || {
            let _ = io::copy(&mut tcp_r, &mut unix_w);
            let _ = unix_w.shutdown(Shutdown::Write);
        })?;
    let (mut unix_r, mut tcp_w) = (unix, tcp);
    let _ = io::copy(&mut unix_r, &mut tcp_w);
    let _ = tcp_w.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}
