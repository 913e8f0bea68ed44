//! Real and complex tensors in one statement: a real tensor in a complex statement is read
//! where it lies (converted as the loop nest loads it, or by real GEMMs on the complex
//! operand's parts), against naive loops over converted copies, at odd and empty extents, past
//! the GEMM threshold and the grouped-sum length, over permuted and strided views; real
//! scalars promote; and no converted copy is made (the allocations are counted).

use tensor_dsl::{c32, c64, tensor, Tensor};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{allocations, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Deterministic values in (-0.5, 0.5).
fn real(shape: &[usize], seed: usize) -> Tensor<f64> {
    let mut t = 0usize;
    Tensor::from_fn(shape, |_| {
        t += 1;
        ((t * 7919 + seed * 104_729) % 1009) as f64 / 1009.0 - 0.5
    })
}

/// Deterministic values in (-0.5, 0.5) + (-0.5, 0.5)i.
fn complex(shape: &[usize], seed: usize) -> Tensor<c64> {
    let (re, im) = (real(shape, seed), real(shape, seed + 17));
    let mut parts = re.iter().zip(im.iter());
    Tensor::from_fn(shape, |_| {
        let (&re, &im) = parts.next().expect("one part per element");
        c64::new(re, im)
    })
}

fn assert_close(got: &Tensor<c64>, expected: &Tensor<c64>) {
    assert_eq!(got.shape(), expected.shape());
    let scale = expected.iter().map(|x| x.norm()).fold(1.0, f64::max);
    for (index, (x, y)) in got.iter().zip(expected.iter()).enumerate() {
        assert!(
            (x - y).norm() <= 1e-12 * scale,
            "element {index}: {x} against {y} (shape {:?})",
            got.shape()
        );
    }
}

/// `Σ_l a[i, l] · b[l, j]` by hand over complex numbers.
fn matmul(a: &Tensor<c64>, b: &Tensor<c64>) -> Tensor<c64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    Tensor::from_fn([m, n], |ix| {
        (0..k).map(|l| a[[ix[0], l]] * b[[l, ix[1]]]).sum()
    })
}

fn widened(x: &Tensor<f64>) -> Tensor<c64> {
    x.mapv(c64::from)
}

#[test]
fn real_times_complex_matrices_on_both_sides_at_every_size() {
    // (1,1,1) and (7,13,5) run as loop nests; (40,50,60) and (130,70,90) as GEMMs.
    for (m, k, n) in [
        (0, 3, 2),
        (1, 1, 1),
        (7, 13, 5),
        (40, 50, 60),
        (130, 70, 90),
    ] {
        let h = real(&[m, k], 1);
        let psi = complex(&[k, n], 2);
        let phi = complex(&[m, k], 3);
        let g = real(&[k, n], 4);
        tensor! {
            let left[i, j] = h[i, l] * psi[l, j];
            let right[i, j] = phi[i, l] * g[l, j];
            let both_real[i, j] = h[i, l] * g[l, j];
        }
        assert_close(&left, &matmul(&widened(&h), &psi));
        assert_close(&right, &matmul(&phi, &widened(&g)));
        // Two real operands make a real statement.
        let both: Tensor<f64> = both_real;
        assert_close(&widened(&both), &matmul(&widened(&h), &widened(&g)));
    }
}

#[test]
fn real_times_complex_matrix_vector_products() {
    for n in [1, 7, 13, 300] {
        let h = real(&[n, n], 5);
        let psi = complex(&[n], 6);
        tensor! {
            let psi2[i] = h[i, j] * psi[j];
            let back[j] = psi[i] * h[i, j];
        }
        let column = |v: &Tensor<c64>| Tensor::from_fn([n, 1], |ix| v[[ix[0]]]);
        let expected = matmul(&widened(&h), &column(&psi));
        assert_close(&psi2, &Tensor::from_fn([n], |ix| expected[[ix[0], 0]]));
        let expected = Tensor::from_fn([n], |ix| (0..n).map(|i| psi[[i]] * h[[i, ix[0]]]).sum());
        assert_close(&back, &expected);
    }
}

