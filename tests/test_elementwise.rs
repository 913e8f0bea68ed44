//! Element-wise functions, division and nested sums: all point-wise inside the term's sum.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::tensor;

#[test]
fn functions_apply_inside_the_sum() {
    let a = data::<f64>(&[7, 3], 0);
    let b = data::<f64>(&[7], 1);
    tensor! {
        let s[i] = exp(a[i, j]);
        let t[i] = exp(a[i, j] + b[i]);
        let u[i, j] = sqrt(abs(a[i, j])) + ln(abs(a[i, j]) + 1) + sin(a[i, j]) * cos(b[i]);
        let v[i, j] = tanh(a[i, j]) - max(a[i, j], b[i]) + min(a[i, j], 0) + powi(a[i, j], 3);
        let w[i] = powi(b[i], -2);
    }
    assert_close(
        &s,
        &reference(&[7], |ix| sum_over(&[3], |r| at(&a, &[ix[0], r[0]]).exp())),
        1e-12,
    );
    let expected = reference(&[7], |ix| {
        sum_over(&[3], |r| (at(&a, &[ix[0], r[0]]) + at(&b, ix)).exp())
    });
    assert_close(&t, &expected, 1e-12);
    let expected = reference(&[7, 3], |ix| {
        let x = at(&a, ix);
        x.abs().sqrt() + (x.abs() + 1.0).ln() + x.sin() * at(&b, &[ix[0]]).cos()
    });
    assert_close(&u, &expected, 1e-12);
    let expected = reference(&[7, 3], |ix| {
        let x = at(&a, ix);
        x.tanh() - x.max(at(&b, &[ix[0]])) + x.min(0.0) + x.powi(3)
    });
    assert_close(&v, &expected, 1e-12);
    assert_close(&w, &reference(&[7], |ix| at(&b, ix).powi(-2)), 1e-12);
}

/// The functions numpy and ML code reach for first: `tan`, `sigmoid`, a real `pow`, and `log`
/// as the natural logarithm (`ln`'s other name).
#[test]
fn tan_sigmoid_pow_and_log() {
    let a = data::<f64>(&[7, 3], 2);
    let b = data::<f32>(&[13], 3);
    tensor! {
        let t[i, j] = tan(a[i, j]) + sigmoid(a[i, j]);
        let p[i, j] = pow(abs(a[i, j]) + 1, a[i, j]) + log(abs(a[i, j]) + 1);
        let s[i] = sigmoid(100 * b[i]) + sigmoid(-100 * b[i]);
        let q = pow(abs(b[i]), 0.5);
    }
    let expected = reference(&[7, 3], |ix| {
        let x = at(&a, ix);
        x.tan() + 1.0 / (1.0 + (-x).exp())
    });
    assert_close(&t, &expected, 1e-12);
    let expected = reference(&[7, 3], |ix| {
        let x = at(&a, ix);
        (x.abs() + 1.0).powf(x) + (x.abs() + 1.0).ln()
    });
    assert_close(&p, &expected, 1e-12);
    // sigmoid(x) + sigmoid(-x) = 1, also far out where exp overflows.
    assert!(s.iter().all(|&v| (v - 1.0).abs() < 1e-6), "{s}");
    let expected = sum_over(&[13], |r| f64::from(b[[r[0]]]).abs().sqrt());
    assert!(
        (f64::from(q) - expected).abs() < 1e-5 * expected,
        "{q} vs {expected}"
    );
}

#[test]
fn division_is_point_wise_inside_the_sum() {
    let a = data::<f64>(&[4, 5], 0);
    let b = data::<f64>(&[5], 1);
    tensor! { let c[i] = a[i, j] / (b[j] + 2); }
    let expected = reference(&[4], |ix| {
        sum_over(&[5], |r| at(&a, &[ix[0], r[0]]) / (at(&b, r) + 2.0))
    });
    assert_close(&c, &expected, 1e-12);
}

#[test]
fn unambiguous_nested_sums_are_point_wise() {
    let a = data::<f32>(&[3, 4], 0);
    let b = data::<f32>(&[3, 4], 1);
    let y = data::<f32>(&[4], 2);
    let z = data::<f32>(&[3], 3);
    tensor! {
        let c[i] = (a[i, j] + b[i, j]) * y[j];
        let d[i, j] = (a[i, j] - z[i]) * (y[j] + 1);
        let e[i] = -(a[i, j] * y[j] - 2 * b[i, j] * y[j]);
    }
    let expected = reference(&[3], |ix| {
        sum_over(&[4], |r| {
            (at(&a, &[ix[0], r[0]]) + at(&b, &[ix[0], r[0]])) * at(&y, r)
        })
    });
    assert_close(&c, &expected, 1e-5);
    let expected = reference(&[3, 4], |ix| {
        (at(&a, ix) - at(&z, &[ix[0]])) * (at(&y, &[ix[1]]) + 1.0)
    });
    assert_close(&d, &expected, 1e-5);
    let expected = reference(&[3], |ix| {
        -sum_over(&[4], |r| {
            at(&a, &[ix[0], r[0]]) * at(&y, r) - 2.0 * at(&b, &[ix[0], r[0]]) * at(&y, r)
        })
    });
    assert_close(&e, &expected, 1e-5);
}

