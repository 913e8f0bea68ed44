//! Random *valid* `tensor!` blocks: index letters with small extents, input tensors (owned,
//! strided views with padding and permuted axes, writable views and a second name for one),
//! scalars, and statements built so that most pass the front end: every access uses index
//! letters whose extent equals its axis, `let` indices all occur on the right, no left index
//! repeats.
//!
//! `Block::arbitrary` draws every choice from an `arbitrary::Unstructured`, so libFuzzer mutates
//! blocks structurally; element values come from a seeded generator so that big tensors cost a
//! few input bytes.

use arbitrary::{Arbitrary, Result, Unstructured};

use crate::numeric::{ElementType, Sample};

/// Index letters; the first `LETTERS.len()` of them may be used by one block.
pub const LETTERS: [&str; 8] = ["i", "j", "k", "l", "m", "n", "o", "p"];
const INPUT_NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const LET_NAMES: [&str; 4] = ["x", "y", "z", "w"];
const SCALAR_LET_NAMES: [&str; 4] = ["s", "t", "u", "v"];
/// External scalars: read anywhere; `acc` is also a target.
pub const SCALARS: [&str; 4] = ["alpha", "beta", "gamma", "acc"];
/// Elements outside a view (its padding): a kernel that reads or writes them shows.
pub const PADDING: Sample = Sample::new(7777.0, 0.0);

/// How an input tensor is passed to the block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A contiguous `Tensor`.
    Owned,
    /// A `TensorView` of a larger, differently ordered buffer.
    View(ViewSpec),
    /// A `TensorViewMut` of a larger, differently ordered buffer (a possible target).
    ViewMut(ViewSpec),
    /// A second name for the writable view of input `0` (`let ra = &a;`): the same memory,
    /// which the compiler cannot see.
    AliasOf(usize),
}

/// A view over a backing tensor: backing axis `q` holds logical axis `perm[q]`, with
/// `pad_lo[q]` elements before and `pad_hi[q]` after the viewed ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewSpec {
    pub perm: Vec<usize>,
    pub pad_lo: Vec<usize>,
    pub pad_hi: Vec<usize>,
}

impl ViewSpec {
    /// The backing tensor's shape for a view of logical `shape`.
    pub fn backing_shape(&self, shape: &[usize]) -> Vec<usize> {
        (0..shape.len())
            .map(|q| shape[self.perm[q]] + self.pad_lo[q] + self.pad_hi[q])
            .collect()
    }

    /// For each logical axis, the backing axis holding it.
    pub fn inverse(&self) -> Vec<usize> {
        let mut inverse = vec![0; self.perm.len()];
        for (q, &k) in self.perm.iter().enumerate() {
            inverse[k] = q;
        }
        inverse
    }
}

#[derive(Clone, Debug)]
pub struct Input {
    pub name: String,
    pub shape: Vec<usize>,
    pub kind: InputKind,
    /// Logical elements, row-major (empty for an alias).
    pub values: Vec<Sample>,
}

/// One generated block: its element type, its inputs and its text.
#[derive(Clone, Debug)]
pub struct Block {
    /// The type of every tensor and scalar of the block.
    pub element: ElementType,
    pub inputs: Vec<Input>,
    /// External scalars and their values.
    pub scalars: Vec<(String, Sample)>,
    /// One statement per entry, without the `;`.
    pub statements: Vec<String>,
}

impl Block {
    /// The block body as written inside `tensor! { … }`.
    pub fn text(&self) -> String {
        self.statements
            .iter()
            .map(|statement| format!("{statement};\n"))
            .collect()
    }

    /// A description of the inputs and the block, for failure messages.
    pub fn describe(&self) -> String {
        let mut out = format!("  elements: {}\n", self.element.name());
        for input in &self.inputs {
            out.push_str(&format!(
                "  {}: {:?} {:?}\n",
                input.name, input.shape, input.kind
            ));
        }
        for (name, value) in &self.scalars {
            out.push_str(&format!("  {name} = {value}\n"));
        }
        out.push_str("tensor! {\n");
        for statement in &self.statements {
            out.push_str(&format!("    {statement};\n"));
        }
        out.push('}');
        out
    }
}

/// A literal as written, and its value.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum LiteralChoice {
    Two,
    Half,
    One,
    Three,
    OnePointFive,
    Quarter,
    TenthExp,
    Zero,
    TwoF64,
    Ten,
}

