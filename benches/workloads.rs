//! The workloads users compare us on, each run in one criterion group against what they would
//! otherwise write: naive loops, ndarray (`dot`, `Zip`, `sum_axis`) or `ndarray-einsum`, and
//! direct GEMM calls (`matrixmultiply` and the `gemm` crate) on the same shapes. Throughput is
//! FLOPs (contractions) or bytes moved (element-wise work), so criterion prints GFLOP/s or GB/s;
//! `benches/report.py` turns the results into the README's table of rates and ratios.
//!
//!     cargo bench -p tensor-dsl-benches --bench workloads                      # every workload
//!     RAYON_NUM_THREADS=1 cargo bench -p tensor-dsl-benches --bench workloads  # one thread

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput,
};
use ndarray::{Array, Array2, ArrayD, Axis, IxDyn, Zip};
use tensor_dsl::{c32, tensor, Tensor};

fn data(shape: &[usize], seed: usize) -> Tensor<f32> {
    let mut t = 0usize;
    Tensor::from_fn(shape, |_| {
        let value = ((t * 7919 + (seed + 1) * 104_729) % 1009) as f32 / 1009.0 - 0.5;
        t += 1;
        value
    })
}

fn array(tensor: &Tensor<f32>) -> ArrayD<f32> {
    Array::from_shape_vec(IxDyn(tensor.shape()), tensor.as_slice().to_vec()).unwrap()
}

fn array2(tensor: &Tensor<f32>) -> Array2<f32> {
    array(tensor).into_dimensionality().unwrap()
}

fn group<'c>(
    c: &'c mut Criterion,
    name: &str,
    throughput: Throughput,
) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(throughput);
    group
}

/// A matrix operand or result: elements, row stride, column stride.
type Matrix<'a> = (&'a [f32], isize, isize);

/// `C ← A B + β C` with the given strides.
fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    a: Matrix,
    b: Matrix,
    beta: f32,
    c: (&mut [f32], isize, isize),
) {
    // SAFETY: the callers pass strides that stay inside the slices.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.0.as_ptr(),
            a.1,
            a.2,
            b.0.as_ptr(),
            b.1,
            b.2,
            beta,
            c.0.as_mut_ptr(),
            c.1,
            c.2,
        )
    }
}

/// `C ← A B + β C` with the `gemm` crate (its run-time-selected kernels, one thread).
fn gemm_crate(
    m: usize,
    k: usize,
    n: usize,
    a: Matrix,
    b: Matrix,
    beta: f32,
    c: (&mut [f32], isize, isize),
) {
    // SAFETY: the callers pass strides that stay inside the slices.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.0.as_mut_ptr(),
            c.2,
            c.1,
            beta != 0.0,
            a.0.as_ptr(),
            a.2,
            a.1,
            b.0.as_ptr(),
            b.2,
            b.1,
            beta,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// A direct GEMM call of one of the crates compared against.
type Gemm = fn(usize, usize, usize, Matrix, Matrix, f32, (&mut [f32], isize, isize));

/// The direct GEMM calls `tensor!` is compared with, by name.
const GEMMS: [(&str, Gemm); 2] = [("matrixmultiply", sgemm), ("gemm crate", gemm_crate)];

fn gemm_1024(c: &mut Criterion) {
    let n = 1024;
    let (a, b) = (data(&[n, n], 0), data(&[n, n], 1));
    let mut out = Tensor::<f32>::zeros([n, n]);
    let (aa, bb) = (array2(&a), array2(&b));
    let mut g = group(
        c,
        "gemm 1024³",
        Throughput::Elements(2 * (n * n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| tensor! { out[i, j] = a[i, k] * b[k, j]; })
    });
    for (name, gemm) in GEMMS {
        g.bench_function(name, |bench| {
            let mut c = vec![0.0f32; n * n];
            let s = n as isize;
            bench.iter(|| {
                gemm(
                    n,
                    n,
                    n,
                    (a.as_slice(), s, 1),
                    (b.as_slice(), s, 1),
                    0.0,
                    (&mut c, s, 1),
                )
            })
        });
    }
    g.bench_function("ndarray dot", |bench| bench.iter(|| black_box(aa.dot(&bb))));
    g.finish();
}

fn seed_contraction(c: &mut Criterion) {
    let (ni, nj, nk, nl) = (256, 256, 64, 32);
    let (a, b) = (data(&[ni, nk, nl], 0), data(&[nk, nj, nl], 1));
    let (aa, bb) = (array(&a), array(&b));
    let flops = 2 * (ni * nj * nk * nl) as u64;
    let mut g = group(
        c,
        "seed c[i,j] = a[i,k,l] b[k,j,l]",
        Throughput::Elements(flops),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let c[i, j] = a[i, k, l] * b[k, j, l]; }
            c
        })
    });
    for (name, gemm) in GEMMS {
        g.bench_function(format!("{name} (one strided GEMM per l)"), |bench| {
            let mut c = vec![0.0f32; ni * nj];
            bench.iter(|| {
                for l in 0..nl {
                    let beta = if l == 0 { 0.0 } else { 1.0 };
                    let a = (&a.as_slice()[l..], (nk * nl) as isize, nl as isize);
                    let b = (&b.as_slice()[l..], (nj * nl) as isize, nl as isize);
                    gemm(ni, nk, nj, a, b, beta, (&mut c, nj as isize, 1));
                }
            })
        });
    }
    // The target: the same multiply-adds as one GEMM over contiguous (i, kl) and (kl, j).
    let (a2, b2) = (data(&[ni, nk * nl], 0), data(&[nk * nl, nj], 1));
    for (name, gemm) in GEMMS {
        g.bench_function(format!("{name} (same-FLOP contiguous GEMM)"), |bench| {
            let mut c = vec![0.0f32; ni * nj];
            let kl = (nk * nl) as isize;
            bench.iter(|| {
                gemm(
                    ni,
                    nk * nl,
                    nj,
                    (a2.as_slice(), kl, 1),
                    (b2.as_slice(), nj as isize, 1),
                    0.0,
                    (&mut c, nj as isize, 1),
                )
            })
        });
    }
    g.bench_function("ndarray-einsum", |bench| {
        bench.iter(|| ndarray_einsum::einsum("ikl,kjl->ij", &[&aa, &bb]).unwrap())
    });
    g.bench_function("naive loop", |bench| {
        bench.iter(|| {
            let (a, b) = (a.as_slice(), b.as_slice());
            let mut c = vec![0.0f32; ni * nj];
            for i in 0..ni {
                for k in 0..nk {
                    for j in 0..nj {
                        let (ar, br) =
                            (&a[(i * nk + k) * nl..][..nl], &b[(k * nj + j) * nl..][..nl]);
                        c[i * nj + j] += ar.iter().zip(br).map(|(x, y)| x * y).sum::<f32>();
                    }
                }
            }
            c
        })
    });
    g.finish();
}

