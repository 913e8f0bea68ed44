//! Plan step → one self-contained CUDA C module (no headers, literals written exactly), the
//! device twin of the host loop nest. Invariant: the module reads its operands and writes its
//! target only at offsets `Σ index · stride` over the step's loops, with the strides, extents,
//! α, β and Rust scalars passed in `tdsl_args` — so the run time proves the same bounds for a
//! launch that `Step::new` proves for a host loop nest, and one text serves every layout.
//!
//! Entry points (each in a 32-bit and a 64-bit index variant, `_i32` / `_i64`):
//! * `tdsl_map`: grid-stride over the target's elements, summing sequentially if the step
//!   sums; the only entry of a point-wise step, whose threads take four points each (their
//!   reads before their writes, `tdsl_point`), then one at a time.
//! * `tdsl_rows`: one block per target element, its threads splitting the sum and adding up
//!   in shared memory; for steps with long sums.
//! * `tdsl_partial` then `tdsl_finish`: the two passes of a scalar result (no target loops):
//!   each block sums a slice into `partial[block]`, then one block adds the partials.
//!
//! Operand `k` is the `k`-th tensor access of the step's terms in reading order, as in the host
//! expansion (`cpu.rs`); loops are the left-hand indices, then the summed ones.

use std::fmt::Write as _;

use crate::ir::{
    BinaryOp, Capability, Exponent, Expr, Function, IndexVar, Scale, Slot, Target, TensorId,
};
use crate::lower::{Mode, Plan, StatementPlan, Step};

/// Threads per block in every launch: the shared-memory sums are sized for it.
pub const BLOCK: usize = 256;

/// The element type a module is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceType {
    F32,
    F64,
    I32,
    I64,
    C32,
    C64,
}

impl DeviceType {
    /// Every type a module is written for, in the order `StepModule::new` takes their texts.
    pub const ALL: [DeviceType; 6] = [
        DeviceType::F32,
        DeviceType::F64,
        DeviceType::I32,
        DeviceType::I64,
        DeviceType::C32,
        DeviceType::C64,
    ];

    /// The module's definition of `real`, its element type. Integers are a struct whose
    /// arithmetic wraps, as the host's does: signed overflow is undefined in C++, so it is done
    /// in the unsigned type of the same width. Complex numbers are a struct of two parts with
    /// the host's (`num_complex`'s) formulas.
    fn definition(self) -> String {
        let (signed, unsigned) = match self {
            DeviceType::F32 => return "typedef float real;".to_owned(),
            DeviceType::F64 => return "typedef double real;".to_owned(),
            DeviceType::C32 => return complex_definition("float", "f"),
            DeviceType::C64 => return complex_definition("double", ""),
            DeviceType::I32 => ("int", "unsigned int"),
            DeviceType::I64 => ("long long", "unsigned long long"),
        };
        let wrapping = |op: char| {
            format!(
                "__device__ __forceinline__ real operator{op}(real x, real y) {{ \
                 return real(({signed})(({unsigned})x.v {op} ({unsigned})y.v)); }}\n"
            )
        };
        format!(
            "struct real {{\n    {signed} v;\n    real() = default;\n    \
             template <typename X> __device__ constexpr real(X x) : v(({signed})x) {{}}\n}};\n\
             {}{}{}\
             __device__ __forceinline__ real operator-(real x) {{ return real(({signed})(({unsigned})0 - ({unsigned})x.v)); }}\n\
             __device__ __forceinline__ real& operator+=(real& x, real y) {{ x = x + y; return x; }}\n\
             __device__ __forceinline__ bool operator==(real x, real y) {{ return x.v == y.v; }}\n\
             __device__ __forceinline__ real tdsl_abs(real x) {{ return x.v < 0 ? -x : x; }}\n\
             __device__ __forceinline__ real tdsl_max(real x, real y) {{ return x.v < y.v ? y : x; }}\n\
             __device__ __forceinline__ real tdsl_min(real x, real y) {{ return y.v < x.v ? y : x; }}",
            wrapping('+'),
            wrapping('-'),
            wrapping('*'),
        )
    }

    fn is_integer(self) -> bool {
        matches!(self, DeviceType::I32 | DeviceType::I64)
    }

