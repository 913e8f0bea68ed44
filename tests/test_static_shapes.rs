//! Nested Rust arrays as static-shape operands and targets, end to end against naive loops:
//! alone, mixed with run-time-shaped tensors, in place, and as the targets of every mode.

mod common;

use common::{assert_close, assert_close_scalar, at, data, reference, sum_over};
use tensor_dsl::{tensor, Tensor};

fn to_tensor<const A: usize, const B: usize>(array: &[[f64; B]; A]) -> Tensor<f64> {
    Tensor::from_fn(&[A, B], |ix| array[ix[0]][ix[1]])
}

#[test]
fn matrix_product_of_nested_arrays_into_a_nested_array() {
    let a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let b = [[1.0, 0.5], [0.25, -1.0], [2.0, 3.0]];
    let mut c = [[0.0f64; 2]; 2];
    tensor! { c[i, j] = a[i, k] * b[k, j]; }
    let expected = reference(&[2, 2], |ix| {
        sum_over(&[3], |r| a[ix[0]][r[0]] * b[r[0]][ix[1]])
    });
    assert_close(&to_tensor(&c), &expected, 1e-12);
    // `+=`, a scaled update and an element-wise statement, in place.
    tensor! {
        c[i, j] += a[i, k] * b[k, j];
        c[i, j] = 0.5 * c[i, j] + c[j, i];
    }
    let doubled = reference(&[2, 2], |ix| 2.0 * at(&expected, ix));
    let last = reference(&[2, 2], |ix| {
        0.5 * at(&doubled, ix) + at(&doubled, &[ix[1], ix[0]])
    });
    assert_close(&to_tensor(&c), &last, 1e-12);
}

#[test]
fn elasticity_with_a_rank_four_nested_array() {
    // s[i, j] = C[i, j, k, l] e[k, l] with 3 × 3 × 3 × 3 stiffness and 3 × 3 strain.
    let mut stiffness = [[[[0.0f32; 3]; 3]; 3]; 3];
    for (n, value) in stiffness
        .iter_mut()
        .flatten()
        .flatten()
        .flatten()
        .enumerate()
    {
        *value = (n % 7) as f32 - 3.0;
    }
    let strain = [[0.1f32, 0.2, 0.3], [0.2, 0.5, 0.6], [0.3, 0.6, 0.9]];
    tensor! { let stress[i, j] = stiffness[i, j, k, l] * strain[k, l]; }
    // A `let` over static operands is a nested array of the inferred shape.
    let stress: [[f32; 3]; 3] = stress;
    let stress = Tensor::from_fn(&[3, 3], |ix| stress[ix[0]][ix[1]]);
    let expected = reference(&[3, 3], |ix| {
        sum_over(&[3, 3], |r| {
            f64::from(stiffness[ix[0]][ix[1]][r[0]][r[1]]) * f64::from(strain[r[0]][r[1]])
        })
    });
    assert_close(&stress, &expected, 1e-5);
}

/// The kind of a `let` result follows a rule a user can predict from the operands: a nested
/// array when every use of each of its indices is over a static extent, else a `Tensor`, even
/// when a nested array comes first.
#[test]
fn a_let_is_a_nested_array_only_when_every_use_of_its_indices_is_static() {
    fn is_tensor(_: &Tensor<f64>) {}
    fn is_array(_: &[[f64; 3]; 2]) {}
    let a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let t = to_tensor(&a);
    tensor! {
        let both_static[i, j] = a[i, j] * a[i, j];
        let beside_a_tensor[i, j] = a[i, j] + t[i, j];
        let only_one_index_dynamic[i, j] = a[i, j] * t[i, 0];
    }
    is_array(&both_static);
    is_tensor(&beside_a_tensor);
    is_tensor(&only_one_index_dynamic);
    assert_eq!(
        beside_a_tensor.as_slice(),
        &[2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    );
    assert_eq!(both_static, [[1.0, 4.0, 9.0], [16.0, 25.0, 36.0]]);
}

#[test]
fn static_and_dynamic_operands_mix() {
    let rotation = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];
    let points = data::<f64>(&[7, 3], 0);
    let mut moved = [[0.0f64; 3]; 7];
    tensor! { moved[p, i] = rotation[i, j] * points[p, j]; }
    let expected = reference(&[7, 3], |ix| {
        sum_over(&[3], |r| {
            rotation[ix[1]][r[0]] * at(&points, &[ix[0], r[0]])
        })
    });
    let moved = Tensor::from_fn(&[7, 3], |ix| moved[ix[0]][ix[1]]);
    assert_close(&moved, &expected, 1e-12);
    // A vector and a zero-length array.
    let v = [1.0f64, 2.0, 3.0];
    let empty: [f64; 0] = [];
    tensor! {
        let norm2 = v[i] * v[i];
        let nothing = empty[i] * empty[i];
    }
    assert_eq!((norm2, nothing), (14.0, 0.0));
}

