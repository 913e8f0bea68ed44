//! Element types → the arithmetic and functions generated code needs; sealed, so the set of
//! element types is the runtime's to extend. Every element type has `+ - *`, `abs` and
//! `conj`/`re`/`im` ([`Element`]); ordered ones (floats and integers) also `max`/`min`
//! ([`Real`]); floats also `/` and the transcendental functions ([`Fractional`]). Generated code
//! asks for the trait a construct needs on the construct's own token, so `/` over `i32` is a
//! compile error there. Integer arithmetic wraps on overflow, in every build profile.

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

#[cfg(target_arch = "x86_64")]
mod thin;

/// The bytes of a cache line on the machines measured: the unit a non-temporal store fills,
/// that the runtime's buffers are aligned to and that prefetches ask for.
pub(crate) const LINE: usize = 64;

/// A run of a tile's row where C holds it: (first column in the tile, length, offset in C
/// from the row's); see [`Element::combine_tile`].
pub(crate) type Run = (usize, usize, isize);

/// [`Element::combine_tile`] element by element.
///
/// # Safety
/// As [`Element::combine_tile`]'s.
unsafe fn combine_tile_in_order<T: Element>(
    beta: Option<T>,
    c: *mut T,
    rows: &[isize],
    runs: &[(usize, usize, isize)],
    tile: &[T],
    width: usize,
) {
    for (&row, sums) in rows.iter().zip(tile.chunks(width)) {
        for &(first, length, offset) in runs {
            let slots = c.wrapping_offset(row + offset);
            for (l, &value) in sums[first..first + length].iter().enumerate() {
                // SAFETY: an element of C this run names, which the caller vouches for.
                unsafe {
                    let slot = slots.add(l);
                    slot.write(match beta {
                        None => value,
                        // C itself, not `1·C`: a complex one times an infinite part is NaN.
                        Some(beta) if beta == T::ONE => slot.read().plus(value),
                        Some(beta) => beta.times(slot.read()).plus(value),
                    })
                }
            }
        }
    }
}

pub(crate) mod sealed {
    /// With feature `cuda`, also how device memory holds an element type.
    ///
    /// # Safety
    /// `Device` must have `Self`'s size, alignment and bit validity.
    #[cfg(feature = "cuda")]
    pub unsafe trait Sealed: Sized {
        /// The type a device buffer of `Self` is made of, with `Self`'s size, alignment and
        /// bit validity (a `Self` itself where cudarc knows it; a wrapper of the runtime's own
        /// for complex numbers, whose type is another crate's).
        type Device: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy;

        /// `values` as device-repr elements.
        fn as_device(values: &[Self]) -> &[Self::Device] {
            // SAFETY: `Device` has `Self`'s size, alignment and bit validity (the unsafe
            // trait's contract, which each impl states), so the slice
            // reads the same bytes as the same number of valid `Device` values.
            unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), values.len()) }
        }

        /// Device-repr elements as `Self`s.
        fn from_device(values: Vec<Self::Device>) -> Vec<Self> {
            let mut values = std::mem::ManuallyDrop::new(values);
            // SAFETY: as in `as_device`, the other way; the allocation is handed over with its
            // length and capacity, counted in elements of the same size and alignment.
            unsafe {
                Vec::from_raw_parts(values.as_mut_ptr().cast(), values.len(), values.capacity())
            }
        }
    }
    /// # Safety
    /// Nothing without feature `cuda`; unsafe in both builds so that impls read alike.
    #[cfg(not(feature = "cuda"))]
    pub unsafe trait Sealed {}
}

/// What a device buffer of `T` is made of (`T` itself but for complex numbers).
#[cfg(feature = "cuda")]
pub(crate) type DeviceOf<T> = <T as sealed::Sealed>::Device;

/// Complex numbers with `f32` parts (`num_complex::Complex<f32>`), an element type.
#[allow(non_camel_case_types)]
pub type c32 = num_complex::Complex<f32>;
/// Complex numbers with `f64` parts (`num_complex::Complex<f64>`), an element type.
#[allow(non_camel_case_types)]
pub type c64 = num_complex::Complex<f64>;

/// A complex number as device memory holds it: the two parts, as `num_complex` lays them out.
#[cfg(feature = "cuda")]
#[doc(hidden)]
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct DeviceComplex<F>(num_complex::Complex<F>);

// SAFETY: `Complex<F>` is `#[repr(C)]` of two `F`s, plain bits with no pointers, for the
// floats it is instantiated with below; any bits are a valid pair of floats, zero being 0 + 0i.
#[cfg(feature = "cuda")]
unsafe impl cudarc::driver::DeviceRepr for DeviceComplex<f32> {}
#[cfg(feature = "cuda")]
unsafe impl cudarc::driver::DeviceRepr for DeviceComplex<f64> {}
#[cfg(feature = "cuda")]
unsafe impl cudarc::driver::ValidAsZeroBits for DeviceComplex<f32> {}
#[cfg(feature = "cuda")]
unsafe impl cudarc::driver::ValidAsZeroBits for DeviceComplex<f64> {}

