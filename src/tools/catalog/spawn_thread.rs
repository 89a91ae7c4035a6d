//! One long-lived thread that starts every child process which must die with the host: MCP
//! servers, the zygote and exec'd runners.
//!
//! Such a child gets `PR_SET_PDEATHSIG(SIGKILL)`, and the kernel sends that signal when the
//! *thread* that forked the child exits, not the process. Children forked by a transient
//! thread — tokio's blocking pool retires idle threads after 10 s, a worker that ran
//! `block_in_place` becomes one, a test's runtime ends its threads — would be killed while
//! the host is still alive (a pooled runner, a zygote, a server). Forking from this thread,
//! which is started once and never returns, ties the signal to the host process: it fires
//! only when the whole process dies. Runners forked by the zygote with `CLONE_PARENT` have
//! the zygote's parent (this thread) as theirs, so the same holds for them.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

fn sender() -> Option<Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    let s = SPAWNER.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let started = std::thread::Builder::new()
            .name("mcp-sandbox-spawn".into())
            .spawn(move || {
                // The sender lives in a static: `recv` never fails, the thread never ends.
                while let Ok(job) = rx.recv() {
                    // A panicking job must not end the thread (its children would die).
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            });
        if let Err(e) = started {
            tracing::error!("cannot start the process-spawning thread: {e}");
        }
        Mutex::new(tx)
    });
    s.lock().ok().map(|tx| tx.clone())
}

/// Runs `f` (which starts a child process) on the spawning thread and returns its result.
/// Blocks the caller for as long as `f` runs (a fork and exec: about a millisecond). A tokio
/// `Command` must be spawned inside a runtime: `f` can enter one with a captured `Handle`.
pub fn on_spawn_thread<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let (tx, rx) = channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(f());
    });
    let lost = || std::io::Error::other("the process-spawning thread is not running");
    sender().ok_or_else(lost)?.send(job).map_err(|_| lost())?;
    rx.recv().map_err(|_| lost())?
}
