//! Index-grouped operands → matrices → `faer`'s factorizations and solvers → result tensors in
//! their `let`'s index order. Invariant: a matrix is read only through a view `host_view`
//! proved in bounds, and every failure (shape, rank, a matrix not positive definite, singular
//! or not converging) is an `Err` returned before any result exists.
//!
//! The compiler says which axes of an operand are the matrix's rows and which its columns
//! (`Grouped`), each group in the operand's own axis order, and for each result the order of
//! its axes over the factor's (rows, then columns). A group whose axes step through memory as
//! one stride is read in place; otherwise the operand is copied once, permuted to (rows,
//! columns).

use faer::linalg::cholesky::llt;
use faer::linalg::solvers::{DenseSolveCore, PartialPivLu, Qr, Solve};
use faer::linalg::svd;
use faer::{Mat, MatMut, MatRef};

use crate::element::{Element, MatrixElement, Real};
use crate::error::{ShapeError, ShapeErrorKind};
use crate::operand::access::Operand;
use crate::operand::check::check_rank;
use crate::tensor::{Tensor, TensorView};

use super::step::host_view;

/// An operand of a matrix operation: how it was written and which of its axes are the rows
/// and which the columns of the matrix it is read as.
#[derive(Clone, Copy, Debug)]
pub struct Grouped<'a> {
    /// The operation, `svd`.
    pub function: &'static str,
    /// The tensor's name, `t`.
    pub tensor: &'static str,
    /// The access as written, `t[i, j, k]`.
    pub text: &'static str,
    /// The index names of the access, one per axis.
    pub indices: &'static [&'static str],
    /// The row axes, in the operand's order.
    pub rows: &'a [usize],
    /// The column axes, in the operand's order.
    pub cols: &'a [usize],
}

/// Where `svd` cuts its factors: at most `max_rank` singular values, and of those the fewest
/// whose discarded weight (the sum of the squares of the singular values left out, divided by
/// the sum of all their squares) is at most `cutoff`, keeping at least one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Truncation {
    /// Keep at most this many singular values.
    pub max_rank: Option<usize>,
    /// The largest relative discarded weight allowed.
    pub cutoff: Option<f64>,
}

/// An operand read as a matrix: in place, or through a copy permuted to (rows, columns).
struct Grouping<'v, T> {
    view: TensorView<'v, T>,
    copy: Option<Tensor<T>>,
    rows: Vec<usize>,
    cols: Vec<usize>,
    m: usize,
    n: usize,
}

impl<T: MatrixElement> Grouping<'_, T> {
    fn matrix(&self) -> MatRef<'_, T> {
        if let Some(copy) = &self.copy {
            return MatRef::from_row_major_slice(copy.as_slice(), self.m, self.n);
        }
        if self.m == 0 || self.n == 0 {
            // No element to read, and an empty view's offset need not point into its buffer.
            return MatRef::from_row_major_slice(&[], self.m, self.n);
        }
        let (data, _, layout) = self.view.raw();
        let (row_stride, col_stride) = (
            self.group_stride(&self.rows).expect("checked by `group`"),
            self.group_stride(&self.cols).expect("checked by `group`"),
        );
        // SAFETY: the view has elements (m, n > 0), so `host_view` proved its offset and every
        // offset it addresses in bounds of a buffer valid for reads for the view's lifetime,
        // which `&self` does not outlive. The rows and the columns each step through memory as
        // one stride (`group_stride`, which `group` checked for a view read in place), so
        // element (r, c) of this matrix is the view's element at the multi-index whose row axes
        // spell r and column axes c, an offset the view addresses. `faer` only reads through a
        // `MatRef`.
        unsafe {
            MatRef::from_raw_parts(
                data.offset(layout.offset),
                self.m,
                self.n,
                row_stride,
                col_stride,
            )
        }
    }

    /// The one stride that steps through a group's axes in row-major order, if there is one
    /// (axes of extent 1 step nowhere; an empty group is one row or column).
    fn group_stride(&self, axes: &[usize]) -> Option<isize> {
        let (shape, strides) = (self.view.shape(), self.view.strides());
        let mut stride = None::<isize>;
        let mut expected = None::<isize>;
        for &axis in axes.iter().rev() {
            if shape[axis] == 1 {
                continue;
            }
            match expected {
                None => stride = Some(strides[axis]),
                Some(step) if step == strides[axis] => {}
                Some(_) => return None,
            }
            expected = Some(strides[axis].checked_mul(shape[axis] as isize)?);
        }
        Some(stride.unwrap_or(1))
    }

    fn row_extents(&self) -> Vec<usize> {
        self.rows
            .iter()
            .map(|&axis| self.view.shape()[axis])
            .collect()
    }

    fn col_extents(&self) -> Vec<usize> {
        self.cols
            .iter()
            .map(|&axis| self.view.shape()[axis])
            .collect()
    }
}

