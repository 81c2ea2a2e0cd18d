//! Loops that add to adjoints, written as partial sums: in a reverse sweep's
//! `for j in .. { dw += x[j] * dy[j]; .. }` each iteration waits for the previous addition
//! to `dw`, since Rust keeps the order of floating-point additions. An adjoint's additions
//! may come in any order (`Function::sums`), so such a loop becomes a call of
//! `cotan::rt::sums` (or `sums_rev`), which runs the iterations in the same order as the
//! loop but keeps four partial sums of what each iteration adds: consecutive iterations'
//! additions run at once. Each iteration adds to its own zeroed copy of the variable.

use cotan_ir::{HashMap, HashSet};

use cotan_ir::{BinOp, Op, OpKind, Ty, Value, Var};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use crate::{scalar_tokens, Gen, Prec};

/// The most ops a loop body may have to be written as partial sums.
const SHORT: usize = 40;

impl Gen<'_> {
    /// The variables of `Function::sums` that the loop `op` only adds to: every read of one
    /// flows, through additions that nothing else uses, into a write of it, and every write
    /// is such a sum. Only for innermost counted loops over `usize` with short bodies (at most
    /// `SHORT` ops): those wait for the additions; a long body has work of its own to
    /// overlap them with, and four copies of it cost registers and code.
    fn summed_vars(&self, op: &Op) -> Vec<Var> {
        let OpKind::For { index, step: None, inclusive: false, body, exit: None, .. } = &op.kind else {
            return vec![];
        };
        if self.f.sums.is_empty()
            || self.f.ty(*index) != Ty::USIZE
            || self.f.par_loops.contains(index)
            || self.par.borrow().is_some()
        {
            return vec![];
        }
        let mut inner_loop = false;
        let mut ops = 0;
        let mut users: HashMap<Value, Vec<&Op>> = HashMap::default();
        let mut reads: HashMap<Var, Vec<Value>> = HashMap::default();
        let mut writes: HashMap<Var, Vec<Value>> = HashMap::default();
        let mut other = HashSet::default();
        body.walk(&mut |o: &Op| {
            ops += 1;
            for u in o.kind.operands() {
                users.entry(u).or_default().push(o);
            }
            match &o.kind {
                OpKind::For { .. } | OpKind::While { .. } => inner_loop = true,
                OpKind::GetVar(v) => reads.entry(*v).or_default().extend(o.result),
                OpKind::SetVar(v, x) => writes.entry(*v).or_default().push(*x),
                OpKind::DeclVar { var, .. } => {
                    other.insert(*var);
                }
                OpKind::Call { outs, .. } => other.extend(outs.iter().copied()),
                _ => {}
            }
        });
        if inner_loop || ops > SHORT {
            return vec![];
        }
        let sum_only = |v: Var| -> bool {
            let mut chain = HashSet::default();
            let mut adds = vec![];
            for &r in reads.get(&v).map_or(&[][..], |r| r.as_slice()) {
                let mut cur = r;
                loop {
                    chain.insert(cur);
                    let [user] = users.get(&cur).map_or(&[][..], |u| u.as_slice()) else { return false };
                    match (&user.kind, user.result) {
                        (OpKind::Binary(BinOp::Add, ..), Some(sum)) => {
                            adds.push(*user);
                            cur = sum;
                        }
                        (OpKind::SetVar(w, _), _) if *w == v => break,
                        _ => return false,
                    }
                }
            }
            // An addition adds one thing to the running sum (`dw + dw` doubles it).
            let one_term = adds.iter().all(|a| a.kind.operands().iter().filter(|x| chain.contains(x)).count() == 1);
            one_term && writes.get(&v).is_some_and(|ws| ws.iter().all(|x| chain.contains(x)))
        };
        self.f.sums.iter().copied().filter(|v| !other.contains(v) && sum_only(*v)).collect()
    }

    /// `op` as a call of `cotan::rt::sums` if it is a loop that only adds to some of
    /// `Function::sums` (see the module's comment).
    pub(crate) fn summed_for(&self, op: &Op) -> Option<TokenStream> {
        let vars = self.summed_vars(op);
        if vars.is_empty() {
            return None;
        }
        let OpKind::For { index, lo, hi, reverse, body, .. } = &op.kind else { return None };
        let krate = &self.krate;
        let i = self.names.get(index).cloned().unwrap_or_else(|| format_ident!("_"));
        let lo = self.root_operand(*lo, Prec::Cast);
        let hi = self.root_operand(*hi, Prec::Cast);
        let names: Vec<_> = vars.iter().map(|v| self.var(*v)).collect();
        let tys: Vec<_> = vars.iter().map(|v| scalar_tokens(self.f.var(*v).ty)).collect();
        let lanes = (0..vars.len()).map(Literal::usize_unsuffixed);
        let helper = if *reverse { quote!(sums_rev) } else { quote!(sums) };
        let b = self.region(body, false);
        Some(quote! {
            let __cotan_sums = #krate::rt::#helper(#lo, #hi, |#i: usize| {
                #(let mut #names: #tys = 0.0;)*
                #b
                [#(#names),*]
            });
            #(#names += __cotan_sums[#lanes];)*
        })
    }
}
