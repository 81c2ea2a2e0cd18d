//! The lengths vectors end their region with. A vector made inside a loop or a branch that
//! changes length (`push`, `v = w`) gets in the reverse sweep a shadow as long as the vector
//! was when the region's forward sweep ended; the function is given a `len` op there, a
//! value the reverse sweep asks for as any other (saved, since the vector is gone by then).
//! Vectors of the top level read their length directly at the end of the forward sweep.

use cotan_ir::{Function, HashMap, Op, OpKind, Region, Ty, Value};
use std::borrow::Cow;

/// `f` with a `len` op at the end of each region, other than the top level, that makes a
/// vector whose length changes; and, per such vector, that op's value.
pub(crate) fn with_final_lens(f: &Function) -> (Cow<'_, Function>, HashMap<Value, Value>) {
    let mut resized = vec![];
    f.walk(&mut |op| resized.extend(op.kind.resized()));
    let mut nested = vec![];
    f.body.walk(&mut |op| {
        for r in op.kind.regions() {
            nested.extend(r.ops.iter().filter_map(|o| allocated(o, &resized)));
        }
    });
    if nested.is_empty() {
        return (Cow::Borrowed(f), HashMap::default());
    }
    let mut g = f.clone();
    let mut lens = HashMap::default();
    for &m in &nested {
        let span = g.value(m).span;
        lens.insert(m, g.new_value(Ty::USIZE, Some("len".into()), span));
    }
    let mut body = std::mem::take(&mut g.body);
    for op in &mut body.ops {
        for r in op.kind.regions_mut() {
            add_lens(r, &resized, &lens, &g);
        }
    }
    g.body = body;
    (Cow::Owned(g), lens)
}

fn allocated(op: &Op, resized: &[Value]) -> Option<Value> {
    match (&op.kind, op.result) {
        (OpKind::Alloc { .. }, Some(m)) if resized.contains(&m) => Some(m),
        _ => None,
    }
}

/// Appends to `r` (and to the regions inside it) the `len` ops of the vectors it makes.
fn add_lens(r: &mut Region, resized: &[Value], lens: &HashMap<Value, Value>, f: &Function) {
    let made: Vec<Value> = r.ops.iter().filter_map(|o| allocated(o, resized)).collect();
    for op in &mut r.ops {
        for inner in op.kind.regions_mut() {
            add_lens(inner, resized, lens, f);
        }
    }
    for m in made {
        let span = f.value(m).span;
        r.ops.push(Op { kind: OpKind::Len(m), result: Some(lens[&m]), span });
    }
}
