use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([2]);
    tensor! { let s = a[] * 2; }
    let _ = s;
}
