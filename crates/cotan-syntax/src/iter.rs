//! The iterators a `for` loop may run over: integer ranges (with `rev` and `step_by`)
//! and the elements of a slice, array or Vec (with `iter`, `rev` and `enumerate`).

use crate::span::Spanned;
use cotan_ir::{Const, OpKind, Scalar, Value};

use crate::infer::{Class, STy};
use crate::lower::{err_at, Binding, Lower};

/// A `for` loop's iteration space as an IR `For` sees it.
pub(crate) struct IterSpec {
    pub lo: Value,
    pub hi: Value,
    pub inclusive: bool,
    pub step: Option<Value>,
    pub reverse: bool,
    pub index_ty: STy,
    /// Iterating over the elements of this memory (the index runs over its positions).
    pub elems: Option<Value>,
    pub enumerate: bool,
    /// The loop variable is a `&mut` to the element (`iter_mut()`, `&mut v`, a `&mut [f64]`).
    pub writable: bool,
}

/// `cotan::checkpoint(iter, cotan::Every(k))` (or the names imported): the iterator and `k`.
pub(crate) fn checkpoint_of(e: &syn::Expr) -> syn::Result<Option<(&syn::Expr, cotan_ir::Schedule)>> {
    let syn::Expr::Call(c) = strip_expr(e) else { return Ok(None) };
    if !path_ends(&c.func, "checkpoint") {
        return Ok(None);
    }
    let [iter, schedule] = c.args.iter().collect::<Vec<_>>()[..] else {
        return err_at(
            c,
            "`cotan::checkpoint` takes an iterator and a schedule: `cotan::checkpoint(0..n, cotan::Every(k))`",
        );
    };
    let bad = "cotan's checkpointing schedules are `cotan::Every(k)` (a snapshot every `k` iterations) and `cotan::Binomial(c)` (Revolve's, with `c` snapshots), with `k` or `c` an integer literal or constant of at least 1";
    let syn::Expr::Call(s) = strip_expr(schedule) else { return err_at(schedule, bad) };
    let every = path_ends(&s.func, "Every");
    if !(every || path_ends(&s.func, "Binomial")) || s.args.len() != 1 {
        return err_at(schedule, bad);
    }
    let k = match strip_expr(&s.args[0]) {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse::<u64>().ok(),
        _ => None,
    };
    match k {
        Some(k) if k >= 1 && every => Ok(Some((iter, cotan_ir::Schedule::Every(k)))),
        Some(k) if k >= 1 => Ok(Some((iter, cotan_ir::Schedule::Binomial(k)))),
        _ => err_at(&s.args[0], bad),
    }
}

/// `cotan::par(range)` (or `par` imported): the range of a parallel loop.
pub(crate) fn par_of(e: &syn::Expr) -> Option<&syn::Expr> {
    let syn::Expr::Call(c) = strip_expr(e) else { return None };
    if !path_ends(&c.func, "par") || c.args.len() != 1 {
        return None;
    }
    c.args.first()
}

fn strip_expr(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_expr(&p.expr),
        syn::Expr::Group(g) => strip_expr(&g.expr),
        _ => e,
    }
}

/// `f` is the path `name`, `cotan::name` or `::cotan::name`.
fn path_ends(f: &syn::Expr, name: &str) -> bool {
    let syn::Expr::Path(p) = strip_expr(f) else { return false };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [n] => n == name,
        [c, n] => c == "cotan" && n == name,
        _ => false,
    }
}

/// The fast path for plain ranges and slice elements; `None` for other iterator chains.
pub(crate) fn iter_spec(l: &mut Lower, e: &syn::Expr) -> syn::Result<Option<IterSpec>> {
    // Method calls applied to the base, innermost first.
    let mut methods = vec![];
    let mut base = e;
    let (mut mut_ref, mut by_ref) = (false, false);
    loop {
        match base {
            syn::Expr::MethodCall(m) => {
                methods.push(m);
                base = &m.receiver;
            }
            syn::Expr::Paren(p) => base = &p.expr,
            syn::Expr::Reference(r) => {
                mut_ref |= r.mutability.is_some();
                by_ref = true;
                base = &r.expr
            }
            _ => break,
        }
    }
    if l.chunks_of(base).is_some() || matches!(base, syn::Expr::Call(c) if crate::chain::iter_zip(c).is_some()) {
        // The chunks of `as_chunks`, `std::iter::zip(a, b)`: chain sources.
        return Ok(None);
    }
    methods.reverse();
    let names: Vec<String> = methods.iter().map(|m| m.method.to_string()).collect();
    let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let range_form = matches!(names.as_slice(), [] | ["rev"] | ["step_by"] | ["step_by", "rev"]);
    let slice_form = matches!(
        names.as_slice(),
        [] | ["iter"]
            | ["into_iter"]
            | ["iter_mut"]
            | ["iter", "rev"]
            | ["iter", "enumerate"]
            | ["iter", "enumerate", "rev"]
    );
    if let syn::Expr::Range(r) = base {
        if !range_form {
            return Ok(None);
        }
        let (Some(a), Some(b)) = (&r.start, &r.end) else {
            return err_at(&r, "cotan needs both ends of a loop range");
        };
        let (lo, lt) = l.scalar(a)?;
        let (hi, ht) = l.scalar(b)?;
        l.unify(lt, ht, r.span())?;
        if l.infer.class_of(lt) != Some(Class::Int) {
            return err_at(&r, "loop ranges must be integers");
        }
        let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
        let mut spec = IterSpec {
            lo,
            hi,
            inclusive,
            step: None,
            reverse: false,
            index_ty: lt,
            elems: None,
            enumerate: false,
            writable: false,
        };
        match names.as_slice() {
            ["rev"] => spec.reverse = true,
            ["step_by"] => spec.step = Some(step(l, methods[0], lt)?),
            ["step_by", "rev"] => {
                spec.step = Some(step(l, methods[0], lt)?);
                spec.reverse = true;
            }
            _ => {}
        }
        return Ok(Some(spec));
    }
    if !slice_form {
        return Ok(None);
    }
    let mut m = l.memory(base)?;
    if !by_ref && matches!(names.as_slice(), [] | ["into_iter"]) {
        // `for x in a` of an array iterates over a copy of it, which the body's writes to
        // `a` do not reach.
        m = match l.own_arrays(base, crate::agg::Tree::Leaf(m), false)? {
            crate::agg::Tree::Leaf(copy) => copy,
            _ => unreachable!("a leaf"),
        };
    }
    let access = l.mem_ty(m).unwrap().access;
    let writable = match names.as_slice() {
        ["iter_mut"] => true,
        [] => mut_ref || access == cotan_ir::Access::Mut,
        _ => false,
    };
    if writable && access == cotan_ir::Access::Shared {
        return err_at(base, "cannot borrow the elements as mutable through a shared reference; take `&mut`");
    }
    let enumerate = names.contains(&"enumerate");
    let reverse = names.contains(&"rev");
    let usize_t = STy::Known(Scalar::Usize);
    let lo = l.emit_s(OpKind::Const(Const::Int(0)), usize_t);
    let hi = l.emit_s(OpKind::Len(m), usize_t);
    Ok(Some(IterSpec {
        lo,
        hi,
        inclusive: false,
        step: None,
        reverse,
        index_ty: usize_t,
        elems: Some(m),
        enumerate,
        writable,
    }))
}

