//! Nested Rust arrays → operands and targets with static shapes, read and written in place:
//! `[[f64; 3]; 4]` is a 4 × 3 row-major tensor whose extents are part of its type
//! (`Extents2<4, 3>`), so `tensor!` checks its rank and extents at compile time; and what a
//! `let` makes from its indices' extent types (`LetResult`: such an array when every extent is
//! static, else a `Tensor`).

use crate::element::Element;
use crate::tensor::Tensor;

use super::access::{Access, Operand, RawAccess, ShapeRef, TargetAccess, TargetOwned};
use super::extents::{Dynamic, Extent, Extents1, Extents2, Extents3, Extents4};

/// Operand and target impls for one rank: the array type from the element outwards, the
/// extents outermost first, and the row-major strides they give.
macro_rules! nested_array {
    ($array:ty, $extents:ident; $($extent:ident),+; strides $strides:expr) => {
        impl<T: Element, $(const $extent: usize),+> Operand for $array {
            type Elem = T;
            type Extents = $extents<$($extent),+>;
            fn __tdsl_shape(&self) -> ShapeRef<'_> {
                const { &[$($extent),+] }.into()
            }
            fn __tdsl_operand(&self) -> Access<'_, T> {
                // A nested array is its elements, contiguous and in row-major order, with no
                // padding between rows.
                let len = std::mem::size_of_val(self) / std::mem::size_of::<T>().max(1);
                Access::new(RawAccess::new(self.as_ptr().cast::<T>(), len, const { &[$($extent),+] }, const { &$strides }, 0))
            }
        }

        impl<T: Element, $(const $extent: usize),+> TargetOwned for $array {
            type Elem = T;
            fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
                let len = std::mem::size_of_val(self) / std::mem::size_of::<T>().max(1);
                let shape = const { &[$($extent),+] };
                let raw = RawAccess::new(self.as_mut_ptr().cast::<T>(), len, shape, const { &$strides }, 0);
                // SAFETY: the array's own `len` elements, borrowed mutably with `self`.
                unsafe { TargetAccess::new(raw) }.exclusive()
            }
        }
    };
}

nested_array!([T; A], Extents1; A; strides [1]);
nested_array!([[T; B]; A], Extents2; A, B; strides [B as isize, 1]);
nested_array!([[[T; C]; B]; A], Extents3; A, B, C; strides [(B * C) as isize, C as isize, 1]);
nested_array!([[[[T; D]; C]; B]; A], Extents4; A, B, C, D;
    strides [(B * C * D) as isize, (C * D) as isize, D as isize, 1]);

/// The tensor a `let` makes from the extent types of its indices, in left-hand order: a nested
/// array where every extent is static (`(Extent<4>, Extent<3>)` → `[[T; 3]; 4]`), so the result
/// keeps its shape in its type, else a [`Tensor`].
pub trait LetResult<T: Element> {
    /// The result's type.
    type Output: TargetOwned<Elem = T>;
    /// A zero-filled result of `shape` (the indices' checked extents).
    fn zeros(shape: &[usize]) -> Self::Output;
}

/// The largest `let` result kept as a nested array on the stack (a build error beyond: a
/// larger one would risk the thread's stack).
pub const MAX_STACK_RESULT: usize = 128 << 10;

macro_rules! let_result {
    // Every extent static: a nested array.
    (array $array:ty = $zero:expr; $($extent:ident),+) => {
        impl<T: Element, $(const $extent: usize),+> LetResult<T> for ($(Extent<$extent>,)+) {
            type Output = $array;
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn zeros(_shape: &[usize]) -> $array {
                const {
                    assert!(
                        std::mem::size_of::<$array>() <= MAX_STACK_RESULT,
                        "a `let` over static extents is a nested array on the stack, and this one \
                         is larger than 128 KiB: write the result into a boxed array or a \
                         `Tensor` instead (`let mut c = Box::new([[0.0; N]; M]); c[i, j] = …`)"
                    )
                };
                $zero
            }
        }
    };
    // Static extents up to the first dynamic one: a tensor, whatever follows.
    (tensor [$($extent:ident),*] $($rest:ident),*) => {
        impl<T: Element, $(const $extent: usize,)* $($rest),*> LetResult<T>
            for ($(Extent<$extent>,)* Dynamic, $($rest,)*)
        {
            type Output = Tensor<T>;
            fn zeros(shape: &[usize]) -> Tensor<T> {
                Tensor::zeros(shape)
            }
        }
    };
}

let_result!(array [T; A] = [T::ZERO; A]; A);
let_result!(array [[T; B]; A] = [[T::ZERO; B]; A]; A, B);
let_result!(array [[[T; C]; B]; A] = [[[T::ZERO; C]; B]; A]; A, B, C);
let_result!(array [[[[T; D]; C]; B]; A] = [[[[T::ZERO; D]; C]; B]; A]; A, B, C, D);
let_result!(tensor []);
let_result!(tensor [] Y1);
let_result!(tensor[A]);
let_result!(tensor [] Y1, Y2);
let_result!(tensor [A] Y2);
let_result!(tensor [A, B]);
let_result!(tensor [] Y1, Y2, Y3);
let_result!(tensor [A] Y2, Y3);
let_result!(tensor [A, B] Y3);
let_result!(tensor [A, B, C]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_arrays_are_row_major_tensors() {
        let a = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let access = a.__tdsl_operand().raw;
        assert_eq!(
            (&*access.shape, access.strides, access.len),
            (&[2, 3][..], &[3, 1][..], 6)
        );
        let b = [[[[0.0f32; 3]; 3]; 3]; 2];
        let access = b.__tdsl_operand().raw;
        assert_eq!(access.strides, [27, 9, 3, 1]);
        assert_eq!((&*access.shape, access.len), (&[2, 3, 3, 3][..], 54));
        let mut c = [0.0f64; 0];
        assert_eq!(c.__tdsl_target().raw.len, 0);
    }
}
