//! Buffers saved whole once per loop iteration instead of read by read.
//!
//! A loop body that first fills a small work buffer and then reads it many times (GMM's
//! centred point `xc`, filled per component, then read in the triangular product) makes the
//! reverse sweep save every read: the buffer is overwritten by the next iteration, so the
//! reads cannot be repeated there. When all the body's writes of the buffer come before all
//! its reads, one copy of the buffer at the end of the body's forward sweep, put back into
//! the buffer at the start of the body's reverse, makes every read repeatable: the reverse
//! sweep reads it again. The buffer then holds, in the reverse sweep, what the iteration
//! being reversed left in it; nothing else there reads it (every other read of a buffer a
//! later statement writes is saved), and it is the function's own (a `vec!` at the top
//! level), so its caller never sees it.

use std::collections::{HashMap, HashSet};

use cotan_ir::{Function, MemKind, Op, OpKind, Region, Value};

/// For each candidate buffer, the loop bodies whose reverse may restore it.
pub(crate) fn find(f: &Function, active: &dyn Fn(&Op) -> bool) -> HashMap<Value, Vec<*const Region>> {
    let mut out: HashMap<Value, Vec<*const Region>> = HashMap::new();
    if !f.par_loops.is_empty() || !f.checkpoints.is_empty() {
        return out;
    }
    // Vectors of numbers made at the top level and used by element and length only.
    let mut candidates: HashSet<Value> = f
        .body
        .ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Alloc { .. }))
        .filter_map(|o| o.result)
        .filter(|m| f.ty(*m).mem().is_some_and(|t| t.kind == MemKind::Vec))
        .collect();
    f.walk(&mut |op| match &op.kind {
        OpKind::Load { .. } | OpKind::Store { .. } | OpKind::Len(_) | OpKind::Fill { .. } => {}
        k => {
            for u in k.operands() {
                candidates.remove(&u);
            }
        }
    });
    if candidates.is_empty() {
        return out;
    }
    visit(&f.body, &candidates, active, &mut out);
    out
}

/// The loops of `r` (all of whose reverses run: every op around them is active).
fn visit(
    r: &Region,
    candidates: &HashSet<Value>,
    active: &dyn Fn(&Op) -> bool,
    out: &mut HashMap<Value, Vec<*const Region>>,
) {
    for op in &r.ops {
        if !active(op) {
            continue;
        }
        if let OpKind::For { body, .. } = &op.kind {
            for &m in candidates {
                if written_then_read(body, m) {
                    out.entry(m).or_default().push(body as *const Region);
                }
            }
        }
        for sub in op.kind.regions() {
            visit(sub, candidates, active, out);
        }
    }
}

/// Whether every statement of `body` that writes `m` comes before every statement that
/// reads it, and some read is in a loop inside the body (read often enough to be worth a
/// copy of the buffer).
fn written_then_read(body: &Region, m: Value) -> bool {
    let (mut last_write, mut first_read, mut in_loop) = (None, None, false);
    for (p, op) in body.ops.iter().enumerate() {
        let (mut writes, mut reads) = (false, false);
        let mut see = |o: &Op, looped: bool| match o.kind {
            OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } if mem == m => writes = true,
            OpKind::Load { mem, .. } if mem == m => {
                reads = true;
                in_loop |= looped;
            }
            _ => {}
        };
        see(op, false);
        let looped = matches!(op.kind, OpKind::For { .. } | OpKind::While { .. });
        for sub in op.kind.regions() {
            walk_looped(sub, looped, &mut see);
        }
        if writes {
            last_write = Some(p);
        }
        if reads && first_read.is_none() {
            first_read = Some(p);
        }
    }
    matches!((last_write, first_read), (Some(w), Some(r)) if w < r) && in_loop
}

/// Every op of `r`, with whether it is inside a loop (`looped` for `r` itself).
fn walk_looped(r: &Region, looped: bool, see: &mut dyn FnMut(&Op, bool)) {
    for op in &r.ops {
        see(op, looped);
        let inner = looped || matches!(op.kind, OpKind::For { .. } | OpKind::While { .. });
        for sub in op.kind.regions() {
            walk_looped(sub, inner, see);
        }
    }
}
