//! A tile of a copy whose source runs down the tile and whose target runs across it → the
//! target, in blocks transposed in vector registers (AVX, detected at run time: 8 × 8 blocks
//! of four-byte elements, 4 × 4 of eight-byte ones), the edges element by element; a run of a
//! copy, contiguous on both sides → the target, around the caches (`stream_run`). Invariant:
//! elements are moved as bytes, never computed on, so every element type of those sizes is
//! copied exactly, and every element named is read once and written once.

/// Copies the `rows × columns` elements of a tile: element (r, c) from
/// `source + r + c · source_stride` to `target + r · target_stride + c`. Returns `false`,
/// having touched nothing, where no kernel fits (another element size, or no AVX): the caller
/// then copies its own way.
///
/// # Safety
/// Every source element named must be valid for reads and every target element for writes,
/// and no target element may be a source element.
pub(crate) unsafe fn transpose_tile<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
) -> bool {
    let blocks = match kernel::<T>() {
        Some(kernel) => {
            // SAFETY: the kernel reads and writes only the elements named above of the
            // tile's whole blocks (`Kernel`), which the caller vouches for; `kernel::<T>`
            // returned it only for `T`'s size and where the CPU has AVX.
            unsafe {
                (kernel.run)(
                    source.cast(),
                    source_stride,
                    target.cast(),
                    target_stride,
                    [rows, columns],
                )
            }
            kernel.block
        }
        None => return false,
    };
    let (block_rows, block_columns) = (rows / blocks * blocks, columns / blocks * blocks);
    // The edges: the columns right of the whole blocks, then the rows below them.
    for row in 0..rows {
        let from = if row < block_rows { block_columns } else { 0 };
        for column in from..columns {
            // SAFETY: an element of the tile, which the caller vouches for.
            unsafe {
                target
                    .offset(row as isize * target_stride + column as isize)
                    .write(
                        source
                            .offset(row as isize + column as isize * source_stride)
                            .read(),
                    )
            };
        }
    }
    true
}

/// Copies `length` elements from `source` to `target`, both contiguous, with non-temporal
/// stores only: for a target larger than the caches, which would otherwise read each of its
/// lines in before it is overwritten. Returns `false`, having touched nothing, where this
/// CPU has no such stores (no AVX) for `T`'s size (four or eight bytes), or `target` is not
/// aligned to it. The stores are not fenced (a fence per run measured slower than plain
/// stores on runs of 1 KB): the caller calls [`fence`] once done.
///
/// # Safety
/// The `length` elements from `source` must be valid for reads, those from `target` for
/// writes, the two runs must not overlap, and `T` must have no padding bytes (as no element
/// type has). This thread must call [`fence`] before it reads or writes the target's elements
/// again or lets another thread see them (non-temporal stores are ordered by nothing else).
pub(crate) unsafe fn stream_run<T: Copy>(source: *const T, target: *mut T, length: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    // `%`, not `is_multiple_of`: the crates build with Rust 1.85.
    #[allow(clippy::manual_is_multiple_of)]
    if streams::<T>() && target as usize % size_of::<T>() == 0 {
        // SAFETY: the caller vouches for both runs, `length · size` bytes each, and for the
        // bytes being initialized; the target is aligned to the element size (just checked),
        // one of the two sizes `stream` takes; the CPU has AVX (`streams` detected it).
        unsafe {
            avx::stream(
                source.cast(),
                target.cast(),
                length * size_of::<T>(),
                size_of::<T>(),
            )
        };
        return true;
    }
    let _ = (source, target, length);
    false
}

/// Orders this thread's earlier `stream_run` stores before its later stores (and, with them,
/// before whatever hands the target on).
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no precondition (SSE, which every x86-64 CPU has); older
    // compilers still declare it unsafe.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// Whether `stream_run` copies runs of `T` on this CPU (to a target aligned to `T`'s size).
pub(crate) fn streams<T>() -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        return matches!(size_of::<T>(), 4 | 8);
    }
    false
}