    fn is_complex(self) -> bool {
        matches!(self, DeviceType::C32 | DeviceType::C64)
    }

    /// A literal of this type holding exactly `value` converted to it, as Rust's `as` does.
    fn literal(self, value: f64) -> String {
        // `{:e}` is the shortest text that reads back as the same f64.
        let text = format!("{value:e}");
        match self {
            DeviceType::F64 => format!("({text})"),
            // Rounded once, from the exact double, as `value as f32` rounds.
            DeviceType::F32 => format!("((float)({text}))"),
            // Integral (`admits`), so exact; a complex literal is its real part converted as
            // `value as f32` (or exact as f64) converts.
            DeviceType::I32 | DeviceType::I64 | DeviceType::C32 | DeviceType::C64 => {
                format!("((real)({text}))")
            }
        }
    }

    /// The CUDA math function for `function` on this type.
    fn function(self, function: Function) -> &'static str {
        if self.is_integer() {
            return match function {
                Function::Abs => "tdsl_abs",
                Function::Max => "tdsl_max",
                Function::Min => "tdsl_min",
                Function::Conj | Function::Re => "",
                Function::Im => "tdsl_im",
                // Refused over integers at compile time: `admits` keeps such modules unwritten.
                _ => "tdsl_not_integral",
            };
        }
        if self.is_complex() {
            return match function {
                Function::Exp => "tdsl_exp",
                Function::Ln => "tdsl_log",
                Function::Sqrt => "tdsl_sqrt",
                Function::Abs => "tdsl_abs",
                Function::Sin => "tdsl_sin",
                Function::Cos => "tdsl_cos",
                Function::Tan => "tdsl_tan",
                Function::Tanh => "tdsl_tanh",
                Function::Sigmoid => "tdsl_sigmoid",
                Function::Pow => "tdsl_pow",
                Function::Powi(_) => "tdsl_powi",
                Function::Conj => "tdsl_conj",
                Function::Re => "tdsl_re",
                Function::Im => "tdsl_im",
                // Complex numbers have no order: refused at compile time (`admits`).
                Function::Max | Function::Min => "tdsl_not_ordered",
            };
        }
        let (double, float) = match function {
            Function::Exp => ("exp", "expf"),
            Function::Ln => ("log", "logf"),
            Function::Sqrt => ("sqrt", "sqrtf"),
            Function::Abs => ("fabs", "fabsf"),
            Function::Sin => ("sin", "sinf"),
            Function::Cos => ("cos", "cosf"),
            Function::Tan => ("tan", "tanf"),
            Function::Tanh => ("tanh", "tanhf"),
            Function::Sigmoid => ("tdsl_sigmoid", "tdsl_sigmoid"),
            Function::Max => ("fmax", "fmaxf"),
            Function::Min => ("fmin", "fminf"),
            Function::Pow => ("pow", "powf"),
            Function::Powi(_) => ("tdsl_powi", "tdsl_powi"),
            // Real elements: `conj` and `re` are the value, `im` zero.
            Function::Conj | Function::Re => ("", ""),
            Function::Im => ("tdsl_im", "tdsl_im"),
        };
        match self {
            DeviceType::F32 => float,
            _ => double,
        }
    }

    /// How a computed `powi` exponent is read back from its scalar slot (see `Writer::expr`).
    fn exponent_bits(self) -> &'static str {
        match self {
            DeviceType::F32 => "__float_as_int(",
            DeviceType::C32 => "__float_as_int((",
            DeviceType::C64 => "__double2loint((",
            // `powi` is refused over integers (`admits`).
            _ => "__double2loint(",
        }
    }

    /// Whether this type has what `capability` asks for (what the runtime's `Real`,
    /// `Fractional`, `HoldsFractions` and `HoldsWide` say of the element types).
    fn has(self, capability: Capability) -> bool {
        match capability {
            Capability::Any => true,
            Capability::Order => !self.is_complex(),
            Capability::Division | Capability::Fraction => !self.is_integer(),
            Capability::Wide => self != DeviceType::I32,
        }
    }

    /// Whether a statement over this type can hold `step`: whether the type has every
    /// capability its functions, `/`s and literals ask for (as `check` records them for the
    /// statement's tokens; read off the step itself here, which passes may have split off
    /// its statement). A step that cannot gets no module (an empty text): `tensor!` refuses
    /// its statement over this type at compile time.
    fn admits(self, step: &Step) -> bool {
        fn asks(expr: &Expr, has: &impl Fn(Capability) -> bool) -> bool {
            match expr {
                Expr::Access(_) | Expr::Scalar(_) => true,
                Expr::Literal(literal) => has(Capability::of_literal(literal.value)),
                Expr::Neg(operand) => asks(operand, has),
                Expr::Binary(op, left, right) => {
                    (*op != BinaryOp::Div || has(Capability::Division))
                        && asks(left, has)
                        && asks(right, has)
                }
                Expr::Call(function, args, _) => {
                    has(function.capability()) && args.iter().all(|arg| asks(arg, has))
                }
            }
        }
        let has = |capability| self.has(capability);
        step.terms.iter().all(|term| {
            (term.scale.divisors.is_empty() || has(Capability::Division))
                && has(Capability::of_literal(term.scale.coefficient))
                && asks(&term.expr, &has)
        })
    }
}

