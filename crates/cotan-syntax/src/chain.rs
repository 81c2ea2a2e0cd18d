//! Iterator chains with closures, lowered to index loops.
//!
//! A chain is seen as a count and a function from the iteration number `k` to the item:
//! `x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>()` becomes
//! `for k in 0..min(x.len(), y.len()) { s += x[k] * y[k] }`, the same code as the index
//! loop a person would write. Closures are inlined at their single use.

use cotan_ir::{BinOp, CmpOp, Const, OpKind, Region, Scalar, Ty, Value};
use syn::spanned::Spanned;

use crate::infer::{Class, STy};
use crate::lower::{err_at, Binding, Lower};

/// What one iteration yields.
#[derive(Clone)]
pub(crate) enum Item {
    Val(Value),
    /// An element reached through `iter_mut`: reads load it, `*x = ..` stores it.
    Place(Value, Value),
    /// A read-only window into memory (`chunks`, `windows`).
    View {
        mem: Value,
        start: Value,
        len: Value,
    },
    Tuple(Vec<Item>),
}

type ItemFn<'a> = Box<dyn Fn(&mut Lower, Value) -> syn::Result<Item> + 'a>;

/// A chain: `count` iterations, the k-th yielding `item(k)`.
pub(crate) struct Chain<'a> {
    pub count: Value,
    pub item: ItemFn<'a>,
}

const USIZE: STy = STy::Known(Scalar::Usize);

/// The consumers and adapters cotan knows, to recognise a chain.
const ADAPTERS: [&str; 9] = ["enumerate", "zip", "map", "rev", "skip", "take", "step_by", "copied", "cloned"];
const SOURCES: [&str; 5] = ["iter", "iter_mut", "into_iter", "chunks", "windows"];

/// True if `e` is a method chain ending in an iterator source or adapter.
pub(crate) fn is_chain(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::MethodCall(m) => {
            let name = m.method.to_string();
            ADAPTERS.contains(&name.as_str()) || SOURCES.contains(&name.as_str())
        }
        syn::Expr::Paren(p) => is_chain(&p.expr),
        syn::Expr::Range(_) => true,
        _ => false,
    }
}

fn bin(l: &mut Lower, op: BinOp, a: Value, b: Value) -> Value {
    l.emit_s(OpKind::Binary(op, a, b), USIZE)
}

fn usize_const(l: &mut Lower, n: i128) -> Value {
    l.emit_s(OpKind::Const(Const::Int(n)), USIZE)
}

fn min(l: &mut Lower, a: Value, b: Value) -> Value {
    let lt = l.emit_s(OpKind::Cmp(CmpOp::Lt, a, b), STy::Known(Scalar::Bool));
    l.emit_s(OpKind::Select(lt, a, b), USIZE)
}

/// `a - b`, or 0 if `b > a`.
fn saturating_sub(l: &mut Lower, a: Value, b: Value) -> Value {
    let b = min(l, a, b);
    bin(l, BinOp::Sub, a, b)
}

/// `ceil(a / b)` for `b > 0`.
fn div_ceil(l: &mut Lower, a: Value, b: Value) -> Value {
    let one = usize_const(l, 1);
    let bm1 = bin(l, BinOp::Sub, b, one);
    let s = bin(l, BinOp::Add, a, bm1);
    bin(l, BinOp::Div, s, b)
}

/// Lowers an iterator expression into a chain.
pub(crate) fn chain<'a>(l: &mut Lower, e: &'a syn::Expr) -> syn::Result<Chain<'a>> {
    match e {
        syn::Expr::Paren(p) => chain(l, &p.expr),
        syn::Expr::Reference(r) => chain(l, &r.expr),
        syn::Expr::Range(r) => range(l, r),
        syn::Expr::MethodCall(m) => method(l, m),
        _ => source(l, e, false),
    }
}

fn range<'a>(l: &mut Lower, r: &'a syn::ExprRange) -> syn::Result<Chain<'a>> {
    let (Some(a), Some(b)) = (&r.start, &r.end) else {
        return err_at(r, "cotan needs both ends of a range");
    };
    let (lo, lt) = l.scalar(a)?;
    let (hi, ht) = l.scalar(b)?;
    l.unify(lt, ht, r.span())?;
    if l.infer.class_of(lt) != Some(Class::Int) {
        return err_at(r, "ranges must be integers");
    }
    // count = hi - lo (+ 1 when inclusive), or 0 if empty, computed in the range's type.
    let one = l.emit_s(OpKind::Const(Const::Int(1)), lt);
    let hi = match r.limits {
        syn::RangeLimits::Closed(_) => l.emit_s(OpKind::Binary(BinOp::Add, hi, one), lt),
        syn::RangeLimits::HalfOpen(_) => hi,
    };
    let empty = l.emit_s(OpKind::Cmp(CmpOp::Le, hi, lo), STy::Known(Scalar::Bool));
    let diff = l.emit_s(OpKind::Binary(BinOp::Sub, hi, lo), lt);
    let diff = l.emit_s(OpKind::Cast(diff), USIZE);
    let zero = usize_const(l, 0);
    let count = l.emit_s(OpKind::Select(empty, zero, diff), USIZE);
    Ok(Chain {
        count,
        item: Box::new(move |l, k| {
            let k = l.emit_s(OpKind::Cast(k), lt);
            Ok(Item::Val(l.emit_s(OpKind::Binary(BinOp::Add, lo, k), lt)))
        }),
    })
}

