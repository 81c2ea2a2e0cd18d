//! Iterator chains with closures, lowered to index loops.
//!
//! A chain is seen as a count and a function from the iteration number `k` to the item:
//! `x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>()` becomes
//! `for k in 0..min(x.len(), y.len()) { s += x[k] * y[k] }`, the same code as the index
//! loop a person would write. Closures are inlined at their single use. The item function
//! passes the item to a continuation (the consumer's loop body), so that `filter` can run
//! the rest of the chain under `if pred(item) { .. }`.

use crate::span::Spanned;
use cotan_ir::{Access, BinOp, CmpOp, Const, MathFn, MemKind, OpKind, Region, Scalar, Ty, UnOp, Value, Var, ZeroField};
use proc_macro2::Span;

use crate::agg::{Agg, Merge, Tree};
use crate::closure::Callable;
use crate::env::FieldType;
use crate::infer::{Class, STy};
use crate::lower::{err, err_at, mem, Binding, Lower};

/// What one iteration yields.
#[derive(Clone)]
pub(crate) enum Item {
    Val(Value),
    /// An element reached through `iter_mut`: reads load it, `*x = ..` stores it.
    Place(Value, Value),
    Tuple(Vec<Item>),
    /// An `Option` (the result of a closure).
    Agg(Agg),
}

impl Item {
    pub(crate) fn from_agg(a: Agg) -> Item {
        match a {
            Tree::Leaf(v) => Item::Val(v),
            Tree::Tuple(es) => Item::Tuple(es.into_iter().map(Item::from_agg).collect()),
            a => Item::Agg(a),
        }
    }
}

/// An item as a value (reading `iter_mut` elements).
pub(crate) fn item_agg(l: &mut Lower, item: Item) -> Agg {
    match item {
        Item::Val(v) => Tree::Leaf(v),
        Item::Place(mem, k) => {
            let t = l.elem_sty(mem);
            Tree::Leaf(l.emit_s(OpKind::Load { mem, index: Some(k) }, t))
        }
        Item::Tuple(es) => Tree::Tuple(es.into_iter().map(|e| item_agg(l, e)).collect()),
        Item::Agg(a) => a,
    }
}

/// The rest of the loop body, given the item.
pub(crate) type Cont<'c> = &'c mut dyn FnMut(&mut Lower, Item) -> syn::Result<()>;
type ItemFn<'a> = Box<dyn Fn(&mut Lower, Value, Cont) -> syn::Result<()> + 'a>;

/// A chain: `count` iterations, the k-th passing `item(k)` to the loop body (unless a
/// `filter` drops it).
pub(crate) struct Chain<'a> {
    pub count: Value,
    pub item: ItemFn<'a>,
    /// Some items may be dropped (`filter`): the k-th iteration is not the k-th item.
    pub filtered: bool,
}

const USIZE: STy = STy::Known(Scalar::Usize);
const BOOL: STy = STy::Known(Scalar::Bool);

/// The consumers and adapters cotan knows, to recognise a chain.
const ADAPTERS: [&str; 12] =
    ["enumerate", "zip", "map", "rev", "skip", "take", "step_by", "copied", "cloned", "filter", "chain", "flatten"];
const SOURCES: [&str; 8] =
    ["iter", "iter_mut", "into_iter", "chunks", "chunks_mut", "chunks_exact", "chunks_exact_mut", "windows"];
const CONSUMERS: [&str; 16] = [
    "sum", "product", "fold", "reduce", "for_each", "count", "collect", "any", "all", "position", "find", "max_by",
    "min_by", "max", "min", "last",
];

/// The iterator methods cotan knows, for messages.
pub(crate) const SUPPORTED: &str = "supported: sources iter, iter_mut, into_iter, chunks, chunks_mut, chunks_exact, chunks_exact_mut, windows, ranges, std::iter::once; adapters enumerate, zip, map, filter, rev, skip, take, step_by, copied, cloned, chain, flatten (of a matrix's rows); consumers sum, product, fold, reduce, for_each, count, collect, any, all, position, find, max_by, min_by, max, min, last";

/// True if `e` is a method chain ending in an iterator source or adapter.
pub(crate) fn is_chain(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::MethodCall(m) => is_chain_call(m),
        syn::Expr::Paren(p) => is_chain(&p.expr),
        syn::Expr::Range(_) => true,
        syn::Expr::Call(c) => iter_zip(c).is_some() || iter_once(c).is_some(),
        _ => false,
    }
}

/// True if the method call `m` makes an iterator: a source, or an adapter of one.
pub(crate) fn is_chain_call(m: &syn::ExprMethodCall) -> bool {
    // (An adapter's receiver is a chain too: `x.last().copied().map(f)` is an `Option`.)
    let name = m.method.to_string();
    (ADAPTERS.contains(&name.as_str()) && is_chain(&m.receiver)) || SOURCES.contains(&name.as_str())
}

/// The arguments of a call of std's `module::name` (written `module::name`,
/// `std::module::name` or `core::module::name`), if `c` is one.
pub(crate) fn std_call<'c>(
    c: &'c syn::ExprCall,
    module: &str,
    name: &str,
) -> Option<&'c syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>> {
    let syn::Expr::Path(p) = &*c.func else { return None };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let named = matches!(segs.as_slice(), [.., m, f] if m == module && f == name)
        && (segs.len() == 2 || matches!(segs[0].as_str(), "std" | "core"));
    named.then_some(&c.args)
}

/// `std::iter::once(v)` (or `core::iter::once`, `iter::once`): its one item.
fn iter_once(c: &syn::ExprCall) -> Option<&syn::Expr> {
    std_call(c, "iter", "once").filter(|a| a.len() == 1).map(|a| &a[0])
}

fn bin(l: &mut Lower, op: BinOp, a: Value, b: Value) -> Value {
    l.emit_s(OpKind::Binary(op, a, b), USIZE)
}

fn usize_const(l: &mut Lower, n: i128) -> Value {
    l.emit_s(OpKind::Const(Const::Int(n)), USIZE)
}