fn batched_matmul(c: &mut Criterion) {
    let (nb, n) = (64, 64);
    let (a, b) = (data(&[nb, n, n], 0), data(&[nb, n, n], 1));
    let mut out = Tensor::<f32>::zeros([nb, n, n]);
    let (aa, bb) = (array(&a), array(&b));
    let mut g = group(
        c,
        "batched matmul 64 × 64³",
        Throughput::Elements(2 * (nb * n * n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| tensor! { out[z, i, j] = a[z, i, k] * b[z, k, j]; })
    });
    for (name, gemm) in GEMMS {
        g.bench_function(format!("{name} (loop of GEMMs)"), |bench| {
            let mut c = vec![0.0f32; nb * n * n];
            let s = n as isize;
            bench.iter(|| {
                for z in 0..nb {
                    let r = z * n * n..(z + 1) * n * n;
                    let (a, b) = (
                        (&a.as_slice()[r.clone()], s, 1),
                        (&b.as_slice()[r.clone()], s, 1),
                    );
                    gemm(n, n, n, a, b, 0.0, (&mut c[r], s, 1));
                }
            })
        });
    }
    g.bench_function("ndarray dot per batch", |bench| {
        let a3 = aa.view().into_dimensionality::<ndarray::Ix3>().unwrap();
        let b3 = bb.view().into_dimensionality::<ndarray::Ix3>().unwrap();
        bench.iter(|| {
            (0..nb)
                .map(|z| a3.index_axis(Axis(0), z).dot(&b3.index_axis(Axis(0), z)))
                .collect::<Vec<_>>()
        })
    });
    g.bench_function("ndarray-einsum", |bench| {
        bench.iter(|| ndarray_einsum::einsum("zik,zkj->zij", &[&aa, &bb]).unwrap())
    });
    g.finish();
}

fn four_index_transform(c: &mut Criterion) {
    let n = 32;
    let (cm, gt) = (data(&[n, n], 0), data(&[n, n, n, n], 1));
    let mut d = Tensor::<f32>::zeros([n, n, n, n]);
    let (ca, ga) = (array(&cm), array(&gt));
    // Four staged contractions, each n⁵ multiply-adds.
    let mut g = group(
        c,
        "4-index transform n = 32",
        Throughput::Elements(4 * 2 * (n as u64).pow(5)),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { d[p, q, r, s] = cm[p, a] * cm[q, b] * cm[r, e] * cm[s, f] * gt[a, b, e, f]; }
        })
    });
    for (name, sgemm) in GEMMS {
        g.bench_function(format!("{name} (four staged GEMMs)"), |bench| {
            let (n2, n3) = (n * n, n * n * n);
            let mut t = [
                vec![0.0f32; n3 * n],
                vec![0.0f32; n3 * n],
                vec![0.0f32; n3 * n],
                vec![0.0f32; n3 * n],
            ];
            let cs = cm.as_slice();
            let (ni, n2i, n3i) = (n as isize, n2 as isize, n3 as isize);
            bench.iter(|| {
                let [t1, t2, t3, out] = &mut t;
                // t1[p, bcd] = c[p, a] g[a, bcd]
                sgemm(
                    n,
                    n,
                    n3,
                    (cs, ni, 1),
                    (gt.as_slice(), n3i, 1),
                    0.0,
                    (t1, n3i, 1),
                );
                // t2[p, q, cd] = c[q, b] t1[p, b, cd]
                for p in 0..n {
                    let r = p * n3..(p + 1) * n3;
                    sgemm(
                        n,
                        n,
                        n2,
                        (cs, ni, 1),
                        (&t1[r.clone()], n2i, 1),
                        0.0,
                        (&mut t2[r], n2i, 1),
                    );
                }
                // t3[p, q, r, d] = c[r, c] t2[p, q, c, d]
                for pq in 0..n2 {
                    let r = pq * n2..(pq + 1) * n2;
                    sgemm(
                        n,
                        n,
                        n,
                        (cs, ni, 1),
                        (&t2[r.clone()], ni, 1),
                        0.0,
                        (&mut t3[r], ni, 1),
                    );
                }
                // d[pqr, s] = t3[pqr, d] c[s, d]
                sgemm(n3, n, n, (t3, ni, 1), (cs, 1, ni), 0.0, (out, ni, 1));
            })
        });
    }
    // One `einsum` call with all five operands runs out of memory (it builds an n⁸ product), so
    // this is four calls, one per stage, as a user would write it.
    g.bench_function("ndarray-einsum (four staged calls)", |bench| {
        bench.iter(|| {
            let t1 = ndarray_einsum::einsum("pa,abef->pbef", &[&ca, &ga]).unwrap();
            let t2 = ndarray_einsum::einsum("qb,pbef->pqef", &[&ca, &t1]).unwrap();
            let t3 = ndarray_einsum::einsum("re,pqef->pqrf", &[&ca, &t2]).unwrap();
            ndarray_einsum::einsum("sf,pqrf->pqrs", &[&ca, &t3]).unwrap()
        })
    });
    g.finish();
}

fn fused_elementwise(c: &mut Criterion) {
    let n = 4096;
    let (a, b, cc, e) = (
        data(&[n, n], 0),
        data(&[n, n], 1),
        data(&[n, n], 2),
        data(&[n, n], 3),
    );
    let mut r = Tensor::<f32>::zeros([n, n]);
    let (aa, ba, ca, ea) = (array2(&a), array2(&b), array2(&cc), array2(&e));
    let mut ra = Array2::<f32>::zeros((n, n));
    // Four arrays read, one written.
    let mut g = group(
        c,
        "fused r = a + b*c + 2*e, 4096²",
        Throughput::Bytes(5 * 4 * (n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| tensor! { r[i, j] = a[i, j] + b[i, j] * cc[i, j] + 2 * e[i, j]; })
    });
    g.bench_function("naive loop", |bench| {
        let mut out = vec![0.0f32; n * n];
        let (a, b, cc, e) = (a.as_slice(), b.as_slice(), cc.as_slice(), e.as_slice());
        bench.iter(|| {
            for (k, o) in out.iter_mut().enumerate() {
                *o = a[k] + b[k] * cc[k] + 2.0 * e[k];
            }
        })
    });
    g.bench_function("ndarray Zip", |bench| {
        bench.iter(|| {
            Zip::from(&mut ra)
                .and(&aa)
                .and(&ba)
                .and(&ca)
                .for_each(|r, &a, &b, &c| *r = a + b * c);
            Zip::from(&mut ra).and(&ea).for_each(|r, &e| *r += 2.0 * e);
        })
    });
    g.bench_function("ndarray operators", |bench| {
        bench.iter(|| black_box(&aa + &(&ba * &ca) + &(&ea * 2.0)))
    });
    g.finish();
}

