use tensor_dsl::{tensor, Tensor};

fn main() {
    let x = Tensor::<f64>::zeros([5]);
    let mut c = Tensor::<f64>::zeros([4]);
    let n = 4usize;
    tensor! {
        // A range target reading the tensor it cuts.
        c[i in 0..2] = c[i];
        // A range on a new tensor's index.
        let d[i in 0..2] = x[i];
        // A range of the statement's own target.
        c[i] = c[i in 1..];
        // A range's end is left out, not included.
        let e[i] = x[i in 0..=n];
    }
}
