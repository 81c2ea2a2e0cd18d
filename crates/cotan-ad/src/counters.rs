//! Integer counters that the reverse sweep steps back instead of saving.
//!
//! A loop that advances an index by a fixed step (`li += 1`, `k -= stride`) reads a new
//! value in every iteration, and saving each one costs a push and a pop. When every
//! assignment of an integer variable is such a step from its current value, the reverse
//! sweep keeps a copy of the variable and steps it back (`before = after - step`), so it
//! needs only the variable's value at the end of the region that declares it.
//!
//! The copy is right only if the reverse sweep undoes every step, in order. So a counter
//! is stepped only in regions that do not also contain regions that step it (the copy is
//! stepped back once, at the start of the region's reverse), never in a `while` condition,
//! never at the top level (whose values the reverse sweep has anyway), and [`all_reversed`]
//! checks that no region that steps it is skipped by the reverse sweep.

use cotan_ir::{HashMap, HashSet};

use cotan_ir::{BinOp, Function, Op, OpKind, Region, Value, Var};

/// `var = before + step` (or `- step`), directly in a region.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    pub var: Var,
    /// The read of the variable the step starts from.
    pub before: Value,
    /// A constant, or a value of the top level.
    pub step: Value,
    pub add: bool,
}

#[derive(Default)]
pub(crate) struct Counters {
    /// The reads that steps start from, and their counters.
    pub before: HashMap<Value, Var>,
    /// The steps directly in each region, in program order.
    pub steps: HashMap<*const Region, Vec<Step>>,
    /// Reads of a counter in regions where the copy holds its value: the region and
    /// everything in it leave the counter alone, and no region around it, up to the
    /// counter's declaration, steps it (a region's steps are undone at the start of its
    /// reverse, so inside it the copy is already behind).
    pub reads: HashMap<*const Region, Vec<(Value, Var)>>,
    /// The same reads, by value.
    pub read_of: HashMap<Value, Var>,
    /// The region each counter is declared in.
    pub declared: HashMap<Var, *const Region>,
}

/// Where an op is: its region and its position there.
struct Site<'f> {
    region: &'f Region,
    at: usize,
    kind: &'f OpKind,
}

/// The counters of `f` and their steps.
pub(crate) fn find(f: &Function) -> Counters {
    let mut defs: HashMap<Value, Site> = HashMap::default();
    let mut declared: HashMap<Var, *const Region> = HashMap::default();
    let mut sets: HashMap<Var, Vec<(&Region, usize, Value)>> = HashMap::default();
    let mut excluded: HashSet<Var> = HashSet::default();
    let mut parents: HashMap<*const Region, *const Region> = HashMap::default();
    collect(&f.body, false, &mut defs, &mut declared, &mut sets, &mut excluded, &mut parents);

    let mut out = Counters::default();
    let mut steps_at: HashMap<*const Region, Vec<(usize, Step)>> = HashMap::default();
    let top = &f.body as *const Region;
    'vars: for (&var, sites) in &sets {
        if excluded.contains(&var) || !f.var(var).ty.is_int() || !declared.contains_key(&var) {
            continue;
        }
        let mut steps = vec![];
        for &(region, at, value) in sites {
            if std::ptr::eq(region, top) || region.ops.iter().any(|o| o.kind.regions().iter().any(|r| writes(r, var))) {
                continue 'vars;
            }
            let Some(step) = step_of(f, var, region, at, value, &defs, top) else { continue 'vars };
            steps.push((region as *const Region, at, step));
        }
        out.declared.insert(var, declared[&var]);
        for (region, at, step) in steps {
            out.before.insert(step.before, var);
            steps_at.entry(region).or_default().push((at, step));
        }
    }
    for (region, mut steps) in steps_at {
        steps.sort_by_key(|(at, _)| *at);
        out.steps.insert(region, steps.into_iter().map(|(_, s)| s).collect());
    }
    for (&g, site) in &defs {
        let OpKind::GetVar(var) = site.kind else { continue };
        let region = site.region as *const Region;
        let Some(&decl) = out.declared.get(var) else { continue };
        if region == top || out.before.contains_key(&g) || writes(site.region, *var) {
            continue;
        }
        let mut up = Some(region);
        let mut stepped = false;
        while let Some(r) = up {
            stepped |= out.steps.get(&r).is_some_and(|st| st.iter().any(|s| s.var == *var));
            if r == decl {
                break;
            }
            up = parents.get(&r).copied();
        }
        if !stepped {
            out.reads.entry(region).or_default().push((g, *var));
            out.read_of.insert(g, *var);
        }
    }
    out
}

