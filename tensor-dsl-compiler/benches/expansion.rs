//! Expansion time of the macro: the whole compiler (parse, check, passes, lower, emit) on the
//! seed statement and on a block of several statements.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use quote::quote;
use tensor_dsl_compiler::{expand, Flavor};

fn expansion(criterion: &mut Criterion) {
    let seed = quote! { let c[i, j] = a[i, k, l] * b[k, j, l]; };
    criterion.bench_function("expand seed statement", |bench| {
        bench.iter(|| expand(black_box(seed.clone()), Flavor::Panic))
    });
    let block = quote! {
        let c[i, j] = a[i, k, l] * b[k, j, l];
        d[i, j] += 2.0 * alpha * c[i, k] * e[k, j];
        let s = c[i, j] * c[i, j];
        y[b, o] = w[o, k] * x[b, k] + tanh(bias[o]) - y[o, b];
    };
    criterion.bench_function("expand four-statement block", |bench| {
        bench.iter(|| expand(black_box(block.clone()), Flavor::Panic))
    });
}

criterion_group!(benches, expansion);
criterion_main!(benches);
