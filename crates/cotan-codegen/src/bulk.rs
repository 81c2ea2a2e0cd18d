//! Snapshots on the tape written as slice copies: a loop over every element of a buffer of
//! floats that pushes each, in order (reverse mode's snapshot of the state a parallel or
//! checkpointed loop writes), is one `push_all_f64(&m[..])`; the loop that pops them back
//! into the buffer, last first, is one `pop_all_f64(&mut m[..])`. Element by element, the
//! capacity check of each push keeps the copy from being a `memcpy`.

use cotan_ir::{Const, Op, OpKind, Scalar};
use proc_macro2::TokenStream;
use quote::quote;

use crate::Gen;

impl Gen<'_> {
    /// The slice copy that does what `op` does, if it is such a loop.
    pub(crate) fn bulk_tape(&self, op: &Op) -> Option<TokenStream> {
        let OpKind::For { index, lo, hi, step: None, inclusive: false, reverse, body, exit: None } = &op.kind else {
            return None;
        };
        if self.par.borrow().is_some() || self.f.generic_float.is_some() {
            return None;
        }
        let zero = matches!(self.def.get(lo).map(|o| &o.kind), Some(OpKind::Const(Const::Int(0))));
        let OpKind::Len(whole) = self.def.get(hi)?.kind else { return None };
        let [first, second] = &body.ops[..] else { return None };
        let (mem, value) = match (&first.kind, &second.kind, reverse) {
            // for i in 0..m.len() { push(m[i]) }
            (OpKind::Load { mem, index: Some(i) }, OpKind::Push(x), false)
                if i == index && first.result == Some(*x) =>
            {
                (*mem, *x)
            }
            // for i in (0..m.len()).rev() { m[i] = pop() }
            (OpKind::Pop, OpKind::Store { mem, index: Some(i), value }, true)
                if i == index && first.result == Some(*value) =>
            {
                (*mem, *value)
            }
            _ => return None,
        };
        if !zero || mem != whole || self.uses.get(&value) != Some(&1) || !self.named_buffer(mem) {
            return None;
        }
        let m = self.name(mem);
        Some(match (self.f.ty(mem).mem()?.elem, reverse) {
            (Scalar::F64, false) => quote!(__cotan_tape.push_all_f64(&#m[..]);),
            (Scalar::F64, true) => quote!(__cotan_tape.pop_all_f64(&mut #m[..]);),
            (Scalar::F32, false) => quote!(__cotan_tape.push_all_f32(&#m[..]);),
            (Scalar::F32, true) => quote!(__cotan_tape.pop_all_f32(&mut #m[..]);),
            _ => return None,
        })
    }
}
