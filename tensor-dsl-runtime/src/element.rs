//! Element types → the arithmetic and functions generated code needs; sealed, so the set of
//! element types is the runtime's to extend (f32 and f64 today).

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

mod sealed {
    /// With feature `cuda`, also what device memory needs of an element type.
    #[cfg(feature = "cuda")]
    pub trait Sealed: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits {}
    #[cfg(not(feature = "cuda"))]
    pub trait Sealed {}
}

/// A scalar type tensors can hold: `f32` or `f64`.
///
/// The element-wise functions of the language (`exp`, `ln`, `sqrt`, `abs`, `sin`, `cos`,
/// `tanh`, `max`, `min`, `powi`) are methods here so generated code can call them on any `T`.
pub trait Element:
    sealed::Sealed
    + Copy
    + Default
    + Debug
    + Display
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
{
    /// The additive identity.
    const ZERO: Self;
    /// The value of a numeric literal, rounded to `Self` (`2` and `2.0` both mean two).
    fn from_f64(value: f64) -> Self;
    /// The value widened to `f64`, for tolerances and printing.
    fn to_f64(self) -> f64;
    /// A `powi` exponent carried in this type's bits (its low 32 bits, the rest zero), where a
    /// CUDA kernel reads it back from its argument block; not a numeric conversion.
    #[doc(hidden)]
    fn from_exponent_bits(exponent: i32) -> Self;
    /// The value's bits (zero-extended for `f32`), as a CUDA kernel's argument block holds it:
    /// a copy of the bits, so a `powi` exponent's pattern (a NaN or a subnormal as a float)
    /// arrives as it was made.
    #[doc(hidden)]
    fn to_bits_u64(self) -> u64;
    /// `exp(x)` in the language: eˣ.
    fn exp(self) -> Self;
    /// `ln(x)`: the natural logarithm.
    fn ln(self) -> Self;
    /// `sqrt(x)`: the square root (NaN below zero, as `f64::sqrt`).
    fn sqrt(self) -> Self;
    /// `abs(x)`: the absolute value.
    fn abs(self) -> Self;
    /// `sin(x)`, in radians.
    fn sin(self) -> Self;
    /// `cos(x)`, in radians.
    fn cos(self) -> Self;
    /// `tan(x)`, in radians.
    fn tan(self) -> Self;
    /// `tanh(x)`: the hyperbolic tangent.
    fn tanh(self) -> Self;
    /// `sigmoid(x)`: the logistic function `1 / (1 + exp(-x))` (0 and 1 at the far ends, never
    /// NaN for a number).
    fn sigmoid(self) -> Self;
    /// `pow(x, y)`: x to a real power, as `f64::powf` (NaN for a negative x and a fractional y).
    fn pow(self, exponent: Self) -> Self;
    /// `max(x, y)`: the larger value; a NaN loses to a number, as `f64::max`.
    fn max(self, other: Self) -> Self;
    /// `min(x, y)`: the smaller value; a NaN loses to a number, as `f64::min`.
    fn min(self, other: Self) -> Self;
    /// `powi(x, n)`: x to an integer power, as `f64::powi`.
    fn powi(self, exponent: i32) -> Self;

    /// `C ← α A B + β C` for an `m × k` matrix A, a `k × n` matrix B and an `m × n` matrix C
    /// given by row and column strides in elements, on one thread or, if `parallel`, on the
    /// current pool's threads (which share out C's blocks, so the bits are the same). With
    /// β = 0, C is not read. The `gemm` crate's kernels, chosen at run time for the CPU
    /// (AVX-512, AVX2 with FMA, or portable code).
    ///
    /// # Safety
    /// Every element the strides address must be valid: A and B for reads, C for reads and
    /// writes, and C's elements distinct and overlapping neither A nor B.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: (*const Self, isize, isize),
        b: (*const Self, isize, isize),
        beta: Self,
        c: (*mut Self, isize, isize),
        parallel: bool,
    );
}

macro_rules! impl_element {
    ($($t:ident)*) => {$(
        impl sealed::Sealed for $t {}

        impl Element for $t {
            const ZERO: Self = 0.0;
            #[inline(always)]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                1.0 / (1.0 + (-self).exp())
            }
            #[inline(always)]
            fn pow(self, exponent: Self) -> Self {
                $t::powf(self, exponent)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                $t::max(self, other)
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                $t::min(self, other)
            }
            #[inline(always)]
            fn powi(self, exponent: i32) -> Self {
                $t::powi(self, exponent)
            }
            #[inline(always)]
            fn from_exponent_bits(exponent: i32) -> Self {
                // Bits are moved, never computed with, so they arrive unchanged (even as a NaN).
                $t::from_bits((exponent as u32).into())
            }
            #[inline(always)]
            fn to_bits_u64(self) -> u64 {
                self.to_bits().into()
            }
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                alpha: Self,
                (a, rsa, csa): (*const Self, isize, isize),
                (b, rsb, csb): (*const Self, isize, isize),
                beta: Self,
                (c, rsc, csc): (*mut Self, isize, isize),
                parallel: bool,
            ) {
                // SAFETY: forwarded from this function's contract. The `gemm` crate computes
                // `dst ← α′ dst + β′ lhs rhs` (reading dst only when asked), taking column
                // strides before row strides: α′ is our β, β′ our α.
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        c,
                        csc,
                        rsc,
                        beta != 0.0,
                        a,
                        csa,
                        rsa,
                        b,
                        csb,
                        rsb,
                        beta,
                        alpha,
                        false,
                        false,
                        false,
                        if parallel {
                            gemm::Parallelism::Rayon(rayon::current_num_threads())
                        } else {
                            gemm::Parallelism::None
                        },
                    )
                }
            }
        }
    )*};
}

impl_element!(f32 f64);
