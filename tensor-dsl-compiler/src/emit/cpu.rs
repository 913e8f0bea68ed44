//! Statement plans → Rust for the host: operand accesses, the target, and one
//! `__private::evaluate` loop-nest call per step, its body a closure over the operands'
//! elements at the current point.

use std::collections::HashMap;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote_spanned, ToTokens};

use super::checks::{layout_local, located, position_expr};
use super::{hidden, hidden_numbered, private, tensor_expr};
use crate::ir::{
    AssignOp, BinaryOp, Exponent, Expr, Function, IndexVar, Scale, Slot, Statement, Target,
    TensorId, TensorOrigin,
};
use crate::lower::{Kernel, Mode, Plan, StatementPlan, Step};

type Extents = HashMap<(usize, String), Ident>;

pub fn emit_statement(
    plan: &Plan,
    statement_plan: &StatementPlan,
    extents: &Extents,
    cuda: bool,
) -> TokenStream {
    let p = private();
    let index = statement_plan.statement;
    let statement = &plan.program.statements[index];
    let emitter = StatementEmitter {
        plan,
        statement_plan,
        statement,
        index,
        extents,
        cuda,
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
                    let p = private();
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
            let op = match statement.op() {
                AssignOp::Assign => hygienic!(=),
                AssignOp::Add | AssignOp::Sub => hygienic!(+=),
            };
            hygienic! {
                {
                    #scalars
                    let __sum = { #sum };
                    #place #op __sum;
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
            let backend = emitter.backend(steps, Some(&place));
            let operands = emitter.operand_accesses(steps, Some(target_tensor), Some(&target));
            let detach = emitter.detach_operands(steps, target_tensor, &target);
            let layouts = emitter.let_layouts(steps, Some(target_tensor));
            let is_static = emitter.static_flag(steps, Some(target_tensor), None);
            let steps = emitter.steps(steps, &statement.lhs, Some(target_tensor), detach);
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
    plan: &'a Plan,
    statement_plan: &'a StatementPlan,
    statement: &'a Statement,
    index: usize,
    extents: &'a Extents,
    /// Dispatch each step on the tensors' backend (host or CUDA device).
    cuda: bool,
}

/// A step's code: its kernel call, the same step as written-out loops, and whether it is small
/// enough for those (`__private::is_small` over its extents).
struct StepCode {
    general: TokenStream,
    written_out: TokenStream,
    small: TokenStream,
    /// Each access the written-out loops read (`__operand_N` or `__target_read`) with its
    /// layout local, and the target's layout.
    reads: Vec<(Ident, TokenStream)>,
    target_layout: TokenStream,
}

/// What `StatementEmitter::static_loops` writes out: loop counts, the target's position and
/// the operands' loads per point, and the step's α, mode and body.
struct StaticLoops<'a> {
    n_out: usize,
    n_loops: usize,
    target: &'a [TokenStream],
    loads: &'a [TokenStream],
    alpha: &'a TokenStream,
    mode: &'a TokenStream,
    body: &'a TokenStream,
}

impl StatementEmitter<'_> {
    fn extent(&self, var: &IndexVar) -> &Ident {
        &self.extents[&(self.index, var.name.clone())]
    }

    /// The extent type of left-hand index `var` (`__private::extent_of`) from its first use
    /// on the right-hand side.
    fn extent_type(&self, steps: &[Step], var: &IndexVar) -> Option<TokenStream> {
        let p = private();
        let mut found = None;
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                if found.is_none() {
                    let axis = access
                        .slots
                        .iter()
                        .position(|slot| *slot == Slot::Var(var.clone()));
                    found = axis.map(|axis| (access.tensor, axis, access.span));
                }
            });
        }
        let (tensor, axis, span) = found?;
        let layout = located(&layout_local(tensor), span);
        Some(quote_spanned!(span=> #p::extent_of::<#axis, _>(&#layout)))
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
        let p = private();
        let lets = self
            .tensors(steps, target)
            .into_iter()
            .filter_map(|tensor| match &self.plan.program.tensors[tensor].origin {
                TensorOrigin::Let { name, .. } => {
                    let layout = layout_local(tensor);
                    Some(hygienic!(let #layout = #p::layout_of(&#name);))
                }
                TensorOrigin::External(_) | TensorOrigin::Rust(_) => None,
            });
        hygienic!(#(#lets)*)
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
        let p = private();
        let mut flags: Vec<TokenStream> = self
            .tensors(steps, target)
            .into_iter()
            .map(|tensor| layout_local(tensor).into_token_stream())
            .collect();
        let result = result.map(|result| {
            flags.push(hidden("__layout_result").into_token_stream());
            hygienic!(let __layout_result = #p::layout_of(&#result);)
        });
        hygienic! {
            #result
            let __static: bool = true #(&& #flags.is_static)*;
        }
    }

    /// One `let __operand_N = …` per tensor the steps read, except `skip` (the target, read
    /// through its own access). The first operand fixes the element type unless `witness`
    /// (the target) already does; every other operand must match it.
    fn operand_accesses(
        &self,
        steps: &[Step],
        skip: Option<TensorId>,
        witness: Option<&Ident>,
    ) -> TokenStream {
        let p = private();
        let mut seen: Vec<(TensorId, Span)> = Vec::new();
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                if Some(access.tensor) != skip && !seen.iter().any(|(t, _)| *t == access.tensor) {
                    seen.push((access.tensor, access.span));
                }
            });
        }
        let mut witness = witness.cloned();
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
        hygienic!(#(#lets)* #(#rebinds)*)
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
        let p = private();
        let operands = self.operand_accesses(steps, None, None);
        let witness = self
            .first_operand(steps)
            .expect("checked: a new tensor's indices occur in some operand");
        let shape: Vec<&Ident> = self
            .statement
            .lhs_vars()
            .map(|var| self.extent(var))
            .collect();
        let backend = self.backend(steps, None);
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
        let zeros = match (&extent_types, self.cuda) {
            (Some(types), false) => {
                hygienic!(#p::new_result(&__zero, (#(#types,)*), &[#(#shape),*]))
            }
            (Some(types), true) => {
                hygienic!(#p::Backend::new_result(&__backend, &__zero, (#(#types,)*), [#(#shape),*]))
            }
            (None, false) => hygienic!(#p::zeros_like(&__zero, [#(#shape),*])),
            (None, true) => hygienic!(#p::Backend::zeros(&__backend, &__zero, [#(#shape),*])),
        };
        let layouts = self.let_layouts(steps, None);
        let is_static = self.static_flag(steps, None, Some(&hidden("__result")));
        let steps = self.steps(steps, &self.statement.lhs, None, TokenStream::new());
        hygienic! {
            #backend
            #operands
            #layouts
            let __zero = #p::zero_like(&#witness);
            let mut __result = #zeros;
            #is_static
            {
                let __target = #p::TargetOwned::__tdsl_target(&mut __result);
                #steps
            }
            __result
        }
    }

    /// Statements evaluating to the statement's value summed over every index, as a `T`.
    fn scalar_sum(
        &self,
        steps: &[Step],
        ty: Option<&TokenStream>,
        place: Option<&TokenStream>,
    ) -> TokenStream {
        let p = private();
        let operands = self.operand_accesses(steps, None, None);
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
        let backend = self.backend(steps, None);
        let layouts = self.let_layouts(steps, None);
        let is_static = self.static_flag(steps, None, None);
        let steps = self.steps(steps, &[], None, TokenStream::new());
        hygienic! {
            #backend
            #operands
            #layouts
            #is_static
            let __zero = #zero;
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
    fn step(&self, step: &Step, lhs: &[Slot], in_place: Option<TensorId>) -> StepCode {
        let p = private();
        let lhs_vars: Vec<&IndexVar> = self.statement.lhs_vars().collect();
        let loops: Vec<&IndexVar> = lhs_vars.iter().copied().chain(&step.reduction).collect();
        let n_out = lhs_vars.len();
        let extents: Vec<&Ident> = loops.iter().map(|var| self.extent(var)).collect();
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
        let target_axes = axes(lhs);
        // The element at the current point of the written-out loops (`static_loops`).
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
        let mut loads: Vec<TokenStream> = Vec::new();
        let target_layout = match (in_place, lhs.is_empty()) {
            (Some(target), _) => layout_local(target).into_token_stream(),
            (None, false) => hidden("__layout_result").into_token_stream(),
            (None, true) => hygienic!(#p::StaticLayout::<#p::Extents0>::OF),
        };
        let mut reads: Vec<(Ident, TokenStream)> = Vec::new();
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
            let index = position(&access.slots);
            let checked = static_handle(&handle);
            loads.push(hygienic!(#checked.load([#(#index),*])));
            if !reads.iter().any(|(read, _)| *read == handle) {
                let layout = layout_local(access.tensor).into_token_stream();
                reads.push((handle, layout));
            }
            let slot = operands.len() - 1;
            hygienic!(__x[#slot])
        };
        // A single term's scale is applied once per point, after its sum (TiledArray's
        // ScalExpr); several point-wise terms each carry their own.
        let (alpha, body) = match &step.terms[..] {
            [term] => (
                self.scale(&term.scale, step.negate),
                self.expr(&term.expr, &mut element),
            ),
            terms => {
                let mut body = TokenStream::new();
                for (k, term) in terms.iter().enumerate() {
                    let scale = self.scale(&term.scale, false);
                    let value = self.expr(&term.expr, &mut element);
                    if k > 0 {
                        body.extend(hygienic!(+));
                    }
                    body.extend(hygienic!(#scale * #value));
                }
                (self.scale(&Scale::one(), step.negate), body)
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
        // Every kernel takes one proven `Step`: the target, how to combine with it, α, the
        // extents, the number of target loops and the operands.
        let proven = hygienic! {
            #p::Step::new(
                __target.at(&[#(#target_axes),*]),
                #mode,
                #alpha,
                __ext,
                #n_out,
                [#(#operands),*],
            )
        };
        let written_out = self.static_loops(StaticLoops {
            n_out,
            n_loops: loops.len(),
            target: &position(lhs),
            loads: &loads,
            alpha: &alpha,
            mode: &mode,
            body: &body,
        });
        let written_out = hygienic! {
            {
                let __ext = [#(#extents),*];
                #written_out
            }
        };
        let small = hygienic!(#p::is_small(&[#(#extents),*]));
        if self.cuda {
            let call = self.dispatched_step(step, proven, body, &extents);
            return StepCode {
                general: call,
                written_out,
                small,
                reads,
                target_layout,
            };
        }
        let call = match &step.kernel {
            Kernel::LoopNest => hygienic!(#p::evaluate(#proven, move |__x| #body)),
            // Which loops each factor uses, and each loop's GEMM role, the runtime reads off the
            // proven accesses: nothing it trusts travels separately.
            Kernel::Network(_) => hygienic! {
                {
                    // The contraction order, chosen once per shape at this call site.
                    static __PLANS: #p::PlanCache = #p::PlanCache::new();
                    #p::contract_network(#proven, &__PLANS)
                }
            },
            Kernel::Gemm(_) => hygienic!(#p::contract(#proven)),
        };
        let general = hygienic! {
            {
                let __ext = [#(#extents),*];
                #call;
            }
        };
        StepCode {
            general,
            written_out,
            small,
            reads,
            target_layout,
        }
    }

    /// A step as loops written out over `__ext` (the extents, constants when every tensor is
    /// static), reading elements through `Access::load` and combining into the target through
    /// `TargetAccess::update`: the compiler sees the whole nest and unrolls small ones. Each
    /// target point gets α times its sum combined as the step's mode says, as in `evaluate`
    /// (an empty sum is 0 whatever α, and β = 0 does not read the target, as in `Step`).
    fn static_loops(&self, nest: StaticLoops<'_>) -> TokenStream {
        let p = private();
        let StaticLoops {
            n_out,
            n_loops,
            target,
            loads,
            alpha,
            mode,
            body,
        } = nest;
        let elements = (!loads.is_empty()).then(|| hygienic!(let __x = [#(#loads),*];));
        let value = if n_out == n_loops {
            hygienic! {
                #elements
                let __sum = #body;
            }
        } else {
            let mut summed = hygienic! {
                #elements
                __sum += #body;
            };
            for k in (n_out..n_loops).rev() {
                let var = hidden_numbered("__l", k);
                summed = hygienic!(for #var in 0..__ext[#k] { #summed });
            }
            hygienic! {
                let mut __sum = __zero;
                #summed
            }
        };
        let mut nest = hygienic! {
            #value
            __static_target.update([#(#target),*], __mode, __alpha * __sum);
        };
        for k in (0..n_out).rev() {
            let var = hidden_numbered("__l", k);
            nest = hygienic!(for #var in 0..__ext[#k] { #nest });
        }
        hygienic! {
            let __mode = #mode;
            let __alpha = if __ext[#n_out..].contains(&0) { #p::lit(&__zero, 1.0) } else { #alpha };
            #nest
        }
    }

    /// `let __backend = …` from the statement's target, else its first tensor, and a proof
    /// that every other tensor is on the same kind of backend (a type error on its tokens).
    /// Nothing without `cuda`.
    fn backend(&self, steps: &[Step], target: Option<&TokenStream>) -> TokenStream {
        if !self.cuda {
            return TokenStream::new();
        }
        let p = private();
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

    /// A step through `__backend`: the host kernel, or the step's CUDA module on a device.
    /// The statement's steps: written out when `__static` holds and every step is small
    /// (then no operand was copied and nothing else of the general path runs), else through
    /// the kernels after `general_prelude`.
    fn steps(
        &self,
        steps: &[Step],
        lhs: &[Slot],
        in_place: Option<TensorId>,
        general_prelude: TokenStream,
    ) -> TokenStream {
        let code: Vec<StepCode> = steps
            .iter()
            .map(|step| self.step(step, lhs, in_place))
            .collect();
        let small = code.iter().map(|step| &step.small);
        let written_out = code.iter().map(|step| &step.written_out);
        let general = code.iter().map(|step| &step.general);
        let mut reads: Vec<&(Ident, TokenStream)> = Vec::new();
        for read in code.iter().flat_map(|step| &step.reads) {
            if !reads.iter().any(|(handle, _)| *handle == read.0) {
                reads.push(read);
            }
        }
        let checks = reads
            .iter()
            .map(|(handle, layout)| hygienic!(#handle.as_static(#layout)));
        let bound = reads.iter().map(|(handle, _)| static_handle(handle));
        // Operands read in place must not share memory with the target (`__target_read` is the
        // target's own point-wise read, which may).
        let apart = reads
            .iter()
            .filter(|(handle, _)| handle != "__target_read")
            .map(|(handle, _)| {
                let checked = static_handle(handle);
                hygienic!(&& !__static_target.overlaps(&#checked))
            });
        let target_layout = code
            .first()
            .map(|step| step.target_layout.clone())
            .unwrap_or_default();
        hygienic! {
            match (
                __static #(&& #small)*,
                __target.as_static(#target_layout),
                (#(#checks,)*),
            ) {
                (true, ::core::option::Option::Some(__static_target), (#(::core::option::Option::Some(#bound),)*))
                    if true #(#apart)* =>
                {
                    #(#written_out)*
                }
                _ => {
                    #general_prelude
                    #(#general)*
                }
            }
        }
    }

    fn dispatched_step(
        &self,
        step: &Step,
        proven: TokenStream,
        body: TokenStream,
        extents: &[&Ident],
    ) -> TokenStream {
        let p = private();
        let module =
            |real| crate::emit::cuda::step_module(self.plan, self.statement_plan, step, real);
        let (shape, f32_text) = module(crate::emit::cuda::Real::F32);
        let (_, f64_text) = module(crate::emit::cuda::Real::F64);
        let crate::emit::cuda::KernelShape {
            operands,
            loops,
            target_loops,
            scalars,
        } = shape;
        let kernel = hygienic! {
            {
                // SAFETY: both texts are the modules `emit::cuda` wrote for this very step.
                const __KERNEL: #p::Kernel<'static> = unsafe {
                    #p::Kernel::new(#f32_text, #f64_text, #operands, #loops, #target_loops, #scalars)
                };
                &__KERNEL
            }
        };
        let scalar_values = (0..self.statement.scalars.len()).map(|k| self.scalar(k));
        // Each exponent rides in a slot of its own with its bits (`emit::cuda`'s layout).
        let exponent_slots = (0..self.statement.exponents.len()).map(|k| {
            let local = hidden_numbered("__exponent", k);
            hygienic!(#p::exponent_slot(&__zero, #local))
        });
        let scalar_values = hygienic!(&[#(#scalar_values,)* #(#exponent_slots),*]);
        let call = match &step.kernel {
            Kernel::LoopNest => hygienic! {
                #p::Backend::evaluate(&__backend, #proven, move |__x| #body, #kernel, #scalar_values)
            },
            Kernel::Network(_) => hygienic! {
                {
                    static __PLANS: #p::PlanCache = #p::PlanCache::new();
                    #p::Backend::contract_network(&__backend, #proven, &__PLANS, #kernel, #scalar_values)
                }
            },
            Kernel::Gemm(_) => hygienic! {
                #p::Backend::contract(&__backend, #proven, #kernel, #scalar_values)
            },
        };
        hygienic! {
            {
                let __ext = [#(#extents),*];
                #call;
            }
        }
    }

    /// A scale as a value of the element type: its coefficient times its scalars, divided by
    /// its divisors.
    fn scale(&self, scale: &Scale, negate: bool) -> TokenStream {
        let p = private();
        let coefficient = if negate {
            -scale.coefficient
        } else {
            scale.coefficient
        };
        let coefficient = Literal::f64_suffixed(coefficient);
        let zero = hidden("__zero");
        let scalars = scale.scalars.iter().map(|&k| self.scalar(k));
        let divisors = scale.divisors.iter().map(|&k| self.scalar(k));
        hygienic!((#p::lit(&#zero, #coefficient) #(* #scalars)* #(/ #divisors)*))
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
        let p = private();
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
                hygienic!((-#operand))
            }
            Expr::Binary(op, left, right) => {
                let left = self.expr(left, access);
                let right = self.expr(right, access);
                let op = match op {
                    BinaryOp::Add => hygienic!(+),
                    BinaryOp::Sub => hygienic!(-),
                    BinaryOp::Mul => hygienic!(*),
                    BinaryOp::Div => hygienic!(/),
                };
                hygienic!((#left #op #right))
            }
            Expr::Call(function, args) => {
                let args: Vec<TokenStream> =
                    args.iter().map(|arg| self.expr(arg, access)).collect();
                let name = Ident::new(function.name(), Span::mixed_site());
                match function {
                    Function::Powi(Exponent::Literal(exponent)) => {
                        hygienic!(#p::Element::powi(#(#args),*, #exponent))
                    }
                    Function::Powi(Exponent::Computed(k)) => {
                        let exponent = hidden_numbered("__exponent", *k);
                        hygienic!(#p::Element::powi(#(#args),*, #exponent))
                    }
                    _ => hygienic!(#p::Element::#name(#(#args),*)),
                }
            }
        }
    }
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

/// The local holding `handle` checked to have its static layout (`Access::as_static`).
fn static_handle(handle: &Ident) -> Ident {
    hidden(&format!("__static{handle}"))
}

fn first_access(expr: &Expr) -> Option<TensorId> {
    let mut first = None;
    expr.visit_accesses(&mut |access| {
        first.get_or_insert(access.tensor);
    });
    first
}