/// Reads `operand` as the matrix `grouped` says, checking its rank.
fn group<'v, T: MatrixElement, X: Operand<Elem = T> + ?Sized>(
    operand: &'v X,
    grouped: &Grouped<'_>,
) -> Result<Grouping<'v, T>, ShapeError> {
    let view = host_view(operand.__tdsl_operand());
    check_rank(
        grouped.text,
        grouped.tensor,
        view.shape(),
        grouped.indices.len(),
    )?;
    let size = |axes: &[usize]| -> Result<usize, ShapeError> {
        axes.iter()
            .try_fold(1usize, |size, &axis| size.checked_mul(view.shape()[axis]))
            .ok_or_else(|| {
                ShapeError::new(
                    ShapeErrorKind::Overflow,
                    format!(
                        "the matrix of `{}` has more elements than `usize` counts",
                        grouped.text
                    ),
                )
            })
    };
    let (m, n) = (size(grouped.rows)?, size(grouped.cols)?);
    let mut grouping = Grouping {
        view,
        copy: None,
        rows: grouped.rows.to_vec(),
        cols: grouped.cols.to_vec(),
        m,
        n,
    };
    let in_place = m == 0
        || n == 0
        || (grouping.group_stride(grouped.rows).is_some()
            && grouping.group_stride(grouped.cols).is_some());
    if !in_place {
        let order: Vec<usize> = grouped.rows.iter().chain(grouped.cols).copied().collect();
        grouping.copy = Some(grouping.view.clone().permuted_axes(&order).to_tensor());
    }
    Ok(grouping)
}

/// The error for a matrix that must be square and is not.
fn require_square<T>(grouping: &Grouping<'_, T>, grouped: &Grouped<'_>) -> Result<(), ShapeError> {
    if grouping.m == grouping.n {
        return Ok(());
    }
    let describe = |axes: &[usize]| {
        let names: Vec<&str> = axes.iter().map(|&axis| grouped.indices[axis]).collect();
        let extents: Vec<String> = axes
            .iter()
            .map(|&axis| grouping.view.shape()[axis].to_string())
            .collect();
        if axes.is_empty() {
            "none: 1".to_owned()
        } else {
            format!("{}: {}", names.join(", "), extents.join(" × "))
        }
    };
    Err(ShapeError::new(
        ShapeErrorKind::NotSquare,
        format!(
            "`{}` needs a square matrix, but `{}` has {} rows ({}) and {} columns ({}); group its indices so that both have as many elements",
            grouped.function,
            grouped.text,
            grouping.m,
            describe(grouped.rows),
            grouping.n,
            describe(grouped.cols),
        ),
    ))
}

/// A matrix whose rows are the axes `row_extents` and columns the axes `col_extents`, as a
/// tensor with axes (rows, columns) permuted to `order` (result axis q is that list's axis
/// `order[q]`).
fn tensor_of<T: MatrixElement>(
    matrix: MatRef<'_, T>,
    row_extents: &[usize],
    col_extents: &[usize],
    order: &[usize],
) -> Tensor<T> {
    let (m, n) = (matrix.nrows(), matrix.ncols());
    let mut data = vec![<T as Element>::ZERO; m * n];
    // In square blocks, so that a column-major matrix (faer's own) is read and the row-major
    // result written a cache line at a time.
    const BLOCK: usize = 32;
    for rows in (0..m).step_by(BLOCK) {
        for cols in (0..n).step_by(BLOCK) {
            for c in cols..(cols + BLOCK).min(n) {
                for r in rows..(rows + BLOCK).min(m) {
                    data[r * n + c] = *matrix.get(r, c);
                }
            }
        }
    }
    placed(data, row_extents, col_extents, order)
}