pub(crate) fn min(l: &mut Lower, a: Value, b: Value) -> Value {
    let lt = l.emit_s(OpKind::Cmp(CmpOp::Lt, a, b), BOOL);
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
    if let Some(c) = chunk_source(l, e)? {
        return Ok(c);
    }
    match e {
        syn::Expr::Paren(p) => chain(l, &p.expr),
        syn::Expr::Reference(r) => chain(l, &r.expr),
        syn::Expr::Range(r) => range(l, r),
        syn::Expr::MethodCall(m) => method(l, m),
        syn::Expr::Call(c) if iter_zip(c).is_some() => {
            let (a, b) = iter_zip(c).expect("checked");
            let a = chain(l, a)?;
            if a.filtered {
                return err_at(&c.args[0], "cotan cannot zip a filtered iterator; filter after `zip`");
            }
            zip(l, a, b)
        }
        syn::Expr::Call(c) if iter_once(c).is_some() => {
            let v = l.agg(iter_once(c).expect("checked"))?;
            let count = usize_const(l, 1);
            Ok(Chain { count, item: Box::new(move |l, _, cont| cont(l, Item::from_agg(v.clone()))), filtered: false })
        }
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
    let empty = l.emit_s(OpKind::Cmp(CmpOp::Le, hi, lo), BOOL);
    let diff = l.emit_s(OpKind::Binary(BinOp::Sub, hi, lo), lt);
    let diff = l.emit_s(OpKind::Cast(diff), USIZE);
    let zero = usize_const(l, 0);
    let count = l.emit_s(OpKind::Select(empty, zero, diff), USIZE);
    Ok(Chain {
        count,
        item: Box::new(move |l, k, cont| {
            let k = l.emit_s(OpKind::Cast(k), lt);
            let v = l.emit_s(OpKind::Binary(BinOp::Add, lo, k), lt);
            cont(l, Item::Val(v))
        }),
        filtered: false,
    })
}

/// Elements of a slice, array, Vec or window.
fn source<'a>(l: &mut Lower, e: &'a syn::Expr, writable: bool) -> syn::Result<Chain<'a>> {
    let mem = l.memory(e)?;
    if writable && !l.mem_ty(mem).unwrap().is_writable() {
        return err_at(e, "`iter_mut` needs `&mut` access");
    }
    let count = l.emit_s(OpKind::Len(mem), USIZE);
    let elem = l.elem_sty(mem);
    let nested = l.is_nested(mem);
    Ok(Chain {
        count,
        item: Box::new(move |l, k, cont| {
            if nested {
                // The rows of nested memory: each memory, like a slice (`&mut` only from
                // `iter_mut`, so that a pattern `[a, b]` binds copies otherwise).
                let row = l.row_as(mem, k, if writable { Access::Mut } else { Access::Shared });
                cont(l, Item::Val(row))
            } else if writable {
                cont(l, Item::Place(mem, k))
            } else {
                let v = l.emit_s(OpKind::Load { mem, index: Some(k) }, elem);
                cont(l, Item::Val(v))
            }
        }),
        filtered: false,
    })
}

/// The chunks of `as_chunks` as a source (`chunks.iter()`, `chunks.iter_mut()`, `&chunks`,
/// `chunks`): each item a chunk, a `&[f64; N]` or `&mut [f64; N]`. `None` for other sources.
fn chunk_source<'a>(l: &mut Lower, e: &syn::Expr) -> syn::Result<Option<Chain<'a>>> {
    let (recv, access) = match crate::lower::strip_parens(e) {
        syn::Expr::MethodCall(m) if m.args.is_empty() => match m.method.to_string().as_str() {
            "iter" => (&*m.receiver, Some(Access::Shared)),
            "iter_mut" => (&*m.receiver, Some(Access::Mut)),
            "into_iter" => (&*m.receiver, None),
            _ => return Ok(None),
        },
        syn::Expr::Reference(r) => (&*r.expr, Some(if r.mutability.is_some() { Access::Mut } else { Access::Shared })),
        e => (e, None),
    };
    let Some((base, n, own)) = l.chunks_of(recv) else { return Ok(None) };
    let access = access.unwrap_or(own);
    if access == Access::Mut && own != Access::Mut {
        return err_at(recv, "these chunks are shared: take them with `as_chunks_mut` to write them");
    }
    let count = l.chunk_count(base, n);
    Ok(Some(Chain {
        count,
        item: Box::new(move |l, k, cont| {
            let chunk = l.chunk_at(base, n, access, k);
            cont(l, Item::Val(chunk))
        }),
        filtered: false,
    }))
}

fn arg(m: &syn::ExprMethodCall, k: usize) -> syn::Result<&syn::Expr> {
    m.args.iter().nth(k).map_or_else(|| err_at(m, format!("`{}` needs an argument", m.method)), Ok)
}

/// Adapters that count items, which cotan cannot do after a `filter`.
fn unfiltered<'a>(c: Chain<'a>, m: &syn::ExprMethodCall) -> syn::Result<Chain<'a>> {
    if c.filtered {
        return err_at(
            &m.method,
            format!("cotan cannot number or count the items after a `filter` (`.{}()` here); write a `for` loop that tests the condition and keeps its own counter", m.method),
        );
    }
    Ok(c)
}

/// `a` zipped with the iterator `b` makes: pairs, as many as the shorter has.
fn zip<'a>(l: &mut Lower, a: Chain<'a>, b: &'a syn::Expr) -> syn::Result<Chain<'a>> {
    let b_chain = chain(l, b)?;
    if b_chain.filtered {
        return err_at(b, "cotan cannot zip with a filtered iterator; filter after `zip`");
    }
    let count = min(l, a.count, b_chain.count);
    let (fa, fb) = (a.item, b_chain.item);
    Ok(Chain {
        count,
        item: Box::new(move |l, k, cont| {
            fa(l, k, &mut |l, x| fb(l, k, &mut |l, y| cont(l, Item::Tuple(vec![x.clone(), y]))))
        }),
        filtered: false,
    })
}