#[test]
#[should_panic(expected = "index `j` has extent 3")]
fn a_static_extent_against_a_dynamic_one_is_checked_at_run_time() {
    let rotation = [[1.0f64; 3]; 3];
    let points = data::<f64>(&[7, 4], 0);
    tensor! { let _moved[p, i] = rotation[i, j] * points[p, j]; }
}

/// A nested array holding `data`'s elements (the corpus's input rule).
fn array2<const A: usize, const B: usize>(seed: usize) -> [[f64; B]; A] {
    let values = data::<f64>(&[A, B], seed);
    std::array::from_fn(|i| std::array::from_fn(|j| at(&values, &[i, j])))
}

fn array1<const A: usize>(seed: usize) -> [f64; A] {
    let values = data::<f64>(&[A], seed);
    std::array::from_fn(|i| at(&values, &[i]))
}

fn tensor1<const A: usize>(array: &[f64; A]) -> Tensor<f64> {
    Tensor::from_fn(&[A], |ix| array[ix[0]])
}

/// Small statements over nested arrays run as loops written out in the expansion: every mode,
/// scale, function, fixed position and self-read gives what the general kernels give on the
/// same values as tensors (themselves tested against naive loops), at odd extents.
#[test]
fn written_out_loops_agree_with_the_general_kernels() {
    let a: [[f64; 13]; 7] = array2(1);
    let b: [[f64; 7]; 13] = array2(2);
    let v: [f64; 13] = array1(3);
    let (ta, tb, tv) = (to_tensor(&a), to_tensor(&b), tensor1(&v));
    let (alpha, beta) = (0.75, 3.0);

    let mut c = [[f64::NAN; 7]; 7];
    let mut tc = Tensor::<f64>::zeros([7, 7]);
    let zero = 0.0;
    tensor! {
        c[i, j] = zero * c[i, j] + a[i, k] * b[k, j];     // β = 0: the NaN is not read
        c[i, j] += 2 * alpha * a[i, k] * b[k, j] / beta;
        c[i, j] -= exp(a[i, k] / 4) * powi(b[k, j], 2) + max(a[i, 0], b[0, j]);
        c[i, 3] = c[i, 3] * alpha - v[k] * b[k, i];        // a fixed target position
        c[i, j] = c[j, i] + 1;                             // a transposed self-read
    }
    tensor! {
        tc[i, j] = ta[i, k] * tb[k, j];
        tc[i, j] += 2 * alpha * ta[i, k] * tb[k, j] / beta;
        tc[i, j] -= exp(ta[i, k] / 4) * powi(tb[k, j], 2) + max(ta[i, 0], tb[0, j]);
        tc[i, 3] = tc[i, 3] * alpha - tv[k] * tb[k, i];
        tc[i, j] = tc[j, i] + 1;
    }
    let expected = Tensor::from_fn(&[7, 7], |ix| at(&tc, ix));
    assert_close(&to_tensor(&c), &expected, 1e-12);

    // Scalars: a `let`, and `-=` into a Rust place.
    let mut total = 1.0;
    let mut t_total = 1.0;
    tensor! {
        let norm = a[i, k] * a[i, k];
        total -= v[k] * a[2, k] / beta;
        let t_norm = ta[i, k] * ta[i, k];
        t_total -= tv[k] * ta[2, k] / beta;
    }
    assert_close_scalar(norm, t_norm, 1e-12);
    assert_close_scalar(total, t_total, 1e-12);

    // Chained `let`s stay nested arrays; extents 1 and 13.
    let row: [[f64; 13]; 1] = [v];
    tensor! {
        let outer[i, j] = row[0, i] * v[j];
        let mut projected[i] = outer[i, j] * v[j];
        projected[i] -= row[0, i];
    }
    let projected: [f64; 13] = projected;
    let expected = reference(&[13], |ix| {
        sum_over(&[13], |r| v[ix[0]] * v[r[0]] * v[r[0]]) - v[ix[0]]
    });
    assert_close(&tensor1(&projected), &expected, 1e-12);
}

