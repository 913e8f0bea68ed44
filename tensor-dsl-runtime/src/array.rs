//! Nested Rust arrays → operands and targets with static shapes, read and written in place:
//! `[[f64; 3]; 4]` is a 4 × 3 row-major tensor whose extents are part of its type
//! (`Extents2<4, 3>`), so `tensor!` checks its rank and extents at compile time.

use crate::access::{Access, Operand, TargetAccess, TargetOwned};
use crate::element::Element;
use crate::extents::{Extents1, Extents2, Extents3, Extents4};

/// Operand and target impls for one rank: the array type from the element outwards, the
/// extents outermost first, and the row-major strides they give.
macro_rules! nested_array {
    ($array:ty, $extents:ident; $($extent:ident),+; strides $strides:expr) => {
        impl<T: Element, $(const $extent: usize),+> Operand for $array {
            type Elem = T;
            type Extents = $extents<$($extent),+>;
            fn __tdsl_shape(&self) -> &[usize] {
                const { &[$($extent),+] }
            }
            fn __tdsl_operand(&self) -> Access<'_, T> {
                // A nested array is its elements, contiguous and in row-major order, with no
                // padding between rows.
                let len = std::mem::size_of_val(self) / std::mem::size_of::<T>().max(1);
                Access::new(self.as_ptr().cast::<T>(), len, self.__tdsl_shape(), const { &$strides }, 0)
            }
        }

        impl<T: Element, $(const $extent: usize),+> TargetOwned for $array {
            type Elem = T;
            fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
                let len = std::mem::size_of_val(self) / std::mem::size_of::<T>().max(1);
                let shape = const { &[$($extent),+] };
                TargetAccess::new(self.as_mut_ptr().cast::<T>(), len, shape, const { &$strides }, 0)
                    .exclusive()
            }
        }
    };
}

nested_array!([T; A], Extents1; A; strides [1]);
nested_array!([[T; B]; A], Extents2; A, B; strides [B as isize, 1]);
nested_array!([[[T; C]; B]; A], Extents3; A, B, C; strides [(B * C) as isize, C as isize, 1]);
nested_array!([[[[T; D]; C]; B]; A], Extents4; A, B, C, D;
    strides [(B * C * D) as isize, (C * D) as isize, D as isize, 1]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_arrays_are_row_major_tensors() {
        let a = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let access = a.__tdsl_operand();
        assert_eq!(
            (access.shape, access.strides, access.len),
            (&[2, 3][..], &[3, 1][..], 6)
        );
        let b = [[[[0.0f32; 3]; 3]; 3]; 2];
        let access = b.__tdsl_operand();
        assert_eq!(access.strides, [27, 9, 3, 1]);
        assert_eq!((access.shape, access.len), (&[2, 3, 3, 3][..], 54));
        let mut c = [0.0f64; 0];
        assert_eq!(c.__tdsl_target().len, 0);
    }
}
