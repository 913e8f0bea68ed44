use tensor_dsl::{c32, c64, tensor, Tensor};

fn main() {
    let (x, y) = (Tensor::<f64>::zeros([3]), Tensor::<f32>::zeros([3]));
    let z = Tensor::<c64>::zeros([3]);
    // An `f32` tensor into an `f64` target: reported on the operand.
    let mut real = Tensor::<f64>::zeros([3]);
    tensor! { real[i] = x[i] + y[i]; }
    // A real tensor of the other precision into a complex target: reported on the operand.
    let mut narrow = Tensor::<c32>::zeros([3]);
    tensor! { narrow[i] = x[i] * 2; }
    // A complex value into a real target: reported on the target, once.
    tensor! { real[i] = x[i] * z[i] + x[i]; }
    // Complex into a real target of the other precision: reported where the types first part.
    let mut single = Tensor::<f32>::zeros([3]);
    tensor! { single[i] = z[i]; }
    // Into a complex target, a real tensor of its precision is read as it lies: no error.
    let mut wide = Tensor::<c64>::zeros([3]);
    tensor! { wide[i] = x[i] * z[i] + x[i]; }
}
