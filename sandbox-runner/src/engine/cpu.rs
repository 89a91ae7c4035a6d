//! The JavaScript CPU budget: thread CPU time, which does not advance while the runner is blocked
//! on the socket waiting for tool results.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// CPU time consumed by the calling thread.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is always supported on
    // Linux. On failure `ts` stays zero, which only makes the budget more lenient for one check.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Shared between the interrupt handler and the loop: the deadline in thread CPU time and whether
/// it was hit.
#[derive(Clone)]
pub struct CpuBudget {
    inner: Rc<Inner>,
}

struct Inner {
    deadline: Cell<Duration>,
    tripped: Cell<bool>,
}

impl CpuBudget {
    /// A budget of `limit` starting now.
    pub fn start(limit: Duration) -> Self {
        CpuBudget {
            inner: Rc::new(Inner {
                deadline: Cell::new(thread_cpu_time().saturating_add(limit)),
                tripped: Cell::new(false),
            }),
        }
    }

    /// Called by QuickJS's interrupt handler: true once the budget is spent (and from then on).
    pub fn exceeded(&self) -> bool {
        if self.inner.tripped.get() {
            return true;
        }
        if thread_cpu_time() > self.inner.deadline.get() {
            self.inner.tripped.set(true);
        }
        self.inner.tripped.get()
    }

    pub fn tripped(&self) -> bool {
        self.inner.tripped.get()
    }
}
