//! The macros' pipeline for tools that run derivatives in cotan's interpreter (the `cotan`
//! command, tests): a derivative with everything it calls, as IR.

use cotan_ir::{HashMap, HashSet};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use cotan_ad::{Mode, Spec};
use cotan_ir::{Function, Ty, Value};

use crate::program::{Program, Rule};
use crate::sources::{ImplId, ModId, Ns, Res, Sources};

/// The sources a function is differentiated in: a file of a crate (whose other files are
/// read too), or one file's text in memory.
#[derive(Clone)]
pub struct SourceSet {
    src: Option<Rc<Sources>>,
    file: Option<PathBuf>,
}

impl SourceSet {
    /// The crate of the file at `path` (the file alone outside a Cargo package).
    pub fn file(path: &Path) -> SourceSet {
        // (The sources name their files canonically.)
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        SourceSet { src: Sources::for_file(&path), file: Some(path) }
    }

    /// One file's text, alone.
    pub fn text(text: &str) -> SourceSet {
        let name = PathBuf::from("<memory>.rs");
        SourceSet { src: Sources::from_text(&name, text).map(Rc::new), file: Some(name) }
    }

    /// No sources: calls of other functions cannot be differentiated or run.
    pub fn none() -> SourceSet {
        SourceSet { src: None, file: None }
    }
}

/// A function (primal or derivative) with what it calls, ready for the interpreter.
pub struct Derivation {
    pub function: Function,
    program: RefCell<Program>,
}

impl cotan_ir::Callees for Derivation {
    fn function(&self, path: &str) -> Result<Rc<Function>, String> {
        self.program.borrow_mut().runnable(path)
    }
}

/// The program around `lowered`, as `crate::program_at` makes it, with its callees' literals
/// typed as rustc types them (before it lowers any).
fn program(set: &SourceSet, func: &syn::ItemFn, lowered: &mut cotan_syntax::Lowered) -> syn::Result<Program> {
    let place = place(set, func);
    let mut program = Program::new(lowered, Rule::Body, place.src, place.at);
    program.literals_by_callees = true;
    program.redirect_flat(&mut lowered.func).map_err(|(span, e)| syn::Error::new(lowered.span(span), e))?;
    Ok(program)
}

fn place(set: &SourceSet, func: &syn::ItemFn) -> crate::Place {
    crate::place_in(func, set.src.clone(), set.file.clone())
}

/// `func` lowered as the macros lower it, with the crate's constants and structs of `set`,
/// and its literals typed by the functions it calls as rustc types them
/// ([`type_literals_by_callees`]).
pub fn lower(set: &SourceSet, func: &syn::ItemFn) -> syn::Result<cotan_syntax::Lowered> {
    let place = place(set, func);
    let mut lowered = crate::lower_root_at(func, &place)?;
    if let (Some(src), Some((module, f))) = (&place.src, place.at) {
        let (scope, imp) = match f {
            Some(f) if func.sig.ident == src.fns[f].name => (src.fns[f].scope, src.fns[f].imp),
            _ => (module, None),
        };
        type_literals_by_callees(&mut lowered.func, &mut |path| callee_signature(src, scope, imp, path));
    }
    Ok(lowered)
}

/// `func` as written, with the functions it calls (parsed from `set`, so that its spans
/// give its lines there).
pub fn primal(set: &SourceSet, func: &syn::ItemFn) -> syn::Result<Derivation> {
    let mut lowered = lower(set, func)?;
    let program = program(set, func, &mut lowered)?;
    Ok(Derivation { function: lowered.func, program: RefCell::new(program) })
}

/// `func` differentiated with `spec` into a function named `name`, exactly as the macros do,
/// with the derivatives it calls.
pub fn derivation(set: &SourceSet, func: &syn::ItemFn, spec: &Spec, name: &str) -> syn::Result<Derivation> {
    transform(set, func, spec, name, true)
}

/// [`derivation`], with the derivative as the transform made it (before simplification)
/// unless `simplify`.
pub fn transform(
    set: &SourceSet,
    func: &syn::ItemFn,
    spec: &Spec,
    name: &str,
    simplify: bool,
) -> syn::Result<Derivation> {
    let mut lowered = lower(set, func)?;
    cotan_ad::check(&lowered.func, spec).map_err(|e| syn::Error::new(func.sig.ident.span(), e.message))?;
    let mut program = program(set, func, &mut lowered)?;
    program.reserve(name);
    let function = if simplify {
        crate::differentiate(&lowered, spec, name, &mut program)?
    } else {
        match spec.mode {
            Mode::Forward => cotan_ad::forward(&lowered.func, spec, name, &mut program),
            Mode::Reverse => cotan_ad::reverse(&lowered.func, spec, name, &mut program),
        }
        .map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?
    };
    program.check_visibility().map_err(|e| syn::Error::new(func.sig.ident.span(), e))?;
    Ok(Derivation { function, program: RefCell::new(program) })
}

