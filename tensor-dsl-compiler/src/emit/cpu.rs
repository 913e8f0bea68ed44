//! Statement plans → Rust for the host: operand accesses, the target, and one
//! `__private::evaluate` loop-nest call per step, its body a closure over the operands'
//! elements at the current point.

use std::collections::HashMap;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote_spanned, ToTokens};

use super::checks::{end_expr, layout_local, located, position_expr};
use super::{hidden, hidden_numbered, tensor_expr, Context};
use crate::ir::{
    AssignOp, BinaryOp, Capability, Exponent, Expr, Function, IndexVar, Scale, Slot, Statement,
    Target, TensorId, TensorOrigin,
};
use crate::lower::{
    product_factors, written_stages, Kernel, Mode, Plan, Stage, StageInput, StatementPlan, Step,
};

type Extents = HashMap<(usize, String), Ident>;

pub fn emit_statement(
    cx: &Context,
    plan: &Plan,
    statement_plan: &StatementPlan,
    extents: &Extents,
) -> TokenStream {
    let p = cx.private();
    let index = statement_plan.statement;
    let statement = &plan.program.statements[index];
    let emitter = StatementEmitter {
        cx,
        plan,
        statement_plan,
        statement,
        index,
        extents,
    };
    let steps = &statement_plan.steps;
    let scalars = statement.scalars.iter().enumerate().map(|(k, scalar)| {
        let local = hidden_numbered("__scalar", k);
        let tokens = &scalar.tokens;
        // A dereferenced target read by `*=` is a scalar in parentheses, `(*r)`.
        quote_spanned!(scalar.span=> #[allow(unused_parens)] let #local = #tokens;)
    });
    // Exponents are typed where they are bound, so rustc reports a non-`i32` on its tokens.
    let exponents = statement.exponents.iter().enumerate().map(|(k, exponent)| {
        let local = hidden_numbered("__exponent", k);
        let tokens = &exponent.tokens;
        quote_spanned!(exponent.span=> let #local: i32 = #tokens;)
    });
    let scalars = hygienic!(#(#scalars)* #(#exponents)*);

    match &statement.target {
        Target::NewTensor {
            name, mutable, ty, ..
        } => {
            let rhs = emitter.new_tensor(steps);
            let binding = binding(name, *mutable, ty.as_ref());
            hygienic! {
                #binding = {
                    #scalars
                    #rhs
                };
            }
        }
        Target::NewScalar { name, mutable, ty } => {
            let sum = emitter.scalar_sum(steps, ty.as_ref(), None);
            let binding = binding(name, *mutable, ty.as_ref());
            let value = hygienic!({
                #scalars
                #sum
            });
            // A declared type other than the elements' is reported on the type's tokens.
            let value = match ty {
                Some(ty) => {
                    let span = ty
                        .clone()
                        .into_iter()
                        .next()
                        .map_or_else(Span::call_site, |t| t.span());
                    quote_spanned!(span=> #p::declared::<#ty, _>(#value))
                }
                None => value,
            };
            hygienic! {
                #binding = #value;
            }
        }
        Target::Scalar { place, .. } => {
            let sum = emitter.scalar_sum(steps, None, Some(place));
            // The steps already negate for `-=`, so what remains is to set or add.
            let update = match statement.op() {
                AssignOp::Assign => hygienic!(#place = __sum),
                AssignOp::Add | AssignOp::Sub => hygienic! {
                    // A dereferenced place is written in parentheses, `(*r)`.
                    #[allow(unused_parens)]
                    let __place = &mut #place;
                    *__place = #p::Element::plus(*__place, __sum)
                },
            };
            hygienic! {
                {
                    #scalars
                    let __sum = { #sum };
                    #update;
                }
            }
        }
        Target::Tensor { access } => {
            let target_tensor = access.tensor;
            let place = tensor_expr(&plan.program.tensors, target_tensor);
            let target = hidden("__target");
            // A value that cannot be written (a read-only view, no tensor at all) is reported
            // on the target's token.
            let write_method = located(&hidden("__tdsl_target"), access.span);
            let needs = emitter.needs();
            let Frame {
                backend,
                operands,
                layouts,
                is_static,
                steps,
            } = emitter.frame(
                steps,
                Written::Existing {
                    tensor: target_tensor,
                    place: &place,
                    access: &target,
                    span: access.span,
                },
            );
            hygienic! {
                {
                    #scalars
                    #backend
                    #layouts
                    #is_static
                    let #target = {
                        use #p::{ReadOnlyTarget as _, TargetOwned as _, TargetShared as _};
                        #place.#write_method()
                    };
                    #operands
                    let __target_read = #target.read();
                    let __zero = #p::zero_like(&#target);
                    #needs
                    #steps
                }
            }
        }
    }
}

fn binding(name: &Ident, mutable: bool, ty: Option<&TokenStream>) -> TokenStream {
    let mutability = mutable.then(|| hygienic!(mut));
    let ty = ty.map(|ty| hygienic!(: #ty));
    hygienic!(let #mutability #name #ty)
}

struct StatementEmitter<'a> {
    cx: &'a Context,
    plan: &'a Plan,
    statement_plan: &'a StatementPlan,
    statement: &'a Statement,
    index: usize,
    extents: &'a Extents,
}

/// What a statement writes into, as its frame needs to know it.
enum Written<'t> {
    /// An existing tensor: `place` as written, borrowed for the statement as `access`.
    Existing {
        tensor: TensorId,
        place: &'t TokenStream,
        access: &'t Ident,
        /// The target's token, where a value it cannot hold is reported.
        span: Span,
    },
    /// A tensor the statement makes (`let c[i] = …`), bound as `__result`.
    NewTensor,
    /// A scalar sum.
    Scalar,
}

/// The code every form of statement writes around its target, each piece placed by the form:
/// the backend, the operand accesses, the layouts of the block's own tensors, the static flag
/// and the steps.
struct Frame {
    backend: TokenStream,
    operands: TokenStream,
    layouts: TokenStream,
    is_static: TokenStream,
    steps: TokenStream,
}

/// A step's code: its kernel call, the same step as written-out loops, and whether it is small
/// enough for those (`__private::is_small` over its extents, with the larger limit when every
/// tensor is static).
struct StepCode {
    /// The step's value at a point as one closure both paths call (`__private::point_body`),
    /// where both need it: empty otherwise.
    body_fn: TokenStream,
    general: TokenStream,
    /// The general path as one call that also detaches the operands (`evaluate_detached`,
    /// `copy_detached`, `contract_detached`), for a statement of this one step on the host.
    detached: Option<TokenStream>,
    written_out: TokenStream,
    small: TokenStream,
    /// Each access the written-out loops read (`__operand_N` or `__target_read`) with its
    /// layout local, and the target's layout.
    reads: Vec<(Ident, TokenStream)>,
    target_layout: TokenStream,
    /// The written-out loops are one point-wise loop over runs (`StepParts::runs`).
    pointwise: bool,
}

/// What a step's code is made of (see `StatementEmitter::step_parts`).
struct StepParts {
    /// How many of the loops are the target's.
    n_out: usize,
    /// Each loop's extent local.
    extents: Vec<Ident>,
    /// The target's `Axis` per axis, and its position at a point of the written-out loops.
    target_axes: Vec<TokenStream>,
    target_position: Vec<TokenStream>,
    /// Each operand read, bound to the loops (`handle.at(axes)`), and loaded at a point.
    operands: Vec<TokenStream>,
    /// Each operand read with its axes, unbound (`(handle, axes)`, for `with_detached`).
    unbound: Vec<TokenStream>,
    loads: Vec<Load>,
    /// Which of the target's axes hold its last loop, the one the written-out loops of a
    /// summing step take in chunks (`chunk`).
    target_along: Vec<bool>,
    /// Each operand's elements as one run, when the step is point-wise and every access has
    /// the target's indices in the target's order (`DenseTarget::pointwise`).
    runs: Option<Vec<TokenStream>>,
    /// Each access the written-out loops read with its layout local, and the target's layout.
    reads: Vec<(Ident, TokenStream)>,
    target_layout: TokenStream,
    /// α, the mode, and the value at a point (over `__x`, the operands' elements).
    alpha: TokenStream,
    mode: TokenStream,
    body: TokenStream,
    /// The body is the step's one operand, unchanged (`__private::copy`).
    copy: bool,
    /// The local holding the body as a closure (`StepCode::body_fn`), where the step has one.
    shared_body: Option<Ident>,
}

/// What written-out loops are made of (see `StatementEmitter::written_nest`): how many loops
/// are the target's and how many there are, the target's position and the axes its last loop
/// moves, each element loaded at a point, and the value at a point over `__x` (those
/// elements), also as a closure.
struct Nest<'p> {
    n_out: usize,
    n_loops: usize,
    target_position: &'p [TokenStream],
    target_along: &'p [bool],
    loads: &'p [Load],
    body: TokenStream,
    closure: TokenStream,
    /// Whether each point's sum is multiplied by `__alpha` (not a temporary's, which holds
    /// the sums as they are).
    scaled: bool,
}

/// The largest rank of a written-out network's temporary (`__private::Temporary`: the
/// runtime's `MAX_STATIC_RANK`).
const MAX_TEMPORARY_RANK: usize = 4;

/// The chunk widths, widest first, in which the written-out loops of a summing step take
/// the target's last loop before its last points one at a time. Measured on `Tensor<f32>`
/// products, one thread, baseline x86-64: 8 × 8 took 290 ns in chunks of eight against 413
/// in chunks of four and 840 one point at a time; 4 × 4, 127 ns in a chunk of four against
/// 180 in one of eight (lanes past the extent computed and dropped) and 172 one at a time.
const CHUNKS: [usize; 2] = [8, 4];

/// An operand's element as the written-out loops load it: its dense access, the position on
/// each axis at a point, and which axes hold the target's last loop.
struct Load {
    access: Ident,
    index: Vec<TokenStream>,
    along: Vec<bool>,
}

impl Load {
    /// The element at the current point (`DenseAccess::load`).
    fn at_point(&self) -> TokenStream {
        let Load { access, index, .. } = self;
        hygienic!(#access.load([#(#index),*]))
    }

    /// The elements at `lanes` points from the current one along the target's last loop
    /// (`DenseAccess::load_chunk`).
    fn chunk(&self, lanes: usize) -> TokenStream {
        let Load {
            access,
            index,
            along,
        } = self;
        let rank = index.len();
        hygienic!(#access.load_chunk::<#rank, #lanes>([#(#index),*], [#(#along),*]))
    }
}

impl StatementEmitter<'_> {
    fn extent(&self, var: &IndexVar) -> &Ident {
        &self.extents[&(self.index, var.name.clone())]
    }

    /// The statement's frame when it writes into `written`.
    fn frame(&self, steps: &[Step], written: Written<'_>) -> Frame {
        let (target, lhs, result) = match written {
            Written::Existing { tensor, .. } => (Some(tensor), &self.statement.lhs[..], None),
            Written::NewTensor => (None, &self.statement.lhs[..], Some(hidden("__result"))),
            Written::Scalar => (None, &[][..], None),
        };
        let (backend, operands, prelude) = match written {
            Written::Existing {
                tensor,
                place,
                access,
                span,
            } => (
                self.backend(steps, Some(place)),
                self.operand_accesses(steps, Some(tensor), Some((access, span))),
                self.detach_operands(steps, tensor, access),
            ),
            Written::NewTensor | Written::Scalar => (
                self.backend(steps, None),
                self.operand_accesses(steps, None, None),
                TokenStream::new(),
            ),
        };
        let slices = self.slices(steps, target);
        Frame {
            backend: hygienic!(#slices #backend),
            operands,
            layouts: self.let_layouts(steps, target),
            is_static: self.static_flag(steps, target, result.as_ref()),
            steps: self.steps(steps, lhs, target, prelude),
        }
    }

    /// The extent type of left-hand index `var` over every use on the right-hand side
    /// (`__private::extent_of`, combined by `meet`): static only if every use is, so one
    /// operand of run-time shape over the index makes the result a `Tensor`.
    fn extent_type(&self, steps: &[Step], var: &IndexVar) -> Option<TokenStream> {
        let p = self.cx.private();
        let mut uses = Vec::new();
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                for (axis, slot) in access.slots.iter().enumerate() {
                    if *slot == Slot::Var(var.clone()) {
                        let layout = located(&layout_local(access.tensor), access.span);
                        uses.push(
                            quote_spanned!(access.span=> #p::extent_of::<#axis, _>(&#layout)),
                        );
                    }
                }
            });
        }
        uses.into_iter()
            .reduce(|first, later| hygienic!(#p::meet(#first, #later)))
    }

    /// The tensors a statement's steps read, and `target` first if given.
    fn tensors(&self, steps: &[Step], target: Option<TensorId>) -> Vec<TensorId> {
        let mut tensors: Vec<TensorId> = target.into_iter().collect();
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                if !tensors.contains(&access.tensor) {
                    tensors.push(access.tensor);
                }
            });
        }
        tensors
    }

    /// `let __layout_N = …` for each of the block's own `let`s the statement reads or writes
    /// (the prelude has those of tensors from Rust).
    fn let_layouts(&self, steps: &[Step], target: Option<TensorId>) -> TokenStream {
        let p = self.cx.private();
        let lets = self
            .tensors(steps, target)
            .into_iter()
            .filter_map(|tensor| match &self.plan.program.tensors[tensor].origin {
                TensorOrigin::Let { name, .. } => {
                    let layout = layout_local(tensor);
                    let rank = self.plan.program.tensors[tensor].rank;
                    Some(hygienic!(let #layout = #p::layout_of(&#name, #rank);))
                }
                // A range target's view is no operand: its extents are run-time ones.
                TensorOrigin::Slice { .. } if Some(tensor) == target => {
                    let layout = layout_local(tensor);
                    Some(hygienic!(let #layout = #p::StaticLayout::<#p::Dynamic>::OF;))
                }
                TensorOrigin::Slice { .. } => {
                    let (layout, slice) = (
                        layout_local(tensor),
                        tensor_expr(&self.plan.program.tensors, tensor),
                    );
                    let rank = self.plan.program.tensors[tensor].rank;
                    Some(hygienic!(let #layout = #p::layout_of(&#slice, #rank);))
                }
                TensorOrigin::External(_) | TensorOrigin::Rust(_) => None,
            });
        hygienic!(#(#lets)*)
    }

    /// `let __slice_N = …` for each view of a range (`x[i in 1..n]`) the statement reads or
    /// writes, made from its base where the statement starts (the block's checks found its
    /// ranges inside their axes). A target's range is cut from the base's own target access,
    /// and runs on the base's backend. With backends, one whose tensors a range cannot cut is a
    /// type error on it.
    fn slices(&self, steps: &[Step], target: Option<TensorId>) -> TokenStream {
        let p = self.cx.private();
        let tensors = &self.plan.program.tensors;
        let mut code = TokenStream::new();
        for tensor in self.tensors(steps, target) {
            let TensorOrigin::Slice { base, ranges } = &tensors[tensor].origin else {
                continue;
            };
            let (slice, base) = (tensor_expr(tensors, tensor), tensor_expr(tensors, *base));
            let ranges = ranges.iter().map(|range| {
                let (axis, lo, hi) = (range.axis, position_expr(range.lo), end_expr(range.hi));
                hygienic!((#axis, #lo, #hi))
            });
            if code.is_empty() {
                code.extend(hygienic!(use #p::{HostBackend as _, OwnBackend as _};));
            }
            if self.cx.dispatch {
                code.extend(hygienic! {
                    #p::slices_run(&(&&#p::Probe(&#base)).__tdsl_probe_backend());
                });
            }
            if Some(tensor) == target {
                let span = match &self.statement.target {
                    Target::Tensor { access } => access.span,
                    _ => unreachable!("a range target is an existing tensor's"),
                };
                let write_method = located(&hidden("__tdsl_target"), span);
                code.extend(hygienic! {
                    let __slice_backend = (&&#p::Probe(&#base)).__tdsl_probe_backend();
                    let #slice = #p::slice_target(
                        __slice_backend,
                        {
                            use #p::{ReadOnlyTarget as _, TargetOwned as _, TargetShared as _};
                            #base.#write_method()
                        },
                        &[#(#ranges),*],
                    );
                });
            } else {
                code.extend(hygienic!(let #slice = #p::slice(&#base, &[#(#ranges),*]);));
            }
        }
        code
    }

    /// `let __static: bool = …`: whether every tensor of the statement has static extents
    /// (`__private::StaticLayout`), `result` (a new tensor) included if given. A constant once
    /// inlined.
    fn static_flag(
        &self,
        steps: &[Step],
        target: Option<TensorId>,
        result: Option<&Ident>,
    ) -> TokenStream {
        let p = self.cx.private();
        let mut flags: Vec<TokenStream> = self
            .tensors(steps, target)
            .into_iter()
            .map(|tensor| layout_local(tensor).into_token_stream())
            .collect();
        let result = result.map(|result| {
            flags.push(hidden("__layout_result").into_token_stream());
            let rank = self.statement.lhs.len();
            hygienic!(let __layout_result = #p::layout_of(&#result, #rank);)
        });
        hygienic! {
            #result
            let __static: bool = true #(&& #flags.is_static)*;
        }
    }

    /// One `let __operand_N = …` per tensor the steps read, except `skip` (the target, read
    /// through its own access, whose token is `target`'s span). The element type is the
    /// tensors' types joined, the target's first: the target's own, which every operand must
    /// be readable as (its own type, or the real parts of a complex one); without a target,
    /// the operands' joined.
    fn operand_accesses(
        &self,
        steps: &[Step],
        skip: Option<TensorId>,
        target: Option<(&Ident, Span)>,
    ) -> TokenStream {
        let p = self.cx.private();
        let mut seen: Vec<(TensorId, Span)> = Vec::new();
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                if Some(access.tensor) != skip && !seen.iter().any(|(t, _)| *t == access.tensor) {
                    seen.push((access.tensor, access.span));
                }
            });
        }
        let mut witness = None;
        // The element type is the tensors' joined: their own if they agree, the complex one
        // where a real tensor meets a complex one of its precision (read as real where it
        // lies). Each join is spanned at its operand, so a type that mixes with none before it
        // is reported there; a target is joined first, and a complex value that it cannot hold
        // is reported on its token, once (`stored_in`).
        let mut joins = Vec::new();
        if target.is_some() || seen.len() > 1 {
            let elements = hidden("__elements");
            for (k, &(tensor, span)) in seen.iter().enumerate() {
                let expr = tensor_expr(&self.plan.program.tensors, tensor);
                joins.push(match (k, target) {
                    (0, None) => quote_spanned!(span=> let #elements = #p::elements_of(&#expr);),
                    (0, Some((target, _))) => quote_spanned!(span=>
                        let #elements = #p::join(#p::zero_like(&#target), &#expr);
                    ),
                    _ => quote_spanned!(span=> let #elements = #p::join(#elements, &#expr);),
                });
            }
            if let Some((target, span)) = target {
                joins.push(match seen.is_empty() {
                    true => quote_spanned!(span=> let #elements = #p::zero_like(&#target);),
                    // The braces carry the target's span to the argument rustc underlines.
                    false => quote_spanned!(span=>
                        #[allow(unused_braces)]
                        let #target = #p::stored_in(#target, { #elements });
                    ),
                });
            }
            witness = Some(elements);
        }
        let lets: Vec<TokenStream> = seen
            .iter()
            .map(|&(tensor, span)| {
                let local = hidden_numbered("__operand", tensor);
                let expr = tensor_expr(&self.plan.program.tensors, tensor);
                let access = match &witness {
                    // Spanned at the operand so a wrong element type is reported on its tokens.
                    Some(witness) => quote_spanned!(span=> #p::operand_like(&#witness, &#expr)),
                    None => quote_spanned!(span=> #p::read_operand(&#expr)),
                };
                witness.get_or_insert_with(|| local.clone());
                hygienic!(let #local = #access;)
            })
            .collect();
        // Each Rust scalar rebound as the element type, spanned at the scalar, so a scalar of
        // another type (`alpha: f32` in an f64 statement) is reported on its own tokens, once.
        let p = &p;
        let rebinds = witness.iter().flat_map(|witness| {
            self.statement
                .scalars
                .iter()
                .enumerate()
                .map(move |(k, scalar)| {
                    let local = hidden_numbered("__scalar", k);
                    // The braces carry the scalar's span to the argument rustc underlines.
                    quote_spanned!(scalar.span=>
                        #[allow(unused_braces)]
                        let #local = #p::scalar_like(&#witness, { #local });
                    )
                })
        });
        hygienic!(#(#joins)* #(#lets)* #(#rebinds)*)
    }

    /// Rebinds each operand of a statement that writes an existing tensor to what it must be
    /// read as: itself, or a copy taken now if its memory overlaps the target's (another name
    /// for the same view). Names cannot tell; addresses can.
    fn detach_operands(
        &self,
        steps: &[Step],
        target_tensor: TensorId,
        target: &Ident,
    ) -> TokenStream {
        let mut seen: Vec<TensorId> = Vec::new();
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                if access.tensor != target_tensor && !seen.contains(&access.tensor) {
                    seen.push(access.tensor);
                }
            });
        }
        let lets = seen.iter().map(|&tensor| {
            let local = hidden_numbered("__operand", tensor);
            let held = hidden_numbered("__held", tensor);
            hygienic! {
                let #held = #target.detach(#local);
                let #local = #held.access();
            }
        });
        hygienic!(#(#lets)*)
    }

    fn first_operand(&self, steps: &[Step]) -> Option<Ident> {
        steps
            .iter()
            .flat_map(|step| &step.terms)
            .find_map(|term| first_access(&term.expr))
            .map(|tensor| hidden_numbered("__operand", tensor))
    }

    /// A block evaluating to a new zero-initialised tensor over the left-hand indices with
    /// `steps` applied to it.
    fn new_tensor(&self, steps: &[Step]) -> TokenStream {
        let p = self.cx.private();
        let Frame {
            backend,
            operands,
            layouts,
            is_static,
            steps: step_code,
        } = self.frame(steps, Written::NewTensor);
        let witness = self
            .first_operand(steps)
            .expect("checked: a new tensor's indices occur in some operand");
        let shape: Vec<&Ident> = self
            .statement
            .lhs_vars()
            .map(|var| self.extent(var))
            .collect();
        // The extent type of each left-hand index, from its first use (ranks 1 to 4: nested
        // arrays go no further), so a result over static extents is a nested array; unless the
        // `let` names another type (`: Tensor<f64>`), or the compiler made it (a temporary,
        // kept off the stack however large).
        let annotated_otherwise = match &self.statement.target {
            Target::NewTensor { ty: Some(ty), .. } => !is_array_type(ty),
            _ => false,
        };
        let array_result = (1..=4).contains(&self.statement.lhs.len())
            && !annotated_otherwise
            && !self.plan.program.makes_temporary(self.statement);
        let extent_types: Option<Vec<TokenStream>> = array_result
            .then(|| {
                self.statement
                    .lhs_vars()
                    .map(|var| self.extent_type(steps, var))
                    .collect()
            })
            .flatten();
        let zeros = match (&extent_types, self.cx.dispatch) {
            (Some(types), false) => {
                hygienic!(#p::new_result(&__zero, (#(#types,)*), &[#(#shape),*]))
            }
            (Some(types), true) => {
                hygienic!(#p::Backend::new_result(&__backend, &__zero, (#(#types,)*), [#(#shape),*]))
            }
            (None, false) => hygienic!(#p::zeros_like(&__zero, [#(#shape),*])),
            (None, true) => hygienic!(#p::Backend::zeros(&__backend, &__zero, [#(#shape),*])),
        };
        let needs = self.needs();
        hygienic! {
            #backend
            #operands
            #layouts
            let __zero = #p::zero_like(&#witness);
            #needs
            let mut __result = #zeros;
            #is_static
            {
                let __target = #p::TargetOwned::__tdsl_target(&mut __result);
                #step_code
            }
            __result
        }
    }

    /// Checks that the statement's element type has what its `/` and functions ask for, each
    /// on its own token (`__zero` is a value of the element type).
    fn needs(&self) -> TokenStream {
        let mut tokens = TokenStream::new();
        for &(capability, span) in &self.statement.needs {
            let at = self.cx.private_at(span);
            let check = match capability {
                Capability::Any => continue,
                Capability::Order => quote_spanned!(span=> #at::needs_order),
                Capability::Division => quote_spanned!(span=> #at::needs_division),
                Capability::Fraction => quote_spanned!(span=> #at::needs_fractions),
                Capability::Wide => quote_spanned!(span=> #at::needs_wide),
            };
            // The argument located on the token too, so the token is the error's primary span.
            let zero = located(&hidden("__zero"), span);
            tokens.extend(quote_spanned!(span=> #check(&#zero);));
        }
        tokens
    }

    /// Statements evaluating to the statement's value summed over every index, as a `T`.
    fn scalar_sum(
        &self,
        steps: &[Step],
        ty: Option<&TokenStream>,
        place: Option<&TokenStream>,
    ) -> TokenStream {
        let p = self.cx.private();
        // The element type comes from the first operand, else a scalar, else the target.
        let zero = if let Some(operand) = self.first_operand(steps) {
            hygienic!(#p::zero_like(&#operand))
        } else if !self.statement.scalars.is_empty() {
            let scalar = hidden_numbered("__scalar", 0);
            hygienic!(#p::zero_like(&#scalar))
        } else if let Some(place) = place {
            hygienic!(#p::zero_like(&#place))
        } else if let Some(ty) = ty {
            hygienic!(<#ty as #p::Element>::ZERO)
        } else {
            hygienic!(0.0f64)
        };
        let needs = self.needs();
        let Frame {
            backend,
            operands,
            layouts,
            is_static,
            steps,
        } = self.frame(steps, Written::Scalar);
        hygienic! {
            #backend
            #operands
            #layouts
            #is_static
            let __zero = #zero;
            #needs
            let mut __sum = __zero;
            {
                let __target = #p::TargetAccess::scalar(&mut __sum);
                #steps
            }
            __sum
        }
    }

    /// One kernel call, and the same step as written-out loops. `in_place` names the target
    /// tensor when reads of it go through the target's own access.
    fn step(&self, k: usize, step: &Step, lhs: &[Slot], in_place: Option<TensorId>) -> StepCode {
        let mut parts = self.step_parts(step, lhs, in_place);
        let proven = self.proven_step(&parts);
        let p = self.cx.private();
        // A loop-nest step's kernel takes its body as a closure, and its written-out loops
        // call the same one: type-checked and compiled once, not once per path.
        let body_fn = if matches!(step.kernel, Kernel::LoopNest) && !parts.copy {
            let name = hidden_numbered("__body", k);
            let (n, body) = (parts.operands.len(), &parts.body);
            parts.shared_body = Some(name.clone());
            hygienic!(let #name = #p::point_body::<_, #n, _>(&__zero, move |__x| #body);)
        } else {
            TokenStream::new()
        };
        let extents = &parts.extents;
        let stages = match &step.kernel {
            Kernel::Network(factors) => written_stages(factors, parts.n_out, MAX_TEMPORARY_RANK),
            _ => None,
        };
        let small = if parts.runs.is_some() && !parts.copy {
            // One loop over the runs at every size (`__private::pointwise` shares a large one
            // between threads), so over owned tensors the general path is dead code.
            hygienic!(true)
        } else if let Some(runs) = &parts.runs {
            // One tensor's elements, scaled or added (`c = a`, `c = 2·a`, `c += a`): past the
            // threads' threshold the kernel, whose copy engines stream a plain copy's stores.
            let operands = runs.len();
            hygienic!(#p::is_small_run(#operands, &[#(#extents),*]))
        } else if let Some(stages) = &stages {
            // Staged, a network is small when each of its pairs is.
            let each = stages.iter().map(|stage| {
                let loops = stage.kept.iter().chain(&stage.summed);
                let extents = loops.map(|&l| &parts.extents[l]);
                hygienic!(#p::is_small(__static, &[#(#extents),*]))
            });
            hygienic!(#(#each)&&*)
        } else {
            hygienic!(#p::is_small(__static, &[#(#extents),*]))
        };
        StepCode {
            body_fn,
            general: self.kernel_call(step, &parts, proven),
            detached: self.detached_call(step, &parts),
            written_out: match &stages {
                Some(stages) => self.staged_written_out(step, &parts, stages),
                None => self.written_out(&parts),
            },
            small,
            pointwise: parts.runs.is_some(),
            reads: parts.reads,
            target_layout: parts.target_layout,
        }
    }

    /// What the code of a step is made of: its loops (the target's first), how each access
    /// is bound to them for the proof and where it is at a point of the written-out loops, and
    /// the value, α and mode of each point. `in_place` as for [`step`](Self::step).
    fn step_parts(&self, step: &Step, lhs: &[Slot], in_place: Option<TensorId>) -> StepParts {
        let p = self.cx.private();
        let lhs_vars: Vec<&IndexVar> = self.statement.lhs_vars().collect();
        let loops: Vec<&IndexVar> = lhs_vars.iter().copied().chain(&step.reduction).collect();
        let loop_of = |var: &IndexVar| {
            loops
                .iter()
                .position(|loop_var| *loop_var == var)
                .expect("every index of a step is one of its loops")
        };
        let axes = |slots: &[Slot]| -> Vec<TokenStream> {
            slots
                .iter()
                .map(|slot| match slot {
                    Slot::Var(var) => {
                        let position = loop_of(var);
                        hygienic!(#p::Axis::Loop(#position))
                    }
                    Slot::Fixed(position) => {
                        let position = position_expr(*position);
                        hygienic!(#p::Axis::Fixed(#position))
                    }
                })
                .collect()
        };
        // The element at the current point of the written-out loops.
        let position = |slots: &[Slot]| -> Vec<TokenStream> {
            slots
                .iter()
                .map(|slot| match slot {
                    Slot::Var(var) => hidden_numbered("__l", loop_of(var)).into_token_stream(),
                    Slot::Fixed(position) => position_expr(*position),
                })
                .collect()
        };
        let mut operands: Vec<TokenStream> = Vec::new();
        let mut unbound: Vec<TokenStream> = Vec::new();
        let mut loads: Vec<Load> = Vec::new();
        // The axes that hold the target's last loop: a chunk of the written-out loops moves
        // them together.
        let along = |slots: &[Slot]| -> Vec<bool> {
            slots
                .iter()
                .map(|slot| matches!(slot, Slot::Var(var) if lhs_vars.last() == Some(&var)))
                .collect()
        };
        let mut reads: Vec<(Ident, TokenStream)> = Vec::new();
        // One offset is one point in every access only if each has the target's indices, in
        // its order, none fixed or repeated.
        let distinct_vars = lhs
            .iter()
            .enumerate()
            .all(|(k, slot)| matches!(slot, Slot::Var(_)) && !lhs[..k].contains(slot));
        let mut runs =
            (lhs_vars.len() == loops.len() && !lhs.is_empty() && distinct_vars).then(Vec::new);
        let mut element = |access: &crate::ir::Access| {
            let handle = if Some(access.tensor) == in_place {
                hidden("__target_read")
            } else {
                hidden_numbered("__operand", access.tensor)
            };
            let access_axes = axes(&access.slots);
            // The parentheses carry the access's span, so a type error about this operand is
            // reported on the user's tensor rather than on the whole macro call.
            operands.push(quote_spanned! {access.span=>
                (#handle.at(&[#(#access_axes),*]))
            });
            unbound.push(quote_spanned! {access.span=>
                (#handle, &[#(#access_axes),*])
            });
            let index = position(&access.slots);
            let checked = dense_handle(&handle);
            loads.push(Load {
                access: checked.clone(),
                index,
                along: along(&access.slots),
            });
            if access.slots != lhs {
                runs = None;
            }
            if let Some(runs) = &mut runs {
                runs.push(hygienic!(#checked.run()));
            }
            if !reads.iter().any(|(read, _)| *read == handle) {
                let layout = layout_local(access.tensor).into_token_stream();
                reads.push((handle, layout));
            }
            let slot = operands.len() - 1;
            hygienic!(__x[#slot])
        };
        // A term that is the target's own element times a scale (`β·c[i, j]`): with β = 0 it
        // does not read the target (`times_target`), so NaN or infinity there stays out of the
        // result, as a GEMM's β = 0 keeps it out (the README's rule, for every statement).
        let target_term = |expr: &Expr| match (expr, in_place) {
            (Expr::Access(access), Some(target)) => access.tensor == target,
            _ => false,
        };
        // A single term's scale is applied once per point, after its sum (TiledArray's
        // ScalExpr); several point-wise terms each carry their own.
        // `copy`: the body is the one term's operand, unchanged.
        let (alpha, body, copy) = match &step.terms[..] {
            [term] if !target_term(&term.expr) => (
                self.scale(&term.scale, step.negate),
                self.expr(&term.expr, &mut element),
                matches!(term.expr, Expr::Access(_)),
            ),
            terms => {
                let mut body: Option<TokenStream> = None;
                for term in terms {
                    let scale = self.scale(&term.scale, false);
                    let value = self.expr(&term.expr, &mut element);
                    let term = if target_term(&term.expr) {
                        hygienic!(#p::times_target(#scale, #value))
                    } else {
                        hygienic!(#p::Element::times(#scale, #value))
                    };
                    body = Some(match body {
                        None => term,
                        Some(sum) => hygienic!(#p::Element::plus(#sum, #term)),
                    });
                }
                let body = body.expect("a step has at least one term");
                (self.scale(&Scale::one(), step.negate), body, false)
            }
        };
        let mode = match &step.mode {
            Mode::Assign => hygienic!(#p::Mode::Assign),
            Mode::Add => hygienic!(#p::Mode::Add),
            Mode::Scale(beta) => {
                let beta = self.scale(beta, false);
                hygienic!(#p::Mode::Scale(#beta))
            }
        };
        let target_layout = match (in_place, lhs.is_empty()) {
            (Some(target), _) => layout_local(target).into_token_stream(),
            (None, false) => hidden("__layout_result").into_token_stream(),
            (None, true) => hygienic!(#p::StaticLayout::<#p::Extents0>::OF),
        };
        StepParts {
            n_out: lhs_vars.len(),
            extents: loops.iter().map(|var| self.extent(var).clone()).collect(),
            target_axes: axes(lhs),
            target_position: position(lhs),
            target_along: along(lhs),
            operands,
            unbound,
            loads,
            runs,
            reads,
            target_layout,
            alpha,
            mode,
            body,
            copy,
            shared_body: None,
        }
    }

    /// The step's proof: every kernel takes one `Step`, made from the target, how to combine
    /// with it, α, the extents (`__ext`), the number of target loops and the operands; through
    /// `__backend` when steps dispatch (`Backend::prove`: a distributed backend plans from the
    /// accesses themselves).
    fn proven_step(&self, parts: &StepParts) -> TokenStream {
        let p = self.cx.private();
        let StepParts {
            n_out,
            target_axes,
            operands,
            alpha,
            mode,
            ..
        } = parts;
        let arguments = hygienic! {
            __target.at(&[#(#target_axes),*]),
            #mode,
            #alpha,
            __ext,
            #n_out,
            [#(#operands),*],
        };
        if self.cx.dispatch {
            hygienic!(#p::Backend::prove(&__backend, #arguments))
        } else {
            hygienic!(#p::Step::new(#arguments))
        }
    }

    /// The kernel call on the proven step: the step's engine on the host, or, with `cuda`,
    /// through `__backend` (`dispatched_step`).
    fn kernel_call(&self, step: &Step, parts: &StepParts, proven: TokenStream) -> TokenStream {
        let p = self.cx.private();
        let extents = &parts.extents;
        let body = body_closure(parts);
        let call = if self.cx.dispatch {
            self.dispatched_step(step, proven, &body)
        } else {
            match &step.kernel {
                Kernel::LoopNest if parts.copy => hygienic!(#p::copy(#proven)),
                Kernel::LoopNest => {
                    let paths = nest_paths(parts);
                    hygienic!(#p::evaluate(#proven, #body, #p::#paths))
                }
                // Which loops each factor uses, and each loop's GEMM role, the runtime reads
                // off the proven accesses: nothing it trusts travels separately.
                Kernel::Network(_) => {
                    let conj = conjugated_factors(step);
                    hygienic! {
                    {
                        // The contraction order, chosen once per shape at this call site.
                        static __PLANS: #p::PlanCache = #p::PlanCache::new();
                        #p::contract_network(#proven, #conj, &__PLANS)
                    }
                    }
                }
                Kernel::Gemm(_) => {
                    let conj = conjugated(step);
                    hygienic!(#p::contract(#proven, #conj))
                }
            }
        };
        hygienic! {
            {
                let __ext = [#(#extents),*];
                #call;
            }
        }
    }

    /// The general path of a statement whose one step runs on the host, as one runtime call
    /// that detaches the operands, proves the step and runs its kernel (see
    /// `__private::evaluate_detached`), where each statement wrote out those calls: about 3 %
    /// fewer instructions for rustc to build `benches/compile_cost.py`'s 100 statements in
    /// debug. None for a network, or where steps dispatch.
    fn detached_call(&self, step: &Step, parts: &StepParts) -> Option<TokenStream> {
        if self.cx.dispatch {
            return None;
        }
        let p = self.cx.private();
        let StepParts {
            n_out,
            extents,
            target_axes,
            unbound,
            alpha,
            mode,
            ..
        } = parts;
        let step_arguments = hygienic! {
            #p::Unproven {
                target: &__target.relent(),
                target_axes: &[#(#target_axes),*],
                mode: #mode,
                alpha: #alpha,
                extents: [#(#extents),*],
                n_out: #n_out,
                operands: [#(#unbound),*],
            }
        };
        match &step.kernel {
            Kernel::LoopNest if parts.copy => Some(hygienic!(#p::copy_detached(#step_arguments);)),
            Kernel::LoopNest => {
                let body = body_closure(parts);
                let paths = nest_paths(parts);
                Some(hygienic!(#p::evaluate_detached(#step_arguments, #body, #p::#paths);))
            }
            Kernel::Gemm(_) => {
                let conj = conjugated(step);
                Some(hygienic!(#p::contract_detached(#step_arguments, #conj);))
            }
            Kernel::Network(_) => None,
        }
    }

    /// A step as loops written out over `__ext` (the extents, constants when every tensor is
    /// static), reading elements through `DenseAccess::load` and combining into the target
    /// through `DenseTarget::update`: the compiler sees the whole nest and unrolls small ones. Each
    /// target point gets α times its sum combined as the step's mode says, as in `evaluate`
    /// (an empty sum is 0 whatever α, and β = 0 does not read the target, as in `Step`).
    fn written_out(&self, parts: &StepParts) -> TokenStream {
        let p = self.cx.private();
        let StepParts {
            n_out,
            extents,
            target_position,
            target_along,
            loads,
            runs,
            alpha,
            mode,
            shared_body,
            ..
        } = parts;
        let (n_out, n_loops) = (*n_out, extents.len());
        // The value at a point (over `__x`, the elements loaded there, if any), and the body
        // as a closure (its argument's length written out: the chunked loops call it before
        // anything else fixes its type).
        let n_loads = loads.len();
        let (body, closure) = match shared_body {
            Some(name) if loads.is_empty() => (hygienic!(#name([])), hygienic!(&#name)),
            Some(name) => (hygienic!(#name(__x)), hygienic!(&#name)),
            None => {
                let body = &parts.body;
                (body.clone(), hygienic!(|__x: [_; #n_loads]| #body))
            }
        };
        if let Some(runs) = runs {
            return hygienic! {
                {
                    let __mode = #mode;
                    let __alpha = #alpha;
                    #p::pointwise(&__dense_target, [#(#runs),*], __mode, __alpha, #closure);
                }
            };
        }
        let nest = self.written_nest(Nest {
            n_out,
            n_loops,
            target_position,
            target_along,
            loads,
            body,
            closure,
            scaled: true,
        });
        hygienic! {
            {
                let __ext = [#(#extents),*];
                let __mode = #mode;
                let __alpha = if __ext[#n_out..].contains(&0) { #p::lit(&__zero, 1.0) } else { #alpha };
                #nest
            }
        }
    }

    /// A network step as written-out loops contracting its factors pair by pair (`stages`),
    /// each pair but the last into a `__private::Temporary` over the loops still needed, the
    /// last into the target with the step's α and mode: a few hundred points per pair where
    /// one nest over every loop would visit their product. An empty sum anywhere gives α = 1,
    /// as `written_out` does.
    fn staged_written_out(&self, step: &Step, parts: &StepParts, stages: &[Stage]) -> TokenStream {
        let p = self.cx.private();
        let factors = product_factors(step).expect("a network step is a product of tensors");
        let loops: Vec<&IndexVar> = self.statement.lhs_vars().chain(&step.reduction).collect();
        let loop_of = |var: &IndexVar| {
            loops
                .iter()
                .position(|loop_var| *loop_var == var)
                .expect("every index of a step is one of its loops")
        };
        let n_out = parts.n_out;
        let summed_extents = &parts.extents[n_out..];
        let mut code = hygienic!(let __empty = [#(#summed_extents),*].contains(&0););
        for (s, stage) in stages.iter().enumerate() {
            let last = s + 1 == stages.len();
            let stage_loops: Vec<usize> = stage.kept.iter().chain(&stage.summed).copied().collect();
            let at = |l: usize| {
                let local = stage_loops.iter().position(|&m| m == l);
                hidden_numbered("__l", local.expect("a stage loops over its inputs' loops"))
                    .into_token_stream()
            };
            // The axes of an input that hold the stage's last kept loop move with a chunk.
            let last_kept = stage.kept.last().copied();
            let mut loads = Vec::new();
            let mut values = Vec::new();
            let mut reads = TokenStream::new();
            for (slot, input) in stage.inputs.iter().enumerate() {
                let x = hygienic!(__x[#slot]);
                match *input {
                    StageInput::Factor(k) => {
                        let (access, conjugated) = factors[k];
                        let index = access.slots.iter().map(|slot| match slot {
                            Slot::Var(var) => at(loop_of(var)),
                            Slot::Fixed(position) => position_expr(*position),
                        });
                        let along = access.slots.iter().map(|slot| {
                            matches!(slot, Slot::Var(var) if Some(loop_of(var)) == last_kept)
                        });
                        loads.push(Load {
                            access: parts.loads[k].access.clone(),
                            index: index.collect(),
                            along: along.collect(),
                        });
                        values.push(if conjugated {
                            hygienic!(#p::Element::conj(#x))
                        } else {
                            x
                        });
                    }
                    StageInput::Temporary(t) => {
                        let (temporary, handle) = (
                            hidden_numbered("__stage", t),
                            hidden_numbered("__dense_stage", t),
                        );
                        reads.extend(hygienic!(let #handle = #temporary.read();));
                        let kept = &stages[t].kept;
                        loads.push(Load {
                            access: handle,
                            index: kept.iter().map(|&l| at(l)).collect(),
                            along: kept.iter().map(|&l| Some(l) == last_kept).collect(),
                        });
                        values.push(x);
                    }
                }
            }
            let body = hygienic!(#p::Element::times(#(#values),*));
            let (own_position, own_along): (Vec<TokenStream>, Vec<bool>) = (0..stage.kept.len())
                .map(|k| (at(stage.kept[k]), k + 1 == stage.kept.len()))
                .unzip();
            let (target_position, target_along) = if last {
                (&parts.target_position[..], &parts.target_along[..])
            } else {
                (&own_position[..], &own_along[..])
            };
            let nest = self.written_nest(Nest {
                n_out: stage.kept.len(),
                n_loops: stage_loops.len(),
                target_position,
                target_along,
                loads: &loads,
                closure: hygienic!(|__x: [_; 2]| #body),
                body,
                scaled: last,
            });
            // Typed: a stage over no loops (two scalars multiplied) has an empty list.
            let n_loops = stage_loops.len();
            let extents = stage_loops.iter().map(|&l| &parts.extents[l]);
            let extents = hygienic!(let __ext: [usize; #n_loops] = [#(#extents),*];);
            if last {
                let (mode, alpha) = (&parts.mode, &parts.alpha);
                code.extend(hygienic! {
                    {
                        #reads
                        #extents
                        let __mode = #mode;
                        let __alpha = if __empty { #p::lit(&__zero, 1.0) } else { #alpha };
                        #nest
                    }
                });
            } else {
                let temporary = hidden_numbered("__stage", s);
                let (rank, shape) = (
                    stage.kept.len(),
                    stage.kept.iter().map(|&l| &parts.extents[l]),
                );
                // Each index's extent type: a temporary over static ones has static extents.
                let axes = stage.kept.iter().map(|&l| {
                    self.extent_type(std::slice::from_ref(step), loops[l])
                        .expect("a temporary's index is one of its factors'")
                });
                let storage = hidden_numbered("__storage", s);
                code.extend(hygienic! {
                    let mut #storage = #p::TemporaryStorage::new();
                    let mut #temporary =
                        #storage.zeros::<#rank, _>(&__zero, (#(#axes,)*), [#(#shape),*]);
                    {
                        #reads
                        let __dense_target = #temporary.target();
                        #extents
                        let __mode = #p::Mode::Assign;
                        #nest
                    }
                });
            }
        }
        hygienic!({ #code })
    }

    /// Written-out loops over `__ext` (the target's loops first) that combine α times each
    /// target point's sum into `__dense_target` as `__mode` says, reading `nest.loads`.
    fn written_nest(&self, nest: Nest<'_>) -> TokenStream {
        let p = self.cx.private();
        let Nest {
            n_out,
            n_loops,
            target_position,
            target_along,
            loads,
            body,
            closure,
            scaled,
        } = nest;
        let n_loads = loads.len();
        let scale = |sum: TokenStream| {
            if scaled {
                hygienic!(#p::Element::times(__alpha, #sum))
            } else {
                sum
            }
        };
        let point_value = scale(hygienic!(__sum));
        let lane_value = scale(hygienic!(__s));
        let loads_at_point: Vec<TokenStream> = loads.iter().map(Load::at_point).collect();
        let elements = (!loads.is_empty()).then(|| hygienic!(let __x = [#(#loads_at_point),*];));
        // A summing step over operands takes the target's last loop in chunks, then one point
        // at a time: both read the body as one closure, so it is type-checked once.
        let chunked = n_out > 0 && n_out < n_loops && !loads.is_empty();
        let value_at = |x: TokenStream| {
            if chunked {
                hygienic!(__body(#x))
            } else {
                body.clone()
            }
        };
        // The target's points, the last target loop innermost, each point's sum in full.
        let points = |outer: usize| {
            let value = if n_out == n_loops {
                hygienic! {
                    #elements
                    let __sum = #body;
                }
            } else {
                let value = value_at(hygienic!(__x));
                let summed = written_loops(
                    n_out..n_loops,
                    hygienic! {
                        #elements
                        __sum = #p::Element::plus(__sum, #value);
                    },
                );
                hygienic! {
                    let mut __sum = __zero;
                    #summed
                }
            };
            written_loops(
                outer..n_out,
                hygienic! {
                    #value
                    __dense_target.update([#(#target_position),*], __mode, #point_value);
                },
            )
        };
        let nest = if !chunked {
            points(0)
        } else {
            // A summing step's innermost target loop in chunks of `CHUNKS` points, then one
            // point at a time: each chunk's sums are independent chains the compiler keeps in
            // vector lanes, where one point's sum alone is a chain of dependent additions.
            // Each point still sums its terms in the same order.
            let last = n_out - 1;
            let var = hidden_numbered("__l", last);
            let chunks = CHUNKS.iter().map(|&lanes| {
                let loads = loads.iter().map(|load| load.chunk(lanes));
                let lane = (0..n_loads).map(|k| hygienic!(__xs[#k][__u]));
                let value = value_at(hygienic!([#(#lane),*]));
                let summed = written_loops(
                    n_out..n_loops,
                    hygienic! {
                        let __xs = [#(#loads),*];
                        for __u in 0..#lanes {
                            __sums[__u] = #p::Element::plus(__sums[__u], #value);
                        }
                    },
                );
                hygienic! {
                    while #var + #lanes <= __ext[#last] {
                        let mut __sums = [__zero; #lanes];
                        #summed
                        __dense_target.update_chunk(
                            [#(#target_position),*],
                            [#(#target_along),*],
                            __mode,
                            __sums.map(|__s| #lane_value),
                        );
                        #var += #lanes;
                    }
                }
            });
            let rest = points(n_out);
            let narrowest = CHUNKS[CHUNKS.len() - 1];
            // Only where debug assertions are off (Cargo's release profile): the chunks give
            // the same bits as the points one at a time, and a debug build, which would not
            // vectorize them, type-checks about a fifth less of each statement without them.
            let nest = hygienic! {
                #[allow(unused_mut)]
                let mut __chunked = 0usize;
                #[cfg(not(debug_assertions))]
                let () = if #p::CHUNKED_SUMS && __ext[#last] >= #narrowest {
                    let mut #var = 0usize;
                    #(#chunks)*
                    __chunked = #var;
                };
                for #var in __chunked..__ext[#last] {
                    #rest
                }
            };
            let nest = written_loops(0..last, nest);
            hygienic! {
                let __body = #closure;
                #nest
            }
        };
        nest
    }

    /// `let __backend = …` from the statement's target, else its first tensor, and a proof
    /// that every other tensor is on the same kind of backend (a type error on its tokens).
    /// Nothing without a backend besides the host (`cuda`, `mpi`).
    fn backend(&self, steps: &[Step], target: Option<&TokenStream>) -> TokenStream {
        if !self.cx.dispatch {
            return TokenStream::new();
        }
        let p = self.cx.private();
        let mut tensors: Vec<(TensorId, Span)> = Vec::new();
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                if !tensors.iter().any(|(t, _)| *t == access.tensor) {
                    tensors.push((access.tensor, access.span));
                }
            });
        }
        let expr = |tensor| tensor_expr(&self.plan.program.tensors, tensor);
        let source = match (target, tensors.first()) {
            (Some(place), _) => place.clone(),
            (None, Some(&(tensor, _))) => expr(tensor),
            (None, None) => return hygienic!(let __backend = #p::Host;),
        };
        let backend = hidden("__backend");
        let checks = tensors.iter().map(|&(tensor, span)| {
            let tensor = expr(tensor);
            quote_spanned!(span=> #p::same_backend(
                &#backend,
                (&&#p::Probe(&#tensor)).__tdsl_probe_tensor(),
            );)
        });
        hygienic! {
            use #p::{HostBackend as _, OwnBackend as _};
            let __backend = (&&#p::Probe(&#source)).__tdsl_probe_backend();
            #(#checks)*
        }
    }

    /// The statement's steps: written out when every step is small and every access dense
    /// (then no operand was copied and nothing else of the general path runs), else through
    /// the kernels after `general_prelude`; only the latter without `written_out`, and where
    /// the runtime's build drops the loops (`by_build!`).
    fn steps(
        &self,
        steps: &[Step],
        lhs: &[Slot],
        in_place: Option<TensorId>,
        general_prelude: TokenStream,
    ) -> TokenStream {
        let code: Vec<StepCode> = steps
            .iter()
            .enumerate()
            .map(|(k, step)| self.step(k, step, lhs, in_place))
            .collect();
        let body_fns = code.iter().map(|step| &step.body_fn);
        let small = code.iter().map(|step| &step.small);
        let written_out = code.iter().map(|step| &step.written_out);
        let general = code.iter().map(|step| &step.general);
        let mut reads: Vec<&(Ident, TokenStream)> = Vec::new();
        for read in code.iter().flat_map(|step| &step.reads) {
            if !reads.iter().any(|(handle, _)| *handle == read.0) {
                reads.push(read);
            }
        }
        // A lone point-wise step reads each access as one run: `as_run` takes an owned
        // tensor's whole buffer as it is, without `as_dense`'s walk over its strides.
        let dense = match &code[..] {
            [StepCode {
                pointwise: true, ..
            }] => hidden("as_run"),
            _ => hidden("as_dense"),
        };
        let checks = reads
            .iter()
            .map(|(handle, layout)| hygienic!(#handle.#dense(#layout)));
        let bound = reads.iter().map(|(handle, _)| dense_handle(handle));
        // Operands read in place must not share memory with the target (`__target_read` is the
        // target's own point-wise read, which may).
        let apart = reads
            .iter()
            .filter(|(handle, _)| handle != "__target_read")
            .map(|(handle, _)| {
                let checked = dense_handle(handle);
                hygienic!(&& !__dense_target.overlaps(&#checked))
            });
        let target_layout = code
            .first()
            .map(|step| step.target_layout.clone())
            .unwrap_or_default();
        // One step detaches its operands in its call; several detach them all first, before
        // the first writes anything.
        let general = match &code[..] {
            [StepCode {
                detached: Some(call),
                ..
            }] => call.clone(),
            _ => hygienic!(#general_prelude #(#general)*),
        };
        // The general path in a block of its own, as in the `match`'s arm: its locals (held
        // copies of operands, rebound accesses) end with it.
        if !self.cx.written_out {
            return hygienic!(#(#body_fns)* { #general });
        }
        // Both forms, of which the runtime's build keeps one (`by_build`): an unoptimized
        // build compiles only the general path, which halved a debug build's cost per
        // statement (`benches/compile_cost.py`).
        let p = self.cx.private();
        hygienic! {
            #(#body_fns)*
            #p::by_build! {
                {
                    match (
                        true #(&& #small)*,
                        __target.#dense(#target_layout),
                        (#(#checks,)*),
                    ) {
                        (true, ::core::option::Option::Some(__dense_target), (#(::core::option::Option::Some(#bound),)*))
                            if true #(#apart)* =>
                        {
                            #(#written_out)*
                        }
                        _ => {
                            #general
                        }
                    }
                }
                {
                    {
                        #general
                    }
                }
            }
        }
    }

    /// A step's CUDA modules as a `&StepModule` (`StepModule::NONE` in a build without CUDA,
    /// where no step reaches a device).
    fn step_module(&self, step: &Step) -> TokenStream {
        let p = self.cx.private();
        if !self.cx.cuda {
            return hygienic!(&#p::StepModule::NONE);
        }
        let text =
            |real| crate::emit::cuda::step_module(self.plan, self.statement_plan, step, real);
        let (shape, f32_text) = text(crate::emit::cuda::DeviceType::F32);
        let (_, f64_text) = text(crate::emit::cuda::DeviceType::F64);
        let (_, i32_text) = text(crate::emit::cuda::DeviceType::I32);
        let (_, i64_text) = text(crate::emit::cuda::DeviceType::I64);
        let (_, c32_text) = text(crate::emit::cuda::DeviceType::C32);
        let (_, c64_text) = text(crate::emit::cuda::DeviceType::C64);
        let crate::emit::cuda::ModuleShape {
            operands,
            loops,
            target_loops,
            scalars,
        } = shape;
        hygienic! {
            {
                // SAFETY: the texts are the modules `emit::cuda` wrote for this very step.
                const __MODULE: #p::StepModule<'static> = unsafe {
                    #p::StepModule::new(
                        [#f32_text, #f64_text, #i32_text, #i64_text, #c32_text, #c64_text],
                        #operands,
                        #loops,
                        #target_loops,
                        #scalars,
                    )
                };
                &__MODULE
            }
        }
    }

    /// A step through `__backend`: the host kernel, or the step's CUDA module on a device.
    fn dispatched_step(&self, step: &Step, proven: TokenStream, body: &TokenStream) -> TokenStream {
        // `body`: the step's closure (a loop nest's), unused by the other kernels.
        let p = self.cx.private();
        let module = self.step_module(step);
        let scalar_values = (0..self.statement.scalars.len()).map(|k| self.scalar(k));
        // Each exponent rides in a slot of its own with its bits (`emit::cuda`'s layout).
        let exponent_slots = (0..self.statement.exponents.len()).map(|k| {
            let local = hidden_numbered("__exponent", k);
            hygienic!(#p::exponent_slot(&__zero, #local))
        });
        let scalar_values = hygienic!(&[#(#scalar_values,)* #(#exponent_slots),*]);
        match &step.kernel {
            Kernel::LoopNest => hygienic! {
                #p::Backend::evaluate(&__backend, #proven, #body, #module, #scalar_values)
            },
            Kernel::Network(_) => {
                let conj = conjugated_factors(step);
                hygienic! {
                    {
                        static __PLANS: #p::PlanCache = #p::PlanCache::new();
                        #p::Backend::contract_network(&__backend, #proven, #conj, &__PLANS, #module, #scalar_values)
                    }
                }
            }
            Kernel::Gemm(_) => {
                let conj = conjugated(step);
                hygienic!(#p::Backend::contract(&__backend, #proven, #conj, #module, #scalar_values))
            }
        }
    }

    /// A scale as a value of the element type: its coefficient times its scalars, divided by
    /// its divisors.
    fn scale(&self, scale: &Scale, negate: bool) -> TokenStream {
        let p = self.cx.private();
        let coefficient = if negate {
            -scale.coefficient
        } else {
            scale.coefficient
        };
        let coefficient = Literal::f64_suffixed(coefficient);
        let zero = hidden("__zero");
        let scalars = scale.scalars.iter().map(|&k| self.scalar(k));
        let divisors = scale.divisors.iter().map(|&k| self.scalar(k));
        let mut value = hygienic!(#p::lit(&#zero, #coefficient));
        for scalar in scalars {
            value = hygienic!(#p::Element::times(#value, #scalar));
        }
        for divisor in divisors {
            value = hygienic!(#p::Fractional::over(#value, #divisor));
        }
        value
    }

    fn scalar(&self, k: usize) -> TokenStream {
        let local = hidden_numbered("__scalar", k);
        let span = self.statement.scalars[k].span;
        quote_spanned!(span=> #local)
    }

    /// The element-wise value of `expr`; `access` turns each tensor access into its operand
    /// element.
    fn expr(
        &self,
        expr: &Expr,
        access: &mut dyn FnMut(&crate::ir::Access) -> TokenStream,
    ) -> TokenStream {
        let p = self.cx.private();
        match expr {
            Expr::Access(a) => access(a),
            Expr::Literal(literal) => match &literal.suffixed {
                Some(tokens) => tokens.clone(),
                None => {
                    let value = Literal::f64_suffixed(literal.value);
                    let zero = hidden("__zero");
                    quote_spanned!(literal.span=> #p::lit(&#zero, #value))
                }
            },
            Expr::Scalar(k) => self.scalar(*k),
            Expr::Neg(operand) => {
                let operand = self.expr(operand, access);
                hygienic!(#p::Element::negated(#operand))
            }
            Expr::Binary(op, left, right) => {
                let left = self.expr(left, access);
                let right = self.expr(right, access);
                match op {
                    BinaryOp::Add => hygienic!(#p::Element::plus(#left, #right)),
                    BinaryOp::Sub => hygienic!(#p::Element::minus(#left, #right)),
                    BinaryOp::Mul => hygienic!(#p::Element::times(#left, #right)),
                    BinaryOp::Div => hygienic!(#p::Fractional::over(#left, #right)),
                }
            }
            Expr::Call(function, args, span) => {
                // On the function's token, so a type error about the element type (`max`
                // over complex numbers) lands there, as the statement's own check does:
                // the path, and each argument parenthesized there (rustc points at the
                // argument whose type misses the trait).
                let located = span.resolved_at(Span::mixed_site());
                let args: Vec<TokenStream> = args
                    .iter()
                    .map(|arg| {
                        let arg = self.expr(arg, access);
                        quote_spanned!(located=> { #arg })
                    })
                    .collect();
                // The whole path on that token: a call's span starts at its path's first token.
                let p: TokenStream = p
                    .into_iter()
                    .map(|mut token| {
                        token.set_span(located);
                        token
                    })
                    .collect();
                let name = Ident::new(function.name(), located);
                let capability = match function.capability() {
                    Capability::Any => quote_spanned!(located=> Element),
                    Capability::Order => quote_spanned!(located=> Real),
                    Capability::Division => quote_spanned!(located=> Fractional),
                    Capability::Fraction | Capability::Wide => {
                        unreachable!("functions ask for operations, not literals")
                    }
                };
                match function {
                    Function::Powi(Exponent::Literal(exponent)) => {
                        quote_spanned!(located=> #p::#capability::powi(#(#args),*, #exponent))
                    }
                    Function::Powi(Exponent::Computed(k)) => {
                        let exponent = hidden_numbered("__exponent", *k);
                        quote_spanned!(located=> #p::#capability::powi(#(#args),*, #exponent))
                    }
                    _ => quote_spanned!(located=> #p::#capability::#name(#(#args),*)),
                }
            }
        }
    }
}

/// The loop-nest engine's paths a step takes (`__private::NestPaths`): point-wise where the
/// target takes every loop, summing otherwise. The statement's instance of the engine is then
/// compiled without the other's paths.
fn nest_paths(parts: &StepParts) -> Ident {
    let name = if parts.n_out == parts.extents.len() {
        "PointWise"
    } else {
        "Summing"
    };
    Ident::new(name, Span::mixed_site())
}

/// A loop-nest step's body as a closure over `__x`, the operands' elements at a point: the
/// statement's shared one where it has it (`StepCode::body_fn`).
fn body_closure(parts: &StepParts) -> TokenStream {
    match &parts.shared_body {
        Some(name) => name.to_token_stream(),
        None => {
            let body = &parts.body;
            hygienic!(move |__x| #body)
        }
    }
}

/// `inner` inside the written-out loops numbered `loops`, the first outermost, each over its
/// extent in `__ext`.
fn written_loops(loops: std::ops::Range<usize>, inner: TokenStream) -> TokenStream {
    loops.rev().fold(inner, |nest, k| {
        let var = hidden_numbered("__l", k);
        hygienic!(for #var in 0..__ext[#k] { #nest })
    })
}

/// Whether a written type is an array type (`[[f64; 3]; 3]`).
fn is_array_type(ty: &TokenStream) -> bool {
    let mut tokens = ty.clone().into_iter();
    matches!(
        (tokens.next(), tokens.next()),
        (Some(proc_macro2::TokenTree::Group(group)), None)
            if group.delimiter() == proc_macro2::Delimiter::Bracket
    )
}

/// The local holding `handle` checked to be dense (`Access::as_dense`).
fn dense_handle(handle: &Ident) -> Ident {
    hidden(&format!("__dense{handle}"))
}

fn first_access(expr: &Expr) -> Option<TensorId> {
    let mut first = None;
    expr.visit_accesses(&mut |access| {
        first.get_or_insert(access.tensor);
    });
    first
}

/// Which factors of a product step the pairwise GEMMs conjugate, as the runtime's `[bool; N]`.
fn conjugated_factors(step: &Step) -> TokenStream {
    let flags = crate::lower::product_factors(step)
        .expect("a network step is a product of tensors")
        .into_iter()
        .map(|(_, conjugated)| conjugated);
    quote::quote!([#(#flags),*])
}

/// Which factors of a GEMM step the kernel conjugates, as the runtime's `[bool; 2]`: a `conj`
/// around a factor costs nothing there.
fn conjugated(step: &Step) -> TokenStream {
    let [(_, a), (_, b)] = crate::lower::gemm_factors(step).expect("a GEMM step's two factors");
    quote::quote!([#a, #b])
}