fn chain(c: &mut Criterion) {
    let (a, b, cc) = (
        data(&[1000, 10], 0),
        data(&[10, 1000], 1),
        data(&[1000, 10], 2),
    );
    let (aa, ba, ca) = (array2(&a), array2(&b), array2(&cc));
    // Counted as the best order's work.
    let mut g = group(
        c,
        "chain 1000×10 · 10×1000 · 1000×10",
        Throughput::Elements(2 * 2 * 10 * 1000 * 10),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let x[i, j] = a[i, k] * b[k, l] * cc[l, j]; }
            x
        })
    });
    g.bench_function("ndarray dot, best order", |bench| {
        bench.iter(|| aa.dot(&ba.dot(&ca)))
    });
    g.bench_function("ndarray dot, worst order", |bench| {
        bench.iter(|| aa.dot(&ba).dot(&ca))
    });
    g.bench_function("ndarray-einsum", |bench| {
        let (a, b, cc) = (
            aa.clone().into_dyn(),
            ba.clone().into_dyn(),
            ca.clone().into_dyn(),
        );
        bench.iter(|| ndarray_einsum::einsum("ik,kl,lj->ij", &[&a, &b, &cc]).unwrap())
    });
    g.finish();
}

fn permutation(c: &mut Criterion) {
    let n = 256;
    let a = data(&[n, n, n], 0);
    let aa = array(&a);
    let mut g = group(
        c,
        "permutation kji = ijk, 256³",
        Throughput::Bytes(2 * 4 * (n * n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let t[k, j, i] = a[i, j, k]; }
            t
        })
    });
    g.bench_function("naive loop", |bench| {
        bench.iter(|| {
            let (a, mut t) = (a.as_slice(), vec![0.0f32; n * n * n]);
            for k in 0..n {
                for j in 0..n {
                    for i in 0..n {
                        t[(k * n + j) * n + i] = a[(i * n + j) * n + k];
                    }
                }
            }
            t
        })
    });
    g.bench_function("ndarray as_standard_layout", |bench| {
        bench.iter(|| {
            aa.view()
                .permuted_axes(IxDyn(&[2, 1, 0]))
                .as_standard_layout()
                .into_owned()
        })
    });
    g.bench_function("copy_from_slice (same bytes, no permutation)", |bench| {
        bench.iter(|| {
            let mut t = vec![0.0f32; n * n * n];
            t.copy_from_slice(a.as_slice());
            t
        })
    });
    g.finish();

    let n = 48;
    let a = data(&[n, n, n, n], 0);
    let aa = array(&a);
    let mut g = group(
        c,
        "permutation zxwy = xyzw, 48⁴",
        Throughput::Bytes(2 * 4 * (n * n * n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let t[z, x, w, y] = a[x, y, z, w]; }
            t
        })
    });
    g.bench_function("ndarray as_standard_layout", |bench| {
        bench.iter(|| {
            aa.view()
                .permuted_axes(IxDyn(&[2, 0, 3, 1]))
                .as_standard_layout()
                .into_owned()
        })
    });
    g.bench_function("copy_from_slice (same bytes, no permutation)", |bench| {
        bench.iter(|| {
            let mut t = vec![0.0f32; n * n * n * n];
            t.copy_from_slice(a.as_slice());
            t
        })
    });
    g.finish();
    into_existing_memory(c);
}

/// The permutations above into memory that already exists, against a copy of the same bytes
/// into existing memory: no allocation or first-touch page faults in either, so the ratio is
/// the permutation's own cost against the machine's copy bandwidth.
fn into_existing_memory(c: &mut Criterion) {
    // The second: inside the caches, the target's `k` rows nine pages apart (one cache set).
    // The fourth: odd extents, so the target's rows are not a whole number of cache lines
    // apart (3000 `f32`s, 187.5 lines). The fifth: every axis short and reversed, a row of
    // either side 96 bytes (a line and a half). The sixth: records of eight fields, each
    // field's values into a row of its own. The seventh: an image's rows and columns swapped,
    // its three channels kept together (`t[w, h, c] = s[h, w, c]`).
    for (name, shape) in [
        (
            "permutation kji = ijk, 256³, into existing memory",
            vec![256; 3],
        ),
        (
            "permutation kji = ijk, 96³, into existing memory",
            vec![96; 3],
        ),
        (
            "permutation zxwy = xyzw, 48⁴, into existing memory",
            vec![48; 4],
        ),
        (
            "permutation ji = ij, 3000 × 3001, into existing memory",
            vec![3000, 3001],
        ),
        (
            "permutation edcba = abcde, 24⁵, into existing memory",
            vec![24; 5],
        ),
        (
            "permutation ji = ij, 1000000 × 8, into existing memory",
            vec![1_000_000, 8],
        ),
        (
            "permutation jik = ijk, image 1024 × 1024 × 3, into existing memory",
            vec![1024, 1024, 3],
        ),
    ] {
        let a = data(&shape, 0);
        let target_shape: Vec<usize> = match shape.len() {
            2 => vec![shape[1], shape[0]],
            _ => shape.clone(),
        };
        let mut t = Tensor::<f32>::zeros(target_shape);
        let mut copy = vec![0.0f32; a.len()];
        let mut g = group(c, name, Throughput::Bytes(2 * 4 * a.len() as u64));
        g.bench_function("tensor!", |bench| match shape.len() {
            2 => bench.iter(|| tensor! { t[j, i] = a[i, j]; }),
            3 if shape[2] == 3 => bench.iter(|| tensor! { t[j, i, k] = a[i, j, k]; }),
            3 => bench.iter(|| tensor! { t[k, j, i] = a[i, j, k]; }),
            4 => bench.iter(|| tensor! { t[z, x, w, y] = a[x, y, z, w]; }),
            _ => bench.iter(|| tensor! { t[u, s, r, q, p] = a[p, q, r, s, u]; }),
        });
        g.bench_function("copy_from_slice (same bytes, no permutation)", |bench| {
            bench.iter(|| copy.copy_from_slice(a.as_slice()))
        });
        g.finish();
    }
}