/// `m.iter().flatten()` (or `iter_mut`, `into_iter`) of nested memory: the elements of its
/// rows, row after row, the `k`-th at `(k / cols, k % cols)`. Rows of vectors must all have
/// the first one's length (checked: cotan numbers the items).
fn flatten<'a>(l: &mut Lower, m: &'a syn::ExprMethodCall) -> syn::Result<Chain<'a>> {
    let (recv, access) = match crate::lower::strip_parens(&m.receiver) {
        syn::Expr::MethodCall(r)
            if r.args.is_empty() && matches!(r.method.to_string().as_str(), "iter" | "into_iter") =>
        {
            (&*r.receiver, Access::Shared)
        }
        syn::Expr::MethodCall(r) if r.args.is_empty() && r.method == "iter_mut" => (&*r.receiver, Access::Mut),
        _ => {
            return err_at(
                &m.method,
                "cotan flattens the rows of a matrix (`m.iter().flatten()`, `m.iter_mut().flatten()`)",
            )
        }
    };
    let mem = l.memory(recv)?;
    if !l.is_nested(mem) {
        return err_at(recv, "cotan flattens vectors of vectors and arrays of arrays (`&[Vec<f64>]`, `[[f64; 3]; 2]`)");
    }
    if access == Access::Mut && !l.mem_ty(mem).unwrap().is_writable() {
        return err_at(recv, "`iter_mut` needs `&mut` access");
    }
    let rows = l.emit_s(OpKind::Len(mem), USIZE);
    let row_kind = l.mem_ty(mem).unwrap().kind.row().expect("nested memory");
    let cols = match row_kind {
        MemKind::Array(n) => usize_const(l, n as i128),
        _ => {
            // The first row's length (none: 0), and every row as long.
            let cols = l.new_var("cols", USIZE);
            let zero = usize_const(l, 0);
            l.effect(OpKind::DeclVar { var: cols, init: zero });
            let some = l.emit_s(OpKind::Cmp(CmpOp::Gt, rows, zero), BOOL);
            l.push_region();
            let first = l.row_as(mem, zero, Access::Shared);
            let n = l.emit_s(OpKind::Len(first), USIZE);
            l.effect(OpKind::SetVar(cols, n));
            let then_region = l.pop_region();
            l.effect(OpKind::If { cond: some, then_region, else_region: Region::default() });
            let cols = l.emit_s(OpKind::GetVar(cols), USIZE);
            l.index_loop(rows, |l, r| {
                let row = l.row_as(mem, r, Access::Shared);
                let n = l.emit_s(OpKind::Len(row), USIZE);
                let same = l.emit_s(OpKind::Cmp(CmpOp::Eq, n, cols), BOOL);
                let message = "cotan flattens vectors of vectors whose rows have the same length".to_string();
                l.effect(OpKind::Assert { cond: same, message });
            });
            cols
        }
    };
    let count = bin(l, BinOp::Mul, rows, cols);
    let elem = l.elem_sty(mem);
    Ok(Chain {
        count,
        item: Box::new(move |l, k, cont| {
            let (r, c) = (bin(l, BinOp::Div, k, cols), bin(l, BinOp::Rem, k, cols));
            let row = l.row_as(mem, r, access);
            if access == Access::Mut {
                cont(l, Item::Place(row, c))
            } else {
                let v = l.emit_s(OpKind::Load { mem: row, index: Some(c) }, elem);
                cont(l, Item::Val(v))
            }
        }),
        filtered: false,
    })
}

/// `std::iter::zip(a, b)` (or `core::iter::zip`, `iter::zip`): `a`'s items zipped with `b`'s.
pub(crate) fn iter_zip(c: &syn::ExprCall) -> Option<(&syn::Expr, &syn::Expr)> {
    std_call(c, "iter", "zip").filter(|a| a.len() == 2).map(|a| (&a[0], &a[1]))
}

fn method<'a>(l: &mut Lower, m: &'a syn::ExprMethodCall) -> syn::Result<Chain<'a>> {
    let name = m.method.to_string();
    match name.as_str() {
        "iter" | "into_iter" => source(l, &m.receiver, false),
        "iter_mut" => source(l, &m.receiver, true),
        "chunks" | "chunks_mut" | "chunks_exact" | "chunks_exact_mut" | "windows" => {
            let mem = l.memory(&m.receiver)?;
            let writable = name.ends_with("_mut");
            if writable && !l.mem_ty(mem).unwrap().is_writable() {
                return err_at(&m.receiver, format!("`{name}` needs `&mut` access"));
            }
            let (size, t) = l.scalar(arg(m, 0)?)?;
            l.unify(USIZE, t, m.span())?;
            // Rust panics on a size of zero.
            let zero = usize_const(l, 0);
            let positive = l.emit_s(OpKind::Cmp(CmpOp::Gt, size, zero), BOOL);
            let message =
                if name == "windows" { "window size must be non-zero" } else { "chunk size must be non-zero" };
            l.effect(OpKind::Assert { cond: positive, message: message.into() });
            let len = l.emit_s(OpKind::Len(mem), USIZE);
            let kind = match name.as_str() {
                "windows" => 0,
                "chunks" | "chunks_mut" => 1,
                _ => 2,
            };
            let count = match kind {
                0 => {
                    let one = usize_const(l, 1);
                    let n = bin(l, BinOp::Add, len, one);
                    saturating_sub(l, n, size)
                }
                1 => div_ceil(l, len, size),
                _ => bin(l, BinOp::Div, len, size),
            };
            let mut ty = l.mem_ty(mem).unwrap();
            ty.kind = MemKind::Slice;
            ty.access = if writable { Access::Mut } else { Access::Shared };
            Ok(Chain {
                count,
                item: Box::new(move |l, k, cont| {
                    // Each item is a sub-slice of the buffer.
                    let (start, end) = match kind {
                        0 => (k, bin(l, BinOp::Add, k, size)),
                        1 => {
                            let start = bin(l, BinOp::Mul, k, size);
                            let rest = bin(l, BinOp::Sub, len, start);
                            let n = min(l, size, rest);
                            (start, bin(l, BinOp::Add, start, n))
                        }
                        _ => {
                            let start = bin(l, BinOp::Mul, k, size);
                            (start, bin(l, BinOp::Add, start, size))
                        }
                    };
                    let view = l.slice_of(mem, start, end, ty);
                    cont(l, Item::Val(view))
                }),
                filtered: false,
            })
        }
        "copied" | "cloned" => chain(l, &m.receiver),
        "enumerate" => {
            let inner = unfiltered(chain(l, &m.receiver)?, m)?;
            let f = inner.item;
            Ok(Chain {
                count: inner.count,
                item: Box::new(move |l, k, cont| f(l, k, &mut |l, it| cont(l, Item::Tuple(vec![Item::Val(k), it])))),
                filtered: false,
            })
        }
        "zip" => {
            let a = unfiltered(chain(l, &m.receiver)?, m)?;
            zip(l, a, arg(m, 0)?)
        }
        "flatten" => flatten(l, m),
        "chain" => {
            let (a, b) = (chain(l, &m.receiver)?, chain(l, arg(m, 0)?)?);
            let count = bin(l, BinOp::Add, a.count, b.count);
            let (fa, fb, first_count) = (a.item, b.item, a.count);
            Ok(Chain {
                count,
                item: Box::new(move |l, k, cont| {
                    // The first iterator's items, then the second's: the rest of the body
                    // is lowered in both branches.
                    let first = l.emit_s(OpKind::Cmp(CmpOp::Lt, k, first_count), BOOL);
                    l.push_region();
                    fa(l, k, &mut *cont)?;
                    let then_region = l.pop_region();
                    l.push_region();
                    let j = bin(l, BinOp::Sub, k, first_count);
                    fb(l, j, cont)?;
                    let else_region = l.pop_region();
                    l.effect(OpKind::If { cond: first, then_region, else_region });
                    Ok(())
                }),
                filtered: a.filtered || b.filtered,
            })
        }
        "map" => {
            let inner = chain(l, &m.receiver)?;
            let f = l.callable(arg(m, 0)?, 1)?;
            let g = inner.item;
            let span = m.span();
            Ok(Chain {
                count: inner.count,
                item: Box::new(move |l, k, cont| {
                    g(l, k, &mut |l, it| {
                        let v = l.call_value(&f, vec![it], span)?;
                        cont(l, Item::from_agg(v))
                    })
                }),
                filtered: inner.filtered,
            })
        }
        "filter" => {
            let inner = chain(l, &m.receiver)?;
            let f = l.callable(arg(m, 0)?, 1)?;
            let g = inner.item;
            let span = m.span();
            Ok(Chain {
                count: inner.count,
                item: Box::new(move |l, k, cont| {
                    g(l, k, &mut |l, it| {
                        let keep = l.call_value(&f, vec![it.clone()], span)?;
                        let keep = bool_of(l, keep, span)?;
                        l.push_region();
                        cont(l, it)?;
                        let then_region = l.pop_region();
                        l.effect(OpKind::If { cond: keep, then_region, else_region: Region::default() });
                        Ok(())
                    })
                }),
                filtered: true,
            })
        }
        "rev" => {
            let inner = chain(l, &m.receiver)?;
            let count = inner.count;
            let f = inner.item;
            Ok(Chain {
                count,
                item: Box::new(move |l, k, cont| {
                    let one = usize_const(l, 1);
                    let last = bin(l, BinOp::Sub, count, one);
                    let j = bin(l, BinOp::Sub, last, k);
                    f(l, j, cont)
                }),
                filtered: inner.filtered,
            })
        }
        "skip" | "take" | "step_by" => {
            let inner = unfiltered(chain(l, &m.receiver)?, m)?;
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
                item: Box::new(move |l, k, cont| {
                    let j = match kind.as_str() {
                        "skip" => bin(l, BinOp::Add, k, n),
                        "take" => k,
                        _ => bin(l, BinOp::Mul, k, n),
                    };
                    f(l, j, cont)
                }),
                filtered: false,
            })
        }
        _ => err_at(&m.method, format!("cotan does not support the iterator method `.{name}(..)`; {SUPPORTED}")),
    }
}

