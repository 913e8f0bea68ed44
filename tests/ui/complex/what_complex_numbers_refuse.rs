use tensor_dsl::{c64, tensor, Tensor};

fn main() {
    let z = Tensor::<c64>::zeros([3]);
    let x = Tensor::<f64>::zeros([3]);
    tensor! {
        let largest[i] = max(z[i], 0);
        let smallest = min(z[i], z[i]);
    }
    let mut real = Tensor::<f64>::zeros([3]);
    tensor! { real[i] = z[i] * 2; }
    // A real tensor mixes only with the complex type of its precision.
    let y = Tensor::<f32>::zeros([3]);
    tensor! { let mixed[i] = z[i] * x[i] + y[i]; }
}
