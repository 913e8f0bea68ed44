//! The memory both interpreters start from: one backing buffer per input (an alias has none:
//! it names its original's), and each input's layout over it.

use tensor_dsl_compiler::ir::Exponent;

use crate::block::{Block, InputKind, ViewSpec, PADDING};
use crate::numeric::{Fuzzed, Sample};

/// Where a tensor's elements live: `buffer[offset + Σ index[k]·strides[k]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub buffer: usize,
    pub offset: usize,
    pub shape: Vec<usize>,
    pub strides: Vec<usize>,
}

impl Layout {
    pub fn contiguous(buffer: usize, shape: &[usize]) -> Self {
        Layout {
            buffer,
            offset: 0,
            shape: shape.to_vec(),
            strides: row_major_strides(shape),
        }
    }

    pub fn at(&self, index: &[usize]) -> usize {
        self.offset
            + index
                .iter()
                .zip(&self.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>()
    }
}

pub fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut step = 1;
    for k in (0..shape.len()).rev() {
        strides[k] = step;
        step *= shape[k];
    }
    strides
}

/// Calls `f` with every multi-index of `shape`, row-major.
pub fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut index = vec![0; shape.len()];
    loop {
        f(&index);
        let mut k = shape.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

/// An input's backing buffer: its shape and elements (padding filled with [`PADDING`]).
#[derive(Clone, Debug)]
pub struct Backing<V> {
    pub shape: Vec<usize>,
    pub data: Vec<V>,
}

/// The backing buffer of every input (`None` for an alias), its values in `V`, and every
/// input's layout.
pub fn inputs<V: Fuzzed>(block: &Block) -> (Vec<Option<Backing<V>>>, Vec<Layout>) {
    let mut backings = Vec::new();
    let mut layouts = Vec::new();
    for (k, input) in block.inputs.iter().enumerate() {
        match &input.kind {
            InputKind::Owned => {
                backings.push(Some(Backing {
                    shape: input.shape.clone(),
                    data: input.values.iter().map(|&v| V::from_sample(v)).collect(),
                }));
                layouts.push(Layout::contiguous(k, &input.shape));
            }
            InputKind::View(spec) | InputKind::ViewMut(spec) => {
                let (backing, layout) = view_backing(k, &input.shape, spec, &input.values);
                backings.push(Some(backing));
                layouts.push(layout);
            }
            InputKind::AliasOf(of) => {
                backings.push(None);
                let layout = layouts[*of].clone();
                layouts.push(layout);
            }
        }
    }
    (backings, layouts)
}

fn view_backing<V: Fuzzed>(
    buffer: usize,
    shape: &[usize],
    spec: &ViewSpec,
    values: &[Sample],
) -> (Backing<V>, Layout) {
    let backing_shape = spec.backing_shape(shape);
    let backing_strides = row_major_strides(&backing_shape);
    let inverse = spec.inverse();
    let logical_strides = row_major_strides(shape);
    let mut data = Vec::new();
    for_each_index(&backing_shape, |at| {
        let mut flat = 0;
        let mut inside = true;
        for (q, &coordinate) in at.iter().enumerate() {
            let extent = shape[spec.perm[q]];
            if coordinate < spec.pad_lo[q] || coordinate >= spec.pad_lo[q] + extent {
                inside = false;
            } else {
                flat += (coordinate - spec.pad_lo[q]) * logical_strides[spec.perm[q]];
            }
        }
        data.push(V::from_sample(if inside { values[flat] } else { PADDING }));
    });
    let offset = (0..shape.len())
        .map(|q| spec.pad_lo[q] * backing_strides[q])
        .sum();
    let layout = Layout {
        buffer,
        offset,
        shape: shape.to_vec(),
        strides: inverse.iter().map(|&q| backing_strides[q]).collect(),
    };
    (
        Backing {
            shape: backing_shape,
            data,
        },
        layout,
    )
}

/// A `powi` exponent's value: generated blocks write exponents as literals only.
pub fn literal_exponent(exponent: Exponent) -> i32 {
    match exponent {
        Exponent::Literal(value) => value,
        Exponent::Computed(_) => panic!("generated blocks write powi exponents as literals"),
    }
}

/// The value of a Rust scalar or computed position as the generator writes them: a name, or
/// `{ literal }`.
pub fn literal_value(text: &str) -> Option<f64> {
    let text = text.trim();
    let text = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(text)
        .trim();
    let digits = text
        .strip_suffix("f64")
        .or_else(|| text.strip_suffix("f32"))
        .or_else(|| text.strip_suffix("usize"))
        .unwrap_or(text)
        .replace('_', "");
    digits.parse::<f64>().ok()
}