fn bool_of(l: &mut Lower, a: Agg, span: Span) -> syn::Result<Value> {
    let Tree::Leaf(v) = a else { return err(span, format!("expected a bool, found {}", a.describe())) };
    let t = l.scalar_sty(v, span)?;
    l.unify(BOOL, t, span)?;
    Ok(v)
}

/// Binds a pattern (`x`, `&x`, `(i, x)`, `_`, with type annotations) to an item.
pub(crate) fn bind_item(l: &mut Lower, pat: &syn::Pat, item: Item) -> syn::Result<()> {
    match (pat, item) {
        (syn::Pat::Type(pt), item) => {
            if let Item::Val(v) = &item {
                l.annotate(&pt.ty, &Tree::Leaf(*v))?;
            }
            bind_item(l, &pt.pat, item)
        }
        (syn::Pat::Paren(p), item) => bind_item(l, &p.pat, item),
        (syn::Pat::Reference(r), item) => bind_item(l, &r.pat, item),
        (syn::Pat::Wild(_), _) => Ok(()),
        (syn::Pat::Tuple(t), Item::Tuple(items)) if t.elems.len() == items.len() => {
            for (p, it) in t.elems.iter().zip(items) {
                bind_item(l, p, it)?;
            }
            Ok(())
        }
        (syn::Pat::Tuple(t), Item::Val(v)) if l.mem_ty(v).is_some_and(|m| matches!(m.kind, MemKind::Record(_))) => {
            // A tuple in memory (an element of `[(usize, usize); N]`): its fields.
            for (k, p) in t.elems.iter().enumerate() {
                let f = l.field_of(v, k.to_string(), String::new(), p.span());
                let x = l.auto_load(f);
                bind_item(l, p, Item::Val(x))?;
            }
            Ok(())
        }
        (syn::Pat::Slice(s), Item::Val(v)) if l.is_mut_array(v) => l.bind_elem_refs(s, v),
        (syn::Pat::Ident(pi), Item::Val(v)) if pi.subpat.is_none() => {
            // `|mut v: [f64; 2]|` called with an array: the closure writes its own copy.
            let v = match pi.mutability.is_some() && l.is_owned_array(v) {
                true => l.array_copy(v, pi.span())?,
                false => v,
            };
            l.bind_pat(pat, v)
        }
        (syn::Pat::Ident(pi), Item::Place(mem, index)) if pi.subpat.is_none() => {
            l.bind(pi.ident.to_string(), Binding::Place(mem, index));
            Ok(())
        }
        (
            p @ (syn::Pat::Ident(_) | syn::Pat::Tuple(_) | syn::Pat::Slice(_)),
            item @ (Item::Tuple(_) | Item::Agg(_) | Item::Val(_)),
        ) => {
            let a = item_agg(l, item);
            l.bind_agg(p, a)
        }
        (p, _) => err_at(p, "this pattern does not fit the items of the iterator"),
    }
}

/// Runs `body` once per item, in a `for k in 0..count` loop that stops after an
/// iteration that sets `exit`.
fn each(
    l: &mut Lower,
    c: &Chain,
    exit: Option<Var>,
    mut body: impl FnMut(&mut Lower, Value, Item) -> syn::Result<()>,
) -> syn::Result<()> {
    let zero = usize_const(l, 0);
    let k = l.func.new_value(Ty::USIZE, Some("k".into()), cotan_ir::SpanId::NONE);
    l.set_sty(k, USIZE);
    l.push_region();
    (c.item)(l, k, &mut |l, item| body(l, k, item))?;
    let body = l.pop_region();
    l.effect(OpKind::For { index: k, lo: zero, hi: c.count, step: None, inclusive: false, reverse: false, body, exit });
    Ok(())
}