/// Elements of a slice, array, Vec or window.
fn source<'a>(l: &mut Lower, e: &'a syn::Expr, writable: bool) -> syn::Result<Chain<'a>> {
    if let Some((mem, start, len)) = l.view(e) {
        if writable {
            return err_at(e, "windows and chunks are read-only");
        }
        let elem = l.elem_sty(mem);
        return Ok(Chain {
            count: len,
            item: Box::new(move |l, k| {
                let i = bin(l, BinOp::Add, start, k);
                Ok(Item::Val(l.emit_s(OpKind::Load { mem, index: Some(i) }, elem)))
            }),
        });
    }
    let mem = l.memory(e)?;
    if writable && !l.mem_ty(mem).unwrap().is_writable() {
        return err_at(e, "`iter_mut` needs `&mut` access");
    }
    let count = l.emit_s(OpKind::Len(mem), USIZE);
    let elem = l.elem_sty(mem);
    Ok(Chain {
        count,
        item: Box::new(move |l, k| {
            if writable {
                Ok(Item::Place(mem, k))
            } else {
                Ok(Item::Val(l.emit_s(OpKind::Load { mem, index: Some(k) }, elem)))
            }
        }),
    })
}

fn arg(m: &syn::ExprMethodCall, k: usize) -> syn::Result<&syn::Expr> {
    m.args.iter().nth(k).map_or_else(|| err_at(m, format!("`{}` needs an argument", m.method)), Ok)
}

fn method<'a>(l: &mut Lower, m: &'a syn::ExprMethodCall) -> syn::Result<Chain<'a>> {
    let name = m.method.to_string();
    match name.as_str() {
        "iter" | "into_iter" => source(l, &m.receiver, false),
        "iter_mut" => source(l, &m.receiver, true),
        "chunks" | "windows" => {
            let mem = l.memory(&m.receiver)?;
            let (size, t) = l.scalar(arg(m, 0)?)?;
            l.unify(USIZE, t, m.span())?;
            let len = l.emit_s(OpKind::Len(mem), USIZE);
            let chunks = name == "chunks";
            let count = if chunks {
                div_ceil(l, len, size)
            } else {
                let one = usize_const(l, 1);
                let n = bin(l, BinOp::Add, len, one);
                saturating_sub(l, n, size)
            };
            Ok(Chain {
                count,
                item: Box::new(move |l, k| {
                    if chunks {
                        let start = bin(l, BinOp::Mul, k, size);
                        let rest = bin(l, BinOp::Sub, len, start);
                        let n = min(l, size, rest);
                        Ok(Item::View { mem, start, len: n })
                    } else {
                        Ok(Item::View { mem, start: k, len: size })
                    }
                }),
            })
        }
        "copied" | "cloned" => chain(l, &m.receiver),
        "enumerate" => {
            let inner = chain(l, &m.receiver)?;
            let f = inner.item;
            Ok(Chain { count: inner.count, item: Box::new(move |l, k| Ok(Item::Tuple(vec![Item::Val(k), f(l, k)?]))) })
        }
        "zip" => {
            let a = chain(l, &m.receiver)?;
            let b = chain(l, arg(m, 0)?)?;
            let count = min(l, a.count, b.count);
            let (fa, fb) = (a.item, b.item);
            Ok(Chain { count, item: Box::new(move |l, k| Ok(Item::Tuple(vec![fa(l, k)?, fb(l, k)?]))) })
        }
        "map" => {
            let inner = chain(l, &m.receiver)?;
            let closure = closure_of(arg(m, 0)?, 1)?;
            let f = inner.item;
            Ok(Chain {
                count: inner.count,
                item: Box::new(move |l, k| {
                    let item = f(l, k)?;
                    let v = call_closure(l, closure, vec![item])?;
                    Ok(Item::Val(v))
                }),
            })
        }
        "rev" => {
            let inner = chain(l, &m.receiver)?;
            let count = inner.count;
            let f = inner.item;
            Ok(Chain {
                count,
                item: Box::new(move |l, k| {
                    let one = usize_const(l, 1);
                    let last = bin(l, BinOp::Sub, count, one);
                    let j = bin(l, BinOp::Sub, last, k);
                    f(l, j)
                }),
            })
        }
        "skip" | "take" | "step_by" => {
            let inner = chain(l, &m.receiver)?;
            let (n, t) = l.scalar(arg(m, 0)?)?;
            l.unify(USIZE, t, m.span())?;
            let f = inner.item;
            let count = match name.as_str() {
                "skip" => saturating_sub(l, inner.count, n),
                "take" => min(l, inner.count, n),
                _ => div_ceil(l, inner.count, n),
            };
            let kind = name.clone();
            Ok(Chain {
                count,
                item: Box::new(move |l, k| {
                    let j = match kind.as_str() {
                        "skip" => bin(l, BinOp::Add, k, n),
                        "take" => k,
                        _ => bin(l, BinOp::Mul, k, n),
                    };
                    f(l, j)
                }),
            })
        }
        _ => err_at(
            &m.method,
            format!("cotan does not support the iterator method `.{name}(..)`; supported: iter, iter_mut, enumerate, zip, map, rev, skip, take, step_by, chunks, windows, then sum, product, fold, for_each, count, collect"),
        ),
    }
}