/// The definition of a complex `real` over parts of type `part` (`f`: the suffix of that
/// type's math functions), with the host's formulas (`num_complex`'s).
fn complex_definition(part: &str, f: &str) -> String {
    format!(
        "struct real {{\n    {part} re, im;\n    real() = default;\n    \
         template <typename X> __device__ constexpr real(X x) : re(({part})x), im(0) {{}}\n    \
         __device__ constexpr real({part} r, {part} i) : re(r), im(i) {{}}\n}};\n\
         __device__ __forceinline__ real operator+(real x, real y) {{ return real(x.re + y.re, x.im + y.im); }}\n\
         __device__ __forceinline__ real operator-(real x, real y) {{ return real(x.re - y.re, x.im - y.im); }}\n\
         __device__ __forceinline__ real operator*(real x, real y) {{ \
         return real(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re); }}\n\
         __device__ __forceinline__ real operator/(real x, real y) {{ \
         const {part} d = y.re * y.re + y.im * y.im; \
         return real((x.re * y.re + x.im * y.im) / d, (x.im * y.re - x.re * y.im) / d); }}\n\
         __device__ __forceinline__ real operator-(real x) {{ return real(-x.re, -x.im); }}\n\
         __device__ __forceinline__ real& operator+=(real& x, real y) {{ x = x + y; return x; }}\n\
         __device__ __forceinline__ real& operator*=(real& x, real y) {{ x = x * y; return x; }}\n\
         __device__ __forceinline__ bool operator==(real x, real y) {{ return x.re == y.re && x.im == y.im; }}\n\
         __device__ __forceinline__ real tdsl_conj(real x) {{ return real(x.re, -x.im); }}\n\
         __device__ __forceinline__ real tdsl_re(real x) {{ return real(x.re, 0); }}\n\
         __device__ __forceinline__ real tdsl_im(real x) {{ return real(x.im, 0); }}\n\
         __device__ __forceinline__ real tdsl_abs(real x) {{ return real(hypot{f}(x.re, x.im), 0); }}\n\
         __device__ __forceinline__ real tdsl_exp(real x) {{ \
         const {part} e = exp{f}(x.re); return real(e * cos{f}(x.im), e * sin{f}(x.im)); }}\n\
         __device__ __forceinline__ real tdsl_log(real x) {{ \
         return real(log{f}(hypot{f}(x.re, x.im)), atan2{f}(x.im, x.re)); }}\n\
         __device__ __forceinline__ real tdsl_sqrt(real x) {{ \
         const {part} r = sqrt{f}(hypot{f}(x.re, x.im)), t = atan2{f}(x.im, x.re) / 2; \
         return real(r * cos{f}(t), r * sin{f}(t)); }}\n\
         __device__ __forceinline__ real tdsl_sin(real x) {{ \
         return real(sin{f}(x.re) * cosh{f}(x.im), cos{f}(x.re) * sinh{f}(x.im)); }}\n\
         __device__ __forceinline__ real tdsl_cos(real x) {{ \
         return real(cos{f}(x.re) * cosh{f}(x.im), -sin{f}(x.re) * sinh{f}(x.im)); }}\n\
         __device__ __forceinline__ real tdsl_tan(real x) {{ \
         const {part} d = cos{f}(2 * x.re) + cosh{f}(2 * x.im); \
         return real(sin{f}(2 * x.re) / d, sinh{f}(2 * x.im) / d); }}\n\
         __device__ __forceinline__ real tdsl_tanh(real x) {{ \
         const {part} d = cosh{f}(2 * x.re) + cos{f}(2 * x.im); \
         return real(sinh{f}(2 * x.re) / d, sin{f}(2 * x.im) / d); }}\n\
         __device__ __forceinline__ real tdsl_pow(real x, real y) {{ return tdsl_exp(y * tdsl_log(x)); }}"
    )
}

