//! Integer elements (`i32`, `i64`) end to end against naive loops: element-wise arithmetic,
//! `abs`/`max`/`min`, sums, contractions past the GEMM and threading thresholds, nested arrays,
//! `Vec`s, permuted views, and overflow that wraps (in debug builds too), all exact.

use tensor_dsl::{tensor, Tensor};

fn ints(shape: &[usize], seed: i64) -> Tensor<i64> {
    let mut t = 0i64;
    Tensor::from_fn(shape, |_| {
        t += 1;
        (t * 7919 + seed * 104_729) % 23 - 11
    })
}

#[test]
fn element_wise_integer_statements_are_exact() {
    for n in [0, 1, 7, 13] {
        let a = ints(&[n, 3], 1);
        let b = ints(&[n, 3], 2);
        tensor! { let c[i, j] = 3 * a[i, j] - b[i, j] * a[i, j] + max(a[i, j], b[i, j]) - abs(-b[i, j]) + min(a[i, j], 0); }
        let expected = Tensor::from_fn([n, 3], |ix| {
            let (x, y) = (a[[ix[0], ix[1]]], b[[ix[0], ix[1]]]);
            3 * x - y * x + x.max(y) - y.abs() + x.min(0)
        });
        assert_eq!(c, expected);
    }
}

#[test]
fn integer_sums_and_contractions_are_exact_past_every_threshold() {
    for (m, k, n) in [(1, 1, 1), (7, 13, 5), (70, 130, 90), (200, 150, 160)] {
        let a = ints(&[m, k], 3);
        let b = ints(&[k, n], 4);
        let bt = ints(&[n, k], 5);
        tensor! {
            let c[i, j] = a[i, l] * b[l, j];
            let d[i, j] = a[i, l] * bt[j, l] + 2 * c[i, j];
            let total = a[i, l] * a[i, l];
            let rows[i] = a[i, l];
        }
        let product = |i: usize, j: usize| (0..k).map(|l| a[[i, l]] * b[[l, j]]).sum::<i64>();
        assert_eq!(c, Tensor::from_fn([m, n], |ix| product(ix[0], ix[1])));
        let expected_d = Tensor::from_fn([m, n], |ix| {
            (0..k).map(|l| a[[ix[0], l]] * bt[[ix[1], l]]).sum::<i64>() + 2 * product(ix[0], ix[1])
        });
        assert_eq!(d, expected_d);
        assert_eq!(total, a.iter().map(|x| x * x).sum::<i64>());
        assert_eq!(
            rows,
            Tensor::from_fn([m], |ix| (0..k).map(|l| a[[ix[0], l]]).sum::<i64>())
        );
    }
}

#[test]
fn permuted_views_of_integers_are_read_in_place() {
    let a = ints(&[5, 4, 3], 6);
    let view = a.view().permuted_axes(&[2, 0, 1]);
    let mut out = Tensor::<i64>::zeros([3, 5]);
    tensor! { out[i, j] += view[i, j, k] * view[i, j, k] - 1; }
    // The `- 1` term has no `k`, so it is added once, not summed.
    let expected = Tensor::from_fn([3, 5], |ix| {
        (0..4).map(|k| a[[ix[1], k, ix[0]]].pow(2)).sum::<i64>() - 1
    });
    assert_eq!(out, expected);
}

#[test]
fn integer_overflow_wraps_in_every_build() {
    let big = Tensor::<i32>::from_fn([3], |ix| i32::MAX - ix[0] as i32);
    let m = vec![i32::MIN, 5, -7];
    let mut w = vec![0i32; 3];
    tensor! {
        w[i] = big[i] + big[i] - m[i] * 3;
        let sum = big[i] * big[i];
        let negated[i] = -m[i] + abs(m[i]);
    }
    let expected: Vec<i32> = (0..3)
        .map(|i| {
            let b = big[[i]];
            b.wrapping_add(b).wrapping_sub(m[i].wrapping_mul(3))
        })
        .collect();
    assert_eq!(w, expected);
    let squares = big
        .iter()
        .fold(0i32, |s, &b| s.wrapping_add(b.wrapping_mul(b)));
    assert_eq!(sum, squares);
    let expected: Vec<i32> = m
        .iter()
        .map(|x| x.wrapping_neg().wrapping_add(x.wrapping_abs()))
        .collect();
    assert_eq!(negated.as_slice(), expected.as_slice());
}

#[test]
fn nested_integer_arrays_have_static_shapes() {
    let rotation = [[0, -1, 0], [1, 0, 0], [0, 0, 1]];
    let point = [1, 2, 3];
    tensor! { let moved[i] = rotation[i, j] * point[j] + 10; }
    let moved: [i32; 3] = moved;
    assert_eq!(moved, [8, 11, 13]);
    let wide = [4_000_000_000i64, -1];
    tensor! { let doubled[i] = 3000000000 + 2 * wide[i]; }
    assert_eq!(doubled, [11_000_000_000i64, 2_999_999_998]);
}