/// Which element type a generic `T` is, for code that must choose per type at run time (a
/// CUDA module's text, a cuBLAS routine).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    F32,
    F64,
    I32,
    I64,
    C32,
    C64,
}

/// A scalar type tensors can hold: `f32`, `f64`, `i32`, `i64`, [`c32`] or [`c64`].
///
/// The language's `+`, `-`, `*` and unary `-` are [`plus`](Self::plus),
/// [`minus`](Self::minus), [`times`](Self::times) and [`negated`](Self::negated): the
/// operators for floats, wrapping arithmetic for integers (numpy's einsum wraps too), so a
/// statement's overflow never panics, in debug builds either.
pub trait Element:
    sealed::Sealed
    + Copy
    + Default
    + Debug
    + Display
    + PartialEq
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + AddAssign
{
    /// The additive identity.
    const ZERO: Self;
    /// The multiplicative identity.
    const ONE: Self;
    /// Which type this is.
    #[doc(hidden)]
    const KIND: Kind;
    /// The type of this type's real and imaginary parts: `f32` for [`c32`], `f64` for
    /// [`c64`]; a real type is its own. A tensor of parts is read in a statement over `Self`
    /// without a converted copy (a real tensor in a complex statement).
    #[doc(hidden)]
    type Part: Element;
    /// A part as a value of `Self` (a complex number with imaginary part 0).
    #[doc(hidden)]
    fn from_part(part: Self::Part) -> Self;
    /// The real and imaginary parts (a real number's imaginary part is 0).
    #[doc(hidden)]
    fn split_parts(self) -> [Self::Part; 2];
    /// The value of a numeric literal in `Self` (`2` and `2.0` both mean two; integers take
    /// integral literals, which `tensor!` checks at compile time).
    fn from_f64(value: f64) -> Self;
    /// `x + y` in the language (wrapping for integers).
    fn plus(self, other: Self) -> Self;
    /// `x - y` in the language (wrapping for integers).
    fn minus(self, other: Self) -> Self;
    /// `x * y` in the language (wrapping for integers).
    fn times(self, other: Self) -> Self;
    /// `-x` in the language (wrapping for integers: `-i32::MIN` is `i32::MIN`).
    fn negated(self) -> Self;
    /// `abs(x)`: the absolute value (wrapping for integers: `abs(i32::MIN)` is `i32::MIN`);
    /// for a complex number its modulus, as a complex number with imaginary part 0.
    fn abs(self) -> Self;
    /// `conj(x)`: the complex conjugate; a real number is its own.
    fn conj(self) -> Self;
    /// `re(x)`: the real part (as `Self`: a complex number's imaginary part 0); a real number
    /// is its own.
    fn re(self) -> Self;
    /// `im(x)`: the imaginary part (as `Self`, imaginary part 0); zero for a real number.
    fn im(self) -> Self;
    /// The bits of the value's real and imaginary parts (each zero-extended from its own
    /// width; the second 0 for a real type), which a CUDA kernel's argument block holds, each
    /// part in its own width: a copy of the bits, so a `powi` exponent's pattern (a NaN or a
    /// subnormal as a float) arrives as it was made.
    #[doc(hidden)]
    fn device_bits(self) -> [u64; 2];
    /// `C ← α op(A) op(B) + β C` for an `m × k` matrix A, a `k × n` matrix B and an `m × n`
    /// matrix C given by row and column strides in elements, `op` conjugating the operands
    /// `conj` names (a real number is its own conjugate), on one thread or, if `parallel`, on the
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
        conj: [bool; 2],
        parallel: bool,
    );
    /// The columns of C one [`Element::small_gemm`] call takes on the runtime's own kernel
    /// when B's and C's rows are contiguous (`element::thin`: two AVX-512 vectors), or `None`
    /// where there is no such kernel (other types, or a CPU without AVX-512): the width of the
    /// panels a contraction in panels (`exec::panels`) cuts C's columns into.
    #[doc(hidden)]
    fn tile_columns() -> Option<usize> {
        None
    }
    /// A tile of sums into C where it lies (`exec::panels`): for each row `r` (at offset
    /// `rows[r]` in C) and run `(first, length, offset)`, the `length` elements from column
    /// `first` of the tile's row `r` (`width` apart) go to C's `length` contiguous elements
    /// from `rows[r] + offset`: stored as they are where `beta` is `None` (C is not read),
    /// added to C where β is one, else added to `β·C` (multiplied, then added: no fused
    /// multiply-add). `f32` and `f64` move each run in masked AVX-512 vectors where the CPU
    /// has them, with the same arithmetic.
    ///
    /// # Safety
    /// Every element of C so named must be valid for reads and writes, none of them in
    /// `tile`, and every run must lie inside its row of `tile`.
    #[doc(hidden)]
    unsafe fn combine_tile(
        beta: Option<Self>,
        c: *mut Self,
        rows: &[isize],
        runs: &[(usize, usize, isize)],
        tile: &[Self],
        width: usize,
    ) {
        // SAFETY: forwarded from this function's contract.
        unsafe { combine_tile_in_order(beta, c, rows, runs, tile, width) }
    }
    /// `α·A·B` combined straight into C where it lies, as [`Element::combine_tile`] would
    /// combine the tile [`Element::small_gemm`] makes of it (β = 0, the tile's rows
    /// contiguous), with the same arithmetic and so the same bits, without the tile: A is
    /// `m × k` (`(pointer, row stride, column stride)`), B `k × n` (`(pointer, row stride)`, its
    /// rows contiguous), `n` at most [`Element::tile_columns`]; row `i` of C at `c + rows[i]`,
    /// its runs `runs` as `combine_tile` takes them. Returns whether it ran: `f32` and `f64` on
    /// a CPU with AVX-512 F, where every run lies inside the `n` columns and `rows` names at
    /// least `m` rows; otherwise nothing is touched.
    ///
    /// # Safety
    /// As [`Element::small_gemm`]'s for A and B, and as [`Element::combine_tile`]'s for C.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn product_into_runs(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: (*const Self, isize, isize),
        b: (*const Self, isize),
        beta: Option<Self>,
        c: (*mut Self, &[isize], &[Run]),
    ) -> bool {
        let _ = (m, k, n, alpha, a, b, beta, c);
        false
    }
    /// [`Element::gemm`] on one thread, for a call with a side of at most 32 and little work.
    /// `f32` and `f64` take the runtime's own AVX-512 kernel where the CPU has it and C's
    /// rows (or columns) and B's rows (or A's columns) are contiguous (`element::thin`: on
    /// an AVX-512 host, one thread, 1.3–3.2× `faer`'s speed on such calls, 2.3× on a
    /// 10 × 1000 × 10 one); else, with feature `matrix`, `faer`'s kernels for small and thin
    /// matrices where β is 0 or 1 (2.6× the `gemm` crate's speed on a 10 × 1000 × 10 call,
    /// 1.4× on a 16³ one); other types and β, the `gemm` crate.
    ///
    /// # Safety
    /// As [`Element::gemm`]'s, and every pointer non-null and aligned even where it addresses
    /// nothing (`faer`'s views require it of empty matrices too).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn small_gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: (*const Self, isize, isize),
        b: (*const Self, isize, isize),
        beta: Self,
        c: (*mut Self, isize, isize),
        conj: [bool; 2],
    ) {
        // SAFETY: forwarded from this function's contract.
        unsafe { Self::gemm(m, k, n, alpha, a, b, beta, c, conj, false) }
    }
}