#[test]
fn written_out_loops_handle_empty_sums_and_empty_targets() {
    // An empty sum is exactly zero, even scaled by 1/0.
    let a = [[0.5f64; 0]; 3];
    let z: [f64; 0] = [];
    let zero = 0.0;
    let mut c = [f64::NAN; 3];
    tensor! { c[i] = a[i, k] * z[k] / zero; }
    assert_eq!(c, [0.0; 3]);
    // A target with no elements: nothing runs, nothing panics.
    let mut nothing = [[1.0f64; 0]; 4];
    let b = [[2.0f64; 3]; 4];
    let m = [[1.0f64; 0]; 3];
    tensor! { nothing[i, j] = m[k, j] * b[i, k]; }
    assert_eq!(nothing.len(), 4);
}

#[test]
fn boxed_nested_arrays_are_operands_and_targets() {
    // Large static tensors live on the heap: a boxed array reads and writes as the array.
    let a: Box<[[f64; 7]; 5]> = Box::new(array2(6));
    let mut c: Box<[[f64; 5]; 5]> = Box::new([[0.0; 5]; 5]);
    tensor! { c[i, j] = a[i, k] * a[j, k]; }
    let expected = reference(&[5, 5], |ix| {
        sum_over(&[7], |r| a[ix[0]][r[0]] * a[ix[1]][r[0]])
    });
    assert_close(&to_tensor(&c), &expected, 1e-12);
}

#[test]
fn annotated_lets_take_the_annotated_type() {
    let a = [[1.0f64, 2.0], [3.0, 4.0]];
    tensor! {
        let t[i, j]: Tensor<f64> = a[j, i];
        let u[i, j]: [[f64; 2]; 2] = a[i, j] * 2;
    }
    assert_eq!(
        (t.as_slice(), u),
        (&[1.0, 3.0, 2.0, 4.0][..], [[2.0, 4.0], [6.0, 8.0]])
    );
}

#[test]
fn large_static_statements_take_the_general_kernels() {
    // 40³ points: past the written-out loops' limit, so a GEMM; same result as tensors.
    let a: [[f64; 40]; 40] = array2(4);
    let b: [[f64; 40]; 40] = array2(5);
    tensor! { let c[i, j] = a[i, k] * b[k, j]; }
    let c: [[f64; 40]; 40] = c;
    let (ta, tb) = (to_tensor(&a), to_tensor(&b));
    tensor! { let tc[i, j] = ta[i, k] * tb[k, j]; }
    let expected = Tensor::from_fn(&[40, 40], |ix| at(&tc, ix));
    assert_close(&to_tensor(&c), &expected, 1e-12);
}

