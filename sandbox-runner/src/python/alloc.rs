//! The runner's global allocator: the system's, counting live bytes where monty reads them, so a
//! Python script's memory limit is enforced by the interpreter (a `MemoryError` outcome) rather
//! than by the address-space limit.
//!
//! An allocation the address-space limit still refuses (one monty did not check first, such as
//! the list of a huge `str.split`) would make Rust abort the process, and `abort()` makes system
//! calls the seccomp filter kills (`RUNNER_CRASHED`, SIGSYS). Once a Python script runs
//! ([`arm`]), such a failure instead writes a prepared `MEMORY_LIMIT` outcome on the socket and
//! exits: the frames are whole at any allocation (each is written by one `write`), and nothing
//! here allocates.

use crate::protocol::{encode_frame, RunnerMessage, DEFAULT_MAX_FRAME, RUNNER_SOCKET_FD};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Whether an allocation failure ends the execution with [`OUT_OF_MEMORY`] (a Python script is
/// running in this process).
static ARMED: AtomicBool = AtomicBool::new(false);
/// The `execution_complete` frame sent when an allocation fails, prepared by [`arm`].
static OUT_OF_MEMORY: OnceLock<Vec<u8>> = OnceLock::new();

/// Sends [`OUT_OF_MEMORY`] and exits, when armed; returns otherwise (the caller then reports the
/// failure as before).
fn refused() {
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    if let Some(frame) = OUT_OF_MEMORY.get() {
        let mut sent = 0;
        while sent < frame.len() {
            // SAFETY: writes from a live, immutable buffer within its bounds; fd 3 is the
            // runner's socket (or closed, and the write fails).
            let n = unsafe {
                libc::write(
                    RUNNER_SOCKET_FD,
                    frame[sent..].as_ptr().cast(),
                    frame.len() - sent,
                )
            };
            if n <= 0 {
                break;
            }
            sent += n.unsigned_abs();
        }
    }
    // SAFETY: `_exit` ends the process at once (exit_group, allowed by the filter); no Rust state
    // is used afterwards.
    unsafe { libc::_exit(0) }
}

/// [`System`] plus a count of live bytes in `monty_types::LIVE_MEMORY`.
pub struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only adds
// relaxed atomic arithmetic on a counter, so `System`'s guarantees carry over.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            refused();
        } else {
            monty_types::LIVE_MEMORY.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc_zeroed`'s contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            refused();
        } else {
            monty_types::LIVE_MEMORY.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is; `ptr` was allocated by this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        monty_types::LIVE_MEMORY.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            refused();
        } else {
            monty_types::LIVE_MEMORY.fetch_add(new_size, Ordering::Relaxed);
            monty_types::LIVE_MEMORY.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// Starts counting the script's memory from what the runner holds now, and makes an allocation
/// failure end the execution with `MEMORY_LIMIT`.
pub fn arm() {
    OUT_OF_MEMORY.get_or_init(|| {
        let mut frame = Vec::new();
        let message = RunnerMessage::ExecutionComplete {
            success: false,
            result: None,
            error: Some(super::outcome::memory_limit()),
        };
        // A small fixed frame: it always encodes.
        let _ = encode_frame(&message, DEFAULT_MAX_FRAME, &mut frame);
        frame
    });
    let now = monty_types::LIVE_MEMORY.load(Ordering::Relaxed);
    monty_types::BASELINE_MEMORY.store(now, Ordering::Relaxed);
    ARMED.store(true, Ordering::Relaxed);
}

/// Bytes allocated since [`arm`] and still live.
pub fn live() -> usize {
    monty_types::LIVE_MEMORY
        .load(Ordering::Relaxed)
        .saturating_sub(monty_types::BASELINE_MEMORY.load(Ordering::Relaxed))
}
