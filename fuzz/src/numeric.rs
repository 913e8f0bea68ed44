//! Element types a block is generated in (`f64`, `i64`, `c64`) → how each side computes in
//! them: the plan side through the runtime's own `Element`/`Fractional`/`Real` methods, as the
//! emitted code calls them, the naive side directly (`f64` and `num_complex` arithmetic,
//! wrapping integers), carrying a rounding magnitude (see [`crate::naive`]). Invariant: both
//! sides see the same inputs, converted once from the block's [`Sample`]s.

use tensor_dsl_compiler::ir::{BinaryOp, Function};
use tensor_dsl_runtime::{c64, Element, Fractional, Real};

use crate::block::LETTERS;
use crate::memory::literal_exponent;
use crate::plan::TYPED_MAX_LOOPS;

/// A generated value, whatever the block's element type: real blocks use the real part only,
/// integer blocks hold whole numbers there.
pub type Sample = c64;

/// Which element type a block computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    F64,
    I64,
    C64,
}

impl ElementType {
    /// The type's name as a block writes it (`let x[i]: Tensor<…>`).
    pub fn name(self) -> &'static str {
        match self {
            ElementType::F64 => "f64",
            ElementType::I64 => "i64",
            ElementType::C64 => "c64",
        }
    }

    /// The index letters a block of this type uses: all of them for `f64`, the first
    /// [`TYPED_MAX_LOOPS`] for the others, whose plans run only steps of that many loops
    /// (see [`crate::plan::Dispatched`]).
    pub fn letters(self) -> &'static [&'static str] {
        match self {
            ElementType::F64 => &LETTERS,
            ElementType::I64 | ElementType::C64 => &LETTERS[..TYPED_MAX_LOOPS],
        }
    }
}

/// A value and its magnitude on the naive side.
pub type Value<V> = (V, f64);

/// An element type both sides compute in.
pub trait Fuzzed: Element {
    /// A block's value in this type.
    fn from_sample(sample: Sample) -> Self;

    /// `f(args)` as the emitted code computes it (the runtime's trait methods).
    fn call(function: Function, args: &[Self]) -> Self;

    /// `a / b` as the emitted code computes it.
    fn over(a: Self, b: Self) -> Self;

    /// `|x|`, for magnitudes.
    fn norm(self) -> f64;

    /// Whether `got` is `expected` within the tolerance its magnitude allows.
    fn close(got: Self, expected: Self, magnitude: f64) -> bool;

    /// `a op b` on the naive side, with its magnitude.
    fn naive_binary(op: BinaryOp, a: Value<Self>, b: Value<Self>) -> Value<Self>;

    /// `f(args)` on the naive side, with its magnitude.
    fn naive_call(function: Function, args: &[Value<Self>]) -> Value<Self>;

    /// Whether a value may be an infinity or a NaN (which taints a term's magnitude).
    fn is_finite(self) -> bool;
}

/// `d·m`, with `0·∞ = 0` (an exact input has no error to amplify).
fn amplify(derivative: f64, magnitude: f64) -> f64 {
    if magnitude == 0.0 {
        0.0
    } else {
        derivative.abs() * magnitude
    }
}

/// Whether `x` is zero within the rounding its magnitude allows: another evaluation order may
/// make it exactly zero (or negative), so a pole or a branch point there (`1/x`, `ln`, `sqrt`,
/// negative powers) makes the result undefined, not merely inexact.
fn near_zero(value: f64, magnitude: f64) -> bool {
    magnitude > 0.0 && value.abs() <= crate::TOLERANCE * magnitude
}

/// Whether a function has a pole or a branch point at zero.
fn singular_at_zero(function: Function) -> bool {
    matches!(function, Function::Ln | Function::Sqrt)
        || matches!(function, Function::Powi(n) if literal_exponent(n) < 0)
}

/// The product of two naive values in any type with a norm.
fn mul<V: Fuzzed>(a: Value<V>, b: Value<V>) -> Value<V> {
    (
        a.0 * b.0,
        amplify(b.0.norm(), a.1) + amplify(a.0.norm(), b.1),
    )
}

