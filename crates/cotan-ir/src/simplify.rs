//! Generic simplification passes.

use std::collections::HashMap;

use crate::{Function, Region, Value};

/// Removes pure ops whose results are never used, until nothing changes.
pub fn dead_code(f: &mut Function) {
    loop {
        let uses = use_counts(f);
        let mut removed = false;
        prune(&mut f.body, &uses, &mut removed);
        if !removed {
            return;
        }
    }
}

fn prune(r: &mut Region, uses: &HashMap<Value, usize>, removed: &mut bool) {
    r.ops.retain(|op| {
        let dead = op.kind.is_pure() && op.result.is_some_and(|v| !uses.contains_key(&v));
        *removed |= dead;
        !dead
    });
    for op in &mut r.ops {
        for sub in op.kind.regions_mut() {
            prune(sub, uses, removed);
        }
    }
}

/// How many times each value is used as an operand.
pub fn use_counts(f: &Function) -> HashMap<Value, usize> {
    let mut uses = HashMap::new();
    f.walk(&mut |op| {
        for v in op.kind.operands() {
            *uses.entry(v).or_insert(0) += 1;
        }
    });
    uses
}
