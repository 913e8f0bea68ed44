//! A deliberate data race, run only under ThreadSanitizer by `.ci/sanitizers`: it proves that
//! the sanitizer is active and that the report filter (`.ci/tsan_filter.py`) flags races in the
//! frames it watches. Never run it otherwise.

/// A raw pointer two threads may share (that is the point of this program).
#[derive(Clone, Copy)]
struct Shared(*mut u64);

// SAFETY: not safe at all: the canary races on purpose, under ThreadSanitizer only.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

#[inline(never)]
fn tsan_canary_increment(shared: Shared) {
    for _ in 0..1000 {
        // SAFETY: the pointee is alive for the whole scope; the unsynchronised access from two
        // threads is the race this program exists to show.
        unsafe { shared.0.write_volatile(shared.0.read_volatile() + 1) };
    }
}

fn main() {
    let mut counter = 0u64;
    let shared = Shared(&mut counter);
    std::thread::scope(|scope| {
        scope.spawn(move || tsan_canary_increment(shared));
        scope.spawn(move || tsan_canary_increment(shared));
    });
    println!("{counter}");
}