/// The spec with every float argument and the result active, as `cotan check`
/// differentiates: in forward mode `Dual`; in reverse mode `Active` for floats and arrays of
/// floats passed by value (their gradients are returned) and `Duplicated` for references.
/// A struct passed by value is `Const`, as std requires; so is a result that is not all
/// floats (a tuple with an integer).
pub fn all_active(f: &Function, mode: Mode) -> Spec {
    use cotan_ad::Activity::{Active, Const, Dual, Duplicated};
    use cotan_ir::{Access, Ty};
    // Arrays by value, of numbers or of rows (`[f64; 3]`, `[[f64; 2]; 3]`).
    let array = |m: cotan_ir::MemTy| m.kind.dim().is_some_and(|d| matches!(d, cotan_ir::Dim::Array(_)));
    let active = |t: Ty| match (t, mode) {
        (t, _) if !t.carries_derivative() => Const,
        (Ty::Mem(m), _) if m.access == Access::Owned && !array(m) => Const,
        (_, Mode::Forward) => Dual,
        (Ty::Scalar(_), Mode::Reverse) => Active,
        (Ty::Mem(m), Mode::Reverse) if m.access == Access::Owned => Active,
        (Ty::Mem(_), Mode::Reverse) => Duplicated,
    };
    let inputs = f.params.iter().map(|p| active(f.ty(*p))).collect();
    let ret =
        (!f.returns.is_empty())
            .then(|| if f.returns.iter().all(|t| t.is_float()) { active(f.returns[0]) } else { Const });
    Spec { mode, inputs, ret, width: 1 }
}

/// How many seeds the all-active reverse derivative of `f` takes: one per float of its
/// result (a tuple or array result has several).
pub fn seeds(f: &Function) -> usize {
    match all_active(f, Mode::Reverse).ret {
        Some(cotan_ad::Activity::Active) => f.returns.len(),
        _ => 0,
    }
}

/// Forward mode over the all-active reverse derivative of `func` (second order): every
/// float parameter of the reverse derivative (the function's and their shadows) is `Dual`,
/// the seed of the result constant. Its tangents are Hessian-vector products.
pub fn second_order(set: &SourceSet, func: &syn::ItemFn, name: &str) -> syn::Result<Derivation> {
    let mut lowered = lower(set, func)?;
    let spec = all_active(&lowered.func, Mode::Reverse);
    let mut program = program(set, func, &mut lowered)?;
    program.reserve(name);
    let rev = crate::differentiate(&lowered, &spec, &format!("{name}_gradient"), &mut program)?;
    let seeds = seeds(&lowered.func);
    let mut fwd = all_active(&rev, Mode::Forward);
    let n = fwd.inputs.len();
    for a in &mut fwd.inputs[n - seeds..] {
        *a = cotan_ad::Activity::Const;
    }
    let rev_lowered =
        cotan_syntax::Lowered { func: rev, spans: lowered.spans.clone(), assumed_int: vec![], ret_shape: None };
    let function = crate::differentiate(&rev_lowered, &fwd, name, &mut program)?;
    program.check_visibility().map_err(|e| syn::Error::new(func.sig.ident.span(), e))?;
    Ok(Derivation { function, program: RefCell::new(program) })
}

/// The parameter and result types of a function.
pub(crate) struct Signature {
    pub params: Vec<Ty>,
    pub returns: Vec<Ty>,
}

/// The signature of the function a call of `path` (as written in scope `module`, in `impl`
/// block `imp`) reaches, if it is a function of the crate whose signature lowers.
pub(crate) fn callee_signature(src: &Sources, module: ModId, imp: Option<ImplId>, path: &str) -> Option<Signature> {
    let segs: Vec<String> = path.split("::").map(str::to_string).collect();
    let res = match (segs.first().map(String::as_str), imp) {
        (Some("Self"), Some(i)) if segs.len() == 2 => src.method(src.impl_type(i)?, &segs[1]),
        _ => src.resolve(module, &segs, Ns::Value),
    };
    let Res::Fn(g) = res else { return None };
    let def = &src.fns[g];
    let sig = crate::sources::with_fallback(|| {
        let item = crate::constants::substitute(&def.item, src, def.scope, def.imp).ok()?;
        cotan_syntax::lower_signature(&item.sig).ok()
    })?;
    Some(Signature { params: sig.params.iter().map(|p| sig.ty(*p)).collect(), returns: sig.returns })
}

/// Two number types that a literal of one could have been given instead of the other.
fn retypable(s: Ty, t: Ty) -> Option<cotan_ir::Scalar> {
    match (s, t) {
        (Ty::Scalar(s), Ty::Scalar(t)) if s != t && ((s.is_int() && t.is_int()) || (s.is_float() && t.is_float())) => {
            Some(t)
        }
        _ => None,
    }
}