/// `SetVar(var, value)` at `region.ops[at]` as a step, if it is one.
fn step_of(
    f: &Function,
    var: Var,
    region: &Region,
    at: usize,
    value: Value,
    defs: &HashMap<Value, Site>,
    top: *const Region,
) -> Option<Step> {
    let def = defs.get(&value).filter(|d| std::ptr::eq(d.region, region))?;
    let OpKind::Binary(op @ (BinOp::Add | BinOp::Sub), l, r) = def.kind else { return None };
    // Where the variable starts to hold `v` in this region: a read of it, or an earlier
    // assignment of `v` (simplification forwards assigned values to later reads).
    let holds_from = |v: &Value| -> Option<usize> {
        let d = defs.get(v).filter(|d| std::ptr::eq(d.region, region))?;
        if matches!(d.kind, OpKind::GetVar(x) if *x == var) {
            return Some(d.at);
        }
        region.ops[..at].iter().rposition(|o| matches!(&o.kind, OpKind::SetVar(x, w) if *x == var && w == v))
    };
    let ((before, step), from) = match (holds_from(l), holds_from(r), op) {
        (Some(from), _, _) => ((*l, *r), from),
        (None, Some(from), BinOp::Add) => ((*r, *l), from),
        _ => return None,
    };
    let step_ok = match defs.get(&step) {
        Some(d) => matches!(d.kind, OpKind::Const(_)) || std::ptr::eq(d.region, top),
        None => f.params.contains(&step),
    };
    // Nothing between there and the assignment changes the variable.
    let untouched = region.ops[from + 1..at].iter().all(|o| match &o.kind {
        OpKind::SetVar(x, _) | OpKind::DeclVar { var: x, .. } if *x == var => false,
        k => !k.regions().iter().any(|r| writes(r, var)),
    });
    (step_ok && untouched).then_some(Step { var, before, step, add: *op == BinOp::Add })
}

fn collect<'f>(
    r: &'f Region,
    in_cond: bool,
    defs: &mut HashMap<Value, Site<'f>>,
    declared: &mut HashMap<Var, *const Region>,
    sets: &mut HashMap<Var, Vec<(&'f Region, usize, Value)>>,
    excluded: &mut HashSet<Var>,
    parents: &mut HashMap<*const Region, *const Region>,
) {
    for (at, op) in r.ops.iter().enumerate() {
        if let Some(v) = op.result {
            defs.insert(v, Site { region: r, at, kind: &op.kind });
        }
        match &op.kind {
            OpKind::DeclVar { var, .. } if declared.insert(*var, r as *const Region).is_some() => {
                excluded.insert(*var);
            }
            OpKind::SetVar(var, value) => {
                if in_cond {
                    excluded.insert(*var);
                }
                sets.entry(*var).or_default().push((r, at, *value));
            }
            _ => {}
        }
        for sub in op.kind.regions() {
            parents.insert(sub as *const Region, r as *const Region);
            let cond =
                in_cond || matches!(&op.kind, OpKind::While { cond_region, .. } if std::ptr::eq(cond_region, sub));
            collect(sub, cond, defs, declared, sets, excluded, parents);
        }
    }
}

/// Whether anything in `r` assigns `var`.
fn writes(r: &Region, var: Var) -> bool {
    r.ops.iter().any(|o| {
        matches!(&o.kind, OpKind::SetVar(x, _) if *x == var) || o.kind.regions().iter().any(|s| writes(s, var))
    })
}

impl Counters {
    /// Keeps the counters whose every step the reverse sweep undoes: no op whose regions
    /// step one may be skipped by it (`active` false).
    pub(crate) fn keep_reversed(&mut self, f: &Function, active: &dyn Fn(&Op) -> bool) {
        let gone: HashSet<Var> = self.declared.keys().copied().filter(|v| !all_reversed(f, *v, active)).collect();
        self.before.retain(|_, v| !gone.contains(v));
        self.declared.retain(|v, _| !gone.contains(v));
        for reads in self.reads.values_mut() {
            reads.retain(|(_, v)| !gone.contains(v));
        }
        self.read_of.retain(|_, v| !gone.contains(v));
        for steps in self.steps.values_mut() {
            steps.retain(|s| !gone.contains(&s.var));
        }
    }
}

fn all_reversed(f: &Function, var: Var, active: &dyn Fn(&Op) -> bool) -> bool {
    fn check(r: &Region, var: Var, active: &dyn Fn(&Op) -> bool) -> bool {
        r.ops.iter().all(|o| {
            let subs = o.kind.regions();
            if subs.is_empty() || !subs.iter().any(|s| writes(s, var)) {
                return true;
            }
            active(o) && subs.iter().all(|s| check(s, var, active))
        })
    }
    check(&f.body, var, active)
}