fn reductions(c: &mut Criterion) {
    let n = 4096;
    let (a, b) = (data(&[n, n], 0), data(&[n, n], 1));
    let (aa, ba) = (array2(&a), array2(&b));
    let mut g = group(
        c,
        "dot product over 4096²",
        Throughput::Bytes(2 * 4 * (n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let s = a[i, j] * b[i, j]; }
            s
        })
    });
    g.bench_function("naive loop", |bench| {
        bench.iter(|| {
            a.as_slice()
                .iter()
                .zip(b.as_slice())
                .map(|(x, y)| x * y)
                .sum::<f32>()
        })
    });
    g.bench_function("ndarray Zip", |bench| {
        bench.iter(|| Zip::from(&aa).and(&ba).fold(0.0f32, |s, &x, &y| s + x * y))
    });
    g.finish();

    let mut g = group(
        c,
        "row sums over 4096²",
        Throughput::Bytes(4 * (n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let r[i] = a[i, j]; }
            r
        })
    });
    g.bench_function("naive loop", |bench| {
        bench.iter(|| {
            a.as_slice()
                .chunks(n)
                .map(|row| row.iter().sum::<f32>())
                .collect::<Vec<_>>()
        })
    });
    g.bench_function("ndarray sum_axis", |bench| {
        bench.iter(|| aa.sum_axis(Axis(1)))
    });
    g.finish();

    let mut g = group(
        c,
        "column sums over 4096²",
        Throughput::Bytes(4 * (n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let s[j] = a[i, j]; }
            s
        })
    });
    g.bench_function("naive loop", |bench| {
        bench.iter(|| {
            let mut sums = vec![0.0f32; n];
            for row in a.as_slice().chunks(n) {
                for (sum, &x) in sums.iter_mut().zip(row) {
                    *sum += x;
                }
            }
            sums
        })
    });
    g.bench_function("ndarray sum_axis", |bench| {
        bench.iter(|| aa.sum_axis(Axis(0)))
    });
    g.finish();
}

/// Statements on tiny tensors, where what runs before the loops (shape checks, the step's proof,
/// the overlap check of a view target) is most of the cost: the per-call overhead.
fn small_statements(c: &mut Criterion) {
    let (a, b) = (data(&[4, 4], 0), data(&[4, 4], 1));
    let mut r = Tensor::<f32>::zeros([4, 4]);
    let mut g = group(c, "small statements, 4×4", Throughput::Elements(1));
    g.bench_function("tensor! r = a + b (owned target)", |bench| {
        bench.iter(|| tensor! { r[i, j] = a[i, j] + b[i, j]; })
    });
    g.bench_function("tensor! r = a + b (view target)", |bench| {
        let view = r.view_mut();
        bench.iter(|| tensor! { view[i, j] = a[i, j] + b[i, j]; })
    });
    g.bench_function("tensor! r = a b (matmul)", |bench| {
        bench.iter(|| tensor! { r[i, j] = a[i, k] * b[k, j]; })
    });
    g.bench_function("naive loop r = a + b", |bench| {
        let mut out = [0.0f32; 16];
        let (a, b) = (a.as_slice(), b.as_slice());
        bench.iter(|| {
            let a = black_box(a);
            for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
                *o = x + y;
            }
            black_box(&mut out);
        })
    });
    g.bench_function(
        "hand loop r = a + b on the Tensors, shapes checked",
        |bench| {
            let mut out = Tensor::<f32>::zeros([4, 4]);
            bench.iter(|| hand_sum_checked(&mut out, black_box(&a), &b))
        },
    );
    g.bench_function("naive loop r = a b", |bench| {
        let mut out = [0.0f32; 16];
        let (a, b) = (a.as_slice(), b.as_slice());
        bench.iter(|| {
            let a = black_box(a);
            for i in 0..4 {
                for j in 0..4 {
                    out[i * 4 + j] = (0..4).map(|k| a[i * 4 + k] * b[k * 4 + j]).sum();
                }
            }
            black_box(&mut out);
        })
    });
    g.finish();
}

/// `out = a + b` as a careful hand loop over `Tensor`s whose shapes are known only at run time
/// writes it: the shapes compared first, then one loop over the slices.
fn hand_sum_checked(out: &mut Tensor<f32>, a: &Tensor<f32>, b: &Tensor<f32>) {
    assert_eq!(out.shape(), a.shape(), "shapes of out and a");
    assert_eq!(out.shape(), b.shape(), "shapes of out and b");
    for ((o, x), y) in out
        .as_mut_slice()
        .iter_mut()
        .zip(a.as_slice())
        .zip(b.as_slice())
    {
        *o = x + y;
    }
}

/// Element-wise sums and matrix products of `n × n` `Tensor<f32>`s against hand loops and
/// ndarray's `Zip` and `general_mat_mul` on the same shapes, each statement a group of its own.
fn small_matrices(c: &mut Criterion) {
    for n in [4, 8, 16, 32, 64] {
        let (a, b) = (data(&[n, n], 0), data(&[n, n], 1));
        let (aa, ba) = (array2(&a), array2(&b));
        let mut r = Tensor::<f32>::zeros([n, n]);
        let mut ra = Array2::<f32>::zeros((n, n));
        let mut g = group(
            c,
            &format!("small r = a + b, {n}×{n}"),
            Throughput::Elements(1),
        );
        g.bench_function("tensor!", |bench| {
            bench.iter(|| tensor! { r[i, j] = a[i, j] + b[i, j]; })
        });
        g.bench_function("naive loop", |bench| {
            let mut out = vec![0.0f32; n * n];
            let (a, b) = (a.as_slice(), b.as_slice());
            bench.iter(|| {
                let a = black_box(a);
                for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
                    *o = x + y;
                }
                black_box(&mut out);
            })
        });
        g.bench_function("hand loop on the Tensors, shapes checked", |bench| {
            let mut out = Tensor::<f32>::zeros([n, n]);
            bench.iter(|| hand_sum_checked(&mut out, black_box(&a), &b))
        });
        g.bench_function("ndarray Zip", |bench| {
            bench.iter(|| {
                Zip::from(&mut ra)
                    .and(black_box(&aa))
                    .and(&ba)
                    .for_each(|r, &x, &y| *r = x + y)
            })
        });
        g.finish();
        let mut g = group(
            c,
            &format!("small matmul, {n}×{n}"),
            Throughput::Elements(1),
        );
        g.bench_function("tensor!", |bench| {
            bench.iter(|| tensor! { r[i, j] = a[i, k] * b[k, j]; })
        });
        g.bench_function("tensor!, factors the other way round", |bench| {
            bench.iter(|| tensor! { r[i, j] = b[k, j] * a[i, k]; })
        });
        g.bench_function("naive loop", |bench| {
            let mut out = vec![0.0f32; n * n];
            let (a, b) = (a.as_slice(), b.as_slice());
            bench.iter(|| {
                let a = black_box(a);
                for i in 0..n {
                    for j in 0..n {
                        out[i * n + j] = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
                    }
                }
                black_box(&mut out);
            })
        });
        g.bench_function("ndarray general_mat_mul", |bench| {
            bench.iter(|| ndarray::linalg::general_mat_mul(1.0, black_box(&aa), &ba, 0.0, &mut ra))
        });
        g.finish();
    }
}