/// Whether `transpose_tile` copies tiles of `T` on this CPU.
pub(crate) fn transposes<T>() -> bool {
    kernel::<T>().is_some()
}

/// A kernel for the whole `block × block` blocks of a tile, with `transpose_tile`'s layout
/// and contract, elements of one size passed as bytes.
#[derive(Clone, Copy)]
struct Kernel {
    block: usize,
    run: unsafe fn(*const u8, isize, *mut u8, isize, [usize; 2]),
}

/// The kernel for elements of `T`'s size on this CPU, if any.
fn kernel<T>() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        return match size_of::<T>() {
            4 => Some(Kernel {
                block: 8,
                run: avx::blocks_4,
            }),
            8 => Some(Kernel {
                block: 4,
                run: avx::blocks_8,
            }),
            _ => None,
        };
    }
    None
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    /// The whole 8 × 8 blocks of a tile of four-byte elements (`transpose_tile`'s layout,
    /// strides in elements), each as eight loads, 24 shuffles and eight stores.
    ///
    /// # Safety
    /// As `transpose_tile`, for the blocks' elements; the CPU must have AVX.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn blocks_4(
        source: *const u8,
        source_stride: isize,
        target: *mut u8,
        target_stride: isize,
        [rows, columns]: [usize; 2],
    ) {
        let (source, target) = (source.cast::<f32>(), target.cast::<f32>());
        // Rows outermost: eight target rows are written whole before the next eight, so a
        // target whose rows are a power of two apart (one cache set) keeps them in cache.
        for row in (0..rows / 8 * 8).step_by(8) {
            for column in (0..columns / 8 * 8).step_by(8) {
                let base = source.wrapping_offset(row as isize + column as isize * source_stride);
                // SAFETY: the eight runs down source columns `column..column + 8` from row
                // `row` on, and the eight along target rows `row..row + 8` from column
                // `column` on, are the block's elements, which the caller vouches for.
                // Unaligned loads and stores, and shuffles, move bits unchanged.
                unsafe {
                    // Written out, not a closure: a closure would not inherit AVX, and each
                    // intrinsic would become a call.
                    let v0 = _mm256_loadu_ps(base);
                    let v1 = _mm256_loadu_ps(base.offset(source_stride));
                    let v2 = _mm256_loadu_ps(base.offset(2 * source_stride));
                    let v3 = _mm256_loadu_ps(base.offset(3 * source_stride));
                    let v4 = _mm256_loadu_ps(base.offset(4 * source_stride));
                    let v5 = _mm256_loadu_ps(base.offset(5 * source_stride));
                    let v6 = _mm256_loadu_ps(base.offset(6 * source_stride));
                    let v7 = _mm256_loadu_ps(base.offset(7 * source_stride));
                    let (t0, t1) = (_mm256_unpacklo_ps(v0, v1), _mm256_unpackhi_ps(v0, v1));
                    let (t2, t3) = (_mm256_unpacklo_ps(v2, v3), _mm256_unpackhi_ps(v2, v3));
                    let (t4, t5) = (_mm256_unpacklo_ps(v4, v5), _mm256_unpackhi_ps(v4, v5));
                    let (t6, t7) = (_mm256_unpacklo_ps(v6, v7), _mm256_unpackhi_ps(v6, v7));
                    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
                    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
                    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
                    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
                    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
                    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
                    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
                    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
                    let rows_out = [
                        _mm256_permute2f128_ps::<0x20>(s0, s4),
                        _mm256_permute2f128_ps::<0x20>(s1, s5),
                        _mm256_permute2f128_ps::<0x20>(s2, s6),
                        _mm256_permute2f128_ps::<0x20>(s3, s7),
                        _mm256_permute2f128_ps::<0x31>(s0, s4),
                        _mm256_permute2f128_ps::<0x31>(s1, s5),
                        _mm256_permute2f128_ps::<0x31>(s2, s6),
                        _mm256_permute2f128_ps::<0x31>(s3, s7),
                    ];
                    for (r, value) in rows_out.into_iter().enumerate() {
                        let to = (row + r) as isize * target_stride + column as isize;
                        _mm256_storeu_ps(target.offset(to), value);
                    }
                }
            }
        }
    }

    /// Copies `bytes` bytes from `source` to `target` with non-temporal stores only (elements
    /// of `size` bytes up to the target's first 32-byte boundary and after its last, 32-byte
    /// vectors between), so the run mixes no cached store into a streamed line; unfenced.
    ///
    /// # Safety
    /// Both runs must be valid (reads, writes) and initialized for `bytes` bytes and must not
    /// overlap; `size` is 4 or 8, divides `bytes`, and `target` is aligned to it; the CPU
    /// must have AVX; the caller fences as `stream_run` says.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn stream(source: *const u8, target: *mut u8, bytes: usize, size: usize) {
        let head = ((32 - target as usize % 32) % 32).min(bytes);
        let vectors = (bytes - head) / 32;
        let tail = head + 32 * vectors;
        let elements = |from: usize, to: usize| {
            for at in (from..to).step_by(size) {
                // SAFETY: byte offsets `from..to` step `size` are whole elements of both runs
                // (`head` and `tail` are multiples of `size`, the target being aligned to
                // it), initialized, so read as integers of that size; `movnti` needs no more
                // alignment than that.
                unsafe {
                    if size == 4 {
                        let value = source.add(at).cast::<i32>().read_unaligned();
                        _mm_stream_si32(target.add(at).cast(), value);
                    } else {
                        let value = source.add(at).cast::<i64>().read_unaligned();
                        _mm_stream_si64(target.add(at).cast(), value);
                    }
                }
            }
        };
        elements(0, head);
        for vector in 0..vectors {
            let at = head + 32 * vector;
            // SAFETY: 32 bytes of both runs, the target's on a 32-byte boundary as streaming
            // vector stores need; a load and a store move bits unchanged.
            unsafe {
                _mm256_stream_ps(
                    target.add(at).cast(),
                    _mm256_loadu_ps(source.add(at).cast()),
                )
            };
        }
        elements(tail, bytes);
    }

    /// The whole 4 × 4 blocks of a tile of eight-byte elements (`transpose_tile`'s layout,
    /// strides in elements), each as four loads, eight shuffles and four stores.
    ///
    /// # Safety
    /// As `blocks_4`.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn blocks_8(
        source: *const u8,
        source_stride: isize,
        target: *mut u8,
        target_stride: isize,
        [rows, columns]: [usize; 2],
    ) {
        let (source, target) = (source.cast::<f64>(), target.cast::<f64>());
        for row in (0..rows / 4 * 4).step_by(4) {
            for column in (0..columns / 4 * 4).step_by(4) {
                let base = source.wrapping_offset(row as isize + column as isize * source_stride);
                // SAFETY: as in `blocks_4`, for 4 × 4 blocks.
                unsafe {
                    let v0 = _mm256_loadu_pd(base);
                    let v1 = _mm256_loadu_pd(base.offset(source_stride));
                    let v2 = _mm256_loadu_pd(base.offset(2 * source_stride));
                    let v3 = _mm256_loadu_pd(base.offset(3 * source_stride));
                    let (t0, t1) = (_mm256_unpacklo_pd(v0, v1), _mm256_unpackhi_pd(v0, v1));
                    let (t2, t3) = (_mm256_unpacklo_pd(v2, v3), _mm256_unpackhi_pd(v2, v3));
                    let rows_out = [
                        _mm256_permute2f128_pd::<0x20>(t0, t2),
                        _mm256_permute2f128_pd::<0x20>(t1, t3),
                        _mm256_permute2f128_pd::<0x31>(t0, t2),
                        _mm256_permute2f128_pd::<0x31>(t1, t3),
                    ];
                    for (r, value) in rows_out.into_iter().enumerate() {
                        let to = (row + r) as isize * target_stride + column as isize;
                        _mm256_storeu_pd(target.offset(to), value);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::transpose_tile;

    /// Transposes a `rows × columns` tile out of a source with `pad` spare elements per
    /// column into a target with `pad` spare elements per row, and compares every element
    /// (and every spare one) with the copy made by hand.
    fn check<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        for (rows, columns) in [
            (1, 1),
            (7, 13),
            (8, 8),
            (13, 7),
            (16, 9),
            (64, 64),
            (67, 65),
        ] {
            for pad in [0, 3] {
                let (source_stride, target_stride) = (rows + pad, columns + pad);
                let source: Vec<T> = (0..columns * source_stride).map(value).collect();
                let mut target = vec![blank; rows * target_stride];
                // SAFETY: both buffers hold every element the strides name.
                let copied = unsafe {
                    transpose_tile(
                        source.as_ptr(),
                        source_stride as isize,
                        target.as_mut_ptr(),
                        target_stride as isize,
                        [rows, columns],
                    )
                };
                for row in 0..rows {
                    for column in 0..target_stride {
                        let got = target[row * target_stride + column];
                        let expected = if copied && column < columns {
                            source[row + column * source_stride]
                        } else {
                            blank
                        };
                        assert_eq!(
                            got, expected,
                            "{rows} × {columns}, pad {pad}: ({row}, {column})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn four_byte_elements_are_moved_exactly() {
        check(|n| n as f32 * 0.5 + 1.0, -1.0);
        check(|n| n as i32 - 1000, i32::MIN);
        // Bits no arithmetic would keep, signalling NaNs as `f32`, compared as integers.
        check(|n| 0x7f80_0001 + n as u32, 0);
    }

    #[test]
    fn eight_byte_elements_are_moved_exactly() {
        check(|n| n as f64 * 0.25 - 3.0, -1.0);
        check(|n| [n as f32, -(n as f32)], [0.0; 2]);
        check(|n| 0x7ff0_0000_0000_0001 + n as u64, 0);
    }

    /// Runs of every length around a vector's, from every alignment of both sides, copied
    /// exactly by `stream_run`, nothing around them touched.
    #[test]
    fn streamed_runs_are_copied_exactly() {
        fn check<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
            let source: Vec<T> = (0..64).map(value).collect();
            for length in [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 40] {
                for from in 0..4 {
                    for to in 0..8 {
                        let mut target = [blank; 64];
                        // SAFETY: both runs lie in their buffers, which are distinct; the
                        // element types have no padding; fenced before the target is read.
                        let copied = unsafe {
                            super::stream_run(
                                source[from..].as_ptr(),
                                target[to..].as_mut_ptr(),
                                length,
                            )
                        };
                        super::fence();
                        // Every run is streamed where the CPU can and the target is aligned
                        // to the element's size.
                        #[allow(clippy::manual_is_multiple_of)] // Rust 1.85
                        let aligned = target[to..].as_ptr() as usize % size_of::<T>() == 0;
                        assert_eq!(copied, super::streams::<T>() && aligned);
                        for (at, &got) in target.iter().enumerate() {
                            let expected = if copied && (to..to + length).contains(&at) {
                                source[from + at - to]
                            } else {
                                blank
                            };
                            assert_eq!(got, expected, "length {length}, from {from}, to {to}");
                        }
                    }
                }
            }
        }
        check(|n| n as f32 + 0.5, -1.0);
        // Bits no arithmetic would keep, signalling NaNs as `f32`, compared as integers.
        check(|n| 0x7f80_0001 + n as u32, 0);
        check(|n| n as f64 - 0.25, -1.0);
        check(|n| [n as u16; 4], [0; 4]);
        // Other sizes are left to the caller.
        check(|n| n as u16, 0);
        check(|n| [n as f64, 1.0], [0.0; 2]);
    }

    #[test]
    fn other_sizes_are_left_to_the_caller() {
        check(|n| [n as f64, 1.0], [0.0; 2]);
        check(|n| n as u16, 0);
        let source = [1u16; 4];
        let mut target = [0u16; 4];
        // SAFETY: both buffers hold the 2 × 2 tile.
        let copied = unsafe { transpose_tile(source.as_ptr(), 2, target.as_mut_ptr(), 2, [2, 2]) };
        assert!(!copied);
        assert_eq!(target, [0; 4]);
    }
}