/// A row-major matrix buffer (rows `row_extents`, columns `col_extents`) as the result tensor
/// (see [`tensor_of`]): free when `order` keeps the axes in place.
fn placed<T: Element>(
    data: Vec<T>,
    row_extents: &[usize],
    col_extents: &[usize],
    order: &[usize],
) -> Tensor<T> {
    let shape: Vec<usize> = row_extents.iter().chain(col_extents).copied().collect();
    let tensor = Tensor::from_shape_vec(shape, data).expect("the extents multiply to m × n");
    if order.iter().enumerate().all(|(q, &axis)| q == axis) {
        tensor
    } else {
        tensor.view().permuted_axes(order).to_tensor()
    }
}

/// Scratch space for one of faer's in-place routines.
fn scratch(request: dyn_stack::StackReq) -> dyn_stack::MemBuffer {
    dyn_stack::MemBuffer::new(request)
}

/// faer's routines run on this thread: a statement's threads are the engines', and a matrix
/// operation gives the same bits whatever the pool.
const PAR: faer::Par = faer::Par::Seq;

/// A vector as a rank-1 tensor.
fn vector<M: Element>(values: impl Iterator<Item = M>) -> Tensor<M> {
    let data: Vec<M> = values.collect();
    Tensor::from_shape_vec([data.len()], data).expect("a rank-1 shape of its own length")
}

/// `let l[..] = cholesky(a[..])`: the lower factor L of A = L Lᴴ, reading A's lower
/// triangle; `order` places L's (rows, columns) in the result.
pub fn cholesky<T: MatrixElement, X: Operand<Elem = T> + ?Sized>(
    a: &X,
    grouped: Grouped<'_>,
    order: &[usize],
) -> Result<Tensor<T>, ShapeError> {
    let grouping = group(a, &grouped)?;
    require_square(&grouping, &grouped)?;
    let (rows, cols) = (grouping.row_extents(), grouping.col_extents());
    if grouping.n == 0 {
        return Ok(tensor_of(
            Mat::<T>::zeros(0, 0).as_ref(),
            &rows,
            &cols,
            order,
        ));
    }
    // Factored in place in the result's own row-major buffer: A's lower triangle copied in,
    // the upper zeroed, so no second n × n matrix is made.
    let n = grouping.n;
    let source = grouping.matrix();
    let mut data = vec![<T as Element>::ZERO; n * n];
    for r in 0..n {
        for c in 0..=r {
            data[r * n + c] = *source.get(r, c);
        }
    }
    let mut factor = MatMut::from_row_major_slice_mut(&mut data, n, n);
    let mut memory = scratch(llt::factor::cholesky_in_place_scratch::<T>(
        n,
        PAR,
        Default::default(),
    ));
    llt::factor::cholesky_in_place(
        factor.as_mut(),
        Default::default(),
        PAR,
        dyn_stack::MemStack::new(&mut memory),
        Default::default(),
    )
    .map_err(|error| {
        let llt::factor::LltError::NonPositivePivot { index } = error;
        ShapeError::new(
            ShapeErrorKind::NotPositiveDefinite,
            format!(
                "`cholesky` of `{}`: the matrix is not positive definite (pivot {index} of {n} is not positive)",
                grouped.text
            ),
        )
    })?;
    // The in-place routine leaves the strict upper triangle as it found it: zero.
    Ok(placed(data, &rows, &cols, order))
}

/// The LU factorization of a square matrix, or the error for a singular one.
fn lu_of<T: MatrixElement>(
    matrix: MatRef<'_, T>,
    grouped: &Grouped<'_>,
) -> Result<PartialPivLu<T>, ShapeError> {
    let lu = PartialPivLu::new(matrix);
    let pivots = lu.U().diagonal().column_vector();
    let sizes: Vec<f64> = (0..pivots.nrows())
        .map(|k| Real::to_f64(pivots.get(k).modulus_squared()))
        .collect();
    let largest = sizes.iter().copied().fold(0.0, f64::max);
    let epsilon = Real::to_f64(T::EPSILON);
    // Compared squared: |u_kk| < ε · max |u_jj|. A NaN pivot fails `>` too.
    let singular = sizes.iter().any(|&size| {
        size.partial_cmp(&(largest * epsilon * epsilon)) != Some(std::cmp::Ordering::Greater)
    });
    if singular {
        return Err(ShapeError::new(
            ShapeErrorKind::Singular,
            format!(
                "`{}`: the matrix of `{}` is singular (a pivot of its LU factorization is zero, or smaller than the element type's epsilon times the largest)",
                grouped.function, grouped.text
            ),
        ));
    }
    Ok(lu)
}