fn step(l: &mut Lower, m: &syn::ExprMethodCall, index_ty: STy) -> syn::Result<Value> {
    let Some(arg) = m.args.first() else {
        return err_at(&m, "`step_by` takes the step");
    };
    let (k, kt) = l.scalar(arg)?;
    // `step_by` takes a usize; the IR keeps the step in the index type.
    l.unify(STy::Known(Scalar::Usize), kt, arg.span())?;
    let it = l.infer.current(index_ty);
    if it == STy::Known(Scalar::Usize) {
        return Ok(k);
    }
    l.unify(STy::Known(Scalar::Usize), index_ty, arg.span()).ok();
    if l.infer.current(index_ty) == STy::Known(Scalar::Usize) {
        return Ok(k);
    }
    Ok(l.emit_s(OpKind::Cast(k), index_ty))
}

/// Binds the loop pattern at the start of the body: the index, the element, or both.
pub(crate) fn bind_loop_pat(l: &mut Lower, pat: &syn::Pat, spec: &IterSpec, index: Value) -> syn::Result<()> {
    let Some(m) = spec.elems else {
        return bind_index(l, pat, index);
    };
    if l.is_nested(m) {
        // Rows: memory, bound by name.
        let row = l.row(m, index);
        let pat = match (spec.enumerate, strip(pat)) {
            (true, syn::Pat::Tuple(t)) if t.elems.len() == 2 => {
                bind_index(l, &t.elems[0], index)?;
                &t.elems[1]
            }
            (true, _) => return err_at(&pat, "expected a pattern `(i, row)` for `enumerate()`"),
            (false, p) => p,
        };
        return match strip(pat) {
            syn::Pat::Ident(pi) if pi.subpat.is_none() => {
                l.bind(pi.ident.to_string(), Binding::Value(row));
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            // `for [a, b] in x.iter_mut()`: `a` and `b` are `&mut f64`.
            syn::Pat::Slice(s) if spec.writable => l.bind_elem_refs(s, row),
            p => l.bind_agg(p, crate::agg::Tree::Leaf(row)),
        };
    }
    let elem = l.elem_sty(m);
    if spec.enumerate {
        let syn::Pat::Tuple(t) = strip(pat) else {
            return err_at(&pat, "expected a pattern `(i, x)` for `enumerate()`");
        };
        if t.elems.len() != 2 {
            return err_at(&pat, "expected a pattern `(i, x)` for `enumerate()`");
        }
        bind_index(l, &t.elems[0], index)?;
        let v = l.emit_s(OpKind::Load { mem: m, index: Some(index) }, elem);
        return l.bind_pat(&t.elems[1], v);
    }
    if spec.writable {
        return match strip(pat) {
            syn::Pat::Ident(pi) if pi.mutability.is_none() && pi.subpat.is_none() => {
                l.bind(pi.ident.to_string(), Binding::Place(m, index));
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            p => err_at(&p, "the loop variable is a `&mut` to each element: name it (`for e in ..`) and write `*e`"),
        };
    }
    let v = l.emit_s(OpKind::Load { mem: m, index: Some(index) }, elem);
    l.bind_agg(pat, crate::agg::Tree::Leaf(v))
}

fn bind_index(l: &mut Lower, pat: &syn::Pat, index: Value) -> syn::Result<()> {
    match strip(pat) {
        syn::Pat::Ident(pi) if pi.mutability.is_none() => {
            l.bind(pi.ident.to_string(), Binding::Value(index));
            Ok(())
        }
        syn::Pat::Wild(_) => Ok(()),
        p => err_at(&p, "cotan supports a plain name or `_` as the loop index"),
    }
}

fn strip(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Paren(x) => strip(&x.pat),
        p => p,
    }
}