/// A type may state static extents its layout does not have (a transposed view claiming to be
/// a row-major 3 × 3 array): the written-out loops check each access's real layout and leave
/// such operands and targets to the general kernels, which read them as they are.
#[test]
fn a_layout_that_differs_from_its_static_extents_is_read_as_it_is() {
    use tensor_dsl::__private::{Access, Operand, ShapeRef, TargetAccess, TargetShared};
    use tensor_dsl::extents::Extents2;
    use tensor_dsl::{TensorView, TensorViewMut};

    struct Claims3x3<'a>(TensorView<'a, f64>);
    impl Operand for Claims3x3<'_> {
        type Elem = f64;
        type Extents = Extents2<3, 3>;
        fn __tdsl_shape(&self) -> ShapeRef<'_> {
            self.0.__tdsl_shape()
        }
        fn __tdsl_operand(&self) -> Access<'_, f64> {
            self.0.__tdsl_operand()
        }
    }
    struct Writes3x3<'a>(TensorViewMut<'a, f64>);
    impl Operand for Writes3x3<'_> {
        type Elem = f64;
        type Extents = Extents2<3, 3>;
        fn __tdsl_shape(&self) -> ShapeRef<'_> {
            self.0.__tdsl_shape()
        }
        fn __tdsl_operand(&self) -> Access<'_, f64> {
            self.0.__tdsl_operand()
        }
    }
    impl TargetShared for Writes3x3<'_> {
        type Elem = f64;
        fn __tdsl_target(&self) -> TargetAccess<'_, f64> {
            self.0.__tdsl_target()
        }
    }

    let source = Tensor::from_fn(&[3, 3], |ix| (ix[0] * 3 + ix[1]) as f64);
    let transposed = Claims3x3(source.view().permuted_axes(&[1, 0]));
    let ones = [[1.0f64; 3]; 3];
    tensor! { let sum[i, j] = transposed[i, j] + ones[i, j]; }
    let expected = reference(&[3, 3], |ix| (ix[1] * 3 + ix[0]) as f64 + 1.0);
    assert_close(&to_tensor(&sum), &expected, 0.0);

    // A target over the first three columns of a wider tensor (rows 6 apart, not 3): the other
    // columns stay untouched.
    let mut wide = Tensor::<f64>::zeros([3, 6]);
    {
        let mut view = wide.view_mut();
        let strided = view.reborrow().permuted_axes(&[1, 0]).slice_axis(0, 0..3);
        let columns = Writes3x3(strided.permuted_axes(&[1, 0]));
        tensor! { columns[i, j] = ones[i, j] * 2; }
    }
    let expected = reference(&[3, 6], |ix| if ix[1] < 3 { 2.0 } else { 0.0 });
    assert_close(&wide, &expected, 0.0);
}

/// A user's `Operand` whose access has another shape than the one it reports is stopped before
/// anything is written, with a message naming the shapes and the inconsistent implementation,
/// not as a tensor-dsl bug: also where the two shapes hold as many elements, which a
/// point-wise statement reading each access as one run would otherwise take.
#[test]
fn an_operand_whose_access_disagrees_with_its_shape_is_named() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use tensor_dsl::__private::{Access, Operand, ShapeRef};
    use tensor_dsl::extents::Dynamic;

    struct Lies<const R: usize> {
        claimed: [usize; R],
        data: Tensor<f64>,
    }
    impl<const R: usize> Operand for Lies<R> {
        type Elem = f64;
        type Extents = Dynamic;
        fn __tdsl_shape(&self) -> ShapeRef<'_> {
            (&self.claimed).into()
        }
        fn __tdsl_operand(&self) -> Access<'_, f64> {
            self.data.__tdsl_operand()
        }
    }
    let lies = Lies {
        claimed: [4],
        data: Tensor::zeros([3]),
    };
    let mut out = Tensor::<f64>::from_fn([4], |_| 7.0);
    let panic = catch_unwind(AssertUnwindSafe(|| tensor! { out[i] = 2 * lies[i]; }))
        .expect_err("an inconsistent operand is refused");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("shape [3]"), "{message}");
    assert!(message.contains("`Operand` implementation"), "{message}");
    assert!(out.iter().all(|&x| x == 7.0), "nothing was written");

    let lies = Lies {
        claimed: [2, 3],
        data: Tensor::zeros([3, 2]),
    };
    let mut out = Tensor::<f64>::from_fn([2, 3], |_| 7.0);
    let panic = catch_unwind(AssertUnwindSafe(|| tensor! { out[i, j] = 2 * lies[i, j]; }))
        .expect_err("an inconsistent operand of as many elements is refused");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("shape [3, 2]"), "{message}");
    assert!(message.contains("`Operand` implementation"), "{message}");
    assert!(out.iter().all(|&x| x == 7.0), "nothing was written");
}

