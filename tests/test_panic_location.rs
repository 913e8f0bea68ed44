//! A run-time shape panic reports the user's `tensor!` call as its location. Alone in its test
//! binary because it installs a process-wide panic hook.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use tensor_dsl::{tensor, Tensor};

#[test]
fn panics_point_at_the_macro_call() {
    let a = Tensor::<f64>::zeros([2]);
    let b = Tensor::<f64>::zeros([3]);
    let location = Arc::new(Mutex::new(None));
    let seen = location.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        *seen.lock().unwrap() = info.location().map(|l| (l.file().to_owned(), l.line()));
    }));
    let line = line!() + 2;
    let result = catch_unwind(AssertUnwindSafe(|| {
        tensor! { let _c[i] = a[i] + b[i]; }
    }));
    std::panic::set_hook(previous);
    assert!(result.is_err());
    let (file, panic_line) = location.lock().unwrap().clone().expect("a location");
    assert!(file.ends_with("test_panic_location.rs"), "{file}");
    assert_eq!(panic_line, line);
}
