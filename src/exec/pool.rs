//! A pool of pre-started runners: spawned and locked down ahead of time, each waiting for its
//! `execute` frame. Each is used for exactly one execution and then discarded, so no state ever
//! crosses executions; the pool refills in the background. A pooled runner that died while idle
//! is detected when taken and replaced, never handed out.

use crate::context::limits::Limits;
use crate::exec::runner::{self, Backstops, ReadyRunner, RunnerCommand};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a pool refill waits for a runner to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Pre-started runners for executions whose limits fit `limits`.
pub struct RunnerPool {
    inner: Arc<Inner>,
}

struct Inner {
    runner: RunnerCommand,
    limits: Limits,
    size: usize,
    idle: Mutex<VecDeque<ReadyRunner>>,
    /// Runners being started right now.
    starting: AtomicUsize,
    /// Set by `drain`: no more refills.
    closed: AtomicBool,
}

impl RunnerPool {
    /// A pool of `size` runners started with `limits`' backstops. Call from a tokio runtime;
    /// filling starts at once. `size` 0 disables pooling.
    pub fn new(runner: RunnerCommand, limits: Limits, size: usize) -> Self {
        let pool = RunnerPool {
            inner: Arc::new(Inner {
                runner,
                limits,
                size,
                idle: Mutex::new(VecDeque::new()),
                starting: AtomicUsize::new(0),
                closed: AtomicBool::new(false),
            }),
        };
        Inner::refill(&pool.inner);
        pool
    }

    /// A ready runner whose backstops cover `limits`, if one is idle and alive.
    pub fn take(&self, limits: &Limits) -> Option<ReadyRunner> {
        let need = Backstops::for_limits(limits);
        let mut found = None;
        let mut dead = Vec::new();
        if let Ok(mut idle) = self.inner.idle.lock() {
            while let Some(mut r) = idle.pop_front() {
                match r.child.try_wait() {
                    Ok(None) if r.backstops.covers(&need) => {
                        found = Some(r);
                        break;
                    }
                    Ok(None) => {
                        // Alive but too small for this execution: keep it for the next one.
                        idle.push_back(r);
                        break;
                    }
                    _ => dead.push(r),
                }
            }
        }
        if !dead.is_empty() {
            tracing::warn!(
                count = dead.len(),
                "pooled runners died while idle; replacing them"
            );
            tokio::spawn(async move {
                for r in dead {
                    r.discard().await;
                }
            });
        }
        // The refill is started by `refill`, after the execution: forking the host (to spawn a
        // runner) while the execution runs would compete with it for the same cores.
        if found.is_none() {
            Inner::refill(&self.inner);
        }
        found
    }

    /// Starts runners in the background until the pool is full again.
    pub fn refill(&self) {
        Inner::refill(&self.inner);
    }

    /// Runners idle in the pool now.
    pub fn idle(&self) -> usize {
        self.inner.idle.lock().map(|i| i.len()).unwrap_or(0)
    }

    /// The pids of idle runners (for tests and diagnostics).
    pub fn idle_pids(&self) -> Vec<u32> {
        self.inner
            .idle
            .lock()
            .map(|i| i.iter().map(|r| r.pid).collect())
            .unwrap_or_default()
    }

    /// Kills every idle runner and stops refilling.
    pub async fn drain(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let runners: Vec<ReadyRunner> = match self.inner.idle.lock() {
            Ok(mut idle) => idle.drain(..).collect(),
            Err(_) => Vec::new(),
        };
        for r in runners {
            r.discard().await;
        }
    }
}

impl Inner {
    /// Starts as many runners as are missing, in the background.
    fn refill(inner: &Arc<Inner>) {
        if inner.closed.load(Ordering::SeqCst) {
            return;
        }
        let idle = inner.idle.lock().map(|i| i.len()).unwrap_or(inner.size);
        let starting = inner.starting.load(Ordering::SeqCst);
        let missing = inner.size.saturating_sub(idle + starting);
        for _ in 0..missing {
            inner.starting.fetch_add(1, Ordering::SeqCst);
            let inner = inner.clone();
            tokio::spawn(async move {
                // The refill is asked for as the execution that used a runner ends, before its
                // answer has left the host: on the same worker, the answer's chain of tasks
                // (the handler, rmcp's loop, the transport) would queue behind the fork request
                // and the new runner's `/proc` check. Yielding defers it until this worker has
                // nothing ready to run (tokio wakes yielded tasks before it parks), so the answer
                // goes first (issue 33).
                tokio::task::yield_now().await;
                let deadline = tokio::time::Instant::now() + START_TIMEOUT;
                let started = runner::start_for(
                    runner::Purpose::Pool,
                    &inner.runner,
                    &inner.limits,
                    deadline,
                    None,
                )
                .await;
                match started {
                    Ok(r) => {
                        let closed = inner.closed.load(Ordering::SeqCst);
                        let surplus = match inner.idle.lock() {
                            Ok(mut idle) if idle.len() < inner.size && !closed => {
                                idle.push_back(r);
                                None
                            }
                            _ => Some(r),
                        };
                        if let Some(r) = surplus {
                            r.discard().await;
                        }
                    }
                    Err(e) => tracing::warn!("could not pre-start a runner: {e}"),
                }
                inner.starting.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }
}
