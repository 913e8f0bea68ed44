//! What the optimizing passes promise, measured: no temporaries for `R = A + B*C + D + E` and
//! for the GEMM update (a counting allocator), sums shared between statements evaluated once
//! and consecutive element-wise updates fused (counting operand and target types).

mod common;

use std::cell::Cell;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::__private::{Access, Dynamic, Operand, ShapeRef, TargetAccess, TargetShared};
use tensor_dsl::{__tensor_unoptimized, tensor, Tensor, TensorViewMut};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{allocations, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn sum_with_a_product_allocates_no_more_than_the_bare_product() {
    let (a, d, e) = (
        data::<f64>(&[7, 5], 0),
        data::<f64>(&[7, 5], 1),
        data::<f64>(&[7, 5], 2),
    );
    let (b, c) = (data::<f64>(&[7, 3], 3), data::<f64>(&[3, 5], 4));
    let mut r = Tensor::<f64>::zeros([7, 5]);
    let bare = allocations(|| {
        tensor! { r[i, j] = b[i, k] * c[k, j]; }
    });
    let full = allocations(|| {
        tensor! { r[i, j] = a[i, j] + b[i, k] * c[k, j] + d[i, j] + e[i, j]; }
    });
    assert_eq!((bare, full), (0, 0), "a loop nest needs no buffer at all");
    let expected = reference(&[7, 5], |ix| {
        at(&a, ix)
            + at(&d, ix)
            + at(&e, ix)
            + sum_over(&[3], |r| at(&b, &[ix[0], r[0]]) * at(&c, &[r[0], ix[1]]))
    });
    assert_close(&r, &expected, 1e-12);

    // The counter is live: a transposing self-read needs its temporary.
    let mut square = data::<f64>(&[4, 4], 5);
    assert!(
        allocations(|| {
            tensor! { square[i, j] = square[j, i]; }
        }) > 0
    );
}

#[test]
fn gemm_update_reads_the_target_in_place_without_allocating() {
    let (a, b) = (data::<f32>(&[6, 4], 0), data::<f32>(&[4, 9], 1));
    let before = data::<f32>(&[6, 9], 2);
    let mut c = before.clone();
    let (alpha, beta) = (1.5f32, -0.5f32);
    let bare = allocations(|| {
        tensor! { c[i, j] = a[i, k] * b[k, j]; }
    });
    c = before.clone();
    let update = allocations(|| {
        tensor! { c[i, j] = beta * c[i, j] + alpha * a[i, k] * b[k, j]; }
    });
    assert_eq!(update, bare);
    let expected = reference(&[6, 9], |ix| {
        -0.5 * at(&before, ix)
            + 1.5 * sum_over(&[4], |r| at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]))
    });
    assert_close(&c, &expected, 1e-5);
}

/// An operand that counts how often a statement reads it.
struct Counted<'a> {
    tensor: &'a Tensor<f64>,
    reads: Cell<usize>,
}

impl Operand for Counted<'_> {
    type Elem = f64;
    type Extents = Dynamic;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        self.tensor.shape().into()
    }
    fn __tdsl_operand(&self) -> Access<'_, f64> {
        self.reads.set(self.reads.get() + 1);
        self.tensor.__tdsl_operand()
    }
}

#[test]
fn a_sum_used_twice_is_computed_once() {
    let a_data = data::<f64>(&[5, 6], 0);
    let b = data::<f64>(&[6], 1);
    let a = Counted {
        tensor: &a_data,
        reads: Cell::new(0),
    };
    tensor! {
        let x[i] = a[i, j] * b[j];
        let y[p] = 2 * a[p, q] * b[q] + 1;
    }
    assert_eq!(a.reads.get(), 1, "the second sum reads `x`");
    a.reads.set(0);
    __tensor_unoptimized! {
        let x2[i] = a[i, j] * b[j];
        let y2[p] = 2 * a[p, q] * b[q] + 1;
    }
    assert_eq!(a.reads.get(), 2);
    assert_close(&y, &reference(&[5], |ix| 2.0 * at(&x2, ix) + 1.0), 1e-12);
    assert_close(&x, &reference(x2.shape(), |ix| at(&x2, ix)), 0.0);
    assert_close(&y2, &reference(y.shape(), |ix| at(&y, ix)), 1e-12);
}

/// A writable view that counts how often a statement writes it.
struct CountedTarget<'a> {
    view: TensorViewMut<'a, f64>,
    writes: Cell<usize>,
}

impl TargetShared for CountedTarget<'_> {
    type Elem = f64;
    fn __tdsl_target(&self) -> TargetAccess<'_, f64> {
        self.writes.set(self.writes.get() + 1);
        self.view.__tdsl_target()
    }
}

impl Operand for CountedTarget<'_> {
    type Elem = f64;
    type Extents = Dynamic;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        self.view.shape().into()
    }
    fn __tdsl_operand(&self) -> Access<'_, f64> {
        self.view.__tdsl_operand()
    }
}

#[test]
fn consecutive_element_wise_updates_write_the_target_once() {
    let (a, b, d) = (
        data::<f64>(&[8], 0),
        data::<f64>(&[8], 1),
        data::<f64>(&[8], 2),
    );
    let mut storage = Tensor::<f64>::zeros([8]);
    let c = CountedTarget {
        view: storage.view_mut(),
        writes: Cell::new(0),
    };
    // The updates read only what the block made (and constants), which no other name reaches.
    tensor! {
        let e[i] = b[i] - 2 * d[i];
        c[i] = a[i] + 1;
        c[i] += e[i];
        c[i] -= 0.5;
    }
    assert_eq!(c.writes.get(), 1, "three statements, one pass");
    drop(c);
    let expected = reference(&[8], |ix| {
        at(&a, ix) + 1.0 + at(&b, ix) - 2.0 * at(&d, ix) - 0.5
    });
    assert_close(&storage, &expected, 1e-12);
}

#[test]
fn an_update_reading_another_outside_tensor_is_not_fused() {
    let (a, b) = (data::<f64>(&[8], 0), data::<f64>(&[8], 1));
    let mut storage = Tensor::<f64>::zeros([8]);
    let c = CountedTarget {
        view: storage.view_mut(),
        writes: Cell::new(0),
    };
    // `b` could be `c` under another name, so `c[i] += b[i]` runs after `c[i] = …`.
    tensor! {
        c[i] = a[i] + 1;
        c[i] += b[i];
    }
    assert_eq!(c.writes.get(), 2);
    drop(c);
    let expected = reference(&[8], |ix| at(&a, ix) + 1.0 + at(&b, ix));
    assert_close(&storage, &expected, 1e-12);
}