/// Small statements over nested arrays (static extents, loops written out and unrolled)
/// against the same statement on `Tensor`s and a hand-written loop over the arrays.
fn static_shapes(c: &mut Criterion) {
    let cube = |seed: usize| -> [[f64; 3]; 3] {
        let t = data(&[3, 3], seed);
        std::array::from_fn(|i| std::array::from_fn(|j| f64::from(t.as_slice()[i * 3 + j])))
    };
    let to_tensor = |shape: &[usize], values: &[f64]| {
        Tensor::from_shape_vec(shape.to_vec(), values.to_vec()).expect("matching lengths")
    };

    // Elasticity: s[i, j] = C[i, j, k, l] e[k, l], 3 × 3 × 3 × 3 and 3 × 3.
    let stiffness: [[[[f64; 3]; 3]; 3]; 3] =
        std::array::from_fn(|i| std::array::from_fn(|j| cube(i * 3 + j)));
    let strain = cube(20);
    let flat_c: Vec<f64> = stiffness
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .copied()
        .collect();
    let flat_e: Vec<f64> = strain.iter().flatten().copied().collect();
    let (dyn_c, dyn_e) = (
        to_tensor(&[3, 3, 3, 3], &flat_c),
        to_tensor(&[3, 3], &flat_e),
    );
    let mut stress = [[0.0f64; 3]; 3];
    let mut dyn_s = Tensor::<f64>::zeros([3, 3]);
    let mut g = group(
        c,
        "static elasticity 3×3×3×3 · 3×3, f64",
        Throughput::Elements(1),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            let (cc, e) = (black_box(&stiffness), black_box(&strain));
            tensor! { stress[i, j] = cc[i, j, k, l] * e[k, l]; }
            black_box(&stress);
        })
    });
    g.bench_function("tensor! on Tensors", |bench| {
        bench.iter(|| {
            let (cc, e) = (black_box(&dyn_c), black_box(&dyn_e));
            tensor! { dyn_s[i, j] = cc[i, j, k, l] * e[k, l]; }
            black_box(&dyn_s);
        })
    });
    g.bench_function("hand-written loop", |bench| {
        bench.iter(|| {
            let (cc, e) = (black_box(&stiffness), black_box(&strain));
            for i in 0..3 {
                for j in 0..3 {
                    let mut sum = 0.0;
                    for k in 0..3 {
                        for l in 0..3 {
                            sum += cc[i][j][k][l] * e[k][l];
                        }
                    }
                    stress[i][j] = sum;
                }
            }
            black_box(&stress);
        })
    });
    // What one writes for shapes known at run time: the same loops over `Vec`s, the extent
    // hidden from the optimizer.
    g.bench_function("hand-written loop on Vecs", |bench| {
        let mut s = vec![0.0f64; 9];
        bench.iter(|| {
            let (cc, e) = (black_box(flat_c.as_slice()), black_box(flat_e.as_slice()));
            let n = black_box(3usize);
            for i in 0..n {
                for j in 0..n {
                    let mut sum = 0.0;
                    for k in 0..n {
                        for l in 0..n {
                            sum += cc[((i * n + j) * n + k) * n + l] * e[k * n + l];
                        }
                    }
                    s[i * n + j] = sum;
                }
            }
            black_box(&mut s);
        })
    });
    g.finish();

    // A 3 × 3 matrix product.
    let (a, b) = (cube(30), cube(31));
    let flat = |m: &[[f64; 3]; 3]| -> Vec<f64> { m.iter().flatten().copied().collect() };
    let (dyn_a, dyn_b) = (to_tensor(&[3, 3], &flat(&a)), to_tensor(&[3, 3], &flat(&b)));
    let mut product = [[0.0f64; 3]; 3];
    let mut dyn_p = Tensor::<f64>::zeros([3, 3]);
    let mut g = group(c, "static matmul 3×3, f64", Throughput::Elements(1));
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            let (a, b) = (black_box(&a), black_box(&b));
            tensor! { product[i, j] = a[i, k] * b[k, j]; }
            black_box(&product);
        })
    });
    g.bench_function("tensor! on Tensors", |bench| {
        bench.iter(|| {
            let (a, b) = (black_box(&dyn_a), black_box(&dyn_b));
            tensor! { dyn_p[i, j] = a[i, k] * b[k, j]; }
            black_box(&dyn_p);
        })
    });
    g.bench_function("hand-written loop", |bench| {
        bench.iter(|| {
            let (a, b) = (black_box(&a), black_box(&b));
            for i in 0..3 {
                for j in 0..3 {
                    product[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
                }
            }
            black_box(&product);
        })
    });
    g.bench_function("hand-written loop on Vecs", |bench| {
        let (flat_a, flat_b) = (flat(&a), flat(&b));
        let mut p = vec![0.0f64; 9];
        bench.iter(|| {
            let (a, b) = (black_box(flat_a.as_slice()), black_box(flat_b.as_slice()));
            let n = black_box(3usize);
            for i in 0..n {
                for j in 0..n {
                    p[i * n + j] = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
                }
            }
            black_box(&mut p);
        })
    });
    g.finish();

    // Rotating a rank-3 tensor: r[i, j, k] = q[i, a] q[j, b] q[k, c] t[a, b, c], written as
    // three one-index rotations (what one writes by hand, 3 · 81 multiply-adds).
    let q = cube(40);
    let t: [[[f64; 3]; 3]; 3] = std::array::from_fn(|i| cube(41 + i));
    let dyn_q = to_tensor(&[3, 3], &flat(&q));
    let flat_t: Vec<f64> = t.iter().flatten().flatten().copied().collect();
    let dyn_t = to_tensor(&[3, 3, 3], &flat_t);
    let mut g = group(
        c,
        "static rank-3 rotation 3×3×3, f64",
        Throughput::Elements(1),
    );
    // By value: the optimizer hoists loop-invariant work over borrowed arrays out of the
    // measurement loop.
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(q), black_box(t));
            tensor! {
                let u[i, b, c] = q[i, a] * t[a, b, c];
                let v[i, j, c] = q[j, b] * u[i, b, c];
                let r[i, j, k] = q[k, c] * v[i, j, c];
            }
            black_box(&r);
        })
    });
    g.bench_function("tensor! on Tensors", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(&dyn_q), black_box(&dyn_t));
            tensor! {
                let u[i, b, c] = q[i, a] * t[a, b, c];
                let v[i, j, c] = q[j, b] * u[i, b, c];
                let r[i, j, k] = q[k, c] * v[i, j, c];
            }
            black_box(&r);
        })
    });
    // One statement: a product of four tensors, contracted pair by pair in written-out loops.
    g.bench_function("tensor!, one statement", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(q), black_box(t));
            tensor! { let r[i, j, k] = q[i, a] * q[j, b] * q[k, c] * t[a, b, c]; }
            black_box(&r);
        })
    });
    g.bench_function("tensor! on Tensors, one statement", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(&dyn_q), black_box(&dyn_t));
            tensor! { let r[i, j, k] = q[i, a] * q[j, b] * q[k, c] * t[a, b, c]; }
            black_box(&r);
        })
    });
    // What one writes for shapes known at run time: the same three rotations over `Vec`s.
    g.bench_function("hand-written loop on Vecs", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(dyn_q.as_slice()), black_box(dyn_t.as_slice()));
            let n = black_box(3usize);
            let mut u = vec![0.0f64; n * n * n];
            let mut v = vec![0.0f64; n * n * n];
            let mut r = vec![0.0f64; n * n * n];
            for i in 0..n {
                for b in 0..n {
                    for c in 0..n {
                        u[(i * n + b) * n + c] =
                            (0..n).map(|a| q[i * n + a] * t[(a * n + b) * n + c]).sum();
                    }
                }
            }
            for i in 0..n {
                for j in 0..n {
                    for c in 0..n {
                        v[(i * n + j) * n + c] =
                            (0..n).map(|b| q[j * n + b] * u[(i * n + b) * n + c]).sum();
                    }
                }
            }
            for i in 0..n {
                for j in 0..n {
                    for k in 0..n {
                        r[(i * n + j) * n + k] =
                            (0..n).map(|c| q[k * n + c] * v[(i * n + j) * n + c]).sum();
                    }
                }
            }
            black_box(&r);
        })
    });
    g.bench_function("hand-written loop", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(q), black_box(t));
            let mut u = [[[0.0f64; 3]; 3]; 3];
            let mut v = [[[0.0f64; 3]; 3]; 3];
            let mut r = [[[0.0f64; 3]; 3]; 3];
            for i in 0..3 {
                for b in 0..3 {
                    for c in 0..3 {
                        u[i][b][c] = (0..3).map(|a| q[i][a] * t[a][b][c]).sum();
                    }
                }
            }
            for i in 0..3 {
                for j in 0..3 {
                    for c in 0..3 {
                        v[i][j][c] = (0..3).map(|b| q[j][b] * u[i][b][c]).sum();
                    }
                }
            }
            for i in 0..3 {
                for j in 0..3 {
                    for k in 0..3 {
                        r[i][j][k] = (0..3).map(|c| q[k][c] * v[i][j][c]).sum();
                    }
                }
            }
            black_box(&r);
        })
    });
    g.finish();

    // A rank-4 rotation as one statement of five factors: 3⁸ points as one nest, past the
    // static limit of 4096; pair by pair, four stages of 243.
    let t4: [[[[f64; 3]; 3]; 3]; 3] =
        std::array::from_fn(|h| std::array::from_fn(|i| cube(50 + h * 3 + i)));
    let mut g = group(
        c,
        "static rank-4 rotation 3×3×3×3, f64",
        Throughput::Elements(1),
    );
    g.bench_function("tensor!, one statement", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(q), black_box(t4));
            tensor! { let r[h, i, j, k] = q[h, d] * q[i, a] * q[j, b] * q[k, c] * t[d, a, b, c]; }
            black_box(&r);
        })
    });
    g.bench_function("tensor!, four statements", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(q), black_box(t4));
            tensor! {
                let u[h, a, b, c] = q[h, d] * t[d, a, b, c];
                let v[h, i, b, c] = q[i, a] * u[h, a, b, c];
                let w[h, i, j, c] = q[j, b] * v[h, i, b, c];
                let r[h, i, j, k] = q[k, c] * w[h, i, j, c];
            }
            black_box(&r);
        })
    });
    g.bench_function("hand-written loop", |bench| {
        bench.iter(|| {
            let (q, t) = (black_box(q), black_box(t4));
            let mut u = [[[[0.0f64; 3]; 3]; 3]; 3];
            let mut v = u;
            let mut w = u;
            let mut r = u;
            for h in 0..3 {
                for i in 0..3 {
                    for j in 0..3 {
                        for k in 0..3 {
                            u[h][i][j][k] = (0..3).map(|d| q[h][d] * t[d][i][j][k]).sum();
                        }
                    }
                }
            }
            for h in 0..3 {
                for i in 0..3 {
                    for j in 0..3 {
                        for k in 0..3 {
                            v[h][i][j][k] = (0..3).map(|a| q[i][a] * u[h][a][j][k]).sum();
                        }
                    }
                }
            }
            for h in 0..3 {
                for i in 0..3 {
                    for j in 0..3 {
                        for k in 0..3 {
                            w[h][i][j][k] = (0..3).map(|b| q[j][b] * v[h][i][b][k]).sum();
                        }
                    }
                }
            }
            for h in 0..3 {
                for i in 0..3 {
                    for j in 0..3 {
                        for k in 0..3 {
                            r[h][i][j][k] = (0..3).map(|c| q[k][c] * w[h][i][j][c]).sum();
                        }
                    }
                }
            }
            black_box(&r);
        })
    });
    g.finish();
}

