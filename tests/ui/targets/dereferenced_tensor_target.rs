use tensor_dsl::{tensor, Tensor};

fn scale(t: &mut Tensor<f64>, a: &Tensor<f64>) {
    tensor! { *t[i] = 2 * a[i]; }
}

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let mut t = Tensor::<f64>::zeros([3]);
    scale(&mut t, &a);
}