/// What a launch needs to know about a module besides its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleShape {
    /// Operands, in the order the module numbers them.
    pub operands: usize,
    /// Loops: the left-hand indices, then the summed ones.
    pub loops: usize,
    /// How many of the loops are the target's.
    pub target_loops: usize,
    /// Rust scalars the statement evaluates (`tdsl_args::scalar`).
    pub scalars: usize,
}

/// One module per step of every statement, for `real`.
pub fn modules(plan: &Plan, real: DeviceType) -> Vec<Vec<(ModuleShape, String)>> {
    plan.statements
        .iter()
        .map(|statement_plan| {
            statement_plan
                .steps
                .iter()
                .map(|step| step_module(plan, statement_plan, step, real))
                .collect()
        })
        .collect()
}

/// The module computing `step` of `statement_plan`.
pub fn step_module(
    plan: &Plan,
    statement_plan: &StatementPlan,
    step: &Step,
    real: DeviceType,
) -> (ModuleShape, String) {
    let statement = &plan.program.statements[statement_plan.statement];
    let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
    let loops: Vec<&IndexVar> = lhs.iter().copied().chain(&step.reduction).collect();
    let target = match &statement.target {
        Target::Tensor { access } => Some(access.tensor),
        Target::NewTensor { .. } | Target::NewScalar { .. } | Target::Scalar { .. } => None,
    };
    let mut writer = Writer {
        real,
        loops: &loops,
        operand_loops: Vec::new(),
        first_exponent: statement.scalars.len(),
        target,
    };
    let value = writer.value(step);
    let shape = ModuleShape {
        operands: writer.operand_loops.len(),
        loops: loops.len(),
        target_loops: lhs.len(),
        scalars: statement.scalars.len() + statement.exponents.len(),
    };
    let text = if real.admits(step) {
        writer.module(step, &shape, &value)
    } else {
        String::new()
    };
    (shape, text)
}

struct Writer<'a> {
    real: DeviceType,
    loops: &'a [&'a IndexVar],
    /// For each operand, the loops it uses.
    operand_loops: Vec<Vec<usize>>,
    /// The `tdsl_args::scalar` slot of the first `powi` exponent: exponents follow the
    /// statement's scalars, each an `i32` in the low bytes of its slot.
    first_exponent: usize,
    /// The tensor the statement writes, if it existed before it (its elements may be read in
    /// place).
    target: Option<TensorId>,
}