/// A literal closure with `n` parameters.
fn closure_of(e: &syn::Expr, n: usize) -> syn::Result<&syn::ExprClosure> {
    match e {
        syn::Expr::Closure(c) if c.inputs.len() == n => Ok(c),
        syn::Expr::Closure(c) => err_at(c, format!("expected a closure with {n} parameter(s)")),
        _ => err_at(e, "cotan needs a closure written here (`|x| ...`), not a function or variable"),
    }
}

/// Inlines a closure call: binds its parameters to `args` and lowers its body.
pub(crate) fn call_closure(l: &mut Lower, c: &syn::ExprClosure, args: Vec<Item>) -> syn::Result<Value> {
    l.push_scope();
    for (p, a) in c.inputs.iter().zip(args) {
        bind_item(l, p, a)?;
    }
    let v = l.expr_opt(&c.body);
    l.pop_scope();
    v?.map_or_else(|| err_at(&c.body, "this closure must produce a value"), Ok)
}

/// Like `call_closure` for closures used for their effect (`for_each`).
fn run_closure(l: &mut Lower, c: &syn::ExprClosure, args: Vec<Item>) -> syn::Result<()> {
    l.push_scope();
    for (p, a) in c.inputs.iter().zip(args) {
        bind_item(l, p, a)?;
    }
    let r = l.expr_opt(&c.body);
    l.pop_scope();
    r.map(|_| ())
}

/// Binds a pattern (`x`, `&x`, `(i, x)`, `_`, with type annotations) to an item.
pub(crate) fn bind_item(l: &mut Lower, pat: &syn::Pat, item: Item) -> syn::Result<()> {
    match (pat, item) {
        (syn::Pat::Type(pt), item) => bind_item(l, &pt.pat, item),
        (syn::Pat::Paren(p), item) => bind_item(l, &p.pat, item),
        (syn::Pat::Reference(r), item) => bind_item(l, &r.pat, item),
        (syn::Pat::Wild(_), _) => Ok(()),
        (syn::Pat::Tuple(t), Item::Tuple(items)) if t.elems.len() == items.len() => {
            for (p, it) in t.elems.iter().zip(items) {
                bind_item(l, p, it)?;
            }
            Ok(())
        }
        (syn::Pat::Ident(pi), Item::Val(v)) if pi.subpat.is_none() => l.bind_pat(pat, v),
        (syn::Pat::Ident(pi), Item::Place(mem, index)) if pi.subpat.is_none() => {
            l.bind(pi.ident.to_string(), Binding::Place(mem, index));
            Ok(())
        }
        (syn::Pat::Ident(pi), Item::View { mem, start, len }) if pi.subpat.is_none() => {
            l.bind(pi.ident.to_string(), Binding::View { mem, start, len });
            Ok(())
        }
        (p, _) => err_at(p, "this pattern does not fit the items of the iterator"),
    }
}

/// Runs `body` once per item, in a `for k in 0..count` loop.
fn each(l: &mut Lower, c: &Chain, mut body: impl FnMut(&mut Lower, Item) -> syn::Result<()>) -> syn::Result<()> {
    let zero = usize_const(l, 0);
    let k = l.func.new_value(Ty::USIZE, Some("k".into()), cotan_ir::SpanId::NONE);
    l.set_sty(k, USIZE);
    l.push_region();
    let item = (c.item)(l, k)?;
    body(l, item)?;
    let body = l.pop_region();
    l.effect(OpKind::For {
        index: k,
        lo: zero,
        hi: c.count,
        step: None,
        inclusive: false,
        reverse: false,
        body,
        exit: None,
    });
    Ok(())
}

