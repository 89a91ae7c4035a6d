//! The JavaScript heap's budget, kept by the runner's own allocator.
//!
//! QuickJS's own limit (`JS_SetMemoryLimit`) refuses an allocation inside QuickJS and throws
//! `InternalError: out of memory` — a value any script can throw too, so the runner could not
//! tell the limit from the script's words. The runtime is therefore made with this allocator
//! ([`Heap`]), which keeps the budget itself: every block QuickJS asks the system for (its arena
//! pages and large blocks) is counted by its usable size, and a request past the budget is
//! refused *here*, which sets [`refused`]. `MEMORY_LIMIT` is reported only when that flag is
//! set: the runner's accounting, never an exception's text.
//!
//! One runtime per runner process, one execution at a time: the budget and the flag are
//! process-wide, reset by [`start_execution`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rquickjs::allocator::Allocator;

/// Bytes of the heap in use (usable sizes of the blocks QuickJS holds).
static USED: AtomicUsize = AtomicUsize::new(0);
/// The execution's budget; `usize::MAX` until an execution sets one.
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Set when a request was refused (past the budget, or by the system) since the execution
/// started.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// Sets the budget of the execution that starts now and clears the refusal flag. The heap the
/// engine already holds (built-ins, prelude) counts against it, as with QuickJS's own limit.
pub fn start_execution(limit_bytes: usize) {
    LIMIT.store(limit_bytes, Ordering::Relaxed);
    REFUSED.store(false, Ordering::Relaxed);
}

/// Whether the allocator refused a request during this execution: the only proof of
/// `MEMORY_LIMIT`.
pub fn refused() -> bool {
    REFUSED.load(Ordering::Relaxed)
}

/// Bytes in use now.
pub fn used() -> usize {
    USED.load(Ordering::Relaxed)
}

/// Whether `extra` more bytes fit; records the refusal when not.
fn admit(extra: usize) -> bool {
    let fits = USED
        .load(Ordering::Relaxed)
        .checked_add(extra)
        .is_some_and(|total| total <= LIMIT.load(Ordering::Relaxed));
    if !fits {
        REFUSED.store(true, Ordering::Relaxed);
    }
    fits
}

fn usable(ptr: *mut u8) -> usize {
    if ptr.is_null() {
        return 0;
    }
    // SAFETY: `ptr` came from this allocator's malloc/calloc/realloc and is live.
    unsafe { libc::malloc_usable_size(ptr.cast()) }
}

/// Records a block the system gave (or its absence: a refusal by the system is the runner's
/// memory limit too, its address-space rlimit).
fn took(ptr: *mut u8) -> *mut u8 {
    if ptr.is_null() {
        REFUSED.store(true, Ordering::Relaxed);
    } else {
        USED.fetch_add(usable(ptr), Ordering::Relaxed);
    }
    ptr
}

/// The runtime's allocator: the C heap, counted against the execution's budget.
#[derive(Debug, Default)]
pub struct Heap;

// SAFETY: every pointer returned comes from the C allocator (malloc/calloc/realloc) with its
// alignment (at least 16 bytes on this target, which QuickJS's arenas assume), is freed only by
// `dealloc`/`realloc` here, and `usable_size` reads the C allocator's own record of it.
unsafe impl Allocator for Heap {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !admit(size) {
            return std::ptr::null_mut();
        }
        // SAFETY: malloc takes any size; a null result is handled by the caller (QuickJS).
        took(unsafe { libc::malloc(size.max(1)) }.cast())
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            REFUSED.store(true, Ordering::Relaxed);
            return std::ptr::null_mut();
        };
        if !admit(total) {
            return std::ptr::null_mut();
        }
        // SAFETY: calloc checks the product itself; a null result is handled by QuickJS.
        took(unsafe { libc::calloc(count.max(1), size.max(1)) }.cast())
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        USED.fetch_sub(usable(ptr), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator (the trait's contract) and is freed once.
        unsafe { libc::free(ptr.cast()) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        let old = usable(ptr);
        if new_size > old && !admit(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` came from this allocator; on failure it stays valid (and counted).
        let moved: *mut u8 = unsafe { libc::realloc(ptr.cast(), new_size.max(1)) }.cast();
        if moved.is_null() {
            REFUSED.store(true, Ordering::Relaxed);
            return moved;
        }
        USED.fetch_sub(old, Ordering::Relaxed);
        USED.fetch_add(usable(moved), Ordering::Relaxed);
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        usable(ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_past_the_budget_is_refused_and_recorded() {
        let mut heap = Heap;
        start_execution(usize::MAX);
        let before = used();
        let p = heap.alloc(1000);
        assert!(!p.is_null());
        assert!(used() >= before + 1000);
        assert!(!refused());
        start_execution(used() + 100);
        assert!(heap.alloc(10_000).is_null());
        assert!(refused());
        // SAFETY: `p` came from `heap.alloc` above.
        let grown = unsafe { heap.realloc(p, 1 << 20) };
        assert!(grown.is_null(), "growing past the budget is refused");
        start_execution(usize::MAX);
        assert!(!refused());
        // SAFETY: the refused realloc left `p` valid.
        unsafe { heap.dealloc(p) };
        assert_eq!(used(), before);
    }
}