/// f64: the GEMM and the seed contraction against the `gemm` crate's direct f64 calls.
fn double_precision(c: &mut Criterion) {
    let double = |shape: &[usize], seed: usize| {
        Tensor::<f64>::from_fn(shape, |ix| {
            (ix.iter().sum::<usize>() * 7919 + seed * 104_729) as f64 % 1009.0 / 1009.0 - 0.5
        })
    };
    let n = 512;
    let (a, b) = (double(&[n, n], 0), double(&[n, n], 1));
    let mut out = Tensor::<f64>::zeros([n, n]);
    let mut g = group(
        c,
        "f64 gemm 512³",
        Throughput::Elements(2 * (n * n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| tensor! { out[i, j] = a[i, k] * b[k, j]; })
    });
    g.bench_function("gemm crate", |bench| {
        let mut c = vec![0.0f64; n * n];
        let s = n as isize;
        // SAFETY: row-major n × n matrices with row stride n stay inside their slices.
        bench.iter(|| unsafe {
            gemm::gemm(
                n,
                n,
                n,
                c.as_mut_ptr(),
                1,
                s,
                false,
                a.as_slice().as_ptr(),
                1,
                s,
                b.as_slice().as_ptr(),
                1,
                s,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            )
        })
    });
    g.finish();
    let (ni, nj, nk, nl) = (128, 128, 64, 32);
    let (a, b) = (double(&[ni, nk, nl], 0), double(&[nk, nj, nl], 1));
    let mut g = group(
        c,
        "f64 seed 128·128·64·32",
        Throughput::Elements(2 * (ni * nj * nk * nl) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| {
            tensor! { let c[i, j] = a[i, k, l] * b[k, j, l]; }
            c
        })
    });
    let (a2, b2) = (double(&[ni, nk * nl], 0), double(&[nk * nl, nj], 1));
    g.bench_function("gemm crate (same-FLOP contiguous GEMM)", |bench| {
        let mut c = vec![0.0f64; ni * nj];
        let (kl, j) = ((nk * nl) as isize, nj as isize);
        // SAFETY: row-major matrices whose strides stay inside their slices.
        bench.iter(|| unsafe {
            gemm::gemm(
                ni,
                nj,
                nk * nl,
                c.as_mut_ptr(),
                1,
                j,
                false,
                a2.as_slice().as_ptr(),
                1,
                kl,
                b2.as_slice().as_ptr(),
                1,
                j,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            )
        })
    });
    g.finish();
}

