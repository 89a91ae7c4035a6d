//! The bounds one execution shares with every capability it calls (its tree of nested
//! executions): the tool calls of the whole tree count against the top-level `max_calls`, the
//! CPU its runners use is spent from the top-level `cpu_ms`, and at most
//! [`MAX_NESTED_RUNNERS`] nested runners are alive at once. The wall clock needs no state here:
//! a nested execution's deadline is what is left of its caller's.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Nested (capability) runners one execution's tree may have alive at once; further capability
/// calls wait for one to end (within the call's time).
pub const MAX_NESTED_RUNNERS: usize = 4;

/// Shared by an execution and all its nested executions (cheap to clone: an `Arc`).
#[derive(Debug)]
pub struct ExecTree {
    max_calls: u64,
    calls: AtomicU64,
    cpu_ms: u64,
    /// CPU used by nested runners that have ended.
    spent_ms: AtomicU64,
    /// The top-level runner, whose CPU so far counts as spent too (0: none yet).
    root_pid: AtomicU32,
    /// Set when a nested execution ran out of the CPU the tree had left (or found none left).
    exhausted: AtomicBool,
    /// Nested runners alive at once.
    pub runners: Arc<tokio::sync::Semaphore>,
    /// The data-flow labels the whole tree has read (a capability's reads taint its caller).
    pub taint: super::flow::Taint,
}

impl ExecTree {
    /// The tree of a top-level execution with these limits.
    pub fn new(max_calls: u64, cpu_ms: u64) -> Self {
        ExecTree {
            max_calls,
            calls: AtomicU64::new(0),
            cpu_ms,
            spent_ms: AtomicU64::new(0),
            root_pid: AtomicU32::new(0),
            exhausted: AtomicBool::new(false),
            runners: Arc::new(tokio::sync::Semaphore::new(MAX_NESTED_RUNNERS)),
            taint: super::flow::Taint::default(),
        }
    }

    pub fn max_calls(&self) -> u64 {
        self.max_calls
    }

    pub fn cpu_ms(&self) -> u64 {
        self.cpu_ms
    }

    /// Counts one tool call of any execution of the tree; `false` when that is one more than
    /// `max_calls` allows (the call is refused and not counted).
    pub fn take_call(&self) -> bool {
        self.calls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_calls).then_some(n + 1)
            })
            .is_ok()
    }

    /// Calls the tree may still make.
    pub fn calls_left(&self) -> u64 {
        self.max_calls
            .saturating_sub(self.calls.load(Ordering::SeqCst))
    }

    pub fn set_root_pid(&self, pid: u32) {
        self.root_pid.store(pid, Ordering::SeqCst);
    }

    pub fn root_pid(&self) -> Option<u32> {
        Some(self.root_pid.load(Ordering::SeqCst)).filter(|p| *p != 0)
    }

    /// Adds the CPU a nested runner used.
    pub fn spend(&self, ms: u64) {
        self.spent_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Marks the tree's CPU budget as spent: a nested execution hit `CPU_LIMIT` under the
    /// budget the tree cut for it. The top-level outcome is then `CPU_LIMIT`, however the
    /// script handled the call's error (tick-granular CPU readings alone could miss it).
    pub fn exhaust(&self) {
        self.exhausted.store(true, Ordering::SeqCst);
    }

    pub fn exhausted(&self) -> bool {
        self.exhausted.load(Ordering::SeqCst)
    }

    /// CPU used by the nested runners that have ended.
    pub fn spent_ms(&self) -> u64 {
        self.spent_ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_across_the_tree_and_refused_past_the_bound() {
        let t = ExecTree::new(3, 100);
        assert!(t.take_call() && t.take_call() && t.take_call());
        assert!(!t.take_call());
        assert_eq!(t.calls_left(), 0);
        t.spend(40);
        t.spend(70);
        assert_eq!(t.spent_ms(), 110);
    }
}
