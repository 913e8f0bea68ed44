//! Rust slices and `Vec`s → rank-1 operands and targets, in place: `&[T]`, `&mut [T]` and
//! `Vec<T>` are what users hold before they build a `Tensor`. Their rank is part of the type,
//! so `x[i, j]` on a slice is a compile error; their length is checked at run time like any
//! extent. `Vec` is an operand for each element type rather than for any `T: Element`, so that
//! a `Vec<Vec<f64>>` is reported as a value that is no tensor, not as an element type that is
//! missing; generic code passes its `Vec`s as slices.

use crate::element::{c32, c64, Element};

use super::access::{Access, Operand, RawAccess, ShapeRef, TargetAccess, TargetOwned};
use super::extents::StaticRank;

impl<T: Element> Operand for [T] {
    type Elem = T;
    type Extents = StaticRank<1>;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        ShapeRef::one(self.len())
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        let raw = RawAccess::new(
            self.as_ptr(),
            self.len(),
            ShapeRef::one(self.len()),
            &[1],
            0,
        );
        Access::new(raw)
    }
}

/// A `Vec` target is reached through its slice (method lookup derefs `Vec<T>` to `[T]`), so
/// `let mut v = vec![…]` and `let s: &mut [T] = …` are both targets; a statement never changes
/// a `Vec`'s length.
impl<T: Element> TargetOwned for [T] {
    type Elem = T;
    fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
        let (data, len) = (self.as_mut_ptr().cast_const(), self.len());
        let raw = RawAccess::new(data, len, ShapeRef::one(len), &[1], 0);
        // SAFETY: `data` is the slice's own pointer, from `as_mut_ptr` on a `&mut` borrow of
        // its `len` elements that lasts as long as the access.
        unsafe { TargetAccess::new(raw) }
    }
}

macro_rules! vec_operands {
    ($($t:ty)*) => {$(
        impl Operand for Vec<$t> {
            type Elem = $t;
            type Extents = StaticRank<1>;
            fn __tdsl_shape(&self) -> ShapeRef<'_> {
                self.as_slice().__tdsl_shape()
            }
            fn __tdsl_operand(&self) -> Access<'_, $t> {
                self.as_slice().__tdsl_operand()
            }
        }
    )*};
}

vec_operands!(f32 f64 i32 i64 c32 c64);
