//! Parallel loops: a `For` listed in `Function::par_loops` (a `cotan::par` loop of a
//! `#[cotan::kernel]`) written as `cotan::rt::par_for(lo..hi, |i| body)`.
//!
//! The closure runs on several threads at once, so it may not hold a `&mut` of anything
//! outside it. Each buffer of the function that the body stores into is shadowed for the
//! loop by a `cotan::rt::ParSlice` (a raw-pointer view), through which a store at the
//! loop's own index is `x.set(i, v)` and an accumulation `x[e] += v` (a `Store` of an
//! `Add`/`Sub` of a `Load` of the same element, folded) is the atomic `x.add(e, v)`. A
//! variable of the function the body assigns before any use in each iteration (a flag
//! reset at the start of the body) is declared again inside the closure. A body that
//! needs anything else (a store at another index that is no accumulation, a buffer lent to
//! a call that writes it, a view of a written buffer) is written as the
//! plain sequential loop: codegen never changes what the IR computes, only how.

use cotan_ir::HashSet;

use cotan_ir::{Access, BinOp, Const, MemKind, Op, OpKind, Region, SpanId, Ty, Value, Var};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::{scalar_tokens, Gen, Prec};

/// What a parallel loop needs: the buffers it writes through views, the variables declared
/// again in the closure, and whether the body records on a tape or takes buffers from one
/// (then the thread's own, from the pool, for each iteration).
pub(crate) struct ParPlan {
    views: Vec<Value>,
    private: Vec<Var>,
    tape: bool,
    /// The loads and sums that accumulations replace.
    skip: HashSet<Value>,
    /// Stores that leave their element as it was (`restore_pair`).
    skip_ops: HashSet<*const Op>,
    /// The views some iteration accumulates into at another index than its own: their
    /// accumulations are atomic (into the others, each element is one iteration's).
    shared: HashSet<Value>,
    /// Of those, the float buffers the loop does nothing else with: accumulated into
    /// per-thread copies (`AccSlice`) rather than atomically.
    gathered: HashSet<Value>,
}

/// What `par_stores` finds: the `ParPlan` fields of the same names.
#[derive(Default)]
struct Stores {
    views: Vec<Value>,
    skip: HashSet<Value>,
    skip_ops: HashSet<*const Op>,
    shared: HashSet<Value>,
}