/// `+`, `-` and `*`, shared by every type (`/` is each type's own).
fn ring<V: Fuzzed>(op: BinaryOp, a: Value<V>, b: Value<V>) -> Value<V> {
    match op {
        BinaryOp::Add => (a.0.plus(b.0), a.1 + b.1),
        BinaryOp::Sub => (a.0.minus(b.0), a.1 + b.1),
        BinaryOp::Mul => mul(a, b),
        BinaryOp::Div => unreachable!("each type divides on its own"),
    }
}

impl Fuzzed for f64 {
    fn from_sample(sample: Sample) -> f64 {
        sample.re
    }

    fn call(function: Function, args: &[f64]) -> f64 {
        let a = args[0];
        match function {
            Function::Exp => Fractional::exp(a),
            Function::Ln => Fractional::ln(a),
            Function::Sqrt => Fractional::sqrt(a),
            Function::Abs => Element::abs(a),
            Function::Sin => Fractional::sin(a),
            Function::Cos => Fractional::cos(a),
            Function::Tan => Fractional::tan(a),
            Function::Tanh => Fractional::tanh(a),
            Function::Sigmoid => Fractional::sigmoid(a),
            Function::Max => Real::max(a, args[1]),
            Function::Min => Real::min(a, args[1]),
            Function::Pow => Fractional::pow(a, args[1]),
            Function::Powi(n) => Fractional::powi(a, literal_exponent(n)),
            Function::Conj => Element::conj(a),
            Function::Re => Element::re(a),
            Function::Im => Element::im(a),
        }
    }

    fn over(a: f64, b: f64) -> f64 {
        Fractional::over(a, b)
    }

    fn norm(self) -> f64 {
        self.abs()
    }

    fn close(got: f64, expected: f64, magnitude: f64) -> bool {
        if got == expected || (got.is_nan() && expected.is_nan()) {
            return true;
        }
        // Not finite: the naive value overflowed or is undefined; rounding decides the rest.
        if !magnitude.is_finite() || !expected.is_finite() {
            return true;
        }
        (got - expected).abs() <= crate::TOLERANCE * magnitude.max(expected.abs())
    }

    fn naive_binary(op: BinaryOp, a: Value<f64>, b: Value<f64>) -> Value<f64> {
        match op {
            BinaryOp::Div if near_zero(b.0, b.1) => (a.0 / b.0, f64::INFINITY),
            BinaryOp::Div => (
                a.0 / b.0,
                amplify(1.0 / b.0, a.1) + amplify(a.0 / (b.0 * b.0), b.1),
            ),
            _ => ring(op, a, b),
        }
    }