/// `let x[..] = solve(a[..], b[..])`: X with A X = B, where A's rows are the indices it shares
/// with `b` and its columns those it shares with the result, and B's columns the indices it
/// shares with the result. `order` places X's (A's columns, B's columns) in the result.
pub fn solve<T: MatrixElement, X: Operand<Elem = T> + ?Sized, Y: Operand<Elem = T> + ?Sized>(
    a: &X,
    a_grouped: Grouped<'_>,
    b: &Y,
    b_grouped: Grouped<'_>,
    order: &[usize],
) -> Result<Tensor<T>, ShapeError> {
    let a_grouping = group(a, &a_grouped)?;
    let b_grouping = group(b, &b_grouped)?;
    // A's rows and B's rows are one list of indices, in A's order.
    for (&a_axis, &b_axis) in a_grouped.rows.iter().zip(b_grouped.rows) {
        let (a_extent, b_extent) = (
            a_grouping.view.shape()[a_axis],
            b_grouping.view.shape()[b_axis],
        );
        if a_extent != b_extent {
            return Err(ShapeError::new(
                ShapeErrorKind::ExtentMismatch,
                format!(
                    "index `{}` has extent {a_extent} in `{}` (axis {a_axis}) but {b_extent} in `{}` (axis {b_axis})",
                    a_grouped.indices[a_axis], a_grouped.text, b_grouped.text
                ),
            ));
        }
    }
    require_square(&a_grouping, &a_grouped)?;
    let (unknowns, columns) = (a_grouping.col_extents(), b_grouping.col_extents());
    if a_grouping.n == 0 || b_grouping.n == 0 {
        let empty = Mat::<T>::zeros(a_grouping.n, b_grouping.n);
        return Ok(tensor_of(empty.as_ref(), &unknowns, &columns, order));
    }
    let lu = lu_of(a_grouping.matrix(), &a_grouped)?;
    let x = lu.solve(b_grouping.matrix());
    Ok(tensor_of(x.as_ref(), &unknowns, &columns, order))
}

/// `let (w[s], v[.., s]) = eigh(h[..])`: the eigenvalues of the Hermitian matrix H (its lower
/// triangle read) in ascending order, and its orthonormal eigenvectors as columns. `order`
/// places V's (rows, the new index) in the result.
pub fn eigh<T: MatrixElement, X: Operand<Elem = T> + ?Sized>(
    h: &X,
    grouped: Grouped<'_>,
    order: &[usize],
) -> Result<(Tensor<T::Modulus>, Tensor<T>), ShapeError> {
    let grouping = group(h, &grouped)?;
    require_square(&grouping, &grouped)?;
    let n = grouping.n;
    let rows = grouping.row_extents();
    if n == 0 {
        let empty = Mat::<T>::zeros(0, 0);
        return Ok((
            vector(std::iter::empty()),
            tensor_of(empty.as_ref(), &rows, &[0], order),
        ));
    }
    // faer's own column-major eigenvectors, copied once: written row-major in place, its
    // solver runs at half speed.
    let eigen = faer::linalg::solvers::SelfAdjointEigen::new(grouping.matrix(), faer::Side::Lower)
        .map_err(|_| no_convergence(&grouped))?;
    let values = eigen.S().column_vector();
    let w = vector((0..n).map(|k| values.get(k).real_part()));
    finite(w.as_slice(), &grouped)?;
    Ok((w, tensor_of(eigen.U(), &rows, &[n], order)))
}

/// `faer` returns NaN values for a matrix with NaN or infinite elements; like LAPACK's
/// drivers, such values count as not converging.
fn finite<M: Real>(values: &[M], grouped: &Grouped<'_>) -> Result<(), ShapeError> {
    match values.iter().all(|value| value.to_f64().is_finite()) {
        true => Ok(()),
        false => Err(no_convergence(grouped)),
    }
}

