//! Row slices for counted loops: in `for j in lo..hi { y[b + j] += w * x[j] }` each access
//! checks its index against the buffer's length, and those checks keep the compiler from
//! vectorising the loop (a reverse sweep's loops are full of them). Taken once before the
//! loop, `let y_row = &mut y[b..b + hi];` makes the accesses `y_row[j]`, which the compiler
//! knows to be in bounds: `j < hi == y_row.len()`.
//!
//! A buffer gets a row slice only where that cannot change what the loop does: every access
//! to it in the loop is an element `base + j` (or `j`) with `base` computed before the loop,
//! made by a statement of the loop's own body (so in every iteration: the loop has no early
//! exit), and nothing else in the loop names the buffer. The last iteration then reads
//! `base + hi - 1`, so the slice is in bounds whenever the loop would not panic anyway; a
//! loop that may run no iteration takes its slices under `if lo < hi`. The buffer is a
//! parameter or a local of its own (not a view, a field or a pointer, and nothing views
//! it), so the slice borrows nothing else; a buffer the loop writes has one slice. Slices
//! cost compile time: a loop gets them only for two accesses or more, and a fixed-size
//! array read within constant bounds gets none (the compiler checks those already).
//!
//! An element whose index the loop does not change (`dx[i] += a[i * n + j] * dy[j]`, the
//! reverse of a matrix-vector product) is read into a local before the loop and, if the
//! loop writes it, written back after it: the compiler keeps it in a register instead of
//! storing and loading it in every iteration. Its additions keep their order. A buffer
//! the loop writes is then reached through that one element only.

use cotan_ir::{HashMap, HashSet};

use cotan_ir::{BinOp, Const, MemKind, Op, OpKind, Ty, Value};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::{Gen, Prec};

/// Where an access in a loop is: `base + j` (`None`: `j`), or one element whose index the
/// loop does not change.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum At {
    Row(Option<Value>),
    Elem,
}

/// An access to a buffer in a loop: its index, where it is, whether it is a store.
type Access = (Value, At, bool);

/// What a `Row` holds: a slice from `base` (`None`: the start), or the element at `index`.
#[derive(Clone, Copy, PartialEq)]
enum Held {
    Slice(Option<Value>),
    Elem(Value),
}

/// A row slice of one buffer for one loop, or one element of it held in a local.
pub(crate) struct Row {
    mem: Value,
    held: Held,
    name: Ident,
    writes: bool,
    /// The (buffer, index) pairs it serves.
    keys: Vec<(Value, Value)>,
}