/// Ordered element types (floats and integers): `max`, `min`, and a widening to `f64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ordered element type (`f32`, `f64`, `i32`, `i64`)",
    label = "needs ordered elements",
    note = "`max` and `min` compare values, so they take ordered elements only: complex numbers have no order (compare `abs(x)` or `re(x)` in a real statement instead)"
)]
pub trait Real: Element + PartialOrd {
    /// `max(x, y)`: the larger value; for floats a NaN loses to a number, as `f64::max`.
    fn max(self, other: Self) -> Self;
    /// `min(x, y)`: the smaller value; for floats a NaN loses to a number, as `f64::min`.
    fn min(self, other: Self) -> Self;
    /// The value widened to `f64`, for tolerances and printing (rounded for a large `i64`).
    fn to_f64(self) -> f64;
}

/// Element types with division and the transcendental functions: floats and complex numbers
/// (with their complex meaning: principal branches, as `num_complex`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` elements have no `/` and no `exp`, `ln`, `sqrt`, `sin`, `cos`, `tan`, `tanh`, `sigmoid`, `pow` or `powi`",
    label = "needs `f32`, `f64`, `c32` or `c64` elements",
    note = "integer statements have `+`, `-`, `*`, `abs`, `max`, `min` and sums; convert the tensor first (`.mapv(|x| x as f64)`) to divide"
)]
pub trait Fractional: Element + Div<Output = Self> {
    /// `exp(x)` in the language: eˣ.
    fn exp(self) -> Self;
    /// `ln(x)`: the natural logarithm.
    fn ln(self) -> Self;
    /// `sqrt(x)`: the square root (NaN below zero, as `f64::sqrt`).
    fn sqrt(self) -> Self;
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
    /// `powi(x, n)`: x to an integer power, as `f64::powi`.
    fn powi(self, exponent: i32) -> Self;

    /// `x / y` in the language.
    fn over(self, other: Self) -> Self;
    /// A `powi` exponent carried in this type's bits (its low 32 bits, the rest zero), where a
    /// CUDA kernel reads it back from its argument block; not a numeric conversion.
    #[doc(hidden)]
    fn from_exponent_bits(exponent: i32) -> Self;
}

