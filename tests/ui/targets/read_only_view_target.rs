use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let t = Tensor::<f64>::zeros([3]);
    let v = t.view();
    tensor! { v[i] = a[i]; }
}
