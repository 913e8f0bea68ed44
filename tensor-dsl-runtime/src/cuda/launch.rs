//! A proven [`Step`] → how its module is launched, on a GPU or the simulator alike: the
//! argument block in the module's `tdsl_args` layout, and the entries (one, two for a scalar
//! sum) and grids picked from the step's shape. Invariant: every address a launch hands a
//! kernel is one the step proved inside its buffer, so the kernel's unchecked loads and
//! stores stay in bounds.

use crate::element::Element;
use crate::exec::step::{Bound, Step};
use crate::operand::access::{Memory, Mode};

use super::error::CudaError;

/// Threads per block (the modules' shared-memory sums are sized for it).
pub(crate) const BLOCK: u32 = 256;
/// Summed points per target element from which a block, not a thread, computes it.
const ROWS_FROM: usize = 64;
const MAX_GRID: usize = 65_535;

/// The argument block in the module's `tdsl_args` layout: pointers, then 64-bit integers,
/// then elements, padded to 8 bytes as the C struct is.
pub(crate) struct Args<'s, T, const L: usize, const N: usize> {
    step: &'s Step<'s, T, L, N>,
    scalars: &'s [T],
    partial: u64,
    partials: usize,
    /// Where the kernel writes instead of the step's target (a device copy of a host scalar).
    target: Option<u64>,
}

impl<'s, T: Element, const L: usize, const N: usize> Args<'s, T, L, N> {
    pub(crate) fn new(step: &'s Step<'s, T, L, N>, scalars: &'s [T]) -> Self {
        Args {
            step,
            scalars,
            partial: 0,
            partials: 0,
            target: None,
        }
    }

    /// The first pass's per-block sums of a scalar reduction: `count` elements at `address`.
    pub(crate) fn with_partials(self, address: Option<u64>, count: usize) -> Self {
        Args {
            partial: address.unwrap_or(0),
            partials: count,
            ..self
        }
    }

    /// Writes to the one element at `address` instead of the step's target.
    pub(crate) fn with_target(self, address: Option<u64>) -> Self {
        Args {
            target: address,
            ..self
        }
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        let step = self.step;
        let n = N.max(1);
        let l = L.max(1);
        let mut out = Vec::new();
        let mut word = |value: u64| out.extend_from_slice(&value.to_ne_bytes());
        let address = |data: usize, base: isize| {
            (data as isize).wrapping_add(base.wrapping_mul(std::mem::size_of::<T>() as isize))
                as u64
        };
        word(match self.target {
            Some(target) => target,
            None => address(step.target().data as usize, step.target().base),
        });
        for k in 0..n {
            word(match step.operands().get(k) {
                Some(operand) => address(operand.data as usize, operand.base),
                None => 0,
            });
        }
        word(self.partial);
        for d in 0..l {
            word(step.extents().get(d).map_or(0, |&e| e as u64));
        }
        for d in 0..l {
            word(step.target().strides.get(d).map_or(0, |&s| s as u64));
        }
        for k in 0..n {
            for d in 0..l {
                word(
                    step.operands()
                        .get(k)
                        .and_then(|operand| operand.strides.get(d))
                        .map_or(0, |&s| s as u64),
                );
            }
        }
        word(self.partials as u64);
        let beta = match step.mode() {
            Mode::Scale(beta) => beta,
            Mode::Assign | Mode::Add => T::ZERO,
        };
        // Elements are copied as bits, never converted: a slot may carry a `powi` exponent.
        // Each part (one for a real type, two for a complex one) in its own width.
        let part = std::mem::size_of::<T::Part>();
        let mut element = |value: T| {
            let parts = value.device_bits();
            for &bits in &parts[..std::mem::size_of::<T>() / part] {
                if part == 4 {
                    out.extend_from_slice(&(bits as u32).to_ne_bytes());
                } else {
                    out.extend_from_slice(&bits.to_ne_bytes());
                }
            }
        };
        element(step.alpha());
        element(beta);
        for k in 0..self.scalars.len().max(1) {
            element(self.scalars.get(k).copied().unwrap_or(T::ZERO));
        }
        while out.len() % 8 != 0 {
            out.push(0);
        }
        out
    }
}

/// How a step runs: which entry, with how many blocks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// Nothing to write (an empty target).
    Nothing,
    /// `tdsl_map`: grid-stride over the target's elements (four a thread for a point-wise
    /// step).
    Map { grid: u32, block: u32 },
    /// `tdsl_rows`: a block per target element.
    Rows { grid: u32 },
    /// `tdsl_partial` over `grid` blocks, then `tdsl_finish`.
    Scalar { grid: u32 },
    /// `tdsl_tiles`: blocks that each move 32 × 32 tiles through shared memory (a copy
    /// module's, [`super::copy::module`]).
    Tiles { grid: u32 },
}

/// One kernel run of a launch: which entry, over how many blocks of how many threads, and
/// whether its threads meet at `__syncthreads` (the simulator runs those as fibers).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    pub(crate) entry: String,
    pub(crate) grid: u32,
    pub(crate) block: u32,
    pub(crate) barriers: bool,
}

