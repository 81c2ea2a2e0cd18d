//! Buffers saved whole once per loop iteration instead of read by read.
//!
//! A loop body that first fills a small work buffer and then reads it many times (GMM's
//! centred point `xc`, filled per component, then read in the triangular product) makes the
//! reverse sweep save every read: the buffer is overwritten by the next iteration, so the
//! reads cannot be repeated there. The reads that come after the body's last write of the
//! buffer see what the body leaves in it: one copy of the buffer at the end of the body's
//! forward sweep, put back into the buffer at the start of the body's reverse, makes them
//! repeatable, and the reverse sweep reads the buffer again. The buffer then holds, in the
//! reverse sweep, what the iteration being reversed left in it; nothing else there reads it
//! (every other read of a buffer a later statement writes is saved), and it is the
//! function's own (a `vec!` at the top level), so its caller never sees it.

use cotan_ir::{HashMap, HashSet};

use cotan_ir::{Function, MemKind, Op, OpKind, Region, Value};

/// The reads that a loop body's reverse may repeat from a copy: for each, the buffer read
/// and the loop body that copies it.
pub(crate) fn find(f: &Function, active: &dyn Fn(&Op) -> bool) -> HashMap<Value, (Value, *const Region)> {
    let mut out = HashMap::default();
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
        OpKind::Load { .. } | OpKind::Store { .. } | OpKind::Len(_) | OpKind::Fill { resize: None, .. } => {}
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

/// The loops of `r` (all of whose reverses run: every op around them is active), outer
/// ones first (a read is copied by the outermost body that can: the fewest copies).
fn visit(
    r: &Region,
    candidates: &HashSet<Value>,
    active: &dyn Fn(&Op) -> bool,
    out: &mut HashMap<Value, (Value, *const Region)>,
) {
    for op in &r.ops {
        if !active(op) {
            continue;
        }
        if let OpKind::For { body, .. } = &op.kind {
            for &m in candidates {
                for read in read_after_last_write(body, m) {
                    out.entry(read).or_insert((m, body as *const Region));
                }
            }
        }
        for sub in op.kind.regions() {
            visit(sub, candidates, active, out);
        }
    }
}

/// The reads of `m` in statements of `body` after the last one that writes it, if some of
/// them are in a loop inside the body (read often enough to be worth a copy of the buffer).
fn read_after_last_write(body: &Region, m: Value) -> Vec<Value> {
    let writes = |op: &Op| {
        let mut hit = false;
        walk_looped_op(op, false, &mut |o, _| {
            hit |= matches!(o.kind, OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } if mem == m)
        });
        hit
    };
    let Some(last) = body.ops.iter().rposition(writes) else { return vec![] };
    let (mut reads, mut in_loop) = (vec![], false);
    for op in &body.ops[last + 1..] {
        walk_looped_op(op, false, &mut |o, looped| {
            if let (OpKind::Load { mem, .. }, Some(r)) = (&o.kind, o.result) {
                if *mem == m {
                    reads.push(r);
                    in_loop |= looped;
                }
            }
        });
    }
    if in_loop {
        reads
    } else {
        vec![]
    }
}

/// `op` and every op inside it, with whether it is inside a loop (`looped` for `op`).
fn walk_looped_op(op: &Op, looped: bool, see: &mut dyn FnMut(&Op, bool)) {
    see(op, looped);
    let inner = looped || matches!(op.kind, OpKind::For { .. } | OpKind::While { .. });
    for sub in op.kind.regions() {
        for o in &sub.ops {
            walk_looped_op(o, inner, see);
        }
    }
}