fn no_convergence(grouped: &Grouped<'_>) -> ShapeError {
    ShapeError::new(
        ShapeErrorKind::NoConvergence,
        format!(
            "`{}` of `{}` did not converge (a matrix with NaN or infinite elements does not)",
            grouped.function, grouped.text
        ),
    )
}

/// `let (u[.., s], sv[s], vt[s, ..]) = svd(t[..])`: the thin singular value decomposition
/// T = U Σ Vᴴ, singular values descending, cut as `truncation` says. `u_order` places U's
/// (rows, new index) and `vt_order` Vᴴ's (new index, columns). Also returns the truncation
/// error: the discarded weight relative to the whole (0 when nothing is cut).
pub fn svd<T: MatrixElement, X: Operand<Elem = T> + ?Sized>(
    t: &X,
    grouped: Grouped<'_>,
    u_order: &[usize],
    vt_order: &[usize],
    truncation: Truncation,
) -> Result<SvdFactors<T>, ShapeError> {
    let grouping = group(t, &grouped)?;
    let (rows, cols) = (grouping.row_extents(), grouping.col_extents());
    let (m, n) = (grouping.m, grouping.n);
    let k = m.min(n);
    if k == 0 {
        let (u, vt) = (Mat::<T>::zeros(m, 0), Mat::<T>::zeros(0, n));
        return Ok((
            tensor_of(u.as_ref(), &rows, &[0], u_order),
            vector(std::iter::empty()),
            tensor_of(vt.as_ref(), &[0], &cols, vt_order),
            <T::Modulus as Element>::ZERO,
        ));
    }
    // U and Vᴴ are written straight into the results' row-major buffers: U as the m × k
    // matrix it is, V as the n × k matrix whose columns are Vᴴ's rows.
    let mut u = vec![<T as Element>::ZERO; m * k];
    let mut vt = vec![<T as Element>::ZERO; k * n];
    let mut values = faer::diag::Diag::<T>::zeros(k);
    let thin = svd::ComputeSvdVectors::Thin;
    let mut memory = scratch(svd::svd_scratch::<T>(
        m,
        n,
        thin,
        thin,
        PAR,
        Default::default(),
    ));
    svd::svd(
        grouping.matrix(),
        values.as_mut(),
        Some(MatMut::from_row_major_slice_mut(&mut u, m, k)),
        Some(MatMut::from_column_major_slice_mut(&mut vt, n, k)),
        PAR,
        dyn_stack::MemStack::new(&mut memory),
        Default::default(),
    )
    .map_err(|_| no_convergence(&grouped))?;
    if !<T as faer::traits::ComplexField>::IS_REAL {
        // That buffer holds Vᵀ; Vᴴ is its conjugate.
        vt.iter_mut().for_each(|x| *x = x.conj());
    }
    let values = values.column_vector();
    let sigma: Vec<T::Modulus> = (0..k).map(|q| values.get(q).real_part()).collect();
    finite(&sigma, &grouped)?;
    let (kept, error) = truncate(&sigma, truncation);
    if kept < k {
        // The first `kept` columns of U and rows of Vᴴ.
        u = u
            .chunks_exact(k)
            .flat_map(|row| &row[..kept])
            .copied()
            .collect();
        vt.truncate(kept * n);
    }
    Ok((
        placed(u, &rows, &[kept], u_order),
        vector(sigma[..kept].iter().copied()),
        placed(vt, &[kept], &cols, vt_order),
        error,
    ))
}

/// U, the singular values, Vᴴ and the truncation error.
pub type SvdFactors<T> = (
    Tensor<T>,
    Tensor<<T as MatrixElement>::Modulus>,
    Tensor<T>,
    <T as MatrixElement>::Modulus,
);