impl Gen<'_> {
    /// The row slices of the loop `op`, registered for its accesses (`row_place`).
    pub(crate) fn row_slices(&self, op: &Op) -> Vec<Row> {
        let OpKind::For { index, body, step: None, inclusive: false, exit: None, .. } = &op.kind else {
            return vec![];
        };
        if self.f.ty(*index) != Ty::USIZE
            || self.f.par_loops.contains(index)
            || self.par.borrow().is_some()
            || !self.names.contains_key(index)
        {
            return vec![];
        }
        // Values made inside the loop, its index included.
        let mut inside: HashSet<Value> = [*index].into_iter().collect();
        body.walk(&mut |o| inside.extend(o.result.into_iter().chain(o.kind.inner_defs())));
        // The body's own indices `base + j` (or `j` itself).
        let mut offsets: HashMap<Value, Option<Value>> = [(*index, None)].into_iter().collect();
        for o in &body.ops {
            if let (OpKind::Binary(BinOp::Add, x, y), Some(r)) = (&o.kind, o.result) {
                let base = if x == index {
                    *y
                } else if y == index {
                    *x
                } else {
                    continue;
                };
                if self.before_loop(base, &inside) {
                    offsets.insert(r, Some(base));
                }
            }
        }
        let top: HashSet<*const Op> = body.ops.iter().map(|o| o as *const Op).collect();
        // Per buffer: its accesses (index, base, whether a store), or `None` if anything
        // else in the loop names it.
        let mut access: HashMap<Value, Option<Vec<Access>>> = HashMap::default();
        body.walk(&mut |o| {
            let (mem, index, store) = match &o.kind {
                OpKind::Load { mem, index: Some(i) } => (*mem, *i, false),
                OpKind::Store { mem, index: Some(i), .. } => (*mem, *i, true),
                k => {
                    for u in k.operands() {
                        if self.f.ty(u).mem().is_some() {
                            access.insert(u, None);
                        }
                    }
                    return;
                }
            };
            let at = match offsets.get(&index) {
                Some(base) => Some(At::Row(*base)),
                None if self.before_loop(index, &inside) => Some(At::Elem),
                None => None,
            };
            let entry = access.entry(mem).or_insert_with(|| Some(vec![]));
            match (entry.as_mut(), at, top.contains(&(o as *const Op))) {
                (Some(list), Some(at), true) => list.push((index, at, store)),
                _ => *entry = None,
            }
            if let OpKind::Store { value, .. } = &o.kind {
                if self.f.ty(*value).mem().is_some() {
                    access.insert(*value, None);
                }
            }
        });
        let mut mems: Vec<Value> = access.keys().copied().collect();
        mems.sort();
        // A fixed-size array read at constant indices needs no slice: the compiler checks
        // those against its length already.
        let OpKind::For { hi, .. } = &op.kind else { unreachable!() };
        let constant = |v: &Value| matches!(self.def.get(v).map(|o| &o.kind), Some(OpKind::Const(_)));
        access.retain(|m, list| {
            let array = matches!(self.f.ty(*m).mem().map(|t| t.kind), Some(MemKind::Array(_)));
            let fixed = |a: &Access| match a.1 {
                At::Row(base) => constant(hi) && base.as_ref().is_none_or(constant),
                At::Elem => constant(&a.0),
            };
            !(array && list.as_ref().is_some_and(|l| l.iter().all(fixed)))
        });
        // One access through a slice saves one check per iteration: not worth the code.
        let sliced: usize = access.values().flatten().flatten().filter(|a| matches!(a.1, At::Row(_))).count();
        if sliced < 2 {
            // (The buffer keeps its plain accesses, its elements too: they could overlap.)
            access.retain(|_, l| l.as_ref().is_some_and(|l| l.iter().all(|a| a.1 == At::Elem)));
        }
        let (mut rows, mut count) = (vec![], HashMap::<Value, usize>::default());
        for mem in mems {
            let Some(Some(list)) = access.get(&mem) else { continue };
            if inside.contains(&mem) || !self.own_buffer(mem) {
                continue;
            }
            let writes = list.iter().any(|a| a.2);
            let mut ats: Vec<At> = list.iter().map(|a| a.1).collect();
            ats.sort();
            ats.dedup();
            // A buffer the loop writes is reached one way only: two rows, two elements or a
            // row and an element could overlap.
            let mut elems: Vec<Value> = list.iter().filter(|a| a.1 == At::Elem).map(|a| a.0).collect();
            elems.sort();
            elems.dedup();
            if writes && (ats.len() > 1 || elems.len() > 1) {
                continue;
            }
            for elem in elems {
                let name = self.fresh_name(&format!("{}_elem", self.name(mem)));
                self.rows.borrow_mut().insert((mem, elem), quote!(#name));
                let keys = vec![(mem, elem)];
                rows.push(Row { mem, held: Held::Elem(elem), name, writes, keys });
            }
            let j = self.name(*index);
            for at in ats {
                let At::Row(base) = at else { continue };
                let name = self.fresh_name(&format!("{}_row", self.name(mem)));
                let mut keys = vec![];
                for a in list.iter().filter(|a| a.1 == at) {
                    self.rows.borrow_mut().insert((mem, a.0), quote!(#name[#j]));
                    keys.push((mem, a.0));
                    if a.0 != *index {
                        *count.entry(a.0).or_default() += 1;
                    }
                }
                rows.push(Row { mem, held: Held::Slice(base), name, writes, keys });
            }
        }
        // Bounds that read memory are read once, before the slices borrow it.
        if !rows.is_empty() {
            let OpKind::For { lo, hi, .. } = &op.kind else { unreachable!() };
            for (v, name) in [(*lo, "start"), (*hi, "end")] {
                let folded = self.inline.contains(&v) && !matches!(self.def[&v].kind, OpKind::Const(_));
                if folded && !self.bound.borrow().contains_key(&v) {
                    let n = self.fresh_name(name);
                    self.bound.borrow_mut().insert(v, n);
                }
            }
        }
        // An index that only these accesses use is no longer written out.
        for (i, n) in count {
            if self.uses.get(&i) == Some(&n) {
                self.dropped.borrow_mut().insert(i);
            }
        }
        rows
    }

    /// Whether `v` can be computed before the loop whose values are `inside`: it is made
    /// before it, or in the loop's body by arithmetic, written where it is used, on such
    /// values.
    fn before_loop(&self, v: Value, inside: &HashSet<Value>) -> bool {
        if !inside.contains(&v) {
            return true;
        }
        let Some(op) = self.def.get(&v) else { return false };
        let arithmetic = matches!(op.kind, OpKind::Const(_) | OpKind::Unary(..) | OpKind::Binary(..) | OpKind::Cast(_));
        arithmetic && self.inline.contains(&v) && op.kind.operands().iter().all(|o| self.before_loop(*o, inside))
    }

    /// A local name nothing else in the function has.
    fn fresh_name(&self, base: &str) -> Ident {
        let mut taken = self.taken.borrow_mut();
        let mut name = base.to_string();
        let mut k = 1;
        while taken.contains(&name) {
            k += 1;
            name = format!("{base}{k}");
        }
        taken.insert(name.clone());
        format_ident!("{}", name)
    }

    /// A buffer of its own name (`named_buffer`) that nothing views.
    fn own_buffer(&self, mem: Value) -> bool {
        self.named_buffer(mem)
            && !self.unsafe_mem.contains(&mem)
            && !self.moved.contains(&mem)
            && !self.viewed.contains(&mem)
    }

    /// The loop `code` for `op` with its row slices taken before it.
    pub(crate) fn with_rows(&self, op: &Op, rows: Vec<Row>, code: TokenStream) -> TokenStream {
        let OpKind::For { lo, hi, .. } = &op.kind else { return code };
        if rows.is_empty() {
            return code;
        }
        // (An element's index may be a value used outside the loop too: `p[4]`.)
        for r in &rows {
            for k in &r.keys {
                self.rows.borrow_mut().remove(k);
            }
        }
        // The bounds written into locals of their own (see `row_slices`).
        let mut bounds = TokenStream::new();
        for v in [*lo, *hi] {
            let Some(n) = self.bound.borrow_mut().remove(&v) else { continue };
            let e = self.root(v);
            bounds.extend(quote!(let #n = #e;));
            self.bound.borrow_mut().insert(v, n);
        }
        let end = self.root_operand(*hi, Prec::Add);
        let mut lets = TokenStream::new();
        let mut after = TokenStream::new();
        for r in &rows {
            let m = self.mem_ref(r.mem);
            let n = &r.name;
            let range = match r.held {
                Held::Elem(i) => {
                    let i = self.root(i);
                    if r.writes {
                        lets.extend(quote!(let mut #n = #m[#i];));
                        after.extend(quote!(#m[#i] = #n;));
                    } else {
                        lets.extend(quote!(let #n = #m[#i];));
                    }
                    continue;
                }
                Held::Slice(Some(b)) => {
                    let b = self.root_operand(b, Prec::Add);
                    quote!(#b..#b + #end)
                }
                Held::Slice(None) => quote!(..#end),
            };
            lets.extend(if r.writes { quote!(let #n = &mut #m[#range];) } else { quote!(let #n = &#m[#range];) });
        }
        let from_zero = matches!(self.def.get(lo).map(|o| &o.kind), Some(OpKind::Const(Const::Int(0))));
        let code = quote!(#lets #code #after);
        if from_zero && rows.iter().all(|r| r.held == Held::Slice(None)) {
            // (`..hi` is in bounds whenever the loop runs, and empty when it does not.)
            return quote!({ #bounds #code });
        }
        let end = self.root_operand(*hi, Prec::Cmp);
        if from_zero {
            return quote!({ #bounds if #end > 0 { #code } });
        }
        let start = self.root_operand(*lo, Prec::Cmp);
        quote!({ #bounds if #start < #end { #code } })
    }

    /// `row[j]` for an access that a row slice serves.
    pub(crate) fn row_place(&self, mem: Value, index: Value) -> Option<TokenStream> {
        self.rows.borrow().get(&(mem, index)).cloned()
    }
}