#[test]
fn mixed_gemms_over_strided_and_permuted_views_and_every_mode() {
    // Columns of the complex operand and of the target not adjacent: one real GEMM per part.
    let (m, k, n) = (45, 38, 51);
    let h = real(&[m, k], 7);
    let psi_t = complex(&[n, k], 8);
    let psi = psi_t.view().permuted_axes(&[1, 0]);
    let mut c = complex(&[n, m], 9);
    let c0 = c.clone();
    {
        let ct = c.view_mut().permuted_axes(&[1, 0]);
        tensor! { ct[i, j] += h[i, l] * psi[l, j]; }
    }
    let product = matmul(&widened(&h), &psi.to_owned());
    let expected = Tensor::from_fn([n, m], |ix| c0[[ix[0], ix[1]]] + product[[ix[1], ix[0]]]);
    assert_close(&c, &expected);

    // A complex left operand whose rows are adjacent, into a target whose rows are too: one
    // real GEMM of twice the rows.
    let phi_t = complex(&[k, m], 28);
    let phi = phi_t.view().permuted_axes(&[1, 0]);
    let g = real(&[k, n], 29);
    let mut f = Tensor::<c64>::zeros([n, m]);
    {
        let ft = f.view_mut().permuted_axes(&[1, 0]);
        tensor! { ft[i, j] = phi[i, l] * g[l, j]; }
    }
    let product = matmul(&phi.to_owned(), &widened(&g));
    assert_close(&f, &Tensor::from_fn([n, m], |ix| product[[ix[1], ix[0]]]));

    // A transposed real operand, conj on the complex one, β·target with real β, real scalars.
    let ht = real(&[k, m], 10);
    let b = complex(&[k, n], 11);
    let mut d = complex(&[m, n], 12);
    let d0 = d.clone();
    let (alpha, beta) = (0.5f64, 2.0f64);
    tensor! { d[i, j] = beta * d[i, j] + {alpha} * ht[l, i] * conj(b[l, j]); }
    let product = matmul(
        &widened(&ht.view().permuted_axes(&[1, 0]).to_owned()),
        &b.mapv(|x| x.conj()),
    );
    let expected = Tensor::from_fn([m, n], |ix| {
        beta * d0[[ix[0], ix[1]]] + alpha * product[[ix[0], ix[1]]]
    });
    assert_close(&d, &expected);

    // A complex scalar makes α complex: the loop nest converts on load instead.
    let z = c64::new(0.25, -1.5);
    tensor! { let e[i, j] = {z} * ht[l, i] * b[l, j]; }
    let product = matmul(&widened(&ht.view().permuted_axes(&[1, 0]).to_owned()), &b);
    assert_close(&e, &product.mapv(|x| z * x));
}

#[test]
fn long_mixed_sums_keep_their_accuracy() {
    // k past the GEMM's group length (4096): grouped sums over the parts.
    let (m, k, n) = (3, 9000, 4);
    let h = real(&[m, k], 13);
    let psi = complex(&[k, n], 14);
    tensor! { let c[i, j] = h[i, l] * psi[l, j]; }
    assert_close(&c, &matmul(&widened(&h), &psi));
}

#[test]
fn element_wise_and_summed_mixed_statements_convert_on_load() {
    for n in [0, 1, 7, 13, 1000] {
        let x = real(&[n], 15);
        let z = complex(&[n], 16);
        let s = 3.0f64;
        tensor! {
            let a[i] = x[i] * z[i] + x[i] - {s} * conj(z[i]) + 2;
            let b[i] = z[i] * x[i] * x[i];
            let dot = x[i] * z[i];
        }
        let expected = Tensor::from_fn([n], |ix| {
            let (x, z) = (x[[ix[0]]], z[[ix[0]]]);
            x * z + x - s * z.conj() + 2.0
        });
        assert_close(&a, &expected);
        let expected = Tensor::from_fn([n], |ix| z[[ix[0]]] * x[[ix[0]]] * x[[ix[0]]]);
        assert_close(&b, &expected);
        let expected: c64 = (0..n).map(|i| x[[i]] * z[[i]]).sum();
        assert!((dot - expected).norm() <= 1e-12 * (n as f64 + 1.0));
    }
}