/// Complex values from the real rule: operand `seed` plus i times operand `seed + 64`.
fn complex_data(shape: &[usize], seed: usize) -> Tensor<c32> {
    let (re, im) = (data(shape, seed), data(shape, seed + 64));
    let mut parts = re.iter().zip(im.iter());
    Tensor::from_fn(shape, |_| {
        let (&re, &im) = parts.next().expect("one value per element");
        c32::new(re, im)
    })
}

/// Complex contractions: a 1024³ `c32` GEMM against the `gemm` crate's own complex kernel, and
/// `conj` on one factor of the seed contraction against the same without it (the conjugation
/// is a flag of the kernel, so the two should run alike).
fn complex(c: &mut Criterion) {
    let n = 1024;
    let (a, b) = (complex_data(&[n, n], 0), complex_data(&[n, n], 1));
    let mut out = Tensor::<c32>::zeros([n, n]);
    // A complex multiply-add is 8 real operations.
    let mut g = group(
        c,
        "complex gemm 1024³, c32",
        Throughput::Elements(8 * (n * n * n) as u64),
    );
    g.bench_function("tensor!", |bench| {
        bench.iter(|| tensor! { out[i, j] = a[i, k] * b[k, j]; })
    });
    g.bench_function("tensor! conj(a)", |bench| {
        bench.iter(|| tensor! { out[i, j] = conj(a[i, k]) * b[k, j]; })
    });
    g.bench_function("gemm crate", |bench| {
        let mut c = vec![c32::new(0.0, 0.0); n * n];
        let s = n as isize;
        bench.iter(|| {
            // SAFETY: every matrix is n × n, row-major, inside its slice.
            unsafe {
                gemm::gemm(
                    n,
                    n,
                    n,
                    c.as_mut_ptr(),
                    1,
                    s,
                    false,
                    a.as_slice().as_ptr(),
                    1,
                    s,
                    b.as_slice().as_ptr(),
                    1,
                    s,
                    c32::new(0.0, 0.0),
                    c32::new(1.0, 0.0),
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                )
            }
        })
    });
    g.finish();

    let (ni, nj, nk, nl) = (256, 256, 64, 32);
    let (a, b) = (
        complex_data(&[ni, nk, nl], 0),
        complex_data(&[nk, nj, nl], 1),
    );
    let mut out = Tensor::<c32>::zeros([ni, nj]);
    let mut g = group(
        c,
        "complex seed c[i,j] = conj(a[i,k,l]) b[k,j,l], c32",
        Throughput::Elements(8 * (ni * nj * nk * nl) as u64),
    );
    g.bench_function("tensor! conj(a)", |bench| {
        bench.iter(|| tensor! { out[i, j] = conj(a[i, k, l]) * b[k, j, l]; })
    });
    g.bench_function("tensor! without conj", |bench| {
        bench.iter(|| tensor! { out[i, j] = a[i, k, l] * b[k, j, l]; })
    });
    g.finish();
}

/// A real matrix times a complex one (`c32`), read where it lies (real GEMMs on the complex
/// operand's parts, half the arithmetic), against the same product with the real matrix stored
/// as complex numbers: a GEMM 1024³ and a matrix-vector product 4096².
fn real_times_complex(c: &mut Criterion) {
    let n = 1024;
    let h = data(&[n, n], 0);
    let hc = h.mapv(c32::from);
    let psi = complex_data(&[n, n], 1);
    let mut out = Tensor::<c32>::zeros([n, n]);
    // Counted as complex multiply-adds, so both rows count the same work.
    let mut g = group(
        c,
        "real × complex gemm 1024³, c32",
        Throughput::Elements((n * n * n) as u64),
    );
    g.bench_function("tensor! real h", |bench| {
        bench.iter(|| tensor! { out[i, j] = h[i, k] * psi[k, j]; })
    });
    g.bench_function("tensor! complex h", |bench| {
        bench.iter(|| tensor! { out[i, j] = hc[i, k] * psi[k, j]; })
    });
    g.finish();

    let n = 4096;
    let h = data(&[n, n], 2);
    let hc = h.mapv(c32::from);
    let v = complex_data(&[n], 3);
    let mut w = Tensor::<c32>::zeros([n]);
    let mut g = group(
        c,
        "real × complex mat-vec 4096², c32",
        Throughput::Elements((n * n) as u64),
    );
    g.bench_function("tensor! real h", |bench| {
        bench.iter(|| tensor! { w[i] = h[i, j] * v[j]; })
    });
    g.bench_function("tensor! complex h", |bench| {
        bench.iter(|| tensor! { w[i] = hc[i, j] * v[j]; })
    });
    g.finish();
}

