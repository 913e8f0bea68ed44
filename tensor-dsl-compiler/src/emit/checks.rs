//! IR → the block's prelude: Rust-expression operands and computed positions are evaluated
//! once, then every rank, position and extent check of every statement runs, before the first
//! statement writes anything. Yields the extent local of each (statement, index).

use std::collections::{HashMap, HashSet};

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote_spanned;

use super::{hidden_numbered, tensor_expr, Context};
use crate::ir::{
    Access, IndexVar, Position, Program, SameBinding, Slot, Target, TensorId, TensorOrigin,
};

/// The check prelude and the name of each statement's index extents.
pub struct Checks {
    pub tokens: TokenStream,
    /// `(statement, index name)` → the local holding its extent.
    pub extents: HashMap<(usize, String), Ident>,
}

pub fn emit_checks(program: &Program, cx: &Context) -> Checks {
    let p = cx.private();
    let mut tokens = TokenStream::new();
    let check = |call: TokenStream| cx.surface(call);

    for (id, tensor) in program.tensors.iter().enumerate() {
        if let TensorOrigin::Rust(expr) = &tensor.origin {
            let local = hidden_numbered("__tensor", id);
            tokens.extend(hygienic!(let #local = #expr;));
        }
    }
    for (k, expr) in program.positions.iter().enumerate() {
        let local = hidden_numbered("__position", k);
        tokens.extend(hygienic!(let #local: usize = #expr;));
    }
    for (id, tensor) in program.tensors.iter().enumerate() {
        if let TensorOrigin::External(_) | TensorOrigin::Rust(_) = tensor.origin {
            let shape = hidden_numbered("__shape", id);
            let layout = layout_local(id);
            let expr = tensor_expr(&program.tensors, id);
            let (access, name, rank) = (&tensor.first_access, &tensor.name, tensor.rank);
            let rank_check = check(hygienic!(#p::check_rank(#access, #name, &#shape, #rank)));
            // On the tensor's first access, so a value that is no tensor is reported there.
            let span = first_access_span(program, id).unwrap_or_else(Span::mixed_site);
            let at = cx.private_at(span);
            let read_shape = quote_spanned!(span=> #at::shape_of(&#expr, #rank));
            // A static rank was checked at compile time (`static_rank_check`).
            tokens.extend(hygienic! {
                let (#shape, #layout) = #read_shape;
                if !#layout.is_static {
                    #rank_check;
                }
            });
        }
    }

    let mut extents: HashMap<(usize, String), Ident> = HashMap::new();
    let mut rank_checked = HashSet::new();
    for (s, statement) in program.statements.iter().enumerate() {
        // The statement's checks of static ranks and extents, which only type-check, and the
        // marker type of each index they name.
        let mut statics = TokenStream::new();
        let mut markers: Vec<Ident> = Vec::new();
        let mut accesses = Vec::new();
        if let Target::Tensor { access } = &statement.target {
            accesses.push(access);
        }
        for term in statement.terms() {
            term.expr
                .visit_accesses(&mut |access| accesses.push(access));
        }
        for access in &accesses {
            if static_check_applies(program, access.tensor) && rank_checked.insert(access.tensor) {
                statics.extend(static_rank_check(cx, access));
            }
            for (axis, slot) in access.slots.iter().enumerate() {
                if let Slot::Fixed(position) = slot {
                    let position = position_expr(*position);
                    let extent = axis_extent(&p, program, &extents, access.tensor, axis);
                    let text = &access.text;
                    let call =
                        check(hygienic!(#p::check_position(#text, #axis, #position, #extent)));
                    tokens.extend(hygienic!(#call;));
                }
            }
            // Each range of a view (`x[i in 1..n]`) inside its base's axis.
            if let TensorOrigin::Slice { base, ranges } = &program.tensors[access.tensor].origin {
                for range in ranges {
                    let extent = axis_extent(&p, program, &extents, *base, range.axis);
                    let (axis, lo, hi) = (range.axis, position_expr(range.lo), end_expr(range.hi));
                    let text = &access.text;
                    let call = check(hygienic!(#p::check_range(#text, #axis, #lo, #hi, #extent)));
                    tokens.extend(hygienic!(#call;));
                }
            }
        }
        for var in statement.all_vars() {
            // Where the index occurs (a constant table) and its extent there.
            let (mut sites, mut occurrences) = (Vec::new(), Vec::new());
            let mut first_static = None;
            for access in &accesses {
                for (axis, slot) in access.slots.iter().enumerate() {
                    if let Slot::Var(used) = slot {
                        if *used == var && static_check_applies(program, access.tensor) {
                            match first_static {
                                None => first_static = Some((access.tensor, axis)),
                                Some(first) => {
                                    if !markers.iter().any(|marker| *marker == used.name) {
                                        markers.push(Ident::new(&used.name, used.span));
                                    }
                                    statics.extend(static_extent_check(
                                        cx,
                                        first,
                                        (access.tensor, axis),
                                        used,
                                    ))
                                }
                            }
                        }
                    }
                    if *slot == Slot::Var(var.clone()) {
                        let extent = axis_extent(&p, program, &extents, access.tensor, axis);
                        let text = &access.text;
                        sites.push(hygienic!((#text, #axis)));
                        occurrences.push(extent);
                    }
                }
            }
            let local = hidden_numbered("__extent", extents.len());
            let name = &var.name;
            let call = check(hygienic!(#p::unify(#name, &[#(#sites),*], [#(#occurrences),*])));
            // Static extents were unified at compile time (`static_extent_check`): the first
            // one is the extent, a constant the statement's loops can be unrolled over.
            let this = Slot::Var(var.clone());
            let uses: Vec<(TensorId, usize)> = accesses
                .iter()
                .flat_map(|access| {
                    let this = &this;
                    access
                        .slots
                        .iter()
                        .enumerate()
                        .filter_map(move |(axis, slot)| {
                            (slot == this).then_some((access.tensor, axis))
                        })
                })
                .collect();
            let all_from_rust = uses
                .iter()
                .all(|&(tensor, _)| static_check_applies(program, tensor));
            let value = match uses.first() {
                Some(&(first, axis)) if all_from_rust => {
                    let conditions = uses.iter().map(|&(tensor, _)| layout_local(tensor));
                    let first = layout_local(first);
                    hygienic! {
                        if #(#conditions.is_static)&&* { #first.extents[#axis] } else { #call }
                    }
                }
                _ => call,
            };
            tokens.extend(hygienic!(let #local: usize = #value;));
            extents.insert((s, var.name.clone()), local);
        }
        // The tensor a `let` makes must be able to exist: checked here, with the block's other
        // shape errors, rather than failing when it is allocated.
        if let Target::NewTensor { name, .. } = &statement.target {
            let shape = statement
                .lhs_vars()
                .map(|var| &extents[&(s, var.name.clone())]);
            let name = if program.makes_temporary(statement) {
                hygienic!(::core::option::Option::None)
            } else {
                let text = name.to_string();
                hygienic!(::core::option::Option::Some(#text))
            };
            let call = check(hygienic!(#p::check_result_size(#name, &[#(#shape),*])));
            tokens.extend(hygienic!(#call;));
        }
        if !statics.is_empty() {
            // In a closure that is never called: rustc type-checks its body, which is all
            // these checks are for, but generates no code for it (called, each `agree` over
            // its index's marker would be a function of its own to compile). The markers are
            // declared outside it, so a message names `main::k`, not `main::{closure#0}::k`;
            // a braced struct lives in the type namespace only, so it cannot shadow a tensor
            // of the same name, and the block keeps one statement's `k` from another's.
            tokens.extend(hygienic! {
                {
                    #(
                        #[allow(non_camel_case_types, dead_code)]
                        struct #markers {}
                    )*
                    let _ = || { #statics };
                }
            });
        }
    }
    Checks { tokens, extents }
}

/// The local holding what a tensor's type says of its layout (`__private::StaticLayout`):
/// the prelude's for tensors from Rust, the statement's for the block's own `let`s.
pub(super) fn layout_local(tensor: TensorId) -> Ident {
    hidden_numbered("__layout", tensor)
}

/// Where `tensor` is first accessed in the block, if anywhere.
fn first_access_span(program: &Program, tensor: TensorId) -> Option<Span> {
    let mut found = None;
    for statement in &program.statements {
        if let Target::Tensor { access } = &statement.target {
            if access.tensor == tensor {
                found = found.or(Some(access.span));
            }
        }
        for term in statement.terms() {
            term.expr.visit_accesses(&mut |access| {
                if access.tensor == tensor {
                    found = found.or(Some(access.span));
                }
            });
        }
        if found.is_some() {
            break;
        }
    }
    found
}

/// Whether `tensor`'s type may carry static extents: an operand or target from Rust (a
/// block's `let` results are made by the block, with run-time extents).
fn static_check_applies(program: &Program, tensor: TensorId) -> bool {
    matches!(
        program.tensors[tensor].origin,
        TensorOrigin::External(_) | TensorOrigin::Rust(_)
    )
}

/// A call that compiles only if the type of `access`'s tensor admits as many indices as the
/// access has (any rank for dynamic tensors), spanned on the access so a mismatch is reported
/// there by `cargo check`. It does nothing at run time.
fn static_rank_check(cx: &Context, access: &Access) -> TokenStream {
    let p = cx.private();
    let layout = located(&layout_local(access.tensor), access.span);
    let rank = access.slots.len();
    quote_spanned! {access.span=>
        #p::admits_rank::<#rank, _>(&#layout);
    }
}

/// `local` (a generated, hygienic name) with its errors reported at `span`.
pub(super) fn located(local: &Ident, span: Span) -> Ident {
    let mut local = local.clone();
    local.set_span(Span::mixed_site().located_at(span));
    local
}

/// A call that compiles only if two axes an index runs over can have one extent (equal
/// static extents, or one dynamic), spanned on the later use of the index, whose name a
/// marker type carries into the message. It does nothing at run time.
fn static_extent_check(
    cx: &Context,
    (first, first_axis): (TensorId, usize),
    (later, later_axis): (TensorId, usize),
    var: &IndexVar,
) -> TokenStream {
    let p = cx.private();
    let (first, later) = (
        located(&layout_local(first), var.span),
        located(&layout_local(later), var.span),
    );
    // The marker the statement's checks declare for the index (`emit_checks`).
    let marker = Ident::new(&var.name, var.span);
    quote_spanned! {var.span=>
        #p::agree::<#marker, _, _>(
            #p::extent_of::<#first_axis, _>(&#first),
            #p::extent_of::<#later_axis, _>(&#later),
        );
    }
}

/// The extent of axis `axis` of `tensor`, as an expression valid in the prelude: a `let`
/// result of the block has its statement's extents, any other tensor its run-time shape.
fn axis_extent(
    p: &TokenStream,
    program: &Program,
    extents: &HashMap<(usize, String), Ident>,
    tensor: TensorId,
    axis: usize,
) -> TokenStream {
    match &program.tensors[tensor].origin {
        TensorOrigin::Let { statement, .. } => {
            let var = match &program.statements[*statement].lhs[axis] {
                Slot::Var(var) => var.name.clone(),
                Slot::Fixed(_) => unreachable!("`let` results have no fixed positions"),
            };
            let local = &extents[&(*statement, var)];
            hygienic!(#local)
        }
        TensorOrigin::Slice { base, ranges } => {
            let extent = axis_extent(p, program, extents, *base, axis);
            match ranges.iter().find(|range| range.axis == axis) {
                // Checked by `check_range` before any extent is used.
                Some(range) => {
                    let lo = position_expr(range.lo);
                    let end = match range.hi {
                        Some(hi) => position_expr(hi),
                        None => extent,
                    };
                    hygienic!((#end).saturating_sub(#lo))
                }
                None => extent,
            }
        }
        _ => {
            // A static extent as the type's constant (the compiler cannot see into the shape
            // slice), so the extents unified from it are constants too. One call, not a
            // branch per use: a debug build compiles a call faster.
            let shape = hidden_numbered("__shape", tensor);
            let layout = layout_local(tensor);
            hygienic!(#p::extent_at(&#layout, &#shape, #axis))
        }
    }
}

/// For each pair of tokens `check` took for one tensor by their text, a block that type-checks
/// only if both name one variable: `first` is shadowed by a marker, which `later` then names
/// too, unless hygiene binds it elsewhere (a macro's own `a` and its caller's `a`), where the
/// marker's trait bound fails on `later`'s token. Nothing of it runs. Placed after the
/// statements, so a `later` hygiene keeps apart from a block `let` still sees that `let`'s
/// tensor and fails on the bound, rather than as an unknown name.
pub fn binding_proofs(program: &Program, cx: &Context) -> TokenStream {
    if program.same_bindings.is_empty() {
        return TokenStream::new();
    }
    let p = cx.private();
    let proofs = program
        .same_bindings
        .iter()
        .map(|SameBinding { first, later }| {
            hygienic! {
                {
                    let #first = #p::SameBinding;
                    #p::same_binding(#later);
                }
            }
        });
    // A `let` statement, since a lint attribute on a block expression is unstable.
    hygienic! {
        #[allow(unused_variables, non_snake_case, clippy::all, clippy::pedantic)]
        let () = { #(#proofs)* };
    }
}

/// A fixed position as a `usize` expression.
/// A range's end as an `Option<usize>` (`None`: the axis's end).
pub(super) fn end_expr(hi: Option<Position>) -> TokenStream {
    match hi {
        Some(hi) => {
            let hi = position_expr(hi);
            hygienic!(::core::option::Option::Some(#hi))
        }
        None => hygienic!(::core::option::Option::None),
    }
}

pub(super) fn position_expr(position: Position) -> TokenStream {
    match position {
        Position::Literal(value) => hygienic!(#value),
        Position::Computed(k) => {
            let local = hidden_numbered("__position", k);
            hygienic!(#local)
        }
    }
}