impl Gen<'_> {
    pub(crate) fn par_viewed(&self, mem: Value) -> bool {
        self.par.borrow().as_ref().is_some_and(|(_, views)| views.contains(&mem))
    }

    /// `Some((true, y, [load, sum]))` when `value`, stored at `mem[index]`, is `mem[index] +
    /// y` (`false` for `-`) whose load and sum nothing else uses: the store is then an
    /// accumulation, and the load and the sum, where they are statements of their own (forward
    /// mode interleaves tangents between them), are not written.
    fn accumulation(&self, mem: Value, index: Option<Value>, value: Value) -> Option<(bool, Value, [Value; 2])> {
        let OpKind::Binary(b @ (BinOp::Add | BinOp::Sub), x, y) = self.def.get(&value)?.kind else {
            return None;
        };
        let same = matches!(self.def.get(&x)?.kind, OpKind::Load { mem: m, index: i } if m == mem && i == index);
        let once = |v: Value| self.uses.get(&v) == Some(&1);
        (same && once(x) && once(value) && x != y).then_some((b == BinOp::Add, y, [x, value]))
    }

    /// Whether, in `region`, the op at `at` (a store into `mem`) may take the place of the
    /// load `load`: the load is inlined into it, or is a statement of this region before it
    /// with nothing between that writes `mem` or calls.
    fn load_moves(&self, region: &Region, at: usize, load: Value, mem: Value) -> bool {
        if self.inline.contains(&load) {
            return true;
        }
        let Some(from) = region.ops[..at].iter().position(|o| o.result == Some(load)) else { return false };
        let mut clear = true;
        for op in &region.ops[from + 1..at] {
            let mut check = |o: &cotan_ir::Op| match &o.kind {
                OpKind::Store { mem: m, .. } | OpKind::Fill { mem: m, .. } if *m == mem => clear = false,
                OpKind::Call { .. } => clear = false,
                _ => {}
            };
            check(op);
            for r in op.kind.regions() {
                r.walk(&mut check);
            }
        }
        clear
    }

    /// The stores of `region` (and the regions in it) into memory from outside the loop:
    /// `false` if one is neither at the loop's own index nor an accumulation; the buffers
    /// they write, and the loads and sums accumulations replace, added.
    fn par_stores(&self, region: &Region, index: Value, inside: &HashSet<Value>, out: &mut Stores) -> bool {
        for (at, op) in region.ops.iter().enumerate() {
            for r in op.kind.regions() {
                if !self.par_stores(r, index, inside, out) {
                    return false;
                }
            }
            if out.skip_ops.contains(&(op as *const Op)) {
                continue;
            }
            let OpKind::Store { mem, index: Some(i), value } = op.kind else {
                if let OpKind::Store { mem, index: None, .. } = op.kind {
                    if !self.own_memory(mem, inside) {
                        return false;
                    }
                }
                continue;
            };
            if self.own_memory(mem, inside) {
                continue;
            }
            if inside.contains(&mem) {
                // A view of a buffer from outside, made in the body.
                return false;
            }
            if !self.plain_buffer(mem) {
                return false;
            }
            match self.accumulation(mem, Some(i), value) {
                Some((_, _, [load, sum])) if self.load_moves(region, at, load, mem) => {
                    out.skip.extend([load, sum]);
                    if i != index {
                        out.shared.insert(mem);
                    }
                }
                _ if i == index => {}
                _ => match self.restore_pair(region, at) {
                    Some((later, sum)) => {
                        out.skip_ops.extend([op as *const Op, later as *const Op]);
                        out.skip.insert(sum);
                        continue;
                    }
                    None => return false,
                },
            }
            if !out.views.contains(&mem) {
                out.views.push(mem);
            }
        }
        true
    }

    /// `Some((store, sum))` when the store at `at` in `region`, `m[e] = 0`, is followed by
    /// `store`, `m[e] = 0 + t` (`sum` the addition), with `t` a load of `m[e]` made before
    /// both, and nothing between the load and `store` that writes `m` or calls: together they
    /// leave the element as it was (but for the sign of a zero), and neither is written. This
    /// is reverse mode's adjoint of an accumulation `y[e] += w`, which reads `dy[e]`, zeroes
    /// it and adds back what it read; the iterations may share the element.
    fn restore_pair<'r>(&self, region: &'r Region, at: usize) -> Option<(&'r Op, Value)> {
        let OpKind::Store { mem, index: Some(e), value: z } = region.ops[at].kind else { return None };
        let zero =
            |v: Value| matches!(self.def.get(&v).map(|o| &o.kind), Some(OpKind::Const(Const::Float(x))) if *x == 0.0);
        if !zero(z) {
            return None;
        }
        let touches = |o: &Op| {
            let mut hit = false;
            let mut check = |o: &Op| match &o.kind {
                OpKind::Store { mem: m, .. } | OpKind::Fill { mem: m, .. } if *m == mem => hit = true,
                OpKind::Call { .. } => hit = true,
                _ => {}
            };
            check(o);
            for r in o.kind.regions() {
                r.walk(&mut check);
            }
            hit
        };
        for (k, later) in region.ops.iter().enumerate().skip(at + 1) {
            if let OpKind::Store { mem: m, index: Some(e2), value } = later.kind {
                if m == mem && e2 == e {
                    let OpKind::Binary(BinOp::Add, a, b) = self.def.get(&value)?.kind else { return None };
                    let t = if zero(a) {
                        b
                    } else if zero(b) {
                        a
                    } else {
                        return None;
                    };
                    if !matches!(self.def.get(&t)?.kind, OpKind::Load { mem: lm, index: Some(li) } if lm == mem && li == e)
                    {
                        return None;
                    }
                    let from = region.ops[..at].iter().position(|o| o.result == Some(t))?;
                    let between = region.ops[from + 1..k].iter().enumerate();
                    if between.filter(|(j, _)| from + 1 + j != at).any(|(_, o)| touches(o)) {
                        return None;
                    }
                    return (self.uses.get(&value) == Some(&1)).then_some((later, value));
                }
            }
            if touches(later) {
                return None;
            }
        }
        None
    }

    /// Whether `mem` is memory of the loop's own: made in the body, and no view (a sub-slice,
    /// a row, a field, an offset, a reborrow) of memory from outside it.
    fn own_memory(&self, mem: Value, inside: &HashSet<Value>) -> bool {
        let mut cur = mem;
        loop {
            if !inside.contains(&cur) {
                return false;
            }
            let base = match self.def.get(&cur).map(|o| &o.kind) {
                Some(OpKind::Field { base, .. }) => Some(*base),
                Some(k) => k.view_base(),
                None => None,
            };
            match base {
                Some(b) => cur = b,
                None => return true,
            }
        }
    }

    /// Whether the loop over `index` with this body can run in parallel, and how.
    pub(crate) fn par_plan(&self, index: Value, body: &Region) -> Option<ParPlan> {
        if self.f.generic_float.is_some() || self.f.ty(index) != Ty::USIZE {
            return None;
        }
        let mut inside: HashSet<Value> = [index].into_iter().collect();
        let mut declared: HashSet<Var> = HashSet::default();
        body.walk(&mut |op| {
            inside.extend(op.result);
            match &op.kind {
                OpKind::For { index, .. } => {
                    inside.insert(*index);
                }
                OpKind::DeclVar { var, .. } => {
                    declared.insert(*var);
                }
                _ => {}
            }
        });
        let mut stores = Stores::default();
        let mut ok = self.par_stores(body, index, &inside, &mut stores);
        let Stores { views, skip, skip_ops, shared } = stores;
        let mut tape = false;
        body.walk(&mut |op| match &op.kind {
            // (A parallel loop's body pops what it pushes: reverse mode's loops of an
            // iteration's forward sweep and its reverse.)
            OpKind::Push(_) | OpKind::Pop => tape = true,
            OpKind::Alloc { .. } if op.result.is_some_and(|r| self.pool(r).is_some()) => tape = true,
            OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } if !self.own_memory(*mem, &inside) => ok = false,
            OpKind::Call { args, tape: on_tape, .. } => {
                tape |= *on_tape;
                for (a, writable) in args {
                    if let Some(m) = self.f.ty(*a).mem() {
                        if !self.own_memory(*a, &inside) && (*writable || m.access != Access::Shared) {
                            ok = false;
                        }
                    }
                }
            }
            _ => {}
        });
        if !ok {
            return None;
        }
        // A written buffer is used by element (`Load`, `Store`) and length only.
        body.walk(&mut |op| match &op.kind {
            OpKind::Load { .. } | OpKind::Store { .. } | OpKind::Len(_) => {}
            k => {
                if k.operands().iter().any(|v| views.contains(v)) {
                    ok = false;
                }
            }
        });
        let private = self.private_vars(body, &declared)?;
        let mut gathered: HashSet<Value> =
            shared.iter().copied().filter(|m| self.f.ty(*m).mem().is_some_and(|t| t.elem.is_float())).collect();
        body.walk(&mut |op| match op.kind {
            OpKind::Load { mem, .. } if !op.result.is_some_and(|r| skip.contains(&r)) => {
                gathered.remove(&mem);
            }
            OpKind::Store { mem, index, value } if !skip.contains(&value) || index.is_none() => {
                gathered.remove(&mem);
            }
            _ => {}
        });
        ok.then_some(ParPlan { views, private, tape, skip, skip_ops, shared, gathered })
    }

    /// A buffer of numbers that is no view of another (a parameter, a local vector or array).
    fn plain_buffer(&self, mem: Value) -> bool {
        let Some(m) = self.f.ty(mem).mem() else { return false };
        let own = !self
            .def
            .get(&mem)
            .is_some_and(|op| op.kind.view_base().is_some() || matches!(op.kind, OpKind::Field { .. }));
        own && matches!(m.kind, MemKind::Slice | MemKind::Vec | MemKind::Array(_)) && m.access != Access::Shared
    }

    /// The variables declared outside the body that it writes: each must be assigned by a
    /// statement of the body's top level before anything in the iteration reads or writes it
    /// (then each iteration has its own). `None` if one is not.
    fn private_vars(&self, body: &Region, declared: &HashSet<Var>) -> Option<Vec<Var>> {
        let mut written: HashSet<Var> = HashSet::default();
        body.walk(&mut |op| match &op.kind {
            OpKind::SetVar(v, _) => {
                written.insert(*v);
            }
            OpKind::Call { outs, .. } => written.extend(outs.iter().copied()),
            _ => {}
        });
        written.retain(|v| !declared.contains(v));
        let mut private = vec![];
        let mut touched: HashSet<Var> = HashSet::default();
        for op in &body.ops {
            let mut here: Vec<Var> = vec![];
            let top_writes: Vec<Var> = match &op.kind {
                OpKind::SetVar(v, _) => vec![*v],
                OpKind::Call { outs, .. } => outs.clone(),
                _ => vec![],
            };
            let mut nested = |o: &cotan_ir::Op| match &o.kind {
                OpKind::GetVar(v) | OpKind::SetVar(v, _) => here.push(*v),
                OpKind::Call { outs, .. } => here.extend(outs.iter().copied()),
                OpKind::For { exit: Some(v), .. } | OpKind::While { exit: Some(v), .. } => here.push(*v),
                _ => {}
            };
            for r in op.kind.regions() {
                r.walk(&mut nested);
            }
            if let OpKind::GetVar(v) = &op.kind {
                here.push(*v);
            }
            if let OpKind::For { exit: Some(v), .. } | OpKind::While { exit: Some(v), .. } = &op.kind {
                here.push(*v);
            }
            for v in here {
                if written.contains(&v) && touched.insert(v) {
                    return None;
                }
            }
            for v in top_writes {
                if written.contains(&v) && touched.insert(v) {
                    private.push(v);
                }
            }
        }
        Some(private)
    }

    /// The loop as `par_for`; in validation mode (the feature `validate`) as
    /// `par_for_checked`, the buffers it writes viewed by `CheckedSlice`s that name them,
    /// the function and the loop's line (`span`, the source's loop; the line of the
    /// attribute that made the function where the IR knows no span).
    pub(crate) fn par_for(
        &self,
        index: Value,
        lo: Value,
        hi: Value,
        body: &Region,
        plan: ParPlan,
        span: SpanId,
    ) -> TokenStream {
        let krate = self.krate.clone();
        let i = self.names.get(&index).cloned().unwrap_or_else(|| format_ident!("_"));
        let lo = self.root_operand(lo, Prec::Cast);
        let hi = self.root_operand(hi, Prec::Cast);
        let validate = cfg!(feature = "validate");
        let views: Vec<TokenStream> = plan
            .views
            .iter()
            .map(|m| {
                let n = self.name(*m);
                if validate {
                    let shown = self.shown_name(*m);
                    quote!(let #n = #krate::rt::CheckedSlice::new(&mut #n[..], #shown, &__cotan_site);)
                } else if plan.gathered.contains(m) {
                    quote!(let #n = #krate::rt::AccSlice::new(&mut #n[..], __cotan_range.len());)
                } else {
                    quote!(let #n = #krate::rt::ParSlice::new(&mut #n[..]);)
                }
            })
            .collect();
        let (site, run) = if validate {
            let kernel = self.f.name.clone();
            let line = match self.spans.get(span.0 as usize).filter(|_| span.0 != 0) {
                Some(s) => {
                    let l = proc_macro2::Literal::u32_unsuffixed(s.start().line as u32);
                    quote!(#l)
                }
                None => quote!(::core::line!()),
            };
            (
                quote!(let __cotan_site = #krate::rt::LoopSite { kernel: #kernel, file: ::core::file!(), line: #line };),
                quote!(par_for_checked),
            )
        } else {
            (quote!(), quote!(par_for))
        };
        let private = plan.private.iter().map(|v| {
            let n = self.var(*v);
            let t = scalar_tokens(self.f.var(*v).ty);
            quote!(let mut #n: #t;)
        });
        *self.par.borrow_mut() = Some((index, plan.views.iter().copied().collect()));
        *self.par_skip.borrow_mut() = plan.skip.into_iter().collect();
        *self.par_skip_ops.borrow_mut() = plan.skip_ops;
        *self.par_shared.borrow_mut() = plan.shared.into_iter().collect();
        let b = self.region(body, false);
        *self.par.borrow_mut() = None;
        self.par_skip.borrow_mut().clear();
        self.par_skip_ops.borrow_mut().clear();
        if plan.tape && !validate {
            // The tape of the job running the iteration, moved in and back (no early exit
            // leaves the body: exits are flags).
            return quote! {
                {
                    let __cotan_range = #lo..#hi;
                    #(#views)*
                    #krate::rt::par_for_tape(__cotan_range, |__cotan_job_tape: &mut #krate::rt::Tape, #i: usize| {
                        let mut __cotan_tape = ::core::mem::take(__cotan_job_tape);
                        #(#private)*
                        #b
                        *__cotan_job_tape = __cotan_tape;
                    });
                }
            };
        }
        let (take, give) = match plan.tape {
            true => (quote!(let mut __cotan_tape = #krate::rt::Tape::acquire();), quote!(__cotan_tape.release();)),
            false => (quote!(), quote!()),
        };
        quote! {
            {
                let __cotan_range = #lo..#hi;
                #site
                #(#views)*
                #krate::rt::#run(__cotan_range, |#i: usize| {
                    #take
                    #(#private)*
                    #b
                    #give
                });
            }
        }
    }

    /// The source's name of buffer `mem` (what the generated code calls it, where the IR
    /// has none), for validation mode's messages.
    fn shown_name(&self, mem: Value) -> String {
        self.f.value(mem).name.clone().unwrap_or_else(|| self.name(mem).to_string())
    }

    /// The loop in order (a body `par_plan` refused).
    pub(crate) fn seq_for(&self, index: Value, lo: Value, hi: Value, body: &Region) -> TokenStream {
        let i = self.names.get(&index).cloned().unwrap_or_else(|| format_ident!("_"));
        let lo = self.root_operand(lo, Prec::Cast);
        let hi = self.root_operand(hi, Prec::Cast);
        let b = self.region(body, false);
        quote!(for #i in #lo..#hi { #b })
    }

    /// A store into a viewed buffer: an atomic accumulation, or a write at the loop's index.
    pub(crate) fn par_store(&self, mem: Value, index: Option<Value>, value: Value) -> TokenStream {
        let m = self.name(mem);
        let at = index.expect("par_plan: stores into views are indexed");
        let i = self.expr(at).0;
        let accumulated = self
            .accumulation(mem, index, value)
            .filter(|(_, _, [load, _])| self.inline.contains(load) || self.par_skip.borrow().contains(load));
        let own = self.par.borrow().as_ref().is_some_and(|(loop_index, _)| *loop_index == at)
            && !self.par_shared.borrow().contains(&mem);
        match accumulated {
            // The element is this iteration's alone: no atomic needed.
            Some((add, y, _)) if own => {
                let y = self.expr(y).0;
                let op = if add { quote!(+) } else { quote!(-) };
                quote!(#m.set(#i, #m.get(#i) #op #y);)
            }
            Some((true, y, _)) => {
                let y = self.expr(y).0;
                quote!(#m.add(#i, #y);)
            }
            Some((false, y, _)) => {
                let y = self.expr(y).0;
                quote!(#m.sub(#i, #y);)
            }
            None => {
                let v = self.expr(value).0;
                quote!(#m.set(#i, #v);)
            }
        }
    }
}
