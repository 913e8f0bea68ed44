use tensor_dsl::{tensor, Tensor};

// Three statements with three different mistakes: all are reported, and the bindings the
// block makes still exist afterwards, so no "cannot find value" errors follow.
fn main() {
    let a = Tensor::<f64>::zeros([3, 3]);
    tensor! {
        let b[i, i] = a[i, i];
        let c[i] = a[i, j] +;
        let s = a[i, j] * a[i];
    }
    let _: &Tensor<f64> = &b;
    let _ = (&c, s);
}