/// Types literals as rustc does where only a callee fixes their type. Lowering types each
/// function alone: in `let d = 3; prior(x, d)` nothing in the caller fixes `d`, so it gets
/// Rust's default, `i32`, while rustc gives `d` (and everything its type is tied to: the
/// literal, the locals it flows through, arithmetic on them) the type of `prior`'s
/// parameter, `usize`; in an `f32` program, `1.0 * g(x)` passed to another call is an `f32`
/// because `g` returns one, where lowering takes it for an `f64`. Each class of numbers
/// tied together by their operations that holds only literals, arithmetic and calls'
/// results (no parameter, load, cast, `len()` or index fixes its type) and meets
/// parameters or results of one type is retyped to that type. The function is left as it
/// was if anything does not fit (a literal out of the type's range, a class the calls
/// disagree on, IR that would not verify).
pub(crate) fn type_literals_by_callees(f: &mut Function, sig_of: &mut dyn FnMut(&str) -> Option<Signature>) {
    use cotan_ir::{BinOp, Const, MathFn, OpKind, Scalar};
    // Whether some call's numbers disagree with its callee's signature.
    let mut mismatched = false;
    let mut sigs: HashMap<String, Option<Rc<Signature>>> = HashMap::default();
    f.walk(&mut |op| {
        if let OpKind::Call { callee, args, outs, .. } = &op.kind {
            let sig = sigs.entry(callee.clone()).or_insert_with(|| sig_of(callee).map(Rc::new)).clone();
            let Some(sig) = sig else { return };
            mismatched |= args.iter().zip(&sig.params).any(|((a, _), p)| retypable(f.ty(*a), *p).is_some());
            mismatched |= outs.iter().zip(&sig.returns).any(|(o, r)| retypable(Ty::Scalar(f.var(*o).ty), *r).is_some());
        }
    });
    if !mismatched {
        return;
    }
    let mut g = f.clone();
    // A literal CSE shares between uses gets one op per use: rustc types each use apart.
    let consts: HashMap<Value, Const> = {
        let mut m = HashMap::default();
        g.walk(&mut |op| {
            if let (OpKind::Const(c @ (Const::Int(_) | Const::Float(_))), Some(r)) = (&op.kind, op.result) {
                m.insert(r, *c);
            }
        });
        m
    };
    let mut body = std::mem::take(&mut g.body);
    unshare(&mut g, &consts, &mut HashSet::default(), &mut body);
    g.body = body;
    // Union-find over values, then variables.
    let nv = g.values.len();
    let mut parent: Vec<usize> = (0..nv + g.vars.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let union = |parent: &mut Vec<usize>, a: usize, b: usize| {
        let (ra, rb) = (root(parent, a), root(parent, b));
        parent[ra] = rb;
    };
    let var = |v: cotan_ir::Var| nv + v.0 as usize;
    // Nodes whose type only their class fixes, and the types calls give the others.
    let mut free = vec![false; parent.len()];
    let mut wanted: Vec<(usize, Scalar)> = vec![];
    let mut pinned: Vec<usize> = vec![];
    g.walk(&mut |op| {
        let r = op.result.map(|r| r.0 as usize);
        let tie = |parent: &mut Vec<usize>, free: &mut Vec<bool>, operands: &[cotan_ir::Value]| {
            let r = r.expect("a result");
            free[r] = true;
            for x in operands {
                union(parent, r, x.0 as usize);
            }
        };
        match &op.kind {
            OpKind::Const(Const::Int(_) | Const::Float(_)) => free[r.expect("a literal has a result")] = true,
            OpKind::Unary(_, a) => tie(&mut parent, &mut free, &[*a]),
            OpKind::Binary(BinOp::Shl | BinOp::Shr, x, y) => {
                tie(&mut parent, &mut free, &[*x]);
                pinned.push(y.0 as usize);
            }
            OpKind::Binary(_, x, y) => tie(&mut parent, &mut free, &[*x, *y]),
            OpKind::Select(c, x, y) => {
                tie(&mut parent, &mut free, &[*x, *y]);
                pinned.push(c.0 as usize);
            }
            // `powi`'s exponent is an `i32`; the other arguments have the receiver's type.
            OpKind::Math(MathFn::Powi, args) => {
                tie(&mut parent, &mut free, &args[..1]);
                pinned.extend(args[1..].iter().map(|v| v.0 as usize));
            }
            OpKind::Math(_, args) => tie(&mut parent, &mut free, args),
            OpKind::Cmp(_, x, y) => union(&mut parent, x.0 as usize, y.0 as usize),
            OpKind::DeclVar { var: v, init } => {
                free[var(*v)] = true;
                union(&mut parent, var(*v), init.0 as usize);
            }
            OpKind::SetVar(v, x) => union(&mut parent, var(*v), x.0 as usize),
            OpKind::GetVar(v) => {
                free[r.expect("a result")] = true;
                union(&mut parent, r.expect("a result"), var(*v));
            }
            OpKind::For { index, lo, hi, step, .. } => {
                free[index.0 as usize] = true;
                union(&mut parent, index.0 as usize, lo.0 as usize);
                union(&mut parent, index.0 as usize, hi.0 as usize);
                pinned.extend(step.iter().map(|v| v.0 as usize));
            }
            OpKind::Call { callee, args, outs, .. } => {
                let sig = sigs.get(callee).cloned().flatten();
                for (k, o) in outs.iter().enumerate() {
                    let want = sig.as_ref().and_then(|s| s.returns.get(k));
                    match want.and_then(|t| retypable(Ty::Scalar(g.var(*o).ty), *t)) {
                        Some(t) => wanted.push((var(*o), t)),
                        None => pinned.push(var(*o)),
                    }
                }
                for (k, (a, _)) in args.iter().enumerate() {
                    let want = sig.as_ref().and_then(|s| s.params.get(k));
                    match want.and_then(|t| retypable(g.ty(*a), *t)) {
                        Some(t) => wanted.push((a.0 as usize, t)),
                        None => pinned.push(a.0 as usize),
                    }
                }
            }
            // A cast or a print takes any number.
            OpKind::Cast(_) | OpKind::Print { .. } => {}
            // Every other use fixes its operands' types: indices, lengths, stores, results.
            kind => pinned.extend(kind.operands().iter().map(|v| v.0 as usize)),
        }
    });
    for v in pinned {
        free[v] = false;
    }
    for p in &g.params {
        free[p.0 as usize] = false;
    }
    // A call's result is free when it is wanted: its own call gives its type.
    for (v, _) in &wanted {
        if *v >= nv {
            free[*v] = true;
        }
    }
    let mut class_target: HashMap<usize, Option<Scalar>> = HashMap::default();
    for (v, t) in &wanted {
        let r = root(&mut parent, *v);
        let e = class_target.entry(r).or_insert(Some(*t));
        if *e != Some(*t) {
            *e = None;
        }
    }
    let literals: HashMap<usize, Const> = {
        let mut m = HashMap::default();
        g.walk(&mut |op| {
            if let (OpKind::Const(c), Some(r)) = (&op.kind, op.result) {
                m.insert(r.0 as usize, *c);
            }
        });
        m
    };
    let mut changed = false;
    for (r, t) in class_target {
        let Some(t) = t else { continue };
        let members: Vec<usize> = (0..parent.len()).filter(|&x| root(&mut parent, x) == r).collect();
        let ty_of = |g: &Function, x: usize| if x < nv { g.values[x].ty.scalar() } else { Some(g.vars[x - nv].ty) };
        let first = ty_of(&g, members[0]);
        let fits = members.iter().all(|&x| {
            free[x]
                && ty_of(&g, x) == first
                && first.is_some_and(|s| retypable(Ty::Scalar(s), Ty::Scalar(t)).is_some())
                && match literals.get(&x) {
                    Some(Const::Int(c)) => in_range(*c, t),
                    _ => true,
                }
        });
        if !fits {
            continue;
        }
        for x in members {
            if x < nv {
                g.values[x].ty = Ty::Scalar(t);
            } else {
                g.vars[x - nv].ty = t;
            }
        }
        changed = true;
    }
    if changed && cotan_ir::verify(&g).is_ok() {
        *f = g;
    }
}

fn in_range(c: i128, t: cotan_ir::Scalar) -> bool {
    let bits = t.int_bits();
    let (lo, hi) =
        if t.is_signed() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
    (lo..=hi).contains(&c)
}

/// Gives every use of a number literal but the first its own literal op, just before the
/// use.
fn unshare(
    f: &mut Function,
    consts: &HashMap<Value, cotan_ir::Const>,
    seen: &mut HashSet<Value>,
    region: &mut cotan_ir::Region,
) {
    let mut out = Vec::with_capacity(region.ops.len());
    for mut op in std::mem::take(&mut region.ops) {
        for v in op.kind.operands_mut() {
            if let Some(&c) = consts.get(v) {
                if !seen.insert(*v) {
                    let data = f.values[v.0 as usize].clone();
                    let nv = f.new_value(data.ty, None, data.span);
                    out.push(cotan_ir::Op { kind: cotan_ir::OpKind::Const(c), result: Some(nv), span: op.span });
                    *v = nv;
                }
            }
        }
        for r in op.kind.regions_mut() {
            unshare(f, consts, seen, r);
        }
        out.push(op);
    }
    region.ops = out;
}
