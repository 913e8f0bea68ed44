use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<i64>::zeros([3, 3]);
    tensor! { let l[i, j] = cholesky(a[i, j]); }
}
