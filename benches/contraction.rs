//! The seed contraction `c[i, j] = a[i, k, l] * b[k, j, l]` through `tensor!` against a naive
//! loop over slices on the same shapes; criterion prints both, so their ratio is the figure
//! to read (the machines are shared and absolute times are noisy).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use tensor_dsl::{tensor, Tensor};

fn filled(shape: [usize; 3], seed: usize) -> Tensor<f32> {
    let mut t = seed;
    Tensor::from_fn(shape, |_| {
        t = (t * 7919 + 104_729) % 1009;
        t as f32 / 1009.0 - 0.5
    })
}

fn seed_contraction(criterion: &mut Criterion) {
    let (ni, nj, nk, nl) = (128, 128, 32, 16);
    let a = filled([ni, nk, nl], 1);
    let b = filled([nk, nj, nl], 2);
    let mut group = criterion.benchmark_group("seed contraction 128x128x32x16 f32");
    group.throughput(Throughput::Elements((2 * ni * nj * nk * nl) as u64));
    group.bench_function("tensor!", |bench| {
        bench.iter(|| {
            let (a, b) = (black_box(&a), black_box(&b));
            tensor! { let c[i, j] = a[i, k, l] * b[k, j, l]; }
            c
        })
    });
    group.bench_function("naive loop", |bench| {
        bench.iter(|| {
            let (a, b) = (black_box(a.as_slice()), black_box(b.as_slice()));
            let mut c = vec![0.0f32; ni * nj];
            for i in 0..ni {
                for j in 0..nj {
                    let mut sum = 0.0;
                    for k in 0..nk {
                        for l in 0..nl {
                            sum += a[(i * nk + k) * nl + l] * b[(k * nj + j) * nl + l];
                        }
                    }
                    c[i * nj + j] = sum;
                }
            }
            c
        })
    });
    group.finish();
}

criterion_group!(benches, seed_contraction);
criterion_main!(benches);