    fn naive_call(function: Function, args: &[Value<f64>]) -> Value<f64> {
        let (x, m) = args[0];
        if singular_at_zero(function) && near_zero(x, m) {
            let value = Self::naive_call(function, &[(x, 0.0)]).0;
            return (value, f64::INFINITY);
        }
        match function {
            Function::Exp => (x.exp(), amplify(x.exp(), m) + x.exp().abs()),
            Function::Ln => (x.ln(), amplify(1.0 / x, m) + x.ln().abs()),
            Function::Sqrt => (x.sqrt(), amplify(0.5 / x.sqrt(), m) + x.sqrt().abs()),
            Function::Abs => (x.abs(), m),
            Function::Sin => (x.sin(), amplify(x.cos(), m) + x.sin().abs()),
            Function::Cos => (x.cos(), amplify(x.sin(), m) + x.cos().abs()),
            Function::Tan => (x.tan(), amplify(1.0 + x.tan() * x.tan(), m) + x.tan().abs()),
            Function::Tanh => (
                x.tanh(),
                amplify(1.0 - x.tanh() * x.tanh(), m) + x.tanh().abs(),
            ),
            Function::Sigmoid => {
                let s = 1.0 / (1.0 + (-x).exp());
                (s, amplify(s * (1.0 - s), m) + s)
            }
            Function::Pow => {
                let (y, my) = args[1];
                let value = x.powf(y);
                let by_base = amplify(y * x.powf(y - 1.0), m);
                let by_exponent = amplify(value * x.abs().ln(), my);
                (value, by_base + by_exponent + value.abs())
            }
            // `max(NaN, y)` is `y`: keep the taint of a non-finite argument, whose value may
            // legitimately differ with evaluation order (∞·0 after distributing a sum).
            Function::Max | Function::Min if !(m + args[1].1).is_finite() => {
                let value = if function == Function::Max {
                    x.max(args[1].0)
                } else {
                    x.min(args[1].0)
                };
                (value, f64::INFINITY)
            }
            Function::Max => (x.max(args[1].0), m.max(args[1].1)),
            Function::Min => (x.min(args[1].0), m.max(args[1].1)),
            Function::Powi(n) => {
                let n = literal_exponent(n);
                let value = x.powi(n);
                let derivative = f64::from(n) * x.powi(n - 1);
                (value, amplify(derivative, m) + value.abs())
            }
            Function::Conj | Function::Re => (x, m),
            Function::Im => (0.0, 0.0),
        }
    }

    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// Integers are exact: magnitudes stay 0, and values compare equal or not at all.
impl Fuzzed for i64 {
    fn from_sample(sample: Sample) -> i64 {
        sample.re as i64
    }

    fn call(function: Function, args: &[i64]) -> i64 {
        let a = args[0];
        match function {
            Function::Abs => Element::abs(a),
            Function::Max => Real::max(a, args[1]),
            Function::Min => Real::min(a, args[1]),
            Function::Conj => Element::conj(a),
            Function::Re => Element::re(a),
            Function::Im => Element::im(a),
            other => panic!("harness: `{}` in an integer block", other.name()),
        }
    }

    fn over(_: i64, _: i64) -> i64 {
        panic!("harness: `/` in an integer block")
    }

    fn norm(self) -> f64 {
        self.unsigned_abs() as f64
    }

    fn close(got: i64, expected: i64, _magnitude: f64) -> bool {
        got == expected
    }

    fn naive_binary(op: BinaryOp, a: Value<i64>, b: Value<i64>) -> Value<i64> {
        let value = match op {
            BinaryOp::Add => a.0.wrapping_add(b.0),
            BinaryOp::Sub => a.0.wrapping_sub(b.0),
            BinaryOp::Mul => a.0.wrapping_mul(b.0),
            BinaryOp::Div => panic!("harness: `/` in an integer block"),
        };
        (value, 0.0)
    }

    fn naive_call(function: Function, args: &[Value<i64>]) -> Value<i64> {
        let x = args[0].0;
        let value = match function {
            Function::Abs => x.wrapping_abs(),
            Function::Max => Ord::max(x, args[1].0),
            Function::Min => Ord::min(x, args[1].0),
            Function::Conj | Function::Re => x,
            Function::Im => 0,
            other => panic!("harness: `{}` in an integer block", other.name()),
        };
        (value, 0.0)
    }

    fn is_finite(self) -> bool {
        true
    }
}

/// Whether a complex `x` lies on the negative real axis within its rounding: the branch cut of
/// `ln`, `sqrt` and fractional powers, where rounding may pick either side.
fn near_cut(x: c64, magnitude: f64) -> bool {
    x.re < 0.0 && magnitude > 0.0 && x.im.abs() <= crate::TOLERANCE * magnitude
}

impl Fuzzed for c64 {
    fn from_sample(sample: Sample) -> c64 {
        sample
    }