#[test]
fn a_scalar_result_of_a_sum_then_a_function_in_two_statements() {
    let x = data::<f64>(&[9], 0);
    tensor! {
        let s = x[i] * x[i];
        let n = { s.sqrt() };
        let unit[i] = x[i] / n;
    }
    let norm = sum_over(&[9], |r| at(&x, r).powi(2)).sqrt();
    common::assert_close_scalar(n, norm, 1e-12);
    assert_close(&unit, &reference(&[9], |ix| at(&x, ix) / norm), 1e-12);
}

/// Large enough to split across threads: point-wise, summing, transposing and broadcasting
/// nests, each against its reference.
#[test]
fn nests_large_enough_for_threads() {
    let (m, n) = (523, 611);
    let a = data::<f32>(&[m, n], 0);
    let b = data::<f32>(&[n, m], 1);
    let bias = data::<f32>(&[n], 2);
    let mut out = data::<f32>(&[m, n], 3);
    let before = out.clone();
    tensor! {
        out[i, j] += a[i, j] * b[j, i] - bias[j];
        let rows[i] = a[i, j] * a[i, j];
        let t[j, i] = a[i, j];
        let total = a[i, j] * b[j, i];
    }
    let expected_total = sum_over(&[m, n], |r| at(&a, r) * at(&b, &[r[1], r[0]]));
    common::assert_close_scalar(f64::from(total), expected_total, 1e-3);
    let expected = reference(&[m, n], |ix| {
        at(&before, ix) + at(&a, ix) * at(&b, &[ix[1], ix[0]]) - at(&bias, &[ix[1]])
    });
    assert_close(&out, &expected, 1e-5);
    let expected = reference(&[m], |ix| {
        sum_over(&[n], |r| at(&a, &[ix[0], r[0]]).powi(2))
    });
    assert_close(&rows, &expected, 1e-5);
    assert_close(&t, &reference(&[n, m], |ix| at(&a, &[ix[1], ix[0]])), 0.0);
}

/// Dense point-wise statements past the written-out loops' limit and up to and past the
/// threads' threshold (one loop over the elements, shared between threads above it, in parts
/// of uneven length at 301 × 307), on one to three threads: every mode, a scale, a target
/// read in place through a view, each against its reference.
#[test]
fn point_wise_runs_of_every_size_match_their_reference() {
    for threads in [1, 2, 3] {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
            .install(point_wise_runs_on_this_pool);
    }
}

fn point_wise_runs_on_this_pool() {
    for (m, n) in [(64, 64), (100, 300), (300, 300), (301, 307)] {
        let a = data::<f64>(&[m, n], 0);
        let b = data::<f64>(&[m, n], 1);
        let before = data::<f64>(&[m, n], 2);
        let (mut r, mut s, mut t) = (before.clone(), before.clone(), before.clone());
        let mut u = before.clone();
        let beta = 0.5;
        let view = u.view_mut();
        tensor! {
            r[i, j] = a[i, j] + 2.0 * b[i, j];
            s[i, j] += a[i, j] * b[i, j];
            t[i, j] = beta * t[i, j] - a[i, j];
            view[i, j] = view[i, j] * a[i, j] + b[i, j];
        }
        let expect = |f: &dyn Fn(&[usize]) -> f64| reference(&[m, n], f);
        assert_close(&r, &expect(&|ix| at(&a, ix) + 2.0 * at(&b, ix)), 0.0);
        assert_close(
            &s,
            &expect(&|ix| at(&before, ix) + at(&a, ix) * at(&b, ix)),
            0.0,
        );
        assert_close(&t, &expect(&|ix| beta * at(&before, ix) - at(&a, ix)), 0.0);
        assert_close(
            &u,
            &expect(&|ix| at(&before, ix) * at(&a, ix) + at(&b, ix)),
            0.0,
        );
    }
}

#[test]
fn powi_takes_an_exponent_computed_by_rust() {
    let a = data::<f64>(&[7, 3], 2);
    let signs = tensor_dsl::Tensor::from_fn([4], |ix| if ix[0] % 2 == 0 { -1.0f64 } else { 1.0 });
    for n in [0i32, 1, 3, -2, 7] {
        let exponents = [n, n + 1];
        // A place, a negated place, a Rust expression, and a field of an array.
        tensor! {
            let p[i, j] = powi(a[i, j], n) + powi(a[i, j], -n) * powi(a[i, j], {n + 1});
            let q[i] = powi(a[i, j], {exponents[1]});
        }
        let expected = reference(&[7, 3], |ix| {
            let x = at(&a, ix);
            x.powi(n) + x.powi(-n) * x.powi(n + 1)
        });
        assert_close(&p, &expected, 1e-9);
        let expected = reference(&[7], |ix| {
            sum_over(&[3], |r| at(&a, &[ix[0], r[0]]).powi(n + 1))
        });
        assert_close(&q, &expected, 1e-9);
    }
    // Exponents past f32's exact integers keep their parity.
    let odd = i32::MAX;
    let even = i32::MIN;
    tensor! { let s[i] = powi(signs[i], odd) - powi(signs[i], even); }
    assert_eq!(s.as_slice(), &[-2.0, 0.0, -2.0, 0.0]);
}