/// The value of an item used as a number (reading an `iter_mut` element).
fn value(l: &mut Lower, item: Item, e: &syn::Expr) -> syn::Result<Value> {
    match item_agg(l, item) {
        Tree::Leaf(v) => Ok(v),
        a => err_at(e, format!("expected numbers from this iterator, found {}", a.describe())),
    }
}

/// A consumer call at the end of a chain (see `CONSUMERS`). Returns `None` if `m` is not one.
pub(crate) fn consume(l: &mut Lower, m: &syn::ExprMethodCall) -> Option<syn::Result<Option<Agg>>> {
    let name = m.method.to_string();
    if !CONSUMERS.contains(&name.as_str()) || !is_chain(&m.receiver) {
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

/// `.map(|..| S { .. }).collect()` into a `Vec<S>`: a vector of zeroed structs of the
/// chain's length (`AllocRecords`), whose fields each item then writes.
fn collect_structs(l: &mut Lower, c: &Chain, path: &syn::Path, method: &syn::Ident) -> syn::Result<Option<Agg>> {
    let span = method.span();
    let ty = crate::record::tokens_text(path);
    let refuse = |why: String| {
        syn::Error::new_spanned(
            path,
            format!("cotan collects structs whose fields are numbers or arrays of numbers; {why}; take the vector as a `&mut [{ty}]` parameter and write its fields in a loop"),
        )
    };
    if c.filtered {
        return err_at(method, "cotan collects structs from chains without `filter`; collect every item and test the condition where the vector is used");
    }
    let Some(defs) = l.env.record_fields(&ty) else {
        return Err(refuse(format!("it cannot read the definition of `{ty}`")));
    };
    let mut fields = vec![];
    for (name, ft) in defs {
        let zero = match ft {
            FieldType::Number(s) => ZeroField::Number(s),
            FieldType::Memory(s, MemKind::Array(n)) => ZeroField::Array(s, n),
            _ => return Err(refuse(format!("`{ty}` has the field `{name}`"))),
        };
        fields.push((name, zero));
    }
    let id = l.func.record(&ty);
    l.at(span);
    let buf_ty = mem(Scalar::F64, MemKind::Records(cotan_ir::Dim::Vec, id), Access::Owned);
    let buf = l.emit(OpKind::AllocRecords { len: c.count, fields: fields.clone() }, buf_ty);
    each(l, c, None, |l, k, item| {
        let Tree::Struct(_, values) = item_agg(l, item) else { return err_at(path, format!("expected a `{ty}` here")) };
        let row = l.row(buf, k);
        for (name, value) in values {
            let field = l.field_of(row, name.clone(), String::new(), span);
            match (value, fields.iter().find(|(n, _)| *n == name).map(|f| f.1)) {
                (Tree::Leaf(v), Some(ZeroField::Number(_))) => {
                    let (ft, vt) = (l.elem_sty(field), l.scalar_sty(v, span)?);
                    l.unify(ft, vt, span)?;
                    l.effect(OpKind::Store { mem: field, index: None, value: v });
                }
                (Tree::Leaf(v), Some(ZeroField::Array(_, n))) => {
                    let (ft, vt) = (l.elem_sty(field), l.elem_sty(v));
                    l.unify(ft, vt, span)?;
                    let n = usize_const(l, n as i128);
                    l.copy_loop(field, v, n);
                }
                _ => return Err(refuse(format!("the field `{name}` is not one"))),
            }
        }
        Ok(())
    })?;
    Ok(Some(Tree::Leaf(buf)))
}

/// The value a chain ending in `.map(|..| { ..; VALUE })` maps to: `VALUE`.
fn map_tail(e: &syn::Expr) -> Option<&syn::Expr> {
    let syn::Expr::MethodCall(m) = crate::lower::strip_parens(e) else { return None };
    if m.method != "map" {
        return None;
    }
    let syn::Expr::Closure(c) = m.args.first()? else { return None };
    match &*c.body {
        syn::Expr::Block(b) => match b.block.stmts.last()? {
            syn::Stmt::Expr(e, None) => Some(e),
            _ => None,
        },
        e => Some(e),
    }
}

/// The struct a chain maps to, if it maps to struct literals (`.map(|..| S { .. })`).
fn struct_items(e: &syn::Expr) -> Option<&syn::Path> {
    match crate::lower::strip_parens(map_tail(e)?) {
        syn::Expr::Struct(s) => Some(&s.path),
        _ => None,
    }
}

/// The struct of numbers the chain's last `map` makes by a call of the crate's function
/// that returns one (`.map(|c| Biquad::new(c[0], c[1]))`).
fn constructed_items(l: &Lower, e: &syn::Expr) -> Option<syn::Path> {
    let syn::Expr::Call(c) = crate::lower::strip_parens(map_tail(e)?) else { return None };
    let syn::Expr::Path(p) = crate::lower::strip_parens(&c.func) else { return None };
    syn::parse_str(&l.env.callee(&p.path)?.ret?.path).ok()
}

/// `N` when the chain's last `map` makes arrays of `N` numbers (`.map(|p| [a, b])`).
fn array_items(e: &syn::Expr) -> Option<u64> {
    match map_tail(e)? {
        syn::Expr::Array(a) => Some(a.elems.len() as u64),
        syn::Expr::Repeat(r) => match &*r.len {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// A bool variable declared here with `init`.
fn flag(l: &mut Lower, name: &str, init: bool) -> Var {
    let var = l.new_var(name, BOOL);
    let v = l.bool_const(init);
    l.effect(OpKind::DeclVar { var, init: v });
    var
}

fn consume_inner(l: &mut Lower, m: &syn::ExprMethodCall, name: &str) -> syn::Result<Option<Agg>> {
    let c = chain(l, &m.receiver)?;
    l.at(m.span());
    let span = m.span();
    let leaf = |v: Value| Ok(Some(Tree::Leaf(v)));
    match name {
        "count" if !c.filtered => leaf(c.count),
        "count" => {
            let n = l.new_var("count", USIZE);
            let zero = usize_const(l, 0);
            l.effect(OpKind::DeclVar { var: n, init: zero });
            each(l, &c, None, |l, _, _| {
                let old = l.emit_s(OpKind::GetVar(n), USIZE);
                let one = usize_const(l, 1);
                let new = bin(l, BinOp::Add, old, one);
                l.effect(OpKind::SetVar(n, new));
                Ok(())
            })?;
            leaf(l.emit_s(OpKind::GetVar(n), USIZE))
        }
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
            each(l, &c, None, |l, _, item| {
                let v = value(l, item, &m.receiver)?;
                let vt = l.scalar_sty(v, span)?;
                l.unify(t, vt, span)?;
                let old = l.emit_s(OpKind::GetVar(acc), t);
                let new = l.emit_s(OpKind::Binary(op, old, v), t);
                l.effect(OpKind::SetVar(acc, new));
                Ok(())
            })?;
            leaf(l.emit_s(OpKind::GetVar(acc), t))
        }
        "fold" => {
            let init = l.agg(arg(m, 0)?)?;
            let f = l.callable(arg(m, 1)?, 2)?;
            if let Tree::Leaf(a) = init {
                if let Some(MemKind::Array(n)) = l.mem_ty(a).map(|t| t.kind) {
                    // An array accumulator (`fold([0.0, 0.0], |acc, p| [..])`): a local array,
                    // written whole with each new value.
                    let acc = l.array_copy(a, span)?;
                    each(l, &c, None, |l, _, item| {
                        let new = l.call_value(&f, vec![Item::Val(acc), item], span)?;
                        let Tree::Leaf(new) = new else { return err(span, "expected an array from this closure") };
                        if l.mem_ty(new).map(|t| t.kind) != Some(MemKind::Array(n)) {
                            return err(span, format!("expected an array of {n} numbers from this closure"));
                        }
                        let len = usize_const(l, n as i128);
                        l.copy_loop(acc, new, len);
                        Ok(())
                    })?;
                    return Ok(Some(Tree::Leaf(acc)));
                }
            }
            let acc = l.declare_vars("acc", &init, arg(m, 0)?.span())?;
            each(l, &c, None, |l, _, item| {
                let old = l.get_vars(&acc);
                let new = l.call_value(&f, vec![Item::from_agg(old), item], span)?;
                l.set_vars(&acc, &new, span)
            })?;
            Ok(Some(l.get_vars(&acc)))
        }
        "for_each" => {
            let f = l.callable(arg(m, 0)?, 1)?;
            each(l, &c, None, |l, _, item| l.call_callable(&f, vec![item], span).map(|_| ()))?;
            Ok(None)
        }
        "any" | "all" => {
            let f = l.callable(arg(m, 0)?, 1)?;
            // Stops at the first item that decides, as Rust does.
            let done = flag(l, name, false);
            each(l, &c, Some(done), |l, _, item| {
                let p = l.call_value(&f, vec![item], span)?;
                let p = bool_of(l, p, span)?;
                let decided = if name == "any" { p } else { l.emit_s(OpKind::Unary(UnOp::Not, p), BOOL) };
                l.effect(OpKind::SetVar(done, decided));
                Ok(())
            })?;
            let d = l.emit_s(OpKind::GetVar(done), BOOL);
            leaf(if name == "any" { d } else { l.emit_s(OpKind::Unary(UnOp::Not, d), BOOL) })
        }
        "position" | "find" => {
            if name == "position" && c.filtered {
                return err_at(
                    &m.method,
                    "cotan does not support `position` after `filter`; test the condition inside `position`'s closure",
                );
            }
            let f = l.callable(arg(m, 0)?, 1)?;
            let found = flag(l, "found", false);
            let depth = l.stack.len();
            let mut result = Merge::new(depth);
            each(l, &c, Some(found), |l, k, item| {
                let p = l.call_value(&f, vec![item.clone()], span)?;
                let p = bool_of(l, p, span)?;
                l.effect(OpKind::SetVar(found, p));
                let v = if name == "position" { Tree::Leaf(k) } else { item_agg(l, item) };
                l.push_region();
                result.set(l, &v, span)?;
                let then_region = l.pop_region();
                l.effect(OpKind::If { cond: p, then_region, else_region: Region::default() });
                Ok(())
            })?;
            let some = l.emit_s(OpKind::GetVar(found), BOOL);
            let v = result.get(l).expect("the loop body set the result");
            Ok(Some(Tree::Option(some, Box::new(v))))
        }
        "reduce" => {
            // The first item, then `f(acc, item)` for each one after it; `None` if empty.
            let f = l.callable(arg(m, 0)?, 2)?;
            let some = flag(l, "some", false);
            let depth = l.stack.len();
            let mut acc = Merge::new(depth);
            each(l, &c, None, |l, _, item| {
                let v = item_agg(l, item);
                first_or_later(l, &mut acc, some, &v, span, |l, acc, old| {
                    let new = l.call_value(&f, vec![Item::from_agg(old), Item::from_agg(v.clone())], span)?;
                    acc.set(l, &new, span)
                })
            })?;
            let flag = l.emit_s(OpKind::GetVar(some), BOOL);
            let v = acc.get(l).expect("the loop body set the result");
            Ok(Some(Tree::Option(flag, Box::new(v))))
        }
        "max_by" | "min_by" | "max" | "min" | "last" => {
            let cmp = match name {
                "max_by" | "min_by" => Some(l.callable(arg(m, 0)?, 2)?),
                _ => None,
            };
            let some = flag(l, "some", false);
            let depth = l.stack.len();
            let mut best = Merge::new(depth);
            each(l, &c, None, |l, _, item| {
                let v = item_agg(l, item);
                if name == "last" {
                    best.set(l, &v, span)?;
                    let t = l.bool_const(true);
                    l.effect(OpKind::SetVar(some, t));
                    return Ok(());
                }
                // The first item, or one that replaces the best so far: `max_by` keeps the
                // last of equal items, `min_by` the first (as std's `cmp::max_by`).
                first_or_later(l, &mut best, some, &v, span, |l, best, old| {
                    let greater = match &cmp {
                        Some(f) => l.ordering_greater(f, Item::from_agg(old), Item::from_agg(v.clone()), span)?,
                        None => {
                            let (Tree::Leaf(a), Tree::Leaf(b)) = (&old, &v) else {
                                return err(span, "cotan supports `max()`/`min()` on integers only; use `max_by` with `total_cmp` for floats");
                            };
                            let t = l.scalar_sty(*a, span)?;
                            if l.infer.class_of(t) != Some(Class::Int) {
                                return err(
                                    span,
                                    "`max()`/`min()` need `Ord` items; for floats use `.max_by(|a, b| a.total_cmp(b))`",
                                );
                            }
                            l.emit_s(OpKind::Cmp(CmpOp::Gt, *a, *b), BOOL)
                        }
                    };
                    let replace = if name.starts_with("max") {
                        l.emit_s(OpKind::Unary(UnOp::Not, greater), BOOL)
                    } else {
                        greater
                    };
                    l.push_region();
                    best.set(l, &v, span)?;
                    let then_region = l.pop_region();
                    l.effect(OpKind::If { cond: replace, then_region, else_region: Region::default() });
                    Ok(())
                })
            })?;
            let flag = l.emit_s(OpKind::GetVar(some), BOOL);
            let v = best.get(l).expect("the loop body set the result");
            Ok(Some(Tree::Option(flag, Box::new(v))))
        }
        _ if struct_items(&m.receiver).is_some() => {
            let path = struct_items(&m.receiver).expect("checked");
            collect_structs(l, &c, path, &m.method)
        }
        _ if constructed_items(l, &m.receiver).is_some() => {
            let path = constructed_items(l, &m.receiver).expect("checked");
            collect_structs(l, &c, &path, &m.method)
        }
        _ if array_items(&m.receiver).is_some() => {
            // collect arrays (`.map(|p| [a, b]).collect()`) into a `Vec<[T; N]>`: nested memory
            // of the chain's length, each row written whole.
            let n = array_items(&m.receiver).expect("checked");
            if c.filtered {
                return err_at(&m.method, "cotan collects arrays from chains without `filter`; collect after choosing the items with an index loop");
            }
            let t = l.infer.fresh(Class::Any);
            let zero = l.pending_zero(t);
            let n_v = usize_const(l, n as i128);
            let row = l.alloc(zero, t, n_v, MemKind::Array(n), span)?;
            let buf = l.nested_alloc(row, c.count, cotan_ir::Dim::Vec, span)?;
            each(l, &c, None, |l, k, item| {
                let a = item_agg(l, item);
                let Tree::Leaf(src) = a else { return err_at(&m.receiver, "expected arrays from this iterator") };
                if l.mem_ty(src).map(|t| t.kind) != Some(MemKind::Array(n)) {
                    return err_at(&m.receiver, format!("expected arrays of {n} numbers from this iterator"));
                }
                let et = l.elem_sty(src);
                l.unify(t, et, span)?;
                let dst = l.row(buf, k);
                let len = usize_const(l, n as i128);
                l.copy_loop(dst, src, len);
                Ok(())
            })?;
            Ok(Some(Tree::Leaf(buf)))
        }
        _ => {
            // collect into a Vec: of the chain's length, or grown by `push` after a `filter`.
            let t = match turbofish_scalar(m) {
                Some(s) => STy::Known(s),
                None => l.infer.fresh(Class::Any),
            };
            let init = l.pending_zero(t);
            let len = if c.filtered { usize_const(l, 0) } else { c.count };
            let buf = l.alloc_vec(init, t, len, span)?;
            let filtered = c.filtered;
            each(l, &c, None, |l, k, item| {
                let v = match item_agg(l, item) {
                    Tree::Leaf(v) if l.mem_ty(v).is_some() => {
                        return err_at(
                            &m.receiver,
                            "cotan collects numbers and arrays (`.map(|i| [a, b])`) into a vector, not vectors; make a vector of vectors with `vec![vec![0.0; m]; n]` and fill it in loops",
                        )
                    }
                    Tree::Leaf(v) => v,
                    Tree::Struct(..) => return err_at(&m.receiver, "cotan collects numbers and arrays into vectors, not structs; copy a slice of the structs with `.to_vec()` and write their fields (`for (s, &k) in v.iter_mut().zip(ks) { s.k = k; }`)"),
                    a @ Tree::Tuple(_) => return err_at(&m.receiver, format!("cotan collects numbers and arrays into vectors, not {}; collect arrays (`.map(|x| [a, b])` gives a `Vec<[f64; 2]>`) or one vector per part", a.describe())),
                    a => return err_at(&m.receiver, format!("expected numbers from this iterator, found {}", a.describe())),
                };
                let vt = l.scalar_sty(v, span)?;
                l.unify(t, vt, span)?;
                if filtered {
                    l.emit_s(OpKind::VecPush { mem: buf, value: v }, USIZE);
                } else {
                    l.effect(OpKind::Store { mem: buf, index: Some(k), value: v });
                }
                Ok(())
            })?;
            Ok(Some(Tree::Leaf(buf)))
        }
    }
}

/// For an item `v` of a chain folded from its first item (`reduce`, `max_by`): `acc = v`
/// for the first, `later(acc, acc's value)` for the others (it sets `acc` as it chooses),
/// and `some` becomes true.
fn first_or_later(
    l: &mut Lower,
    acc: &mut Merge,
    some: Var,
    v: &Agg,
    span: Span,
    later: impl FnOnce(&mut Lower, &mut Merge, Agg) -> syn::Result<()>,
) -> syn::Result<()> {
    acc.declare(l, v, span)?;
    let had = l.emit_s(OpKind::GetVar(some), BOOL);
    l.push_region();
    let old = acc.current(l).expect("declared");
    later(l, acc, old)?;
    let later_region = l.pop_region();
    l.push_region();
    acc.set(l, v, span)?;
    let first = l.pop_region();
    l.effect(OpKind::If { cond: had, then_region: later_region, else_region: first });
    let t = l.bool_const(true);
    l.effect(OpKind::SetVar(some, t));
    Ok(())
}

impl Lower {
    /// Whether `compare(a, b)` is `Ordering::Greater`, for the comparators people write:
    /// `x.partial_cmp(y).unwrap()` (or `.expect(..)`, `.unwrap_or(Ordering::..)`),
    /// `x.total_cmp(y)`, `x.cmp(y)`, `f64::total_cmp`, each optionally `.reverse()`d, where
    /// `x` and `y` are expressions of the parameters.
    pub(crate) fn ordering_greater(&mut self, f: &Callable, a: Item, b: Item, span: Span) -> syn::Result<Value> {
        let path_cmp = |p: &syn::ExprPath| p.path.segments.last().map(|s| s.ident.to_string());
        if let Callable::Path(p) = f {
            let Some(name) = path_cmp(p).filter(|n| n == "total_cmp" || n == "cmp") else {
                return err_at(p, "cotan supports `f64::total_cmp` (or a closure like `|a, b| a.total_cmp(b)`) as the comparator here");
            };
            let (x, y) = (item_agg(self, a), item_agg(self, b));
            let (Tree::Leaf(x), Tree::Leaf(y)) = (x, y) else { return err(span, "expected numbers to compare") };
            let kind = if name == "total_cmp" { Cmp::Total } else { Cmp::Ord };
            return self.compare_greater(kind, x, y, span);
        }
        self.with_params(f, vec![a, b], span, |l, body| l.ordering_expr(body, false))
    }

    /// `compare(x, y) == Greater` (or `== Less` when `reversed`) for a comparator body.
    fn ordering_expr(&mut self, e: &syn::Expr, reversed: bool) -> syn::Result<Value> {
        let unsupported = |e: &syn::Expr| {
            err_at(e, "cotan recognises comparators written `a.partial_cmp(b).unwrap()`, `a.total_cmp(b)` or `a.cmp(b)` (of any expressions of the parameters, optionally `.reverse()`d); write the comparison that way")
        };
        match e {
            syn::Expr::Paren(p) => self.ordering_expr(&p.expr, reversed),
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(e, None) => self.ordering_expr(e, reversed),
                _ => unsupported(e),
            },
            syn::Expr::MethodCall(m) if m.method == "reverse" && m.args.is_empty() => {
                self.ordering_expr(&m.receiver, !reversed)
            }
            syn::Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect" | "unwrap_or") => {
                let Some((x, y)) = cmp_operands(&m.receiver, "partial_cmp") else { return unsupported(e) };
                let kind = match (m.method.to_string().as_str(), m.args.first()) {
                    ("unwrap", None) => Cmp::Partial(None, "called `Option::unwrap()` on a `None` value".into()),
                    ("expect", Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }))) => {
                        Cmp::Partial(None, s.value())
                    }
                    ("unwrap_or", Some(syn::Expr::Path(p))) => {
                        match p.path.segments.last().map(|s| s.ident.to_string()).as_deref() {
                            Some(o @ ("Less" | "Equal" | "Greater")) => {
                                Cmp::Partial(Some(o.to_string()), String::new())
                            }
                            _ => return unsupported(e),
                        }
                    }
                    _ => return unsupported(e),
                };
                let (x, y) = self.cmp_values(x, y, reversed)?;
                self.compare_greater(kind, x, y, e.span())
            }
            _ => {
                for (method, kind) in [("total_cmp", Cmp::Total), ("cmp", Cmp::Ord)] {
                    if let Some((x, y)) = cmp_operands(e, method) {
                        let (x, y) = self.cmp_values(x, y, reversed)?;
                        return self.compare_greater(kind, x, y, e.span());
                    }
                }
                unsupported(e)
            }
        }
    }

    /// The two operands of a comparison, swapped when the ordering is reversed.
    fn cmp_values(&mut self, x: &syn::Expr, y: &syn::Expr, reversed: bool) -> syn::Result<(Value, Value)> {
        let span = y.span();
        let (x, tx) = self.scalar(x)?;
        let (y, ty) = self.scalar(y)?;
        self.unify(tx, ty, span)?;
        Ok(if reversed { (y, x) } else { (x, y) })
    }

    /// `x` compares greater than `y`.
    fn compare_greater(&mut self, kind: Cmp, x: Value, y: Value, span: Span) -> syn::Result<Value> {
        let t = self.scalar_sty(x, span)?;
        let gt = self.emit_s(OpKind::Cmp(CmpOp::Gt, x, y), BOOL);
        let float = self.infer.class_of(t) == Some(Class::Float);
        if !float {
            return Ok(gt);
        }
        let nan_x = self.emit_s(OpKind::Cmp(CmpOp::Ne, x, x), BOOL);
        let nan_y = self.emit_s(OpKind::Cmp(CmpOp::Ne, y, y), BOOL);
        let nan = self.emit_s(OpKind::Binary(BinOp::BitOr, nan_x, nan_y), BOOL);
        let not_nan = self.emit_s(OpKind::Unary(UnOp::Not, nan), BOOL);
        match kind {
            Cmp::Ord => Ok(gt),
            Cmp::Partial(None, message) => {
                self.effect(OpKind::Assert { cond: not_nan, message });
                Ok(gt)
            }
            Cmp::Partial(Some(o), _) if o == "Greater" => Ok(self.emit_s(OpKind::Binary(BinOp::BitOr, gt, nan), BOOL)),
            Cmp::Partial(Some(_), _) => Ok(gt),
            Cmp::Total => {
                // The total order of floats: as `>`, and -0.0 < +0.0. Which NaN is greater
                // depends on its sign bit, which cotan cannot read: refused at run time.
                let message = "cotan: `total_cmp` on NaN is not supported in derivatives (the order of NaNs depends on their sign bits)".to_string();
                self.effect(OpKind::Assert { cond: not_nan, message });
                let eq = self.emit_s(OpKind::Cmp(CmpOp::Eq, x, y), BOOL);
                let sx = self.emit_s(OpKind::Math(MathFn::Signum, vec![x]), t);
                let sy = self.emit_s(OpKind::Math(MathFn::Signum, vec![y]), t);
                let signs = self.emit_s(OpKind::Cmp(CmpOp::Gt, sx, sy), BOOL);
                let zeros = self.emit_s(OpKind::Binary(BinOp::BitAnd, eq, signs), BOOL);
                Ok(self.emit_s(OpKind::Binary(BinOp::BitOr, gt, zeros), BOOL))
            }
        }
    }
}

/// How a comparator treats NaN.
enum Cmp {
    /// `partial_cmp(..)` then `unwrap`/`expect` (panics with the message) or `unwrap_or(ordering)`.
    Partial(Option<String>, String),
    Total,
    /// `Ord::cmp` (integers).
    Ord,
}

/// `x.method(y)` or `T::method(x, y)`, with `&` taken off the operands.
fn cmp_operands<'e>(e: &'e syn::Expr, method: &str) -> Option<(&'e syn::Expr, &'e syn::Expr)> {
    let strip = |e: &'e syn::Expr| match e {
        syn::Expr::Reference(r) => &*r.expr,
        e => e,
    };
    match e {
        syn::Expr::Paren(p) => cmp_operands(&p.expr, method),
        syn::Expr::MethodCall(m) if m.method == method && m.args.len() == 1 => Some((&m.receiver, strip(&m.args[0]))),
        syn::Expr::Call(c) if c.args.len() == 2 => match &*c.func {
            syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == method) => {
                Some((strip(&c.args[0]), strip(&c.args[1])))
            }
            _ => None,
        },
        _ => None,
    }
}