impl LiteralChoice {
    fn text(self) -> &'static str {
        match self {
            LiteralChoice::Two => "2",
            LiteralChoice::Half => "0.5",
            LiteralChoice::One => "1",
            LiteralChoice::Three => "3.0",
            LiteralChoice::OnePointFive => "1.5",
            LiteralChoice::Quarter => "0.25",
            LiteralChoice::TenthExp => "1e-1",
            LiteralChoice::Zero => "0",
            LiteralChoice::TwoF64 => "2f64",
            LiteralChoice::Ten => "10",
        }
    }
}

impl LiteralChoice {
    /// Whether the literal means a value of `element` (an integer takes whole, unsuffixed
    /// literals; `2f64` is an `f64`).
    fn fits(self, element: ElementType) -> bool {
        match (self, element) {
            (_, ElementType::F64) => true,
            (LiteralChoice::TwoF64, _) => false,
            (
                LiteralChoice::Two | LiteralChoice::One | LiteralChoice::Zero | LiteralChoice::Ten,
                _,
            ) => true,
            (_, ElementType::I64) => false,
            (_, ElementType::C64) => true,
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum FunctionChoice {
    Exp,
    Ln,
    Sqrt,
    Abs,
    Sin,
    Cos,
    Tanh,
    Max,
    Min,
    Powi,
    Conj,
    Re,
    Im,
}

impl FunctionChoice {
    /// Whether the function takes `element`'s values: integers have no transcendental
    /// functions, complex numbers no order.
    fn fits(self, element: ElementType) -> bool {
        use FunctionChoice::*;
        match element {
            ElementType::F64 => true,
            ElementType::I64 => matches!(self, Abs | Max | Min | Conj | Re | Im),
            ElementType::C64 => !matches!(self, Max | Min),
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum OpChoice {
    Assign,
    Add,
    Sub,
}

impl OpChoice {
    fn text(self) -> &'static str {
        match self {
            OpChoice::Assign => "=",
            OpChoice::Add => "+=",
            OpChoice::Sub => "-=",
        }
    }
}

/// A tensor name bound at some point of the block.
#[derive(Clone, Debug)]
struct Binding {
    name: String,
    shape: Vec<usize>,
    writable: bool,
    /// The statement whose `let` made it (which must say `mut` if a later one writes it).
    made_by: Option<usize>,
}

struct Generator<'u, 'a> {
    u: &'u mut Unstructured<'a>,
    element: ElementType,
    /// The index letters this block's statements use (see [`ElementType::letters`]).
    letters: &'static [&'static str],
    extents: Vec<usize>,
    tensors: Vec<Binding>,
    scalars: Vec<String>,
    /// Scalar lets and `acc`: possible scalar targets.
    scalar_targets: Vec<String>,
    /// The statements so far.
    statements: Vec<String>,
    /// Accesses made so far in the current statement (keeps kernels within the interpreter's
    /// operand counts).
    accesses: usize,
}

const MAX_ACCESSES: usize = 6;

impl<'a> Arbitrary<'a> for Block {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        generate(u)
    }
}

/// splitmix64: element values from a seed.
pub struct Values(u64);

impl Values {
    pub fn new(seed: u64) -> Self {
        Values(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A multiple of 1/4 in [-2, 2]: exact, often zero or one.
    pub fn element(&mut self) -> f64 {
        (self.next_u64() % 17) as f64 / 4.0 - 2.0
    }

    /// A value of `element`: a multiple of 1/4 in [-2, 2] (each part, for a complex one), or a
    /// whole number in [-4, 4].
    pub fn sample(&mut self, element: ElementType) -> Sample {
        match element {
            ElementType::F64 => Sample::new(self.element(), 0.0),
            ElementType::I64 => Sample::new((self.next_u64() % 9) as f64 - 4.0, 0.0),
            ElementType::C64 => Sample::new(self.element(), self.element()),
        }
    }
}

fn generate(u: &mut Unstructured) -> Result<Block> {
    // Mostly `f64`; one block in five each of `i64` and `c64`.
    let element = match u.int_in_range(0u8..=9)? {
        0 | 1 => ElementType::I64,
        2 | 3 => ElementType::C64,
        _ => ElementType::F64,
    };
    // Extents: mostly 0..=5, in some blocks up to three big ones (GEMM calls, tiles, threads).
    let big = u.ratio(1, 5)?;
    let mut extents = Vec::new();
    for k in 0..LETTERS.len() {
        if big && k < 3 && u.ratio(1, 2)? {
            extents.push(*u.choose(&[9, 17, 33, 48])?);
            continue;
        }
        let extent = match u.int_in_range(0u8..=15)? {
            0 => 0,
            1 | 2 => 1,
            3..=5 => 2,
            6..=8 => 3,
            9..=11 => 4,
            _ => 5,
        };
        extents.push(extent);
    }
    let mut values = Values::new(u.arbitrary()?);

    let mut inputs: Vec<Input> = Vec::new();
    let letters = element.letters();
    let input_count = u.int_in_range(1..=5)?;
    for name in &INPUT_NAMES[..input_count] {
        let rank = u.int_in_range(1..=3)?;
        let mut shape = Vec::new();
        for _ in 0..rank {
            shape.push(extents[u.choose_index(letters.len())?]);
        }
        // Keep inputs small enough for the naive interpreter.
        if shape.iter().product::<usize>() > 40_000 {
            shape.truncate(2);
        }
        let rank = shape.len();
        let kind = match u.int_in_range(0..=9)? {
            0..=4 => InputKind::Owned,
            kind => {
                let mut perm: Vec<usize> = (0..rank).collect();
                for k in (1..rank).rev() {
                    let other = u.int_in_range(0..=k)?;
                    perm.swap(k, other);
                }
                let mut pad = || -> Result<Vec<usize>> {
                    (0..rank).map(|_| Ok(usize::from(u.ratio(1, 3)?))).collect()
                };
                let spec = ViewSpec {
                    perm,
                    pad_lo: pad()?,
                    pad_hi: pad()?,
                };
                if kind <= 6 {
                    InputKind::View(spec)
                } else {
                    InputKind::ViewMut(spec)
                }
            }
        };
        let count = shape.iter().product();
        inputs.push(Input {
            name: (*name).to_owned(),
            shape,
            kind,
            values: (0..count).map(|_| values.sample(element)).collect(),
        });
    }
    // A second name for a writable view.
    let writable_views: Vec<usize> = (0..inputs.len())
        .filter(|&k| matches!(inputs[k].kind, InputKind::ViewMut(_)))
        .collect();
    if !writable_views.is_empty() && u.ratio(1, 2)? {
        let of = *u.choose(&writable_views)?;
        inputs.push(Input {
            name: format!("r{}", inputs[of].name),
            shape: inputs[of].shape.clone(),
            kind: InputKind::AliasOf(of),
            values: Vec::new(),
        });
    }

    let mut scalars = Vec::new();
    for name in SCALARS {
        let mut part = || -> Result<f64> {
            let step = f64::from(u.int_in_range(-8i8..=8)?);
            // Whole numbers for integers, else multiples of 1/4.
            Ok(if element == ElementType::I64 {
                step
            } else {
                step / 4.0
            })
        };
        let re = part()?;
        let im = if element == ElementType::C64 {
            part()?
        } else {
            0.0
        };
        scalars.push((name.to_owned(), Sample::new(re, im)));
    }

    let mut generator = Generator {
        u,
        element,
        letters,
        extents,
        tensors: inputs
            .iter()
            .map(|input| Binding {
                name: input.name.clone(),
                shape: input.shape.clone(),
                writable: !matches!(input.kind, InputKind::View(_)),
                made_by: None,
            })
            .collect(),
        scalars: SCALARS.iter().map(|s| (*s).to_owned()).collect(),
        scalar_targets: vec!["acc".to_owned()],
        statements: Vec::new(),
        accesses: 0,
    };
    let count = generator.u.int_in_range(1..=6)?;
    for _ in 0..count {
        generator.accesses = 0;
        if let Some(statement) = generator.statement()? {
            generator.statements.push(statement);
        }
    }
    Ok(Block {
        element,
        inputs,
        scalars,
        statements: generator.statements,
    })
}

impl Generator<'_, '_> {
    fn statement(&mut self) -> Result<Option<String>> {
        match self.u.int_in_range(0..=23)? {
            0..=6 => self.let_tensor(),
            7..=14 => self.assign_tensor(),
            15..=17 => self.let_scalar().map(Some),
            18 | 19 => self.assign_scalar().map(Some),
            _ => self.contraction(),
        }
    }

    /// `let x[..] = α·A[..]*B[..]` (or of three factors) with every index either on the left
    /// or in two factors: the shapes GEMM calls and pairwise contractions take. Sometimes
    /// followed by a GEMM-style update of the result, `x = β·x + α·A*B`.
    fn contraction(&mut self) -> Result<Option<String>> {
        let factors = if self.u.ratio(1, 4)? { 3 } else { 2 };
        let mut accesses: Vec<(String, Vec<&'static str>)> = Vec::new();
        let mut all: Vec<&'static str> = Vec::new();
        for _ in 0..factors {
            let binding = self.u.choose(&self.tensors)?.clone();
            let mut letters = Vec::new();
            for &extent in &binding.shape {
                let fits = |l: &&'static str| self.extent(l) == extent;
                let earlier: Vec<&'static str> = all
                    .iter()
                    .copied()
                    .filter(|l| fits(l) && !letters.contains(l))
                    .collect();
                let any: Vec<&'static str> = self.letters.iter().copied().filter(fits).collect();
                let letter = if !earlier.is_empty() && self.u.ratio(2, 3)? {
                    *self.u.choose(&earlier)?
                } else if !any.is_empty() {
                    *self.u.choose(&any)?
                } else {
                    return Ok(None);
                };
                letters.push(letter);
            }
            for &letter in &letters {
                note(letter, &mut all);
            }
            let text =
                self.maybe_conjugated(format!("{}[{}]", binding.name, letters.join(", ")))?;
            accesses.push((text, letters));
        }
        // Left: the letters of one factor only, and some shared ones (batches).
        let mut lhs = Vec::new();
        for &letter in &all {
            let users = accesses
                .iter()
                .filter(|(_, letters)| letters.contains(&letter))
                .count();
            if users == 1 || self.u.ratio(1, 4)? {
                lhs.push(letter);
            }
        }
        if lhs.is_empty() {
            return Ok(None);
        }
        for k in (1..lhs.len()).rev() {
            let other = self.u.int_in_range(0..=k)?;
            lhs.swap(k, other);
        }
        let product: Vec<&str> = accesses.iter().map(|(text, _)| text.as_str()).collect();
        let product = product.join(" * ");
        let name = (*self.u.choose(&LET_NAMES)?).to_owned();
        let shape = lhs.iter().map(|l| self.extent(l)).collect();
        let alpha = self.coefficient()?;
        self.tensors.retain(|binding| binding.name != name);
        let made_by = self.statements.len();
        let own = format!("{name}[{}]", lhs.join(", "));
        let own_name = name.clone();
        self.statements
            .push(format!("let {name}[{}] = {alpha}{product}", lhs.join(", ")));
        self.tensors.push(Binding {
            name,
            shape,
            writable: true,
            made_by: Some(made_by),
        });
        // The update re-reads the factors: not if the new name now hides one of them.
        let rereads_name = product.contains(&format!("{own_name}["));
        if !rereads_name && self.u.ratio(1, 2)? {
            self.statements[made_by] = self.statements[made_by].replacen("let ", "let mut ", 1);
            let beta = self.coefficient()?;
            let alpha = self.coefficient()?;
            let update = match self.u.int_in_range(0..=3)? {
                0 => format!("{own} = {beta}{own} + {alpha}{product}"),
                1 => format!("{own} = {alpha}{product} - {beta}{own}"),
                2 => format!("{own} += {alpha}{product}"),
                _ => format!("{own} -= {alpha}{product}"),
            };
            return Ok(Some(update));
        }
        Ok(None)
    }

    fn let_tensor(&mut self) -> Result<Option<String>> {
        let name = if self.u.ratio(1, 12)? {
            // Shadowing an input: the right-hand side still reads the input.
            self.tensors[self.u.choose_index(self.tensors.len())?]
                .name
                .clone()
        } else {
            (*self.u.choose(&LET_NAMES)?).to_owned()
        };
        let preferred = self.letter_pool(3)?;
        let mut used = Vec::new();
        let rhs = self.expr(&preferred, None, 0, &mut used)?;
        if used.is_empty() {
            return Ok(None);
        }
        // The left-hand side: some of the letters the right-hand side uses, in any order.
        let mut lhs = Vec::new();
        for &letter in &used {
            if self.u.ratio(2, 3)? {
                lhs.push(letter);
            }
        }
        if lhs.is_empty() {
            lhs.push(used[0]);
        }
        for k in (1..lhs.len()).rev() {
            let other = self.u.int_in_range(0..=k)?;
            lhs.swap(k, other);
        }
        let shape: Vec<usize> = lhs.iter().map(|l| self.extent(l)).collect();
        let mutable = if self.u.ratio(1, 2)? { "mut " } else { "" };
        let ty = if self.u.ratio(1, 10)? {
            format!(": Tensor<{}>", self.element.name())
        } else {
            String::new()
        };
        // The new binding is visible only after its own right-hand side.
        self.tensors.retain(|binding| binding.name != name);
        self.scalars.retain(|scalar| *scalar != name);
        self.tensors.push(Binding {
            name: name.clone(),
            shape,
            writable: true,
            made_by: Some(self.statements.len()),
        });
        Ok(Some(format!(
            "let {mutable}{name}[{}]{ty} = {rhs}",
            lhs.join(", ")
        )))
    }

    fn assign_tensor(&mut self) -> Result<Option<String>> {
        let writable: Vec<Binding> = self
            .tensors
            .iter()
            .filter(|binding| binding.writable)
            .cloned()
            .collect();
        if writable.is_empty() {
            return Ok(None);
        }
        let target = self.u.choose(&writable)?.clone();
        // A `let` a later statement writes must be `let mut`.
        if let Some(made_by) = target.made_by {
            let statement = &mut self.statements[made_by];
            if !statement.starts_with("let mut ") {
                *statement = statement.replacen("let ", "let mut ", 1);
            }
        }
        let mut lhs: Vec<String> = Vec::new();
        let mut letters: Vec<&'static str> = Vec::new();
        for &extent in &target.shape {
            let candidates: Vec<&'static str> = (self.letters.iter())
                .copied()
                .filter(|l| self.extent(l) == extent && !letters.contains(l))
                .collect();
            if extent > 0 && (candidates.is_empty() || self.u.ratio(1, 6)?) {
                lhs.push(self.position(extent)?);
            } else if candidates.is_empty() {
                return Ok(None);
            } else {
                let letter = *self.u.choose(&candidates)?;
                letters.push(letter);
                lhs.push(letter.to_owned());
            }
        }
        let op = OpChoice::arbitrary(self.u)?;
        let mut preferred = letters.clone();
        preferred.extend(self.letter_pool(2)?);
        let own = format!("{}[{}]", target.name, lhs.join(", "));
        let mut used = Vec::new();
        let rhs = self.expr(&preferred, Some((&target, &own)), 0, &mut used)?;
        Ok(Some(format!("{own} {} {rhs}", op.text())))
    }

    fn let_scalar(&mut self) -> Result<String> {
        let name = (*self.u.choose(&SCALAR_LET_NAMES)?).to_owned();
        let preferred = self.letter_pool(3)?;
        let mut used = Vec::new();
        let rhs = self.expr(&preferred, None, 0, &mut used)?;
        let mutable = if self.u.ratio(2, 3)? { "mut " } else { "" };
        let ty = if self.u.ratio(1, 6)? {
            format!(": {}", self.element.name())
        } else {
            String::new()
        };
        self.tensors.retain(|binding| binding.name != name);
        if !self.scalars.contains(&name) {
            self.scalars.push(name.clone());
        }
        if !self.scalar_targets.contains(&name) {
            self.scalar_targets.push(name.clone());
        }
        Ok(format!("let {mutable}{name}{ty} = {rhs}"))
    }

    fn assign_scalar(&mut self) -> Result<String> {
        let name = self.u.choose(&self.scalar_targets)?.clone();
        let op = OpChoice::arbitrary(self.u)?;
        let preferred = self.letter_pool(2)?;
        let mut used = Vec::new();
        let rhs = self.expr(&preferred, None, 0, &mut used)?;
        Ok(format!("{name} {} {rhs}", op.text()))
    }

    fn extent(&self, letter: &str) -> usize {
        self.extents[LETTERS.iter().position(|l| *l == letter).expect("a letter")]
    }

    /// Up to `max` distinct letters a statement prefers, so that accesses share indices.
    fn letter_pool(&mut self, max: usize) -> Result<Vec<&'static str>> {
        let count = self.u.int_in_range(1..=max)?;
        let mut pool = Vec::new();
        for _ in 0..count {
            let letter = *self.u.choose(self.letters)?;
            if !pool.contains(&letter) {
                pool.push(letter);
            }
        }
        Ok(pool)
    }

    /// A fixed position below `extent`: a literal, or a computed `{ p }`.
    fn position(&mut self, extent: usize) -> Result<String> {
        let position = self.u.int_in_range(0..=extent - 1)?;
        Ok(if self.u.ratio(1, 4)? {
            format!("{{ {position} }}")
        } else {
            position.to_string()
        })
    }

    /// A sum of terms.
    fn expr(
        &mut self,
        preferred: &[&'static str],
        target: Option<(&Binding, &str)>,
        depth: usize,
        used: &mut Vec<&'static str>,
    ) -> Result<String> {
        let terms = if depth == 0 {
            self.u.int_in_range(1..=3)?
        } else {
            self.u.int_in_range(1..=2)?
        };
        let mut out = String::new();
        for k in 0..terms {
            let negative = self.u.ratio(1, 4)?;
            match (k, negative) {
                (0, true) => out.push('-'),
                (0, false) => {}
                (_, true) => out.push_str(" - "),
                (_, false) => out.push_str(" + "),
            }
            out.push_str(&self.term(preferred, target, depth, used)?);
        }
        Ok(out)
    }

    fn term(
        &mut self,
        preferred: &[&'static str],
        target: Option<(&Binding, &str)>,
        depth: usize,
        used: &mut Vec<&'static str>,
    ) -> Result<String> {
        let kind = self.u.int_in_range(0..=9)?;
        if let (Some((binding, own)), 0..=1) = (target, kind) {
            // The target's own elements, in place (`c = β·c + …`), or read another way.
            if kind == 0 || self.accesses >= MAX_ACCESSES {
                self.note_letters(own, used);
                let scale = self.coefficient()?;
                return Ok(format!("{scale}{own}"));
            }
            let access = self.access_of(binding, preferred, used)?;
            let other = self.access(preferred, used)?;
            return Ok(format!("{access} * {other}"));
        }
        if kind <= 4 && depth == 0 {
            // A contraction: a product of two to four tensors over shared letters.
            let factors = self.u.int_in_range(2..=4)?;
            let mut parts = vec![self.coefficient()?];
            for k in 0..factors {
                if k > 0 {
                    parts.push(" * ".to_owned());
                }
                let access = self.access(preferred, used)?;
                parts.push(self.maybe_conjugated(access)?);
            }
            return Ok(parts.concat());
        }
        // A point-wise product or quotient of factors.
        let factors = self.u.int_in_range(1..=3)?;
        let mut out = self.factor(preferred, depth, used)?;
        for _ in 1..factors {
            let divide = self.element != ElementType::I64 && self.u.ratio(1, 4)?;
            out.push_str(if divide { " / " } else { " * " });
            out.push_str(&self.factor(preferred, depth, used)?);
        }
        Ok(out)
    }

    /// A factor of a product, in a complex block conjugated one time in three (which the
    /// GEMMs reading it do as they read).
    fn maybe_conjugated(&mut self, factor: String) -> Result<String> {
        Ok(
            match self.element == ElementType::C64 && self.u.ratio(1, 3)? {
                true => format!("conj({factor})"),
                false => factor,
            },
        )
    }

    /// Nothing, a literal or a scalar followed by `*`.
    fn coefficient(&mut self) -> Result<String> {
        Ok(match self.u.int_in_range(0..=5)? {
            0 | 1 => String::new(),
            2 | 3 => format!("{} * ", self.literal()?),
            4 => format!("{} * ", self.scalar()?),
            _ => format!("{} * {} * ", self.literal()?, self.scalar()?),
        })
    }

    fn literal(&mut self) -> Result<&'static str> {
        let choice = LiteralChoice::arbitrary(self.u)?;
        Ok(match choice.fits(self.element) {
            true => choice.text(),
            false => LiteralChoice::Two.text(),
        })
    }

    fn scalar(&mut self) -> Result<String> {
        if self.u.ratio(1, 8)? {
            return Ok(format!("{{ {} }}", self.literal()?));
        }
        Ok(self.u.choose(&self.scalars)?.clone())
    }

    fn factor(
        &mut self,
        preferred: &[&'static str],
        depth: usize,
        used: &mut Vec<&'static str>,
    ) -> Result<String> {
        let kind = self.u.int_in_range(0..=19)?;
        Ok(match kind {
            0..=9 => self.access(preferred, used)?,
            10 | 11 => self.literal()?.to_owned(),
            12 | 13 => self.scalar()?,
            14..=16 if depth < 2 => {
                let mut function = FunctionChoice::arbitrary(self.u)?;
                if !function.fits(self.element) {
                    function = FunctionChoice::Abs;
                }
                let argument = self.expr(preferred, None, depth + 1, used)?;
                match function {
                    FunctionChoice::Exp => format!("exp({argument})"),
                    // Mostly kept in the domain, so results stay comparable.
                    FunctionChoice::Ln if self.u.ratio(3, 4)? => {
                        format!("ln(abs({argument}) + 1)")
                    }
                    FunctionChoice::Ln => format!("ln({argument})"),
                    FunctionChoice::Sqrt if self.u.ratio(3, 4)? => {
                        format!("sqrt(abs({argument}))")
                    }
                    FunctionChoice::Sqrt => format!("sqrt({argument})"),
                    FunctionChoice::Abs => format!("abs({argument})"),
                    FunctionChoice::Sin => format!("sin({argument})"),
                    FunctionChoice::Cos => format!("cos({argument})"),
                    FunctionChoice::Tanh => format!("tanh({argument})"),
                    FunctionChoice::Max | FunctionChoice::Min => {
                        let other = self.expr(preferred, None, depth + 1, used)?;
                        let name = if matches!(function, FunctionChoice::Max) {
                            "max"
                        } else {
                            "min"
                        };
                        format!("{name}({argument}, {other})")
                    }
                    FunctionChoice::Powi => {
                        let exponent = self.u.int_in_range(-2i8..=3)?;
                        format!("powi({argument}, {exponent})")
                    }
                    FunctionChoice::Conj => format!("conj({argument})"),
                    FunctionChoice::Re => format!("re({argument})"),
                    FunctionChoice::Im => format!("im({argument})"),
                }
            }
            17 if depth < 2 => format!("({})", self.expr(preferred, None, depth + 1, used)?),
            18 => format!("-{}", self.factor(preferred, depth, used)?),
            _ => self.access(preferred, used)?,
        })
    }

    /// An access to some bound tensor.
    fn access(
        &mut self,
        preferred: &[&'static str],
        used: &mut Vec<&'static str>,
    ) -> Result<String> {
        if self.accesses >= MAX_ACCESSES {
            return Ok(self.literal()?.to_owned());
        }
        let binding = self.u.choose(&self.tensors)?.clone();
        self.access_of(&binding, preferred, used)
    }

    fn access_of(
        &mut self,
        binding: &Binding,
        preferred: &[&'static str],
        used: &mut Vec<&'static str>,
    ) -> Result<String> {
        self.accesses += 1;
        let mut slots = Vec::new();
        for &extent in &binding.shape {
            let preferred_fits: Vec<&'static str> = preferred
                .iter()
                .copied()
                .filter(|l| self.extent(l) == extent)
                .collect();
            let any_fits: Vec<&'static str> = (self.letters.iter())
                .copied()
                .filter(|l| self.extent(l) == extent)
                .collect();
            let choice = self.u.int_in_range(0..=9)?;
            let slot = if extent > 0 && choice == 0 {
                self.position(extent)?
            } else if !preferred_fits.is_empty() && choice <= 7 {
                let letter = *self.u.choose(&preferred_fits)?;
                note(letter, used);
                letter.to_owned()
            } else if !any_fits.is_empty() {
                let letter = *self.u.choose(&any_fits)?;
                note(letter, used);
                letter.to_owned()
            } else if extent > 0 {
                self.position(extent)?
            } else {
                // No letter has extent 0 any more (cannot happen: shapes come from letters).
                return Ok("1".to_owned());
            };
            slots.push(slot);
        }
        Ok(format!("{}[{}]", binding.name, slots.join(", ")))
    }

    fn note_letters(&self, access: &str, used: &mut Vec<&'static str>) {
        for letter in LETTERS {
            let inside = access
                .split(['[', ']', ',', ' '])
                .any(|part| part == letter);
            if inside {
                note(letter, used);
            }
        }
    }
}

fn note(letter: &'static str, used: &mut Vec<&'static str>) {
    if !used.contains(&letter) {
        used.push(letter);
    }
}