impl Writer<'_> {
    /// A term that is the statement's target times a scale (`β·c[i, j]`, read in place).
    fn target_term(&self, expr: &Expr) -> bool {
        matches!(expr, Expr::Access(access) if Some(access.tensor) == self.target)
    }

    /// The step's value at one point, reading operand `k` as `a.operand[k][at_k]`.
    fn value(&mut self, step: &Step) -> String {
        match &step.terms[..] {
            [term] if !self.target_term(&term.expr) => self.expr(&term.expr),
            terms => terms
                .iter()
                .map(|term| {
                    let scale = self.scale(&term.scale, false);
                    let value = self.expr(&term.expr);
                    // β = 0 does not read the target, as in the host code (`times_target`).
                    if self.target_term(&term.expr) {
                        format!("({scale} == (real)0 ? (real)0 : {scale} * {value})")
                    } else {
                        format!("{scale} * {value}")
                    }
                })
                .collect::<Vec<_>>()
                .join(" + "),
        }
    }

    /// α: a single term's scale (hoisted out of its sum), else ±1.
    fn alpha(&self, step: &Step) -> String {
        match &step.terms[..] {
            [term] if !self.target_term(&term.expr) => self.scale(&term.scale, step.negate),
            _ => self.scale(&Scale::one(), step.negate),
        }
    }

    fn scale(&self, scale: &Scale, negate: bool) -> String {
        let coefficient = if negate {
            -scale.coefficient
        } else {
            scale.coefficient
        };
        let mut text = self.real.literal(coefficient);
        for k in &scale.scalars {
            write!(text, " * a.scalar[{k}]").expect("writing to a String");
        }
        for k in &scale.divisors {
            write!(text, " / a.scalar[{k}]").expect("writing to a String");
        }
        format!("({text})")
    }

    fn expr(&mut self, expr: &Expr) -> String {
        match expr {
            Expr::Access(access) => {
                let uses = access
                    .slots
                    .iter()
                    .filter_map(|slot| match slot {
                        Slot::Var(var) => Some(
                            self.loops
                                .iter()
                                .position(|loop_var| *loop_var == var)
                                .expect("every index of a step is one of its loops"),
                        ),
                        Slot::Fixed(_) => None,
                    })
                    .collect();
                self.operand_loops.push(uses);
                let k = self.operand_loops.len() - 1;
                format!("a.operand[{k}][at{k}]")
            }
            Expr::Literal(literal) => self.real.literal(literal.value),
            Expr::Scalar(k) => format!("a.scalar[{k}]"),
            Expr::Neg(operand) => format!("(-{})", self.expr(operand)),
            Expr::Binary(op, left, right) => {
                let left = self.expr(left);
                let right = self.expr(right);
                let op = match op {
                    BinaryOp::Add => "+",
                    BinaryOp::Sub => "-",
                    BinaryOp::Mul => "*",
                    BinaryOp::Div => "/",
                };
                format!("({left} {op} {right})")
            }
            Expr::Call(function, args, _) => {
                let args: Vec<String> = args.iter().map(|arg| self.expr(arg)).collect();
                let name = self.real.function(*function);
                match function {
                    Function::Powi(Exponent::Literal(exponent)) => {
                        format!("{name}({}, {exponent})", args[0])
                    }
                    Function::Powi(Exponent::Computed(k)) => {
                        // The slot's bits are the exponent's (CUDA's reinterpreting intrinsics).
                        let bits = self.real.exponent_bits();
                        let slot = self.first_exponent + k;
                        // A complex slot carries the bits in its real part.
                        let part = if self.real.is_complex() { ").re)" } else { ")" };
                        format!("{name}({}, {bits}a.scalar[{slot}]{part})", args[0])
                    }
                    _ => format!("{name}({})", args.join(", ")),
                }
            }
        }
    }

    fn module(&self, step: &Step, shape: &ModuleShape, value: &str) -> String {
        let mut out = String::new();
        let n = shape.operands.max(1);
        let l = shape.loops.max(1);
        let s = shape.scalars.max(1);
        let _ = writeln!(out, "// tensor-dsl step: {}", self.describe(step));
        let _ = writeln!(out, "{}", self.real.definition());
        let _ = writeln!(out, "#ifndef TDSL_ENTRY");
        let _ = writeln!(out, "#define TDSL_ENTRY extern \"C\" __global__");
        let _ = writeln!(out, "#endif");
        let _ = writeln!(
            out,
            "struct tdsl_args {{\n    real* target;\n    const real* operand[{n}];\n    \
             real* partial;\n    long long extent[{l}];\n    long long target_stride[{l}];\n    \
             long long operand_stride[{n}][{l}];\n    long long partials;\n    real alpha;\n    \
             real beta;\n    real scalar[{s}];\n}};"
        );
        if value.contains("tdsl_powi") {
            let _ = writeln!(
                out,
                "__device__ __forceinline__ real tdsl_powi(real x, int n) {{\n    \
                 unsigned int e = n < 0 ? 0u - (unsigned int)n : (unsigned int)n;\n    \
                 real result = 1;\n    while (e) {{\n        if (e & 1u) result *= x;\n        \
                 x *= x;\n        e >>= 1;\n    }}\n    return n < 0 ? 1 / result : result;\n}}"
            );
        }
        // A complex module's `tdsl_im` is its definition's.
        if value.contains("tdsl_im") && !self.real.is_complex() {
            let _ = writeln!(
                out,
                "__device__ __forceinline__ real tdsl_im(real) {{\n    return (real)0;\n}}"
            );
        }
        if value.contains("tdsl_sigmoid") {
            let exp = self.real.function(Function::Exp);
            let _ = writeln!(
                out,
                "__device__ __forceinline__ real tdsl_sigmoid(real x) {{\n    \
                 return (real)1 / ((real)1 + {exp}(-x));\n}}"
            );
        }
        let alpha = self.alpha(step);
        let write = match &step.mode {
            Mode::Assign => "a.target[t] = a.alpha * v;".to_owned(),
            Mode::Add => "a.target[t] += a.alpha * v;".to_owned(),
            // β = 0 does not read the target (BLAS's convention, as on the host).
            Mode::Scale(_) => "a.target[t] = (a.beta == (real)0 ? (real)0 : a.beta * a.target[t]) \
                               + a.alpha * v;"
                .to_owned(),
        };
        let _ = writeln!(
            out,
            "// α = {alpha}\ntemplate <typename I>\n__device__ __forceinline__ void \
             tdsl_write(const tdsl_args& a, I t, real v) {{\n    {write}\n}}"
        );
        let targets: Vec<usize> = (0..shape.target_loops).collect();
        let summed: Vec<usize> = (shape.target_loops..shape.loops).collect();
        // A target element's value, summed in order where the step sums.
        let sum = |depth: usize| {
            let pad = "    ".repeat(depth);
            if summed.is_empty() {
                format!("{pad}const real v = {value};\n")
            } else {
                format!(
                    "{pad}real v = 0;\n{pad}for (I r = 0; r < {count}; ++r) {{\n{body}{pad}}}\n",
                    count = product(&summed),
                    body = self.point(
                        "r",
                        &summed,
                        From::Summed,
                        &format!("{pad}    v += {value};\n"),
                        depth + 1
                    ),
                )
            }
        };
        let map = if summed.is_empty() {
            // A point's value and target offset, reading only: a thread computes four before
            // writing them, so their reads are in flight together (one at a time, `z[i] =
            // 2 * x[i]` moved 0.73× a device copy's bytes a second on an H200). The points
            // are independent (threads already run them in any order), except in a launch
            // of one thread, whose target repeats elements: that one writes each point before
            // reading the next.
            let _ = writeln!(
                out,
                "template <typename I>\n__device__ __forceinline__ real tdsl_point(const \
                 tdsl_args& a, I o, I& where) {{\n{}    where = t;\n    return v;\n}}",
                self.point("o", &targets, From::Target, &sum(1), 1)
            );
            let four: String = (0..4)
                .map(|k| {
                    let at = ["o", "o + step", "o + 2 * step", "o + 3 * step"][k];
                    format!("        const real v{k} = tdsl_point<I>(a, {at}, t{k});\n")
                })
                .chain((0..4).map(|k| format!("        tdsl_write<I>(a, t{k}, v{k});\n")))
                .collect();
            format!(
                "    const I outputs = {};\n    const I step = (I)gridDim.x * (I)blockDim.x;\n    \
                 I o = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;\n    \
                 for (; step > 1 && o + 3 * step < outputs; o += 4 * step) {{\n        \
                 I t0, t1, t2, t3;\n{four}    }}\n    for (; o < outputs; o += step) {{\n        \
                 I t;\n        const real v = tdsl_point<I>(a, o, t);\n        \
                 tdsl_write<I>(a, t, v);\n    }}\n",
                product(&targets)
            )
        } else {
            let map_body = self.point(
                "o",
                &targets,
                From::Target,
                &format!("{}        tdsl_write<I>(a, t, v);\n", sum(2)),
                2,
            );
            format!(
                "    const I outputs = {};\n    for (I o = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; \
                 o < outputs; o += (I)gridDim.x * (I)blockDim.x) {{\n{map_body}    }}\n",
                product(&targets)
            )
        };
        self.entry(&mut out, "tdsl_map", &map);
        if !summed.is_empty() && !targets.is_empty() {
            // Block per target element.
            let rows = self.point(
                "o",
                &targets,
                From::Target,
                &format!(
                    "        real v = 0;\n        for (I r = (I)threadIdx.x; r < {count}; r += (I)blockDim.x) {{\n{body}        }}\n\
                     {reduce}        if (threadIdx.x == 0) tdsl_write<I>(a, t, sums[0]);\n        __syncthreads();\n",
                    count = product(&summed),
                    body = self.point("r", &summed, From::Summed, &format!("            v += {value};\n"), 3),
                    reduce = block_sum("        "),
                ),
                2,
            );
            self.entry(
                &mut out,
                "tdsl_rows",
                &format!(
                    "    __shared__ real sums[{BLOCK}];\n    const I outputs = {};\n    \
                     for (I o = (I)blockIdx.x; o < outputs; o += (I)gridDim.x) {{\n{rows}    }}\n",
                    product(&targets)
                ),
            );
        }
        if targets.is_empty() {
            let all: Vec<usize> = (0..shape.loops).collect();
            let body = self.point(
                "r",
                &all,
                From::Everything,
                &format!("        v += {value};\n"),
                2,
            );
            self.entry(
                &mut out,
                "tdsl_partial",
                &format!(
                    "    __shared__ real sums[{BLOCK}];\n    real v = 0;\n    \
                     for (I r = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; r < {count}; \
                     r += (I)gridDim.x * (I)blockDim.x) {{\n{body}    }}\n\
                     {reduce}    if (threadIdx.x == 0) a.partial[blockIdx.x] = sums[0];\n",
                    count = product(&all),
                    reduce = block_sum("    "),
                ),
            );
            let _ = writeln!(
                out,
                "TDSL_ENTRY void tdsl_finish(const tdsl_args a) {{\n    __shared__ real sums[{BLOCK}];\n    \
                 real v = 0;\n    for (long long r = threadIdx.x; r < a.partials; r += blockDim.x) v += a.partial[r];\n\
                 {reduce}    if (threadIdx.x == 0) tdsl_write<long long>(a, 0, sums[0]);\n}}",
                reduce = block_sum("    "),
            );
        }
        out
    }

    /// An entry point's template body and its two instantiations.
    fn entry(&self, out: &mut String, name: &str, body: &str) {
        let _ = writeln!(
            out,
            "template <typename I>\n__device__ __forceinline__ void {name}(const tdsl_args& a) {{\n{body}}}"
        );
        for (suffix, index) in [("i32", "int"), ("i64", "long long")] {
            let _ = writeln!(
                out,
                "TDSL_ENTRY void {name}_{suffix}(const tdsl_args a) {{ {name}<{index}>(a); }}"
            );
        }
    }

    /// Declares the offsets of linear point `linear` over `loops` (innermost last) and runs
    /// `inner` with them: `at0…` for the operands, and per `from` the target's `t`.
    fn point(
        &self,
        linear: &str,
        loops: &[usize],
        from: From,
        inner: &str,
        depth: usize,
    ) -> String {
        let target = from == From::Target;
        let pad = "    ".repeat(depth);
        let mut out = String::new();
        let _ = writeln!(out, "{pad}I rest = {linear};");
        if target {
            let _ = writeln!(out, "{pad}I t = 0;");
        }
        for k in 0..self.operand_loops.len() {
            match from {
                From::Summed => writeln!(out, "{pad}I at{k} = outer{k};"),
                From::Target | From::Everything => writeln!(out, "{pad}I at{k} = 0;"),
            }
            .expect("writing to a String");
        }
        for (position, &d) in loops.iter().enumerate().rev() {
            let index = if position == 0 {
                "rest".to_owned()
            } else {
                format!("rest % (I)a.extent[{d}]")
            };
            let _ = write!(out, "{pad}{{ const I i = {index};");
            if position != 0 {
                let _ = write!(out, " rest /= (I)a.extent[{d}];");
            }
            if target {
                let _ = write!(out, " t += i * (I)a.target_stride[{d}];");
            }
            for (k, uses) in self.operand_loops.iter().enumerate() {
                if uses.contains(&d) {
                    let _ = write!(out, " at{k} += i * (I)a.operand_stride[{k}][{d}];");
                }
            }
            let _ = writeln!(out, " }}");
        }
        let _ = writeln!(out, "{pad}(void)rest;");
        if target {
            // The summing loop inside starts each operand from this point's offsets.
            for k in 0..self.operand_loops.len() {
                let _ = writeln!(out, "{pad}const I outer{k} = at{k}; (void)outer{k};");
            }
        }
        out.push_str(inner);
        out
    }

    fn describe(&self, step: &Step) -> String {
        let lhs: Vec<&str> = self
            .loops
            .iter()
            .take(self.loops.len() - step.reduction.len())
            .map(|var| var.name.as_str())
            .collect();
        let summed: Vec<&str> = step.reduction.iter().map(|var| var.name.as_str()).collect();
        format!(
            "target[{}] {} Σ[{}] {} term(s)",
            lhs.join(","),
            match step.mode {
                Mode::Assign => "=",
                Mode::Add => "+=",
                Mode::Scale(_) => "= β·target +",
            },
            summed.join(","),
            step.terms.len()
        )
    }
}