/// [`Element::gemm`] through the `gemm` crate, which takes `f32`, `f64`, `c32` and `c64`
/// (conjugation flags are no-ops on real numbers).
///
/// # Safety
/// As [`Element::gemm`]'s.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_crate<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    (a, rsa, csa): (*const T, isize, isize),
    (b, rsb, csb): (*const T, isize, isize),
    beta: T,
    (c, rsc, csc): (*mut T, isize, isize),
    [conj_a, conj_b]: [bool; 2],
    parallel: bool,
) {
    // SAFETY: forwarded from this function's contract. The `gemm` crate computes
    // `dst ← α′ dst + β′ op(lhs) op(rhs)` (reading dst only when asked), taking column strides
    // before row strides: α′ is our β, β′ our α.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c,
            csc,
            rsc,
            beta != T::ZERO,
            a,
            csa,
            rsa,
            b,
            csb,
            rsb,
            beta,
            alpha,
            false,
            conj_a,
            conj_b,
            if parallel {
                gemm::Parallelism::Rayon(rayon::current_num_threads())
            } else {
                gemm::Parallelism::None
            },
        )
    }
}

/// The most columns (in the `gemm` crate's own orientation, below) of a block of C for which
/// the `gemm` crate 0.19 reads its left operand where it lies instead of packing it: 8 times
/// its kernels' 6 columns, on AVX2 and AVX-512 alike.
const UNPACKED_COLUMNS: usize = 48;

/// The most rows of a left operand read in place: one panel of the crate's AVX-512 `f32`
/// kernel (four vectors of 16), which it then reads as one sequential run.
const UNPACKED_ROWS: usize = 64;

/// The largest left operand (bytes) read in place block after block of C's columns: half of
/// the 1 MiB L2 of the machines measured, so that every block after the first finds it there.
const UNPACKED_BYTES: usize = 1 << 19;

/// A real [`Element::gemm`] through the `gemm` crate, cut into blocks of C's columns where that
/// spares the crate packing an `f32` left operand already laid out as its kernels read it.
///
/// The `gemm` crate turns a call whose C is row-major around (C's columns then run along
/// memory) and packs the left operand of that orientation, per call, into a buffer of its
/// kernels' layout whenever a block of C is wider than [`UNPACKED_COLUMNS`]; narrower, it reads
/// the operand where it lies if its rows run at unit stride and every block of them is whole
/// vectors. When that operand is one dense panel of at most [`UNPACKED_ROWS`] rows that stays
/// in L2, packing it only copies it: here the call is cut into blocks of at most
/// [`UNPACKED_COLUMNS`] columns, each reading it in place. Measured (one thread, two builds in
/// turns, best of four rounds): the 64 calls of 64 × 64 × 1024 of TCCG `abc-adec-ebd`, each
/// with its own dense 64-row operand, 203–210 → 229–236 GFLOP/s. Taller operands measured no
/// gain or a loss (batches of 128³ and 256³, up to 4 % slower), as did `f64` (batches of 256³
/// 98–100 → 87–90 GFLOP/s), so those run whole.
///
/// The blocks compute every element as the whole call would (so on any number of threads the
/// same bits, as [`Element::gemm`] promises): the crate picks its kernel and blocks the inner
/// dimension by the call's shape only through a dot-product kernel where m·n ≤ 256, a
/// matrix-vector one where m or n is 1, and blocks of `min(k, 512)` where m and n are both at
/// most 64 (balanced by cache sizes otherwise). Every block here has at least 16 rows, 2
/// columns and more than 256 elements, and the cut is made only where every block takes the
/// branch the whole call takes, or k ≤ 512 makes the two branches' blocks the same. Calls the
/// crate shares among threads run whole.
///
/// # Safety
/// As [`Element::gemm`]'s.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_in_place<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: (*const T, isize, isize),
    b: (*const T, isize, isize),
    beta: T,
    c: (*mut T, isize, isize),
    parallel: bool,
) {
    let ((_, rsa, csa), (_, rsb, csb), (_, rsc, csc)) = (a, b, c);
    // The crate's orientation: C column-major, the left operand (rows, columns) strides.
    let turned = csc.unsigned_abs() < rsc.unsigned_abs();
    let (rows, columns, left) = if turned {
        (n, m, (csb, rsb))
    } else {
        (m, n, (rsa, csa))
    };
    let size = std::mem::size_of::<T>();
    let in_place = size == 4
        && !parallel
        && columns > UNPACKED_COLUMNS
        && left == (1, rows as isize)
        && (16..=UNPACKED_ROWS).contains(&rows)
        && (rows * size).is_multiple_of(LINE)
        && (rows * size).saturating_mul(k) <= UNPACKED_BYTES
        // Every block is at most 64 × 64, so in the crate's small-call branch: the whole call
        // must be too, or its inner dimension one block deep either way.
        && (columns <= 64 || k <= 512);
    if !in_place {
        // SAFETY: forwarded from this function's contract.
        return unsafe { gemm_crate(m, k, n, alpha, a, b, beta, c, [false; 2], parallel) };
    }
    #[cfg(test)]
    tests::CUT_CALLS.with(|cut| cut.set(cut.get() + 1));
    // Whole blocks of the crate's kernel columns (6) but the last: 48 + 16 measured faster
    // than 32 + 32 for 64 columns (229–236 against 222–231 GFLOP/s on `abc-adec-ebd`). Where
    // the last block alone would be thin enough for another kernel (m·n ≤ 256, or one
    // column), the last two share their columns evenly instead.
    let mut first = 0;
    while first < columns {
        let remaining = columns - first;
        let thin_end = remaining > UNPACKED_COLUMNS && rows * (remaining - UNPACKED_COLUMNS) <= 256;
        let width = if thin_end && remaining < 2 * UNPACKED_COLUMNS {
            remaining / 2
        } else {
            remaining.min(UNPACKED_COLUMNS)
        };
        let at = first as isize;
        first += width;
        // SAFETY: forwarded from this function's contract: each block is the call restricted
        // to columns `at..at + width` of C in the crate's orientation (and to the same lines
        // of the operand on that side), so every element it addresses is one the whole call
        // addresses; the offsets wrap, as an operand with no elements may be dangling.
        unsafe {
            if turned {
                let a = (a.0.wrapping_offset(at * rsa), rsa, csa);
                let c = (c.0.wrapping_offset(at * rsc), rsc, csc);
                gemm_crate(width, k, n, alpha, a, b, beta, c, [false; 2], false)
            } else {
                let b = (b.0.wrapping_offset(at * csb), rsb, csb);
                let c = (c.0.wrapping_offset(at * csc), rsc, csc);
                gemm_crate(m, k, width, alpha, a, b, beta, c, [false; 2], false)
            }
        }
    }
}

