//! Run-time shape checks → `Result<_, ShapeError>` with messages naming the index, the accesses
//! as written, the axes and the extents. Generated code runs all checks of a block before the
//! block writes anything.

use crate::error::{ShapeError, ShapeErrorKind};
use crate::tensor::layout::element_count;

/// What a disagreement between an access and the shape checked before the statement means
/// (a panic, not a `ShapeError`: no correct program meets it).
pub(crate) const INCONSISTENT: &str = "the operand's `Operand` implementation reports a shape \
    (`__tdsl_shape`) or buffer that its access (`__tdsl_operand`) does not have, or this is a \
    tensor-dsl bug";

/// Where an index occurs: the access as the user wrote it (e.g. `a[i, k, l]` or
/// `c[i, j] (the target)`) and the axis of that access the index sits on. Generated code
/// passes these as a constant table, so a run that passes its checks reads none of them.
pub type Site = (&'static str, usize);

/// Checks that `access` (on tensor `tensor`) uses as many indices as the tensor has axes.
#[inline]
pub fn check_rank(
    access: &'static str,
    tensor: &'static str,
    shape: &[usize],
    rank: usize,
) -> Result<(), ShapeError> {
    if shape.len() == rank {
        return Ok(());
    }
    Err(rank_mismatch(access, tensor, shape, rank))
}

#[cold]
#[inline(never)]
fn rank_mismatch(access: &str, tensor: &str, shape: &[usize], rank: usize) -> ShapeError {
    ShapeError::new(
        ShapeErrorKind::RankMismatch,
        format!(
            "`{access}` uses {rank} {} but `{tensor}` has {} {} (shape {shape:?})",
            plural(rank, "index", "indices"),
            shape.len(),
            plural(shape.len(), "axis", "axes"),
        ),
    )
}

/// The common extent of `index` over all its occurrences (`extents[k]` at `sites[k]`), or an
/// error naming the first pair that differs.
///
/// Inlined, so extents the compiler knows (nested arrays, and the `let`s made from them) unify
/// at compile time; the sites are read, and the error built, only out of line. The extents
/// come by value: the comparisons take them from registers, and only a mismatch puts them in
/// memory for the message.
#[inline]
pub fn unify<const N: usize>(
    index: &'static str,
    sites: &'static [Site],
    extents: [usize; N],
) -> Result<usize, ShapeError> {
    let Some((&first, rest)) = extents.split_first() else {
        unreachable!("tensor-dsl bug: index `{index}` has no occurrence");
    };
    if rest.iter().all(|&extent| extent == first) {
        Ok(first)
    } else {
        Err(extent_mismatch(index, sites, extents))
    }
}

#[cold]
#[inline(never)]
fn extent_mismatch<const N: usize>(index: &str, sites: &[Site], extents: [usize; N]) -> ShapeError {
    let other = extents
        .iter()
        .position(|&extent| extent != extents[0])
        .unwrap_or(0);
    let ((first_access, first_axis), (other_access, other_axis)) = (sites[0], sites[other]);
    ShapeError::new(
        ShapeErrorKind::ExtentMismatch,
        format!(
            "index `{index}` has extent {} in `{first_access}` (axis {first_axis}) but extent {} \
             in `{other_access}` (axis {other_axis})",
            extents[0], extents[other]
        ),
    )
}

/// Checks that a fixed position lies inside its axis.
pub fn check_position(
    access: &'static str,
    axis: usize,
    position: usize,
    extent: usize,
) -> Result<(), ShapeError> {
    if position < extent {
        return Ok(());
    }
    Err(ShapeError::new(
        ShapeErrorKind::OutOfBounds,
        format!(
            "position {position} on axis {axis} of `{access}` is out of bounds: the axis has extent {extent}"
        ),
    ))
}

/// Checks the range `lo..hi` (`hi` none: to the end) on axis `axis` of `access` against the
/// axis's extent.
pub fn check_range(
    access: &'static str,
    axis: usize,
    lo: usize,
    hi: Option<usize>,
    extent: usize,
) -> Result<(), ShapeError> {
    let end = hi.unwrap_or(extent);
    if lo <= end && end <= extent {
        return Ok(());
    }
    let range = match hi {
        Some(hi) => format!("{lo}..{hi}"),
        None => format!("{lo}.."),
    };
    Err(ShapeError::new(
        ShapeErrorKind::OutOfBounds,
        format!(
            "the range {range} on axis {axis} of `{access}` is out of bounds: the axis has extent {extent}"
        ),
    ))
}

/// Checks that the tensor a `let` makes (named `name`, or an intermediate result when `None`)
/// can exist: its element count fits in memory's addresses. Checked with the block's other
/// shape errors, so through `try_tensor!` an impossible result is an `Err`, never a panic
/// inside an allocation.
#[inline]
pub fn check_result_size(name: Option<&'static str>, shape: &[usize]) -> Result<(), ShapeError> {
    // The largest count whose bytes fit in `isize` for every element type (up to 16 bytes).
    const MAX_ELEMENTS: usize = isize::MAX as usize / 16;
    // Inlined (with `element_count`), so over static extents the whole check folds away.
    if element_count(shape).is_ok_and(|count| count <= MAX_ELEMENTS) {
        Ok(())
    } else {
        Err(result_too_large(name, shape))
    }
}

#[cold]
#[inline(never)]
fn result_too_large(name: Option<&'static str>, shape: &[usize]) -> ShapeError {
    ShapeError::new(
        ShapeErrorKind::Overflow,
        match name {
            Some(name) => {
                format!("`{name}` would have shape {shape:?}: more elements than a tensor can hold")
            }
            None => format!(
                "an intermediate result would have shape {shape:?}: more elements than a tensor \
                 can hold"
            ),
        },
    )
}

/// The value of a check, or a panic at the caller (the user's `tensor!` call). Inlined, so
/// the compiler knows what a passed check established (a rank, equal extents) in the code
/// after it; the panic is out of line.
#[track_caller]
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn expect<T>(result: Result<T, ShapeError>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => failed(error),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn failed(error: ShapeError) -> ! {
    panic!("{error}")
}

fn plural(count: usize, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 {
        one
    } else {
        many
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_index_accesses_axes_and_extents() {
        let error = unify("k", &[("a[i, k]", 1), ("b[k, j]", 0)], [4, 5]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "index `k` has extent 4 in `a[i, k]` (axis 1) but extent 5 in `b[k, j]` (axis 0)"
        );
        // The first place that differs from the first, named from the constant table.
        let sites = &[("c[i]", 0), ("a[i, k]", 0), ("b[k, i]", 1)];
        assert_eq!(unify("i", sites, [3, 3, 3]).unwrap(), 3);
        assert_eq!(
            unify("i", sites, [3, 3, 7]).unwrap_err().to_string(),
            "index `i` has extent 3 in `c[i]` (axis 0) but extent 7 in `b[k, i]` (axis 1)"
        );
        assert_eq!(
            check_rank("a[i]", "a", &[2, 3], 1).unwrap_err().to_string(),
            "`a[i]` uses 1 index but `a` has 2 axes (shape [2, 3])"
        );
        assert_eq!(
            check_position("a[i, 3]", 1, 3, 3).unwrap_err().kind(),
            ShapeErrorKind::OutOfBounds
        );
    }
}