/// Which loops a point's offsets start from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum From {
    /// The target's loops: `t` and the operands' offsets from zero; `outer0…` keep the
    /// operands' offsets for a sum inside.
    Target,
    /// The summed loops inside a target point: the operands' offsets from `outer0…`.
    Summed,
    /// Every loop of a scalar result: the operands' offsets from zero.
    Everything,
}

/// `(I)a.extent[d0] * (I)a.extent[d1] …`, or `1`.
fn product(loops: &[usize]) -> String {
    if loops.is_empty() {
        return "(I)1".to_owned();
    }
    loops
        .iter()
        .map(|d| format!("(I)a.extent[{d}]"))
        .collect::<Vec<_>>()
        .join(" * ")
}

/// Adds the block's `v`s into `sums[0]` (a tree over shared memory; `blockDim.x` a power of two).
fn block_sum(pad: &str) -> String {
    format!(
        "{pad}sums[threadIdx.x] = v;\n{pad}__syncthreads();\n\
         {pad}for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {{\n\
         {pad}    if (threadIdx.x < s) sums[threadIdx.x] += sums[threadIdx.x + s];\n\
         {pad}    __syncthreads();\n{pad}}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::{modules, DeviceType};
    use crate::{trace, Config, Flavor};
    use quote::quote;

    fn texts(block: proc_macro2::TokenStream, real: DeviceType) -> String {
        let traced = trace(block, Config::new(Flavor::Panic)).expect("valid block");
        modules(&traced.plan, real)
            .into_iter()
            .flatten()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn point_wise_step_with_literal_function_and_scalar() {
        insta::assert_snapshot!(texts(
            quote! { c[i, j] += 0.1 * exp(a[i, j]) - {w} * powi(b[j, i], 3); },
            DeviceType::F32
        ));
    }

    #[test]
    fn summing_step_with_a_fixed_position() {
        insta::assert_snapshot!(texts(
            quote! { let r[i] = a[i, k, 0] * b[k]; },
            DeviceType::F64
        ));
    }

    #[test]
    fn scalar_result_in_two_passes() {
        insta::assert_snapshot!(texts(
            quote! { let s = a[i, j] * a[i, j]; },
            DeviceType::F64
        ));
    }

    #[test]
    fn integer_modules_wrap_and_leave_out_what_integers_lack() {
        insta::assert_snapshot!(texts(
            quote! { c[i] = 2 * c[i] - abs(a[i, k]) * max(b[k], 3); },
            DeviceType::I32
        ));
        // `/` is refused over integers at compile time: the step has no integer module.
        assert_eq!(texts(quote! { let r[i] = a[i] / 2; }, DeviceType::I64), "");
    }

    #[test]
    fn complex_modules_compute_with_parts_and_leave_out_max() {
        insta::assert_snapshot!(texts(
            quote! { let c[i] = conj(a[i, k]) * exp(b[k] / 2) + {z}; },
            DeviceType::C64
        ));
        // Complex numbers have no order: the step has no complex module.
        assert_eq!(
            texts(quote! { let r[i] = max(a[i], 0); }, DeviceType::C32),
            ""
        );
    }

    #[test]
    fn gemm_update_reads_its_target_through_beta() {
        insta::assert_snapshot!(texts(
            quote! { c[i, j] = 0.5 * c[i, j] + a[i, k] * b[k, j]; },
            DeviceType::F32
        ));
    }
}
