//! The runner's global allocator: the system's, counting live bytes where monty reads them, so a
//! Python script's memory limit is enforced by the interpreter (a `MemoryError` outcome) rather
//! than by the address-space limit (an allocation failure aborts the process).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::Ordering;

/// [`System`] plus a count of live bytes in `monty_types::LIVE_MEMORY`.
pub struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only adds
// relaxed atomic arithmetic on a counter, so `System`'s guarantees carry over.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            monty_types::LIVE_MEMORY.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc_zeroed`'s contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
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
        if !p.is_null() {
            monty_types::LIVE_MEMORY.fetch_add(new_size, Ordering::Relaxed);
            monty_types::LIVE_MEMORY.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// Starts counting the script's memory from what the runner holds now.
pub fn arm() {
    let now = monty_types::LIVE_MEMORY.load(Ordering::Relaxed);
    monty_types::BASELINE_MEMORY.store(now, Ordering::Relaxed);
}
