//! Run-time panics (shape checks of `tensor!`, tensor indexing, view layouts) report the user's
//! line as their location. Alone in its test binary because it installs a process-wide panic
//! hook.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use tensor_dsl::{tensor, Tensor};

#[test]
fn panics_point_at_the_macro_call() {
    let a = Tensor::<f64>::zeros([2]);
    let b = Tensor::<f64>::zeros([3]);
    let line = line!() + 2;
    let (file, panic_line) = panic_location(|| {
        tensor! { let _c[i] = a[i] + b[i]; }
    });
    assert!(file.ends_with("test_panic_location.rs"), "{file}");
    assert_eq!(panic_line, line);
}

/// The location a panic of `f` reports, with the hook restored afterwards.
fn panic_location(f: impl FnOnce()) -> (String, u32) {
    // The hook is process-wide: one test at a time may replace it.
    static HOOK: Mutex<()> = Mutex::new(());
    let _hook = HOOK.lock().unwrap_or_else(|poison| poison.into_inner());
    let location = Arc::new(Mutex::new(None));
    let seen = location.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        *seen.lock().unwrap() = info.location().map(|l| (l.file().to_owned(), l.line()));
    }));
    let result = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    assert!(result.is_err(), "expected a panic");
    let location = location.lock().unwrap().clone();
    location.expect("a location")
}

#[test]
fn runtime_panics_point_at_the_calling_line() {
    let mut t = Tensor::<f64>::zeros([2, 3]);
    // Each case records its own line in the same expression that panics.
    let line = std::cell::Cell::new(0);
    let here = || (file!().to_owned(), line.get());
    let got = panic_location(|| (line.set(line!()), t[[2, 0]]).0);
    assert_eq!(got, here());
    let got = panic_location(|| (line.set(line!()), t[[0, 3]] = 1.0).1);
    assert_eq!(got, here());
    let got = panic_location(|| drop((line.set(line!()), t.view().permuted_axes(&[0, 0]))));
    assert_eq!(got, here());
    let got = panic_location(|| drop((line.set(line!()), t.view().slice_axis(1, 2..4))));
    assert_eq!(got, here());
    let got = panic_location(|| drop((line.set(line!()), Tensor::<f32>::zeros([usize::MAX, 2]))));
    assert_eq!(got, here());
}