macro_rules! impl_float {
    ($($t:ident $kind:ident)*) => {$(
        // SAFETY: `Device` is `Self`.
        unsafe impl sealed::Sealed for $t {
            #[cfg(feature = "cuda")]
            type Device = $t;
        }

        impl Element for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const KIND: Kind = Kind::$kind;
            type Part = $t;
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_part(part: Self) -> Self {
                part
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn split_parts(self) -> [Self; 2] {
                [self, 0.0]
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn plus(self, other: Self) -> Self {
                self + other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn minus(self, other: Self) -> Self {
                self - other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn times(self, other: Self) -> Self {
                self * other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn negated(self) -> Self {
                -self
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn conj(self) -> Self {
                self
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn re(self) -> Self {
                self
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn im(self) -> Self {
                0.0
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn device_bits(self) -> [u64; 2] {
                [self.to_bits().into(), 0]
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
                _conj: [bool; 2],
                parallel: bool,
            ) {
                // SAFETY: forwarded from this function's contract (a real type has no
                // conjugate).
                unsafe { gemm_in_place(m, k, n, alpha, (a, rsa, csa), (b, rsb, csb), beta, (c, rsc, csc), parallel) }
            }
            fn tile_columns() -> Option<usize> {
                #[cfg(target_arch = "x86_64")]
                return thin::columns::<Self>();
                #[cfg(not(target_arch = "x86_64"))]
                None
            }
            unsafe fn combine_tile(
                beta: Option<Self>,
                c: *mut Self,
                rows: &[isize],
                runs: &[(usize, usize, isize)],
                tile: &[Self],
                width: usize,
            ) {
                // SAFETY (both): forwarded from this function's contract.
                #[cfg(target_arch = "x86_64")]
                if unsafe { thin::combine_tile(beta, c, rows, runs, tile, width) } {
                    return;
                }
                unsafe { combine_tile_in_order(beta, c, rows, runs, tile, width) }
            }
            unsafe fn product_into_runs(
                m: usize,
                k: usize,
                n: usize,
                alpha: Self,
                a: (*const Self, isize, isize),
                b: (*const Self, isize),
                beta: Option<Self>,
                c: (*mut Self, &[isize], &[Run]),
            ) -> bool {
                // SAFETY: forwarded from this function's contract.
                #[cfg(target_arch = "x86_64")]
                return unsafe { thin::product_into_runs(m, k, n, alpha, a, b, beta, c) };
                #[cfg(not(target_arch = "x86_64"))]
                {
                    let _ = (m, k, n, alpha, a, b, beta, c);
                    false
                }
            }
            unsafe fn small_gemm(
                m: usize,
                k: usize,
                n: usize,
                alpha: Self,
                (a, rsa, csa): (*const Self, isize, isize),
                (b, rsb, csb): (*const Self, isize, isize),
                beta: Self,
                (c, rsc, csc): (*mut Self, isize, isize),
                conj: [bool; 2],
            ) {
                if m == 0 || n == 0 {
                    return;
                }
                // SAFETY: forwarded from this function's contract (a real type has no
                // conjugate).
                #[cfg(target_arch = "x86_64")]
                if unsafe { thin::gemm(m, k, n, alpha, (a, rsa, csa), (b, rsb, csb), beta, (c, rsc, csc)) } {
                    return;
                }
                #[cfg(feature = "matrix")]
                {
                    use faer::linalg::matmul::matmul;
                    use faer::{Accum, MatMut, MatRef, Par};
                    let accum = if beta == 0.0 {
                        Some(Accum::Replace)
                    } else if beta == 1.0 {
                        Some(Accum::Add)
                    } else {
                        None
                    };
                    if let Some(accum) = accum {
                        // SAFETY: this function's contract: the pointers are non-null and
                        // aligned, every element the strides address is valid (A and B for
                        // reads, C for reads and writes), C's elements are distinct and
                        // overlap neither A nor B, so the views alias nothing they write.
                        // `faer` does not read C under `Accum::Replace` (β = 0), and a real
                        // type has no conjugate.
                        unsafe {
                            let dst = MatMut::<$t>::from_raw_parts_mut(c, m, n, rsc, csc);
                            let lhs = MatRef::<$t>::from_raw_parts(a, m, k, rsa, csa);
                            let rhs = MatRef::<$t>::from_raw_parts(b, k, n, rsb, csb);
                            matmul(dst, accum, lhs, rhs, alpha, Par::Seq);
                        }
                        return;
                    }
                }
                // SAFETY: forwarded from this function's contract.
                unsafe { gemm_crate(m, k, n, alpha, (a, rsa, csa), (b, rsb, csb), beta, (c, rsc, csc), conj, false) }
            }
        }

        impl Real for $t {
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn max(self, other: Self) -> Self {
                $t::max(self, other)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn min(self, other: Self) -> Self {
                $t::min(self, other)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }

        impl Fractional for $t {
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn sigmoid(self) -> Self {
                1.0 / (1.0 + (-self).exp())
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn pow(self, exponent: Self) -> Self {
                $t::powf(self, exponent)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn powi(self, exponent: i32) -> Self {
                $t::powi(self, exponent)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn over(self, other: Self) -> Self {
                self / other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_exponent_bits(exponent: i32) -> Self {
                // Bits are moved, never computed with, so they arrive unchanged (even as a NaN).
                $t::from_bits((exponent as u32).into())
            }
        }
    )*};
}

impl_float!(f32 F32 f64 F64);

macro_rules! impl_integer {
    ($($t:ident $kind:ident)*) => {$(
        // SAFETY: `Device` is `Self`.
        unsafe impl sealed::Sealed for $t {
            #[cfg(feature = "cuda")]
            type Device = $t;
        }

        impl Element for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const KIND: Kind = Kind::$kind;
            type Part = $t;
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_part(part: Self) -> Self {
                part
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn split_parts(self) -> [Self; 2] {
                [self, 0]
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn plus(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn minus(self, other: Self) -> Self {
                self.wrapping_sub(other)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn times(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn negated(self) -> Self {
                self.wrapping_neg()
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn abs(self) -> Self {
                self.wrapping_abs()
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn conj(self) -> Self {
                self
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn re(self) -> Self {
                self
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn im(self) -> Self {
                0
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn device_bits(self) -> [u64; 2] {
                // Two's complement, sign-extended; the argument block keeps this type's width.
                [self as u64, 0]
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
                _conj: [bool; 2],
                _parallel: bool,
            ) {
                // Exact, so any order gives the same result: rows of C outermost, then the
                // inner dimension, so B's and C's rows stream when their columns are adjacent.
                for i in 0..m as isize {
                    for j in 0..n as isize {
                        // SAFETY: (i, j) is inside C's m × n elements, valid for writes and
                        // reads by this function's contract.
                        let slot = unsafe { c.offset(i * rsc + j * csc) };
                        // With β = 0, C is not read (it may hold anything).
                        // SAFETY (both blocks): `slot` is C's element (i, j), valid for reads
                        // and writes by this function's contract.
                        let start = if beta == 0 { 0 } else { beta.times(unsafe { *slot }) };
                        unsafe { *slot = start };
                    }
                    for l in 0..k as isize {
                        // SAFETY: (i, l) is inside A's m × k elements.
                        let left = alpha.times(unsafe { *a.offset(i * rsa + l * csa) });
                        for j in 0..n as isize {
                            // SAFETY: (l, j) is inside B's k × n elements, (i, j) inside C's,
                            // which overlaps neither A nor B.
                            unsafe {
                                let slot = c.offset(i * rsc + j * csc);
                                *slot = (*slot).plus(left.times(*b.offset(l * rsb + j * csb)));
                            }
                        }
                    }
                }
            }
        }

        impl Real for $t {
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn max(self, other: Self) -> Self {
                Ord::max(self, other)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn min(self, other: Self) -> Self {
                Ord::min(self, other)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}

impl_integer!(i32 I32 i64 I64);

macro_rules! impl_complex {
    ($($t:ident $part:ident $kind:ident)*) => {$(
        // SAFETY: `DeviceComplex` is `repr(transparent)` over `Self`.
        unsafe impl sealed::Sealed for $t {
            #[cfg(feature = "cuda")]
            type Device = DeviceComplex<$part>;
        }

        impl Element for $t {
            const ZERO: Self = $t::new(0.0, 0.0);
            const ONE: Self = $t::new(1.0, 0.0);
            const KIND: Kind = Kind::$kind;
            type Part = $part;
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_part(part: $part) -> Self {
                $t::new(part, 0.0)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn split_parts(self) -> [$part; 2] {
                [self.re, self.im]
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_f64(value: f64) -> Self {
                $t::new(value as $part, 0.0)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn plus(self, other: Self) -> Self {
                self + other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn minus(self, other: Self) -> Self {
                self - other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn times(self, other: Self) -> Self {
                self * other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn negated(self) -> Self {
                -self
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn abs(self) -> Self {
                // `hypot`: no overflow or underflow in the squares.
                $t::new(self.norm(), 0.0)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn conj(self) -> Self {
                $t::conj(&self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn re(self) -> Self {
                $t::new(self.re, 0.0)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn im(self) -> Self {
                $t::new(self.im, 0.0)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn device_bits(self) -> [u64; 2] {
                [self.re.to_bits().into(), self.im.to_bits().into()]
            }
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                alpha: Self,
                a: (*const Self, isize, isize),
                b: (*const Self, isize, isize),
                beta: Self,
                c: (*mut Self, isize, isize),
                conj: [bool; 2],
                parallel: bool,
            ) {
                // SAFETY: forwarded from this function's contract.
                unsafe { gemm_crate(m, k, n, alpha, a, b, beta, c, conj, parallel) }
            }
        }

        impl Fractional for $t {
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn sigmoid(self) -> Self {
                Self::ONE / (Self::ONE + (-self).exp())
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn pow(self, exponent: Self) -> Self {
                $t::powc(self, exponent)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn powi(self, exponent: i32) -> Self {
                $t::powi(&self, exponent)
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn over(self, other: Self) -> Self {
                self / other
            }
            #[cfg_attr(not(tdsl_unoptimized), inline(always))]
            fn from_exponent_bits(exponent: i32) -> Self {
                // In the real part, where a complex module reads it back.
                $t::new(<$part>::from_bits((exponent as u32).into()), 0.0)
            }
        }
    )*};
}

impl_complex!(c32 f32 C32 c64 f64 C64);

#[cfg(feature = "matrix")]
pub use matrix::MatrixElement;

/// What the matrix operations need of an element type (feature `matrix`: `faer`'s traits).
#[cfg(feature = "matrix")]
mod matrix {
    use super::*;

    /// Element types the matrix operations take (`cholesky`, `solve`, `qr`, `svd`, `eigh`,
    /// `matpow`): `f32`, `f64`, `c32` and `c64`, the types `faer` factorizes. Singular values,
    /// eigenvalues and truncation errors are real: [`Modulus`](Self::Modulus).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` elements have no matrix operations (`cholesky`, `solve`, `qr`, `svd`, `eigh`, `matpow`)",
        label = "needs `f32`, `f64`, `c32` or `c64` elements",
        note = "factorizations and solvers divide; convert the tensor first (`.mapv(|x| x as f64)`)"
    )]
    pub trait MatrixElement: Fractional + faer::traits::ComplexField<Real = Self::Modulus> {
        /// The real type of this type's moduli: `f32` for `f32` and [`c32`], `f64` for `f64` and
        /// [`c64`].
        type Modulus: MatrixElement<Modulus = Self::Modulus>
            + Real
            + faer::traits::RealField
            + PartialOrd;
        /// The real part (a real number is its own).
        #[doc(hidden)]
        fn real_part(self) -> Self::Modulus;
        /// The square of the modulus, `|x|²`.
        #[doc(hidden)]
        fn modulus_squared(self) -> Self::Modulus;
        /// The type's machine epsilon.
        #[doc(hidden)]
        const EPSILON: Self::Modulus;
    }

    macro_rules! impl_matrix_real {
        ($($t:ident)*) => {$(
            impl MatrixElement for $t {
                type Modulus = $t;
                #[cfg_attr(not(tdsl_unoptimized), inline(always))]
                fn real_part(self) -> $t {
                    self
                }
                #[cfg_attr(not(tdsl_unoptimized), inline(always))]
                fn modulus_squared(self) -> $t {
                    self * self
                }
                const EPSILON: $t = $t::EPSILON;
            }
        )*};
    }

    macro_rules! impl_matrix_complex {
        ($($t:ident $part:ident)*) => {$(
            impl MatrixElement for $t {
                type Modulus = $part;
                #[cfg_attr(not(tdsl_unoptimized), inline(always))]
                fn real_part(self) -> $part {
                    self.re
                }
                #[cfg_attr(not(tdsl_unoptimized), inline(always))]
                fn modulus_squared(self) -> $part {
                    self.norm_sqr()
                }
                const EPSILON: $part = $part::EPSILON;
            }
        )*};
    }

    impl_matrix_real!(f32 f64);
    impl_matrix_complex!(c32 f32 c64 f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Calls [`gemm_in_place`] cut into blocks of columns on this thread.
        pub(super) static CUT_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The test's element `i` of operand `seed` (1: the left, 2: the right, 3: C before).
    fn value(i: usize, seed: usize) -> f32 {
        ((i * 7919 + seed * 104_729) % 1009) as f32 / 1009.0 - 0.5
    }

    /// A call's operands and C in the `gemm` crate's orientation: C `rows × columns`, the left
    /// operand `rows × k` dense at unit row stride, or `gap` elements longer per column.
    struct Call {
        rows: usize,
        k: usize,
        columns: usize,
        gap: usize,
        turned: bool,
    }

    impl Call {
        /// `C ← α A B + β C` through the runtime's real GEMM, or the `gemm` crate's `whole`
        /// call, then C; the call written as our (m, k, n) with row and column strides.
        fn run<T: Element + From<f32>>(&self, whole: bool) -> Vec<T> {
            let Call {
                rows,
                k,
                columns,
                gap,
                turned,
            } = *self;
            let value = |i: usize, seed: usize| T::from(value(i, seed));
            let left_len = (rows + gap) * k;
            let left: Vec<T> = (0..left_len).map(|i| value(i, 1)).collect();
            let right: Vec<T> = (0..k * columns).map(|i| value(i, 2)).collect();
            let mut c: Vec<T> = (0..rows * columns).map(|i| value(i, 3)).collect();
            let (alpha, beta) = (T::from(2.0), T::from(0.5));
            let lead = (rows + gap) as isize;
            let each = |m, k, n, a, b, into| {
                // SAFETY: every element the strides address lies in its vector, C overlaps
                // neither.
                unsafe {
                    if whole {
                        gemm_crate(m, k, n, alpha, a, b, beta, into, [false; 2], false)
                    } else {
                        T::gemm(m, k, n, alpha, a, b, beta, into, [false; 2], false)
                    }
                }
            };
            if turned {
                // Our C row-major m × n with m = columns, n = rows; B (k × n) the left.
                let a = (right.as_ptr(), k as isize, 1);
                let b = (left.as_ptr(), lead, 1);
                let cc = (c.as_mut_ptr(), rows as isize, 1);
                each(columns, k, rows, a, b, cc);
            } else {
                // Our C column-major m × n with m = rows, n = columns; A (m × k) the left.
                let a = (left.as_ptr(), 1, lead);
                let b = (right.as_ptr(), 1, k as isize);
                let cc = (c.as_mut_ptr(), 1, rows as isize);
                each(rows, k, columns, a, b, cc);
            }
            c
        }
    }

    #[test]
    fn calls_cut_into_blocks_of_columns_keep_the_whole_calls_bits() {
        fn check<T: Element + From<f32> + Into<f64>>() {
            let value = |i: usize, seed: usize| f64::from(value(i, seed));
            // (rows, k, columns, gap, cut): each side of the crate's 64 × 64 small-call branch
            // and its 512-deep blocks, the 48-column limit, thin last blocks shared evenly
            // (49, 60 and 244 columns), and operands not read in place: too tall, too large,
            // not dense, rows not whole lines.
            let cases = [
                (64, 1024, 64, 0, true),
                (64, 700, 100, 0, false),
                (64, 300, 244, 0, true),
                (48, 300, 200, 0, true),
                (16, 64, 49, 0, true),
                (16, 64, 60, 0, true),
                (16, 64, 48, 0, false),
                (80, 600, 100, 0, false),
                (64, 4096, 64, 0, false),
                (64, 64, 100, 16, false),
                (20, 64, 100, 0, false),
            ];
            for (rows, k, columns, gap, cut) in cases {
                for turned in [false, true] {
                    let call = Call {
                        rows,
                        k,
                        columns,
                        gap,
                        turned,
                    };
                    let before = CUT_CALLS.with(|c| c.get());
                    let ours = call.run::<T>(false);
                    let was_cut = CUT_CALLS.with(|c| c.get()) > before;
                    let theirs = call.run::<T>(true);
                    let case = format!(
                        "{} {rows} × {k} × {columns}, gap {gap}, turned {turned}",
                        std::any::type_name::<T>()
                    );
                    assert_eq!(was_cut, cut && size_of::<T>() == 4, "{case}");
                    assert!(
                        ours.iter()
                            .zip(&theirs)
                            .all(|(x, y)| x.device_bits() == y.device_bits()),
                        "{case}"
                    );
                    // And the values themselves, against a naive sum, in C's first and last
                    // columns (the blocks' offsets).
                    for column in [0, columns - 1] {
                        for row in [0, rows / 2, rows - 1] {
                            let term = |p: usize| {
                                value(p * (rows + gap) + row, 1) * value(column * k + p, 2)
                            };
                            let sum: f64 = (0..k).map(term).sum();
                            let expected = 2.0 * sum + 0.5 * value(column * rows + row, 3);
                            let got: f64 = ours[column * rows + row].into();
                            assert!(
                                (got - expected).abs() < 1e-3 * (1.0 + expected.abs()),
                                "{case}: C[{row}, {column}] {got} against {expected}"
                            );
                        }
                    }
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
