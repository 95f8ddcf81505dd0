//! Test support: an allocator that counts the bytes each thread has live, so a test can
//! assert that a computation's memory follows its input, not a timestamp. A test binary opts
//! in with `#[global_allocator] static A: Counting = Counting;` (tests run in parallel threads,
//! so the count is per thread).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator and keeps this thread's live and peak byte counts.
pub struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to `System`; the counters are const-initialised
// thread locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|c| {
            c.set(c.get() + l.size());
            let _ = PEAK.try_with(|p| p.set(p.get().max(c.get())));
        });
        // SAFETY: forwarded to the system allocator with the caller's layout.
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let _ = LIVE.try_with(|c| c.set(c.get().saturating_sub(l.size())));
        // SAFETY: `p` came from `alloc` above, i.e. from the system allocator.
        unsafe { System.dealloc(p, l) }
    }
}

/// Runs `f` and returns the peak bytes this thread had allocated during it, above what was
/// live before (meaningful only when [`Counting`] is the global allocator).
pub fn peak_during<T>(f: impl FnOnce() -> T) -> usize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get);
    drop(out);
    peak - base
}