impl Launch {
    /// The kernel runs of this launch, in order, with 32-bit indices if `narrow` (the entries'
    /// names, which every generated module declares: `tdsl_map_i32`, …, `tdsl_finish`).
    pub(crate) fn passes(&self, narrow: bool) -> Vec<Pass> {
        let suffix = if narrow { "i32" } else { "i64" };
        let pass = |entry: String, grid, block, barriers| Pass {
            entry,
            grid,
            block,
            barriers,
        };
        match *self {
            Launch::Nothing => Vec::new(),
            Launch::Map { grid, block } => {
                vec![pass(format!("tdsl_map_{suffix}"), grid, block, false)]
            }
            Launch::Rows { grid } => vec![pass(format!("tdsl_rows_{suffix}"), grid, BLOCK, true)],
            Launch::Tiles { grid } => {
                vec![pass(format!("tdsl_tiles_{suffix}"), grid, BLOCK, true)]
            }
            Launch::Scalar { grid } => vec![
                pass(format!("tdsl_partial_{suffix}"), grid, BLOCK, true),
                pass("tdsl_finish".to_owned(), 1, BLOCK, true),
            ],
        }
    }
}

/// The entry points a module declares (`TDSL_ENTRY void NAME(`).
pub(crate) fn entries(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("TDSL_ENTRY void "))
        .filter_map(|rest| rest.split('(').next())
        .map(|name| name.trim().to_owned())
        .collect()
}

/// Whether `step` may run on the device whose memory is `memory`: its operands must be there,
/// and its target too unless it is a host scalar (a statement's scalar result), for which this
/// says `true`; a step over another memory is a `DeviceMismatch`.
pub(crate) fn host_scalar_target<T, const L: usize, const N: usize>(
    step: &Step<'_, T, L, N>,
    memory: Memory,
) -> Result<bool, CudaError> {
    let [target, operands] = step.memory();
    let host_scalar = target == Memory::Host && step.n_out() == 0;
    if (target != memory && !host_scalar) || (N > 0 && operands != memory) {
        return Err(CudaError::DeviceMismatch);
    }
    Ok(host_scalar)
}

/// The entry a module declares when it moves tiles ([`Launch::Tiles`]).
pub(crate) const TILES: &str = "tdsl_tiles_i32";

/// Picks the launch for a step, and whether 32-bit indices reach every element; `tiled` if its
/// module declares [`TILES`], which a step with an injective target then runs.
pub(crate) fn plan<T, const L: usize, const N: usize>(
    step: &Step<'_, T, L, N>,
    tiled: bool,
) -> (Launch, bool) {
    // Saturating: an empty loop makes either 0 whatever the others' product.
    let points = |extents: &[usize]| extents.iter().fold(1usize, |n, &e| n.saturating_mul(e));
    let outputs = points(&step.extents()[..step.n_out()]);
    let summed = points(&step.extents()[step.n_out()..]);
    let launch = if step.n_out() == 0 {
        let blocks = summed.div_ceil(BLOCK as usize).clamp(1, 1024);
        Launch::Scalar {
            grid: blocks as u32,
        }
    } else if outputs == 0 {
        Launch::Nothing
    } else if !step.injective() {
        // Two target points share an element: one thread writes them all, in order.
        Launch::Map { grid: 1, block: 1 }
    } else if tiled {
        Launch::Tiles {
            grid: outputs.div_ceil(32 * 32).clamp(1, MAX_GRID) as u32,
        }
    } else if summed >= ROWS_FROM && L > step.n_out() {
        Launch::Rows {
            grid: outputs.min(MAX_GRID) as u32,
        }
    } else {
        // A point-wise step's threads take four points each, their reads together
        // (`emit::cuda`'s `tdsl_point`); a summing one's a point at a time.
        let per_thread = if L == step.n_out() { 4 } else { 1 };
        Launch::Map {
            grid: outputs
                .div_ceil(per_thread * BLOCK as usize)
                .clamp(1, MAX_GRID) as u32,
            block: BLOCK,
        }
    };
    // Every offset and loop counter must fit: the largest is below the points plus four
    // grids' worth of threads (a thread looks four grid strides ahead), or an operand's reach.
    let limit = i32::MAX as usize / 2;
    let points_fit =
        outputs.saturating_mul(summed.max(1)) < limit && 4 * MAX_GRID * (BLOCK as usize) < limit;
    // Offsets are taken from each access's first element (`base`), which the step proved.
    let offsets_fit = |access: &Bound<'_, T, L>| match access.reach(step.extents(), u64::MAX) {
        Some((low, high)) => {
            (access.base - low).unsigned_abs() < limit
                && (high - access.base).unsigned_abs() < limit
        }
        None => true,
    };
    let fits = points_fit
        && offsets_fit(&step.target().as_read())
        && step.operands().iter().all(offsets_fit);
    (launch, fits)
}
