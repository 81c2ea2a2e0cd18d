//! Writes of variables that nothing reads: the transforms write variables as the source
//! does (`p *= x` becomes a write of `p` per statement) and reset adjoints to zero after
//! use, and common subexpression elimination forwards the written values to the reads.
//! What is left are writes that are overwritten before any read, or never read: they cost
//! rustc type checking and clutter the generated code. This pass removes them, by a
//! backward liveness walk over the region tree, and then the variables no one reads.

use crate::{HashMap, HashSet};

use crate::{Function, Op, OpKind, Region, Value, Var};

/// Removes the writes of variables whose values no later read can see, merges a write
/// into the declaration before it where the declared value is dead, and removes variables
/// that are never read.
pub fn dead_stores(f: &mut Function) {
    // Removing a write can leave a read unused, and removing that read a write dead.
    loop {
        crate::simplify::dead_code(f);
        let before = op_count(&f.body);
        live_before(&mut f.body, HashSet::default());
        remove_rewrites(&mut f.body);
        if op_count(&f.body) == before {
            break;
        }
    }
    let read = vars_read(&f.body);
    let mut outs = HashSet::default();
    f.body.walk(&mut |o| {
        if let OpKind::Call { outs: o, .. } = &o.kind {
            outs.extend(o.iter().copied());
        }
    });
    // (A call's outputs stay: the call does.)
    let unread = |v: Var| !read.contains(&v) && !outs.contains(&v);
    remove_writes(&mut f.body, &unread);
    crate::simplify::dead_code(f);
}

fn op_count(r: &Region) -> usize {
    let mut n = 0;
    r.walk(&mut |_| n += 1);
    n
}

/// Removes dead writes in `r`, given the variables live after it, and gives a declaration
/// whose value is dead the value of the write that overwrites it (`let mut v = 0.0; v = d;`
/// becomes `let mut v = d;`). Returns the variables live before `r`.
fn live_before(r: &mut Region, mut live: HashSet<Var>) -> HashSet<Var> {
    let mut keep = vec![true; r.ops.len()];
    // The write of each variable that comes next, with nothing between that reads or
    // writes the variable.
    let mut next_write: HashMap<Var, usize> = HashMap::default();
    let mut merges = vec![];
    for k in (0..r.ops.len()).rev() {
        let op = &mut r.ops[k];
        match &op.kind {
            OpKind::SetVar(var, _) => {
                if live.remove(var) {
                    next_write.insert(*var, k);
                } else {
                    keep[k] = false;
                }
            }
            OpKind::DeclVar { var, .. } => {
                if !live.remove(var) {
                    if let Some(&j) = next_write.get(var) {
                        merges.push((k, j));
                    }
                }
                next_write.remove(var);
            }
            OpKind::GetVar(var) => {
                live.insert(*var);
                next_write.remove(var);
            }
            OpKind::Call { outs, .. } => {
                for v in outs {
                    live.remove(v);
                    next_write.remove(v);
                }
            }
            kind if !kind.regions().is_empty() => {
                // A loop's body may run again: what any part of the loop reads is live at
                // the end of its body, and the body may not run at all (nothing is killed).
                let is_loop = matches!(kind, OpKind::For { .. } | OpKind::While { .. });
                let (inside, written) = vars_used_by(op);
                let mut after = live.clone();
                if is_loop {
                    after.extend(inside.iter().copied());
                }
                for sub in op.kind.regions_mut() {
                    live.extend(live_before(sub, after.clone()));
                }
                for v in inside.iter().chain(&written) {
                    next_write.remove(v);
                }
                live.extend(inside);
            }
            _ => {}
        }
    }
    for (k, j) in merges {
        // The written value has to exist where the variable is declared.
        let OpKind::SetVar(_, value) = r.ops[j].kind else { continue };
        if r.ops[k + 1..j].iter().any(|o| o.result == Some(value)) {
            continue;
        }
        if let OpKind::DeclVar { init, .. } = &mut r.ops[k].kind {
            *init = value;
        }
        keep[j] = false;
    }
    let mut k = 0;
    r.ops.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    live
}

/// Removes `v = x` where `x` was read from `v` with no write of `v` since (what is left of
/// `let t = v; v = 0.0; v = t;` once the middle write is gone).
fn remove_rewrites(r: &mut Region) {
    // The values each variable is known to hold.
    let mut held: HashMap<Var, Vec<Value>> = HashMap::default();
    r.ops.retain_mut(|op| {
        match &op.kind {
            OpKind::SetVar(var, value) if held.get(var).is_some_and(|h| h.contains(value)) => return false,
            OpKind::SetVar(var, value) | OpKind::DeclVar { var, init: value } => {
                held.insert(*var, vec![*value]);
            }
            OpKind::GetVar(var) => {
                if let Some(v) = op.result {
                    held.entry(*var).or_default().push(v);
                }
            }
            OpKind::Call { outs, .. } => {
                for v in outs {
                    held.remove(v);
                }
            }
            kind if !kind.regions().is_empty() => {
                let (_, written) = vars_used_by(op);
                held.retain(|var, _| !written.contains(var));
                for sub in op.kind.regions_mut() {
                    remove_rewrites(sub);
                }
            }
            _ => {}
        }
        true
    });
}

/// The variables an op reads (a loop's exit flag included) and those it writes, itself
/// or anywhere inside.
fn vars_used_by(op: &Op) -> (HashSet<Var>, HashSet<Var>) {
    let (mut read, mut written) = (HashSet::default(), HashSet::default());
    let mut visit = |o: &Op| match &o.kind {
        OpKind::GetVar(v) | OpKind::For { exit: Some(v), .. } | OpKind::While { exit: Some(v), .. } => {
            read.insert(*v);
        }
        OpKind::SetVar(v, _) | OpKind::DeclVar { var: v, .. } => {
            written.insert(*v);
        }
        OpKind::Call { outs, .. } => written.extend(outs.iter().copied()),
        _ => {}
    };
    visit(op);
    for r in op.kind.regions() {
        r.walk(&mut visit);
    }
    (read, written)
}

fn vars_read(r: &Region) -> HashSet<Var> {
    let mut read = HashSet::default();
    for op in &r.ops {
        read.extend(vars_used_by(op).0);
    }
    read
}

fn remove_writes(r: &mut Region, unread: &dyn Fn(Var) -> bool) {
    r.ops.retain(|op| match op.kind {
        OpKind::SetVar(v, _) | OpKind::DeclVar { var: v, .. } => !unread(v),
        _ => true,
    });
    for op in &mut r.ops {
        for sub in op.kind.regions_mut() {
            remove_writes(sub, unread);
        }
    }
}