/// One contraction of the TCCG suite's kinds (`C-A-B` in its notation: `C[…] = Σ A[…] B[…]`)
/// against a contiguous GEMM of the same m, n and k (the products of A's free, B's free and
/// the contracted extents) through the `gemm` crate, in one group.
fn tccg_case(
    c: &mut Criterion,
    name: &str,
    shapes: [&[usize]; 3],
    [m, n, k]: [usize; 3],
    mut contract: impl FnMut(&Tensor<f32>, &Tensor<f32>, &mut Tensor<f32>),
) {
    let (x, y) = (data(shapes[0], 0), data(shapes[1], 1));
    let mut z = Tensor::<f32>::zeros(shapes[2]);
    assert_eq!(
        x.len() * y.len() * z.len(),
        m * k * k * n * m * n,
        "{name}: m, n, k"
    );
    let mut g = group(
        c,
        &format!("TCCG {name}"),
        Throughput::Elements(2 * (m * n * k) as u64),
    );
    g.bench_function("tensor!", |bench| bench.iter(|| contract(&x, &y, &mut z)));
    let (p, q) = (data(&[m, k], 2), data(&[k, n], 3));
    let mut r = vec![0.0f32; m * n];
    g.bench_function("gemm crate (same-FLOP contiguous GEMM)", |bench| {
        bench.iter(|| {
            let (k, n) = (k as isize, n as isize);
            gemm_crate(
                m,
                k as usize,
                n as usize,
                (p.as_slice(), k, 1),
                (q.as_slice(), n, 1),
                0.0,
                (&mut r, n, 1),
            )
        })
    });
    g.finish();
}

/// Eleven contractions of the kinds in the TCCG suite (free indices of an operand split
/// around the contracted ones, contracted indices first, last or in the middle, 2–4 free
/// indices per operand), each about 2.7 · 10⁸ multiply-adds.
fn tccg(c: &mut Criterion) {
    tccg_case(
        c,
        "abc-bda-dc",
        [&[128; 3], &[128; 2], &[128; 3]],
        [128 * 128, 128, 128],
        |x, y, z| {
            tensor! { z[a, b, c] = x[b, d, a] * y[d, c]; }
        },
    );
    tccg_case(
        c,
        "abc-dca-bd",
        [&[128; 3], &[128; 2], &[128; 3]],
        [128 * 128, 128, 128],
        |x, y, z| {
            tensor! { z[a, b, c] = x[d, c, a] * y[b, d]; }
        },
    );
    tccg_case(
        c,
        "abcd-dbea-ec",
        [&[32, 32, 256, 32], &[256, 32], &[32; 4]],
        [32 * 32 * 32, 32, 256],
        |x, y, z| {
            tensor! { z[a, b, c, d] = x[d, b, e, a] * y[e, c]; }
        },
    );
    tccg_case(
        c,
        "abcde-efbad-cf",
        [&[16, 64, 16, 16, 16], &[64, 64], &[16, 16, 64, 16, 16]],
        [16 * 16 * 16 * 16, 64, 64],
        |x, y, z| {
            tensor! { z[a, b, c, d, e] = x[e, f, b, a, d] * y[c, f]; }
        },
    );
    tccg_case(
        c,
        "abcd-ea-ebcd",
        [&[64, 128], &[64, 32, 32, 32], &[128, 32, 32, 32]],
        [128, 32 * 32 * 32, 64],
        |x, y, z| {
            tensor! { z[a, b, c, d] = x[e, a] * y[e, b, c, d]; }
        },
    );
    tccg_case(
        c,
        "abcd-eb-aecd",
        [&[64, 128], &[32, 64, 32, 32], &[32, 128, 32, 32]],
        [128, 32 * 32 * 32, 64],
        |x, y, z| {
            tensor! { z[a, b, c, d] = x[e, b] * y[a, e, c, d]; }
        },
    );
    tccg_case(
        c,
        "ab-acd-dbc",
        [&[512, 32, 32], &[32, 512, 32], &[512, 512]],
        [512, 512, 32 * 32],
        |x, y, z| {
            tensor! { z[a, b] = x[a, c, d] * y[d, b, c]; }
        },
    );
    tccg_case(
        c,
        "abc-acd-db",
        [&[64, 64, 1024], &[1024, 64], &[64; 3]],
        [64 * 64, 64, 1024],
        |x, y, z| {
            tensor! { z[a, b, c] = x[a, c, d] * y[d, b]; }
        },
    );
    tccg_case(
        c,
        "abc-adec-ebd",
        [&[64, 32, 32, 64], &[32, 64, 32], &[64; 3]],
        [64 * 64, 64, 32 * 32],
        |x, y, z| {
            tensor! { z[a, b, c] = x[a, d, e, c] * y[e, b, d]; }
        },
    );
    tccg_case(
        c,
        "abcd-aebf-dfce",
        [&[24, 28, 24, 28], &[24, 28, 24, 28], &[24; 4]],
        [24 * 24, 24 * 24, 28 * 28],
        |x, y, z| {
            tensor! { z[a, b, c, d] = x[a, e, b, f] * y[d, f, c, e]; }
        },
    );
    tccg_case(
        c,
        "abcdef-dega-gfbc",
        [&[12, 12, 90, 12], &[90, 12, 12, 12], &[12; 6]],
        [12 * 12 * 12, 12 * 12 * 12, 90],
        |x, y, z| {
            tensor! { z[a, b, c, d, e, f] = x[d, e, g, a] * y[g, f, b, c]; }
        },
    );
}

criterion_group!(
    workloads,
    double_precision,
    gemm_1024,
    complex,
    real_times_complex,
    seed_contraction,
    batched_matmul,
    four_index_transform,
    fused_elementwise,
    chain,
    permutation,
    reductions,
    small_statements,
    small_matrices,
    static_shapes,
    tccg
);
criterion_main!(workloads);
