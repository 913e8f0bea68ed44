use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    tensor! { let v[i] = a[i] + 1u8; }
}
