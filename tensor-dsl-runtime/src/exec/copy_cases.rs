//! A copy laid out for the copy engines' tests (`grouped.rs`, `joined.rs`) → the engine's
//! result against a naive copy, on one and two threads, streamed and not, the target starting
//! on a cache line and off one. Invariant: an engine that declines leaves every target element
//! and the guard around them as they were.

use crate::tensor::memory::LINE;

/// The engines' signature: the source and the target with their strides, the extents, the
/// threads and whether to stream; `false` where it declines.
pub(super) type Engine<T, const L: usize> =
    unsafe fn((*const T, &[isize; L]), (*mut T, &[isize; L]), &[usize; L], usize, bool) -> bool;

/// One copy: the loops' extents, the source laid out in loop order (each axis's stride from
/// the ones inside it, the innermost padded by `pad`, the outermost walked backwards where
/// `reversed`), the target in the order `order` lists the loops (outermost first, dense but
/// for `target_pad` elements after each run of its innermost two loops), with a guard of
/// elements around it.
pub(super) struct Case<const L: usize> {
    pub(super) extents: [usize; L],
    pub(super) order: [usize; L],
    pub(super) pad: usize,
    pub(super) reversed: bool,
    pub(super) target_pad: usize,
}

/// Elements around the target that no engine may write.
const GUARD: usize = 37;

/// Runs `engine` on `case` (source elements `value(n)`, the target `blank` before), on one
/// and two threads, streamed and not: it must take the copy exactly where `taken(stream)`,
/// and then put every element where a naive copy does, else touch nothing.
pub(super) fn check<T: Copy + PartialEq + std::fmt::Debug + Send + Sync, const L: usize>(
    engine: Engine<T, L>,
    case: &Case<L>,
    (value, blank): (fn(usize) -> T, T),
    taken: impl Fn(bool) -> bool,
) {
    let Case {
        extents,
        order,
        pad,
        reversed,
        target_pad,
    } = *case;
    let mut source_strides = [0isize; L];
    let mut span = 1usize;
    for var in (0..L).rev() {
        source_strides[var] = span as isize;
        span *= extents[var] + if var + 1 == L { pad } else { 0 };
    }
    let source_data: Vec<T> = (0..span.max(1)).map(value).collect();
    let mut source_base = 0isize;
    if reversed {
        source_base = (extents[0] as isize - 1) * source_strides[0];
        source_strides[0] = -source_strides[0];
    }
    let mut target_strides = [0isize; L];
    let mut points = 1usize;
    for (depth, &var) in order.iter().rev().enumerate() {
        target_strides[var] = points as isize;
        points *= extents[var];
        if depth == 1 {
            points += target_pad;
        }
    }
    // The target's first element on a cache line, and one element past one (`LINE` more
    // elements leave room for either): the kernels stream whole lines only where rows start on
    // a line, and some take other paths there.
    let length = points + 2 * GUARD + LINE;
    let placed = |first: usize| {
        let mut expected = vec![blank; length];
        let mut index = [0usize; L];
        for _ in 0..points {
            let at = |strides: &[isize; L]| {
                (0..L)
                    .map(|var| index[var] as isize * strides[var])
                    .sum::<isize>()
            };
            expected[first + at(&target_strides) as usize] =
                source_data[(source_base + at(&source_strides)) as usize];
            for var in (0..L).rev() {
                index[var] += 1;
                if index[var] < extents[var] {
                    break;
                }
                index[var] = 0;
            }
        }
        expected
    };
    for (threads, stream, off_line) in [1, 2]
        .into_iter()
        .flat_map(|threads| [false, true].map(|stream| (threads, stream)))
        .flat_map(|(threads, stream)| [false, true].map(|off| (threads, stream, off)))
    {
        let mut target = vec![blank; length];
        // An element size that divides no line has no element on one: any place will do.
        let lead = target[GUARD..].as_ptr().align_offset(LINE);
        let first = GUARD + if lead < LINE { lead } else { 0 } + usize::from(off_line);
        let expected = placed(first);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        // SAFETY: every point's source element lies in `source_data` (offsets from
        // `source_base` along the strides the layout gave), every target element in
        // `target` past the guard; the target is dense in `order`, so injective; the two
        // are distinct vectors; the tests' element types have no padding. The engines
        // fence their streamed stores before they return.
        let (source, written) = (&source_data, &mut target);
        let copied = pool.install(|| unsafe {
            engine(
                (
                    source.as_ptr().wrapping_offset(source_base),
                    &source_strides,
                ),
                (written.as_mut_ptr().wrapping_add(first), &target_strides),
                &extents,
                threads,
                stream,
            )
        });
        let name = format!(
            "{extents:?} into {order:?}, {}-byte elements, {threads} threads, {stream}, \
             {first} elements in",
            size_of::<T>()
        );
        assert_eq!(copied, taken(stream), "{name}");
        if copied {
            assert!(target == expected, "{name}");
        } else {
            assert!(target.iter().all(|&x| x == blank), "{name}: touched");
        }
    }
}