/// How many of the descending singular values `sigma` (at least one) `truncation` keeps, and
/// the relative weight it discards.
fn truncate<M: Real>(sigma: &[M], truncation: Truncation) -> (usize, M) {
    let weights: Vec<f64> = sigma.iter().map(|&s| s.to_f64() * s.to_f64()).collect();
    let total: f64 = weights.iter().sum();
    let mut kept = sigma.len();
    if let Some(cutoff) = truncation.cutoff {
        // Drop from the smallest while the discarded weight stays within the cutoff.
        let mut discarded = 0.0;
        while kept > 1 && discarded + weights[kept - 1] <= cutoff * total {
            discarded += weights[kept - 1];
            kept -= 1;
        }
    }
    if let Some(max_rank) = truncation.max_rank {
        kept = kept.min(max_rank);
    }
    let discarded: f64 = weights[kept..].iter().sum();
    let error = if total > 0.0 { discarded / total } else { 0.0 };
    (kept, M::from_f64(error))
}

/// `let (q[.., s], r[s, ..]) = qr(t[..])`: the thin QR factorization T = Q R, Q with
/// orthonormal columns, R upper triangular (trapezoidal when T is wide). `q_order` places Q's
/// (rows, new index), `r_order` R's (new index, columns).
pub fn qr<T: MatrixElement, X: Operand<Elem = T> + ?Sized>(
    t: &X,
    grouped: Grouped<'_>,
    q_order: &[usize],
    r_order: &[usize],
) -> Result<(Tensor<T>, Tensor<T>), ShapeError> {
    let grouping = group(t, &grouped)?;
    let (rows, cols) = (grouping.row_extents(), grouping.col_extents());
    let (m, n) = (grouping.m, grouping.n);
    let k = m.min(n);
    if k == 0 {
        let (q, r) = (Mat::<T>::zeros(m, 0), Mat::<T>::zeros(0, n));
        return Ok((
            tensor_of(q.as_ref(), &rows, &[0], q_order),
            tensor_of(r.as_ref(), &[0], &cols, r_order),
        ));
    }
    let qr = Qr::new(grouping.matrix());
    let q = qr.compute_thin_Q();
    Ok((
        tensor_of(q.as_ref(), &rows, &[k], q_order),
        tensor_of(qr.thin_R(), &[k], &cols, r_order),
    ))
}

/// `let p[..] = matpow(a[..], n)`: Aⁿ by repeated squaring; A⁰ is the identity and a negative
/// power the inverse's (an error for a singular A). `order` places the power's (rows,
/// columns) in the result.
pub fn matpow<T: MatrixElement, X: Operand<Elem = T> + ?Sized>(
    a: &X,
    grouped: Grouped<'_>,
    power: i32,
    order: &[usize],
) -> Result<Tensor<T>, ShapeError> {
    let grouping = group(a, &grouped)?;
    require_square(&grouping, &grouped)?;
    let (rows, cols) = (grouping.row_extents(), grouping.col_extents());
    let n = grouping.n;
    // In faer's column-major layout, where its products run fastest.
    let input: Mat<T> = if power < 0 && n > 0 {
        lu_of(grouping.matrix(), &grouped)?.inverse()
    } else {
        grouping.matrix().to_owned()
    };
    let input = input.as_ref();
    // Left-to-right binary powering: for each bit after the leading one, square, then
    // multiply by the input if the bit is set.
    let exponent = power.unsigned_abs();
    let mut products: Vec<bool> = Vec::new(); // `false`: square; `true`: times the input
    for bit in (0..u32::BITS.saturating_sub(exponent.leading_zeros() + 1)).rev() {
        products.push(false);
        if exponent >> bit & 1 == 1 {
            products.push(true);
        }
    }
    let mut current: Option<Mat<T>> = None;
    for &times_input in &products {
        let lhs = current.as_ref().map_or(input, |value| value.as_ref());
        let rhs = if times_input { input } else { lhs };
        current = Some(lhs * rhs);
    }
    let result = match (current, exponent) {
        (Some(product), _) => product,
        (None, 0) => Mat::<T>::identity(n, n),
        (None, _) => input.to_owned(),
    };
    Ok(tensor_of(result.as_ref(), &rows, &cols, order))
}

#[cfg(test)]
mod tests {
    //! The in-place and copying reads of `Grouping`, over layouts whose groups step as one
    //! stride (transposed, reversed) and layouts that do not (split groups), so the sanitizer
    //! runs of the runtime's tests cover the raw matrix views.

    use super::*;

    const NAMES: [&str; 4] = ["a", "b", "c", "d"];