/// The value of an item used as a number (reading an `iter_mut` element).
fn value(l: &mut Lower, item: Item, e: &syn::Expr) -> syn::Result<Value> {
    match item {
        Item::Val(v) => Ok(v),
        Item::Place(mem, k) => {
            let t = l.elem_sty(mem);
            Ok(l.emit_s(OpKind::Load { mem, index: Some(k) }, t))
        }
        _ => err_at(e, "expected numbers from this iterator"),
    }
}

/// A consumer call at the end of a chain: `sum`, `product`, `fold`, `for_each`, `count`, `collect`.
/// Returns `None` if `m` is not one.
pub(crate) fn consume(l: &mut Lower, m: &syn::ExprMethodCall) -> Option<syn::Result<Option<Value>>> {
    let name = m.method.to_string();
    if !["sum", "product", "fold", "for_each", "count", "collect"].contains(&name.as_str()) || !is_chain(&m.receiver) {
        return None;
    }
    Some(consume_inner(l, m, &name))
}

fn turbofish_scalar(m: &syn::ExprMethodCall) -> Option<Scalar> {
    let t = m.turbofish.as_ref()?;
    match t.args.first()? {
        syn::GenericArgument::Type(ty) => crate::signature::scalar_type(ty).or_else(|| crate::signature::elem_type(ty)),
        _ => None,
    }
}

fn consume_inner(l: &mut Lower, m: &syn::ExprMethodCall, name: &str) -> syn::Result<Option<Value>> {
    let c = chain(l, &m.receiver)?;
    l.at(m.span());
    match name {
        "count" => Ok(Some(c.count)),
        "sum" | "product" => {
            let t = match turbofish_scalar(m) {
                Some(s) => STy::Known(s),
                None => l.infer.fresh(Class::Any),
            };
            let unit = l.pending_zero(t);
            if name == "product" {
                l.mark_one(unit);
            }
            let acc = l.new_var(name, t);
            l.effect(OpKind::DeclVar { var: acc, init: unit });
            let op = if name == "sum" { BinOp::Add } else { BinOp::Mul };
            each(l, &c, |l, item| {
                let v = value(l, item, &m.receiver)?;
                let vt = l.scalar_sty(v, m.span())?;
                l.unify(t, vt, m.span())?;
                let old = l.emit_s(OpKind::GetVar(acc), t);
                let new = l.emit_s(OpKind::Binary(op, old, v), t);
                l.effect(OpKind::SetVar(acc, new));
                Ok(())
            })?;
            Ok(Some(l.emit_s(OpKind::GetVar(acc), t)))
        }
        "fold" => {
            let (init, t) = l.scalar(arg(m, 0)?)?;
            let f = closure_of(arg(m, 1)?, 2)?;
            let acc = l.new_var("acc", t);
            l.effect(OpKind::DeclVar { var: acc, init });
            each(l, &c, |l, item| {
                let old = l.emit_s(OpKind::GetVar(acc), t);
                let new = call_closure(l, f, vec![Item::Val(old), item])?;
                let nt = l.scalar_sty(new, f.body.span())?;
                l.unify(t, nt, f.body.span())?;
                l.effect(OpKind::SetVar(acc, new));
                Ok(())
            })?;
            Ok(Some(l.emit_s(OpKind::GetVar(acc), t)))
        }
        "for_each" => {
            let f = closure_of(arg(m, 0)?, 1)?;
            each(l, &c, |l, item| run_closure(l, f, vec![item]))?;
            Ok(None)
        }
        _ => {
            // collect into a Vec of the chain's length.
            let t = match turbofish_scalar(m) {
                Some(s) => STy::Known(s),
                None => l.infer.fresh(Class::Any),
            };
            let init = l.pending_zero(t);
            let buf = l.alloc_vec(init, t, c.count, m.span())?;
            let zero = usize_const(l, 0);
            let k = l.func.new_value(Ty::USIZE, Some("k".into()), cotan_ir::SpanId::NONE);
            l.set_sty(k, USIZE);
            l.push_region();
            let item = (c.item)(l, k)?;
            let v = value(l, item, &m.receiver)?;
            let vt = l.scalar_sty(v, m.span())?;
            l.unify(t, vt, m.span())?;
            l.effect(OpKind::Store { mem: buf, index: Some(k), value: v });
            let body: Region = l.pop_region();
            l.effect(OpKind::For {
                index: k,
                lo: zero,
                hi: c.count,
                step: None,
                inclusive: false,
                reverse: false,
                body,
                exit: None,
            });
            Ok(Some(buf))
        }
    }
}