    fn call(function: Function, args: &[c64]) -> c64 {
        let a = args[0];
        match function {
            Function::Exp => Fractional::exp(a),
            Function::Ln => Fractional::ln(a),
            Function::Sqrt => Fractional::sqrt(a),
            Function::Abs => Element::abs(a),
            Function::Sin => Fractional::sin(a),
            Function::Cos => Fractional::cos(a),
            Function::Tan => Fractional::tan(a),
            Function::Tanh => Fractional::tanh(a),
            Function::Sigmoid => Fractional::sigmoid(a),
            Function::Pow => Fractional::pow(a, args[1]),
            Function::Powi(n) => Fractional::powi(a, literal_exponent(n)),
            Function::Conj => Element::conj(a),
            Function::Re => Element::re(a),
            Function::Im => Element::im(a),
            Function::Max | Function::Min => {
                panic!("harness: `{}` in a complex block", function.name())
            }
        }
    }

    fn over(a: c64, b: c64) -> c64 {
        Fractional::over(a, b)
    }

    fn norm(self) -> f64 {
        c64::norm(self)
    }

    fn close(got: c64, expected: c64, magnitude: f64) -> bool {
        let finite = |x: c64| x.re.is_finite() && x.im.is_finite();
        if got == expected || !magnitude.is_finite() || !finite(expected) {
            return true;
        }
        (got - expected).norm() <= crate::TOLERANCE * magnitude.max(expected.norm())
    }

    fn naive_binary(op: BinaryOp, a: Value<c64>, b: Value<c64>) -> Value<c64> {
        match op {
            BinaryOp::Div if near_zero(b.0.norm(), b.1) => (a.0 / b.0, f64::INFINITY),
            BinaryOp::Div => {
                let inverse = 1.0 / b.0.norm();
                (
                    a.0 / b.0,
                    amplify(inverse, a.1) + amplify(a.0.norm() * inverse * inverse, b.1),
                )
            }
            _ => ring(op, a, b),
        }
    }

    fn naive_call(function: Function, args: &[Value<c64>]) -> Value<c64> {
        let (z, m) = args[0];
        let cut = matches!(function, Function::Ln | Function::Sqrt | Function::Pow);
        if (singular_at_zero(function) && near_zero(z.norm(), m)) || (cut && near_cut(z, m)) {
            let value = Self::naive_call(
                function,
                &[(z, 0.0), args.get(1).copied().unwrap_or_default()],
            )
            .0;
            return (value, f64::INFINITY);
        }
        // Each value's magnitude: |f'(z)|·m for the argument's error, plus |f(z)| for the
        // function's own rounding.
        let with =
            |value: c64, derivative: c64| (value, amplify(derivative.norm(), m) + value.norm());
        match function {
            Function::Exp => with(z.exp(), z.exp()),
            Function::Ln => with(z.ln(), 1.0 / z),
            Function::Sqrt => with(z.sqrt(), 0.5 / z.sqrt()),
            // |z| moves no more than z does.
            Function::Abs => (c64::new(z.norm(), 0.0), m),
            Function::Sin => with(z.sin(), z.cos()),
            Function::Cos => with(z.cos(), -z.sin()),
            Function::Tan => with(z.tan(), 1.0 + z.tan() * z.tan()),
            Function::Tanh => with(z.tanh(), 1.0 - z.tanh() * z.tanh()),
            Function::Sigmoid => {
                let s = 1.0 / (1.0 + (-z).exp());
                with(s, s * (1.0 - s))
            }
            Function::Pow => {
                let (w, mw) = args[1];
                let value = z.powc(w);
                let by_base = amplify((w * z.powc(w - 1.0)).norm(), m);
                let by_exponent = amplify((value * z.ln()).norm(), mw);
                (value, by_base + by_exponent + value.norm())
            }
            Function::Powi(n) => {
                let n = literal_exponent(n);
                let value = z.powi(n);
                with(value, f64::from(n) * z.powi(n - 1))
            }
            Function::Conj => (z.conj(), m),
            Function::Re => (c64::new(z.re, 0.0), m),
            Function::Im => (c64::new(z.im, 0.0), m),
            Function::Max | Function::Min => {
                panic!("harness: `{}` in a complex block", function.name())
            }
        }
    }

    fn is_finite(self) -> bool {
        self.re.is_finite() && self.im.is_finite()
    }
}