#[test]
fn real_tensors_into_an_existing_complex_target_and_three_factor_products() {
    let (m, k, n) = (9, 11, 10);
    let h = real(&[m, k], 17);
    let g = real(&[k, n], 18);
    let mut c = complex(&[m, n], 19);
    let c0 = c.clone();
    tensor! { c[i, j] -= h[i, l] * g[l, j]; }
    let product = matmul(&widened(&h), &widened(&g));
    assert_close(
        &c,
        &Tensor::from_fn([m, n], |ix| c0[[ix[0], ix[1]]] - product[[ix[0], ix[1]]]),
    );

    // Three factors, the middle one complex, sizes past the GEMM threshold.
    let (a, b, u) = (
        real(&[40, 50], 20),
        complex(&[50, 60], 21),
        real(&[60, 35], 22),
    );
    tensor! { let w[i, j] = a[i, k] * b[k, l] * u[l, j]; }
    let expected = matmul(&matmul(&widened(&a), &b), &widened(&u));
    assert_close(&w, &expected);

    // A real operator in a complex basis, the basis conjugated on the left.
    let (c, h) = (complex(&[50, 40], 23), real(&[50, 50], 24));
    tensor! { let h_mo[i, j] = conj(c[p, i]) * h[p, q] * c[q, j]; }
    let adjoint = Tensor::from_fn([40, 50], |ix| c[[ix[1], ix[0]]].conj());
    assert_close(&h_mo, &matmul(&matmul(&adjoint, &widened(&h)), &c));
}

#[test]
fn single_precision_mixes_too() {
    let h: Tensor<f32> = real(&[64, 70], 23).mapv(|x| x as f32);
    let psi: Tensor<c32> = complex(&[70, 33], 24).mapv(|x| c32::new(x.re as f32, x.im as f32));
    tensor! { let c[i, j] = h[i, l] * psi[l, j]; }
    let c: Tensor<c64> = c.mapv(|x| c64::new(x.re.into(), x.im.into()));
    let wide = |x: c32| c64::new(x.re.into(), x.im.into());
    let expected = matmul(&h.mapv(|x| c64::from(f64::from(x))), &psi.mapv(wide));
    let scale = expected.iter().map(|x| x.norm()).fold(1.0, f64::max);
    for (x, y) in c.iter().zip(expected.iter()) {
        assert!((x - y).norm() <= 1e-5 * scale);
    }
}

#[test]
fn a_real_operand_is_never_copied_into_complex_numbers() {
    let (m, k, n) = (96, 80, 72);
    let h = real(&[m, k], 25);
    let psi = complex(&[k, n], 26);
    let v = complex(&[k], 27);
    let mut c = Tensor::<c64>::zeros([m, n]);
    let mut w = Tensor::<c64>::zeros([m]);
    let hc = h.mapv(c64::from);
    // The first GEMMs of a thread set up the kernels' buffers and CPU detection.
    tensor! {
        c[i, j] = hc[i, l] * psi[l, j];
        c[i, j] = h[i, l] * psi[l, j];
        w[i] = h[i, l] * v[l];
    }
    let plain = allocations(|| tensor! { c[i, j] = hc[i, l] * psi[l, j]; });
    let mixed = allocations(|| {
        tensor! {
            c[i, j] = h[i, l] * psi[l, j];
            w[i] = h[i, l] * v[l];
        }
    });
    assert!(
        mixed <= plain,
        "a real operand must not be copied: {mixed} allocations against {plain} for complex operands"
    );
    // The counter is live: a `let` allocates its result.
    let fresh = allocations(|| {
        tensor! { let fresh[i, j] = h[i, l] * psi[l, j]; }
        assert_eq!(fresh.shape(), &[m, n]);
    });
    assert!(fresh > mixed);
    assert_close(&c, &matmul(&widened(&h), &psi));
}

#[test]
fn mixed_products_have_the_same_bits_on_any_thread_count() {
    // Shapes on both sides of the GEMM kernel's choices (see test_reproducible), as mat-vec,
    // narrow and wide products, and an inner dimension past the grouped-sum length.
    for (m, k, n) in [(300, 70, 1), (64, 300, 3), (200, 150, 120), (40, 5000, 14)] {
        let h = real(&[m, k], 30);
        let psi = complex(&[k, n], 31);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool")
                .install(|| {
                    tensor! { let c[i, j] = h[i, l] * psi[l, j]; }
                    c
                })
        };
        let one = run(1);
        for threads in [2, 3, 4] {
            let many = run(threads);
            let same = one
                .iter()
                .zip(many.iter())
                .all(|(x, y)| x.re.to_bits() == y.re.to_bits() && x.im.to_bits() == y.im.to_bits());
            assert!(
                same,
                "({m}, {k}, {n}) differs between 1 and {threads} threads"
            );
        }
    }
}
