//! The same inputs give the same bits on any number of threads: large scalar sums are cut into a
//! fixed number of parts whatever the pool's size, and the other splits (target loops, GEMM
//! batches and rows) give each element to one thread, which computes it as one thread would.
//! Each case is sized past the thresholds at which work is shared between threads.

use tensor_dsl::{tensor, Tensor};

fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool")
        .install(f)
}

/// Values whose sums round differently in different orders.
fn data(shape: &[usize], seed: u64) -> Tensor<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    Tensor::from_fn(shape, |_| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
        (unit - 0.3) * 1e3f32.powf(unit)
    })
}

fn bits(t: &Tensor<f32>) -> Vec<u32> {
    t.as_slice().iter().map(|x| x.to_bits()).collect()
}

#[test]
fn scalar_sums_have_the_same_bits_on_any_thread_count() {
    let (a, b) = (data(&[1 << 20], 1), data(&[1 << 20], 2));
    let dot = |threads| {
        on_threads(threads, || {
            tensor! { let s = a[i] * b[i]; }
            s.to_bits()
        })
    };
    let one = dot(1);
    for threads in [2, 3, 4, 7] {
        assert_eq!(dot(threads), one, "{threads} threads");
    }
    // A sum over two loops, the outer one split.
    let m = data(&[1024, 1024], 3);
    let total = |threads| {
        on_threads(threads, || {
            tensor! { let s = m[i, j]; }
            s.to_bits()
        })
    };
    let one = total(1);
    for threads in [2, 3, 5] {
        assert_eq!(total(threads), one, "{threads} threads");
    }
}

#[test]
fn split_targets_and_gemms_have_the_same_bits_on_any_thread_count() {
    let (m, v) = (data(&[512, 2048], 4), data(&[2048], 5));
    let (a, b) = (data(&[256, 384], 6), data(&[384, 320], 7));
    let (x, y, z) = (data(&[96, 80], 8), data(&[80, 72], 9), data(&[72, 64], 10));
    let run = |threads| {
        on_threads(threads, || {
            tensor! {
                let mv[i] = m[i, j] * v[j];
                let ab[i, j] = a[i, k] * b[k, j];
                let xyz[i, l] = x[i, j] * y[j, k] * z[k, l];
            }
            [bits(&mv), bits(&ab), bits(&xyz)]
        })
    };
    let one = run(1);
    for threads in [2, 3, 4] {
        assert!(run(threads) == one, "{threads} threads");
    }
}

#[test]
fn gemms_split_between_threads_keep_their_bits() {
    // Shapes on each side of the limits where the GEMM kernel's choices depend on how many rows
    // or columns a call has (see `split_exactly` in the runtime): a dot-product kernel at
    // m·n ≤ 256 (b read along k), k blocked by 512 when m and n are at most 64, a
    // matrix-vector kernel at one row or column; and inner dimensions long enough to be summed
    // in groups (one group per thread, or more). Each shape also runs transposed (m and n
    // swapped), where threads cut the columns, the longer side, instead of the rows.
    let shapes: [(usize, usize, usize); 6] = [
        (40, 4000, 14),
        (200, 1000, 60),
        (130, 2000, 64),
        (70, 3000, 70),
        (64, 100_000, 64),
        (300, 9000, 20),
    ];
    let transposed = shapes.map(|(m, k, n)| (n, k, m));
    for (m, k, n) in shapes.into_iter().chain(transposed) {
        let a = data(&[m, k], 11);
        let bt = data(&[n, k], 12);
        let b = data(&[k, n], 13);
        let run = |threads| {
            on_threads(threads, || {
                tensor! {
                    let along_k[i, j] = a[i, k] * bt[j, k];
                    let across_k[i, j] = a[i, k] * b[k, j];
                }
                [bits(&along_k), bits(&across_k)]
            })
        };
        let one = run(1);
        for threads in [2, 3, 4, 5] {
            assert!(run(threads) == one, "{m}×{k}×{n} on {threads} threads");
        }
    }
}
