use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<i32>::zeros([3]);
    let n = 2i32;
    tensor! {
        let halves[i] = a[i] / 2;
        let scaled[i] = a[i] / n;
        let grown[i] = exp(a[i]) + powi(a[i], 2);
        let third[i] = 0.5 * a[i];
        let huge[i] = 3000000000 * a[i];
    }
    let wide = Tensor::<i64>::zeros([3]);
    tensor! { let fine[i] = 3000000000 * wide[i] + max(wide[i], 0); }
}