    fn grouped<'a>(rank: usize, rows: &'a [usize], cols: &'a [usize]) -> Grouped<'a> {
        Grouped {
            function: "test",
            tensor: "t",
            text: "t[..]",
            indices: &NAMES[..rank],
            rows,
            cols,
        }
    }

    /// A symmetric positive definite 6 × 6 matrix as a row-major tensor.
    fn spd() -> Tensor<f64> {
        Tensor::from_fn([6, 6], |ix| {
            let (r, c) = (ix[0] as f64, ix[1] as f64);
            1.0 / (1.0 + r + c) + if ix[0] == ix[1] { 2.0 } else { 0.0 }
        })
    }

    #[test]
    fn layouts_read_in_place_and_through_a_copy_agree() {
        let a = spd();
        let expected = cholesky(&a, grouped(2, &[0], &[1]), &[0, 1]).unwrap();
        // Transposed (strides 1, 6) and reversed twice (negative strides): each group one
        // stride, read in place; the symmetric matrix reversed on both axes is J A J, whose
        // factor is checked by reconstruction below.
        let transposed = a.view().permuted_axes(&[1, 0]);
        let got = cholesky(&transposed, grouped(2, &[0], &[1]), &[0, 1]).unwrap();
        assert_eq!(got, expected);
        let reversed = a
            .view()
            .slice_axis_step(0, 0..6, -1)
            .slice_axis_step(1, 0..6, -1);
        let l = cholesky(&reversed, grouped(2, &[0], &[1]), &[0, 1]).unwrap();
        for r in 0..6 {
            for c in 0..6 {
                let llt: f64 = (0..6).map(|k| l[[r, k]] * l[[c, k]]).sum();
                assert!((llt - a[[5 - r, 5 - c]]).abs() < 1e-12);
            }
        }
        // The matrix as a rank-4 view (2, 3) × (3, 2), rows split around a column axis: a copy.
        let split = a
            .view()
            .reshape([2, 3, 3, 2])
            .unwrap()
            .permuted_axes(&[0, 2, 1, 3]);
        let (u, sv, vt, _) = svd(
            &split,
            grouped(4, &[0, 2], &[1, 3]),
            &[0, 1, 2],
            &[0, 1, 2],
            Truncation::default(),
        )
        .unwrap();
        for r in 0..6 {
            for c in 0..6 {
                let x: f64 = (0..6)
                    .map(|s| u[[r / 3, r % 3, s]] * sv[[s]] * vt[[s, c / 2, c % 2]])
                    .sum();
                assert!((x - a[[r, c]]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn every_operation_over_a_strided_view() {
        let a = spd();
        let view = a.view().permuted_axes(&[1, 0]);
        let b = Tensor::from_fn([6, 2], |ix| (ix[0] + ix[1]) as f64);
        let x = solve(
            &view,
            grouped(2, &[0], &[1]),
            &b,
            grouped(2, &[0], &[1]),
            &[0, 1],
        )
        .unwrap();
        for r in 0..6 {
            for q in 0..2 {
                let ax: f64 = (0..6).map(|c| a[[r, c]] * x[[c, q]]).sum();
                assert!((ax - b[[r, q]]).abs() < 1e-12);
            }
        }
        let (w, v) = eigh(&view, grouped(2, &[0], &[1]), &[0, 1]).unwrap();
        for r in 0..6 {
            for s in 0..6 {
                let hv: f64 = (0..6).map(|c| a[[r, c]] * v[[c, s]]).sum();
                assert!((hv - v[[r, s]] * w[[s]]).abs() < 1e-12);
            }
        }
        let (q, rr) = qr(&view, grouped(2, &[0], &[1]), &[0, 1], &[0, 1]).unwrap();
        let p = matpow(&view, grouped(2, &[0], &[1]), -1, &[0, 1]).unwrap();
        for r in 0..6 {
            for c in 0..6 {
                let qr_rc: f64 = (0..6).map(|s| q[[r, s]] * rr[[s, c]]).sum();
                assert!((qr_rc - a[[r, c]]).abs() < 1e-12);
                let one: f64 = (0..6).map(|k| a[[r, k]] * p[[k, c]]).sum();
                assert!((one - if r == c { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }
}