/// Builds whose runtime is unoptimized (the debug profile) compile only the general path of
/// each statement; `__tensor_general!` writes that path alone with the same plan, so over nested
/// arrays it runs what those builds run (proof, detached operands, kernels on arrays' layouts),
/// and it must give what the written-out loops give.
#[test]
fn the_general_path_over_nested_arrays_agrees_with_the_written_out_loops() {
    let a: [[f64; 13]; 7] = array2(4);
    let b: [[f64; 7]; 13] = array2(5);
    let v: [f64; 13] = array1(6);
    let (alpha, beta) = (0.75, 3.0);

    let mut c = [[f64::NAN; 7]; 7];
    let mut g = c;
    let zero = 0.0;
    tensor! {
        c[i, j] = zero * c[i, j] + a[i, k] * b[k, j];
        c[i, j] += 2 * alpha * a[i, k] * b[k, j] / beta;
        c[i, j] -= exp(a[i, k] / 4) * powi(b[k, j], 2) + max(a[i, 0], b[0, j]);
        c[i, 3] = c[i, 3] * alpha - v[k] * b[k, i];
        c[i, j] = c[j, i] + 1;
        let norm = a[i, k] * a[i, k];
        let outer[i, j] = v[i] * v[j];
        let mut projected[i] = outer[i, j] * v[j];
        projected[i] -= v[i];
        let net[i, j] = a[i, k] * b[k, l] * a[l, j];    // a network, pair by pair
    }
    tensor_dsl::__tensor_general! {
        g[i, j] = zero * g[i, j] + a[i, k] * b[k, j];     // β = 0: the NaN is not read
        g[i, j] += 2 * alpha * a[i, k] * b[k, j] / beta;
        g[i, j] -= exp(a[i, k] / 4) * powi(b[k, j], 2) + max(a[i, 0], b[0, j]);
        g[i, 3] = g[i, 3] * alpha - v[k] * b[k, i];
        g[i, j] = g[j, i] + 1;
        let g_norm = a[i, k] * a[i, k];
        let g_outer[i, j] = v[i] * v[j];
        let mut g_projected[i] = g_outer[i, j] * v[j];
        g_projected[i] -= v[i];
        let g_net[i, j] = a[i, k] * b[k, l] * a[l, j];
    }
    let (outer, g_outer): ([[f64; 13]; 13], [[f64; 13]; 13]) = (outer, g_outer);
    let (projected, g_projected): ([f64; 13], [f64; 13]) = (projected, g_projected);
    assert_close(&to_tensor(&g), &to_tensor(&c), 1e-12);
    assert_close_scalar(g_norm, norm, 1e-12);
    assert_close(&to_tensor(&g_outer), &to_tensor(&outer), 0.0);
    assert_close(&tensor1(&g_projected), &tensor1(&projected), 1e-12);
    let (net, g_net): ([[f64; 13]; 7], [[f64; 13]; 7]) = (net, g_net);
    assert_close(&to_tensor(&g_net), &to_tensor(&net), 1e-12);

    // An empty sum is exactly zero, even scaled by 1/0, and an empty target is left alone.
    let (e, z) = ([[0.5f64; 0]; 3], [0.0f64; 0]);
    let (m, f) = ([[1.0f64; 0]; 3], [[2.0f64; 3]; 4]);
    let mut empty_sum = [f64::NAN; 3];
    let mut nothing = [[1.0f64; 0]; 4];
    tensor_dsl::__tensor_general! {
        empty_sum[i] = e[i, k] * z[k] / zero;
        nothing[i, j] = m[k, j] * f[i, k];
    }
    assert_eq!(empty_sum, [0.0; 3]);
    assert_eq!(nothing.len(), 4);
}
