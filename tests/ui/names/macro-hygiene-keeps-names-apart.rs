use tensor_dsl::{tensor, Tensor};

// The macro's own `a` and the caller's `a` are two variables; `tensor!` sees two equal names.
macro_rules! add_local_to {
    ($out:ident, $x:ident) => {
        let a = Tensor::<f64>::zeros([3]);
        tensor! { $out[i] = a[i] + $x[i]; }
    };
}

// The block's `let a` (the macro's) does not shadow the caller's `a` read after it.
macro_rules! double_then_copy {
    ($out:ident, $x:ident) => {
        tensor! {
            let a[i] = 2 * $x[i];
            $out[i] = $x[i] + a[i];
        }
    };
}

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let mut c = Tensor::<f64>::zeros([3]);
    add_local_to!(c, a);
    double_then_copy!(c, a);
}
