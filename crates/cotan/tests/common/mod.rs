//! Test harness: every differentiated function is checked against central finite
//! differences (both modes), reverse against forward by the dot-product test, and the
//! compiled code against cotan's IR interpreter on the same inputs.
//!
//! A case is a vector function F: Rⁿ → Rᵐ seen through three closures (primal, JVP, VJP)
//! plus its source text, from which the interpreter runs the same derivatives.

#![allow(dead_code, clippy::type_complexity, clippy::needless_range_loop)]

use cotan_ad::{Activity, Mode, Spec};
use cotan_ir::{Arg, Val};

/// How the function's parameters and results map to the vectors x and F(x).
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// `fn f(x: &[f64]) -> f64`
    Slice,
    /// `fn f(x0: f64, x1: f64, ...) -> f64`
    Scalars,
    /// `fn f(x: &mut [f64])`: F(x) is the final contents of x.
    InPlace,
    /// `fn f(x: &[f64], n: &[usize]) -> f64` with `n` constant.
    SliceInts(&'static [usize]),
    /// `fn f(x: *const f64, n: usize) -> f64` with `n` the length of x (constant).
    PtrLen,
    /// `fn f(x: *mut f64, n: usize)`: F(x) is the final contents of x's `n` elements.
    PtrInPlace,
}

pub struct Case<'a> {
    pub src: &'a str,
    pub shape: Shape,
    pub primal: &'a dyn Fn(&[f64]) -> Vec<f64>,
    /// (F(x), J·u)
    pub jvp: &'a dyn Fn(&[f64], &[f64]) -> (Vec<f64>, Vec<f64>),
    /// (F(x), Jᵀ·w)
    pub vjp: &'a dyn Fn(&[f64], &[f64]) -> (Vec<f64>, Vec<f64>),
}

/// Counts heap allocations on the current thread, so that every case is also checked for
/// steady-state allocations (`check_allocations`).
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Counting;

    thread_local! {
        static COUNT: Cell<usize> = const { Cell::new(0) };
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    pub fn count() -> usize {
        COUNT.with(|c| c.get())
    }
}

/// In steady state, a reverse call allocates no more than a primal call.
pub fn check_allocations(src: &str, primal: &mut dyn FnMut(), reverse: &mut dyn FnMut()) {
    let count = counting::count;
    for _ in 0..3 {
        reverse();
    }
    let before = count();
    primal();
    let p = count() - before;
    let before = count();
    reverse();
    let r = count() - before;
    assert!(r <= p, "{src}\na steady-state reverse call made {r} heap allocations, the primal {p}");
}

/// Bytes pushed by one iteration of each loop, outermost first, in program order.
pub fn bytes_per_iteration(f: &cotan_ir::Function) -> Vec<usize> {
    fn pushed(f: &cotan_ir::Function, r: &cotan_ir::Region) -> usize {
        r.ops
            .iter()
            .map(|op| match &op.kind {
                cotan_ir::OpKind::Push(v) => match f.ty(*v) {
                    cotan_ir::Ty::Scalar(cotan_ir::Scalar::F32) => 4,
                    cotan_ir::Ty::Scalar(cotan_ir::Scalar::Bool) => 1,
                    _ => 8,
                },
                cotan_ir::OpKind::If { then_region, else_region, .. } => {
                    pushed(f, then_region).max(pushed(f, else_region))
                }
                _ => 0,
            })
            .sum()
    }
    fn loops(f: &cotan_ir::Function, r: &cotan_ir::Region, out: &mut Vec<usize>) {
        for op in &r.ops {
            if let cotan_ir::OpKind::For { body, .. } | cotan_ir::OpKind::While { body, .. } = &op.kind {
                out.push(pushed(f, body));
            }
            for sub in op.kind.regions() {
                loops(f, sub, out);
            }
        }
    }
    let mut out = vec![];
    loops(f, &f.body, &mut out);
    out
}

/// Relative error tolerance of AD against finite differences.
pub const FD_TOL: f64 = 1e-6;
/// Tolerance of exact identities (dot-product test, interpreter vs compiled).
pub const EXACT_TOL: f64 = 1e-10;

/// A deterministic direction with entries in [-1, 1].
pub fn direction(n: usize, seed: u64) -> Vec<f64> {
    (0..n).map(|i| ((i as f64 + 1.0) * 0.7548776662 + seed as f64 * 0.5698402910).sin()).collect()
}

/// For a scalar function of a flat input: forward `J·u` against finite differences along
/// `seeds` directions, and reverse `<∇f, u>` against forward (dot-product test).
pub fn check_scalar(
    what: &str,
    f: &dyn Fn(&[f64]) -> f64,
    jvp: &dyn Fn(&[f64], &[f64]) -> f64,
    grad: &dyn Fn(&[f64]) -> Vec<f64>,
    x: &[f64],
    seeds: u64,
) {
    for seed in 0..seeds {
        let u = direction(x.len(), seed);
        let fd = fd_directional(&|x| vec![f(x)], x, &u, 1e-4)[0];
        let jv = jvp(x, &u);
        let gu = dot(&grad(x), &u);
        let tol = FD_TOL * fd.abs().max(1.0);
        assert!((jv - fd).abs() <= tol, "{what}: forward {jv} vs finite differences {fd}");
        assert!((gu - jv).abs() <= EXACT_TOL * jv.abs().max(1.0), "{what}: <g, u> = {gu} vs J·u = {jv}");
    }
}

/// Checks a generated pair for `f: &[f64] -> f64`: both derivatives return the primal's
/// value bit for bit, and they agree with finite differences and with each other
/// ([`check_scalar`], 3 directions).
pub fn check_slice_fn(
    what: &str,
    f: fn(&[f64]) -> f64,
    rev: fn(&[f64], &mut [f64], f64) -> f64,
    fwd: fn(&[f64], &[f64]) -> (f64, f64),
    x: &[f64],
) {
    let mut g = vec![0.0; x.len()];
    let zero = vec![0.0; x.len()];
    assert_eq!(rev(x, &mut g, 1.0), f(x), "{what}: the reverse derivative's value");
    assert_eq!(fwd(x, &zero).0, f(x), "{what}: the forward derivative's value");
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        rev(x, &mut g, 1.0);
        g
    };
    check_scalar(what, &|x| f(x), &|x, u| fwd(x, u).1, &grad, x, 3);
}

/// A smooth deterministic input of length `n`.
pub fn smooth_input(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i as f64) * 0.61 + 0.3).sin()).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn close(a: f64, b: f64, rel: f64, scale: f64) -> bool {
    if a == b || (a.is_nan() && b.is_nan()) {
        return true;
    }
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(scale)
}

/// Step sizes tried by the finite-difference checks (relative to the input's scale): a
/// check passes if one of them agrees, since near a domain edge only small steps are valid
/// and elsewhere large steps are more accurate.
pub const STEPS: [f64; 4] = [1e-3, 1e-4, 1e-5, 1e-6];

/// Directional derivative of F at x along u by central differences with one
/// Richardson extrapolation step (error O(h⁴)), for a relative step `step`.
pub fn fd_directional(primal: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64], u: &[f64], step: f64) -> Vec<f64> {
    let scale = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let d = |h: f64| -> Vec<f64> {
        let xp: Vec<f64> = x.iter().zip(u).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(u).map(|(a, b)| a - h * b).collect();
        primal(&xp).iter().zip(primal(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect()
    };
    let h = step * scale;
    let (d1, d2) = (d(h), d(h / 2.0));
    d1.iter().zip(&d2).map(|(a, b)| (4.0 * b - a) / 3.0).collect()
}

/// Checks derivatives against finite differences and the dot-product test, then the
/// interpreter against the compiled code.
pub fn check(case: &Case, x: &[f64]) {
    check_compiled(case, x);
    for seed in 0..2 {
        let y = (case.primal)(x);
        let u = direction(x.len(), seed);
        let w = direction(y.len(), seed + 7);
        let (_, jv) = (case.jvp)(x, &u);
        let (_, jtw) = (case.vjp)(x, &w);
        check_interpreter(case, x, &u, &w, &y, &jv, &jtw);
    }
}

/// Checks the compiled derivatives only (for signatures the interpreter harness does not map).
pub fn check_compiled(case: &Case, x: &[f64]) {
    let y = (case.primal)(x);
    let n = x.len();
    let m = y.len();
    let yscale = y.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    for seed in 0..2 {
        let u = direction(n, seed);
        let w = direction(m, seed + 7);
        let (y_f, jv) = (case.jvp)(x, &u);
        let (y_r, jtw) = (case.vjp)(x, &w);
        assert_eq!(y_f, y, "{}: forward-mode primal differs from the primal", case.src);
        assert_eq!(y_r, y, "{}: reverse-mode primal differs from the primal", case.src);
        let fds: Vec<Vec<f64>> = STEPS.iter().map(|h| fd_directional(case.primal, x, &u, *h)).collect();
        for k in 0..m {
            let fd = &fds[0];
            assert!(
                fds.iter().any(|fd| close(jv[k], fd[k], FD_TOL, 1e-8 * yscale.max(1.0) / FD_TOL)),
                "{}\nat x = {x:?}: forward J·u[{k}] = {} but finite differences give {}",
                case.src,
                jv[k],
                fd[k]
            );
        }
        let lhs = dot(&jv, &w);
        let rhs = dot(&u, &jtw);
        let mag = jv
            .iter()
            .zip(&w)
            .map(|(a, b)| (a * b).abs())
            .sum::<f64>()
            .max(u.iter().zip(&jtw).map(|(a, b)| (a * b).abs()).sum());
        assert!(
            close(lhs, rhs, EXACT_TOL, mag),
            "{}\nat x = {x:?}: dot-product test failed: <J·u, w> = {lhs} but <u, Jᵀ·w> = {rhs}",
            case.src
        );
        // Reverse mode against finite differences, one input at a time.
        let w1: Vec<f64> = (0..m).map(|k| if k == 0 { 1.0 } else { 0.0 }).collect();
        let (_, g) = (case.vjp)(x, &w1);
        for i in 0..n {
            let e: Vec<f64> = (0..n).map(|j| if j == i { 1.0 } else { 0.0 }).collect();
            let fds: Vec<f64> = STEPS.iter().map(|h| fd_directional(case.primal, x, &e, *h)[0]).collect();
            let fd_i = fds[0];
            assert!(
                fds.iter().any(|fd| close(g[i], *fd, FD_TOL, 1e-8 * yscale / FD_TOL)),
                "{}\nat x = {x:?}: reverse gradient[{i}] = {} but finite differences give {fd_i}",
                case.src,
                g[i]
            );
        }
    }
}

/// Whether a function calls a function by a plain name (`f(x)`, not `f64::sin(x)`).
fn calls_functions(item: &syn::ItemFn) -> bool {
    struct Calls(bool);
    impl<'a> syn::visit::Visit<'a> for Calls {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                self.0 |= p.path.get_ident().is_some_and(|i| i != "Some");
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut v = Calls(false);
    syn::visit::Visit::visit_item_fn(&mut v, item);
    v.0
}

/// The IR interpreter, run on the lowered function and on its derivatives, agrees with
/// the compiled code.
fn check_interpreter(case: &Case, x: &[f64], u: &[f64], w: &[f64], y: &[f64], jv: &[f64], jtw: &[f64]) {
    let item: syn::ItemFn = syn::parse_str(case.src).expect("test source parses");
    let mut f = match cotan_syntax::lower_fn(&item.sig, &item.block) {
        Ok(l) => l.func,
        // A helper that takes a closure or returns a vector is lowered in place of its call,
        // from the crate's sources, which the interpreter does not read: the compiled checks
        // cover it, as they cover calls.
        Err(_) if calls_functions(&item) => return,
        Err(e) => panic!("{}: does not lower: {e}", case.src),
    };
    cotan_ir::simplify::cse(&mut f);
    let mut calls = false;
    f.walk(&mut |op| calls |= matches!(op.kind, cotan_ir::OpKind::Call { .. }));
    if calls {
        // The interpreter sees one function at a time; the compiled checks cover calls.
        return;
    }
    let n_params = f.params.len();
    let has_ret = !f.returns.is_empty();
    let agree = |what: &str, got: &[f64], want: &[f64]| {
        let scale = want.iter().fold(1.0f64, |a, v| a.max(v.abs()));
        for (k, (a, b)) in got.iter().zip(want).enumerate() {
            assert!(
                close(*a, *b, EXACT_TOL, scale),
                "{}\ninterpreter {what}[{k}] = {a}, compiled code gives {b}",
                case.src
            );
        }
    };
    let scal = |v: f64| Arg::Scalar(Val::F64(v));
    let vec_arg = |v: &[f64]| Arg::Mem(v.iter().map(|a| Val::F64(*a)).collect());
    let floats = |a: &Arg| -> Vec<f64> {
        match a {
            Arg::Mem(vs) => vs.iter().map(|v| v.as_f64().unwrap()).collect(),
            Arg::Scalar(v) => vec![v.as_f64().unwrap()],
            Arg::Record(_) | Arg::Rows(_) => unreachable!("the harness passes no structs or rows"),
        }
    };
    let ret_f = |vals: &[Val]| -> Vec<f64> { vals.iter().map(|v| v.as_f64().unwrap()).collect() };

    // Primal.
    let ints = |n: &[usize]| Arg::Mem(n.iter().map(|k| Val::Int(*k as i128, cotan_ir::Scalar::Usize)).collect());
    let len = Arg::Scalar(Val::Int(x.len() as i128, cotan_ir::Scalar::Usize));
    let mut args: Vec<Arg> = match case.shape {
        Shape::Slice | Shape::InPlace => vec![vec_arg(x)],
        Shape::SliceInts(n) => vec![vec_arg(x), ints(n)],
        Shape::PtrLen | Shape::PtrInPlace => vec![vec_arg(x), len.clone()],
        Shape::Scalars => x.iter().map(|v| scal(*v)).collect(),
    };
    let out = cotan_ir::run(&f, &mut args).expect("interpreter runs the primal");
    let got = match case.shape {
        Shape::InPlace | Shape::PtrInPlace => floats(&args[0]),
        _ => ret_f(&out),
    };
    agree("primal", &got, y);

    // Forward mode.
    let mut dual_inputs = vec![Activity::Dual; n_params];
    if let Shape::SliceInts(_) | Shape::PtrLen | Shape::PtrInPlace = case.shape {
        dual_inputs[1] = Activity::Const;
    }
    let dual = Spec { mode: Mode::Forward, inputs: dual_inputs, ret: has_ret.then_some(Activity::Dual), width: 1 };
    let fwd = cotan_ad::forward(&f, &dual, "fwd", &mut cotan_ad::NoCalls).expect("differentiates");
    cotan_ir::verify(&fwd).unwrap_or_else(|e| panic!("forward IR invalid: {e:?}"));
    let mut args: Vec<Arg> = match case.shape {
        Shape::Slice | Shape::InPlace => vec![vec_arg(x), vec_arg(u)],
        Shape::SliceInts(n) => vec![vec_arg(x), vec_arg(u), ints(n)],
        Shape::PtrLen | Shape::PtrInPlace => vec![vec_arg(x), vec_arg(u), len.clone()],
        Shape::Scalars => x.iter().zip(u).flat_map(|(a, b)| [scal(*a), scal(*b)]).collect(),
    };
    let out = cotan_ir::run(&fwd, &mut args).expect("interpreter runs the forward derivative");
    let got = match case.shape {
        Shape::InPlace | Shape::PtrInPlace => floats(&args[1]),
        _ => vec![ret_f(&out)[1]],
    };
    agree("J·u", &got, jv);

    // Reverse mode.
    let (inputs, ret) = match case.shape {
        Shape::Slice => (vec![Activity::Duplicated], Some(Activity::Active)),
        Shape::Scalars => (vec![Activity::Active; n_params], Some(Activity::Active)),
        Shape::InPlace => (vec![Activity::Duplicated], None),
        Shape::SliceInts(_) | Shape::PtrLen => (vec![Activity::Duplicated, Activity::Const], Some(Activity::Active)),
        Shape::PtrInPlace => (vec![Activity::Duplicated, Activity::Const], None),
    };
    let mut rev =
        cotan_ad::reverse(&f, &Spec { mode: Mode::Reverse, inputs, ret, width: 1 }, "rev", &mut cotan_ad::NoCalls)
            .expect("differentiates");
    cotan_ir::simplify::cse(&mut rev);
    // What the reverse sweep saves per iteration of each loop (`-- --nocapture` shows it).
    let n_loops = bytes_per_iteration(&f).len();
    let saved: Vec<usize> = bytes_per_iteration(&rev).into_iter().take(n_loops).collect();
    thread_local!(static REPORTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    if !REPORTED.with(|r| r.replace(true)) {
        let test = std::thread::current().name().unwrap_or("").trim_end_matches("::derivatives").to_string();
        println!("{test}: bytes saved per loop iteration {saved:?}");
    }
    cotan_ir::verify(&rev).unwrap_or_else(|e| panic!("reverse IR invalid: {e:?}"));
    let mut args: Vec<Arg> = match case.shape {
        Shape::Slice => vec![vec_arg(x), vec_arg(&vec![0.0; x.len()]), scal(w[0])],
        Shape::InPlace => vec![vec_arg(x), vec_arg(w)],
        Shape::SliceInts(n) => vec![vec_arg(x), vec_arg(&vec![0.0; x.len()]), ints(n), scal(w[0])],
        Shape::PtrLen => vec![vec_arg(x), vec_arg(&vec![0.0; x.len()]), len, scal(w[0])],
        Shape::PtrInPlace => vec![vec_arg(x), vec_arg(w), len],
        Shape::Scalars => x.iter().map(|v| scal(*v)).chain([scal(w[0])]).collect(),
    };
    let out = cotan_ir::run(&rev, &mut args).expect("interpreter runs the reverse derivative");
    let got = match case.shape {
        Shape::Slice | Shape::InPlace | Shape::SliceInts(_) | Shape::PtrLen | Shape::PtrInPlace => floats(&args[1]),
        Shape::Scalars => ret_f(&out)[1..].to_vec(),
    };
    agree("Jᵀ·w", &got, jtw);
}

/// `fn f(x: &[f64]) -> f64`, checked at each of the given points.
#[macro_export]
macro_rules! slice_case {
    ($test:ident, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Duplicated, Active)]
            #[cotan::autodiff_forward(fwd, Dual, Dual)]
            $($item)*

            #[test]
            fn derivatives() {
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::Slice,
                    primal: &|x| vec![f(x)],
                    jvp: &|x, u| { let (y, t) = fwd(x, u); (vec![y], vec![t]) },
                    vjp: &|x, w| { let mut g = vec![0.0; x.len()]; let y = rev(x, &mut g, w[0]); (vec![y], g) },
                };
                $( common::check(&case, &$pt); )+
                $({
                    let x: &[f64] = &$pt;
                    let mut g = vec![0.0; x.len()];
                    common::check_allocations(
                        case.src,
                        &mut || { std::hint::black_box(f(std::hint::black_box(x))); },
                        &mut || { std::hint::black_box(rev(std::hint::black_box(x), &mut g, 1.0)); },
                    );
                })+
            }
        }
    };
}

/// `fn f(x: f64, y: f64, ...) -> f64` with `N` parameters, checked at each point.
#[macro_export]
macro_rules! scalar_case {
    ($test:ident, 1, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Active, Active)]
            #[cotan::autodiff_forward(fwd, Dual, Dual)]
            $($item)*

            #[test]
            fn derivatives() {
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::Scalars,
                    primal: &|x| vec![f(x[0])],
                    jvp: &|x, u| { let (y, t) = fwd(x[0], u[0]); (vec![y], vec![t]) },
                    vjp: &|x, w| { let (y, g) = rev(x[0], w[0]); (vec![y], vec![g]) },
                };
                $( common::check(&case, &$pt); )+
            }
        }
    };
    ($test:ident, 2, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Active, Active, Active)]
            #[cotan::autodiff_forward(fwd, Dual, Dual, Dual)]
            $($item)*

            #[test]
            fn derivatives() {
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::Scalars,
                    primal: &|x| vec![f(x[0], x[1])],
                    jvp: &|x, u| { let (y, t) = fwd(x[0], u[0], x[1], u[1]); (vec![y], vec![t]) },
                    vjp: &|x, w| { let (y, g0, g1) = rev(x[0], x[1], w[0]); (vec![y], vec![g0, g1]) },
                };
                $( common::check(&case, &$pt); )+
            }
        }
    };
    ($test:ident, 3, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Active, Active, Active, Active)]
            #[cotan::autodiff_forward(fwd, Dual, Dual, Dual, Dual)]
            $($item)*

            #[test]
            fn derivatives() {
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::Scalars,
                    primal: &|x| vec![f(x[0], x[1], x[2])],
                    jvp: &|x, u| { let (y, t) = fwd(x[0], u[0], x[1], u[1], x[2], u[2]); (vec![y], vec![t]) },
                    vjp: &|x, w| { let (y, g0, g1, g2) = rev(x[0], x[1], x[2], w[0]); (vec![y], vec![g0, g1, g2]) },
                };
                $( common::check(&case, &$pt); )+
            }
        }
    };
}

/// `fn f(x: &mut [f64])`: F(x) is x's final contents.
#[macro_export]
macro_rules! inplace_case {
    ($test:ident, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Duplicated)]
            #[cotan::autodiff_forward(fwd, Dual)]
            $($item)*

            #[test]
            fn derivatives() {
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::InPlace,
                    primal: &|x| { let mut y = x.to_vec(); f(&mut y); y },
                    jvp: &|x, u| { let mut y = x.to_vec(); let mut t = u.to_vec(); fwd(&mut y, &mut t); (y, t) },
                    vjp: &|x, w| { let mut y = x.to_vec(); let mut g = w.to_vec(); rev(&mut y, &mut g); (y, g) },
                };
                $( common::check(&case, &$pt); )+
                $({
                    let x: &[f64] = &$pt;
                    let (mut y, mut z, mut g) = (x.to_vec(), x.to_vec(), x.to_vec());
                    common::check_allocations(
                        case.src,
                        &mut || { y.copy_from_slice(x); f(&mut y); },
                        &mut || { z.copy_from_slice(x); rev(&mut z, &mut g); },
                    );
                })+
            }
        }
    };
}

/// `fn f(x: &[f64], n: &[usize]) -> f64` with constant integers `n`, checked at each point.
#[macro_export]
macro_rules! slice_ints_case {
    ($test:ident, $ints:expr, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Duplicated, Const, Active)]
            #[cotan::autodiff_forward(fwd, Dual, Const, Dual)]
            $($item)*

            #[test]
            fn derivatives() {
                const N: &[usize] = &$ints;
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::SliceInts(N),
                    primal: &|x| vec![f(x, N)],
                    jvp: &|x, u| { let (y, t) = fwd(x, u, N); (vec![y], vec![t]) },
                    vjp: &|x, w| { let mut g = vec![0.0; x.len()]; let y = rev(x, &mut g, N, w[0]); (vec![y], g) },
                };
                $( common::check(&case, &$pt); )+
                $({
                    let x: &[f64] = &$pt;
                    let mut g = vec![0.0; x.len()];
                    common::check_allocations(
                        case.src,
                        &mut || { std::hint::black_box(f(std::hint::black_box(x), N)); },
                        &mut || { std::hint::black_box(rev(std::hint::black_box(x), &mut g, N, 1.0)); },
                    );
                })+
            }
        }
    };
}

/// A Hessian-vector product at a point of 6 inputs against central differences (step
/// 1e-5, tolerance 1e-6) of the gradient along the same direction, and its gradient against
/// the gradient's (1e-12); `hvp(x, v, g, hv)` writes the gradient and H·v.
pub fn check_hvp_against_gradient(
    grad: &dyn Fn(&[f64], &mut [f64]),
    hvp: &dyn Fn(&[f64], &[f64], &mut [f64], &mut [f64]),
) {
    let x: Vec<f64> = (0..6).map(|i| 0.4 + 0.3 * (i as f64).sin()).collect();
    let v: Vec<f64> = (0..6).map(|i| (i as f64 * 0.7).cos()).collect();
    let gradient = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        grad(x, &mut g);
        g
    };
    let mut g = vec![0.0; 6];
    let mut hv = vec![0.0; 6];
    hvp(&x, &v, &mut g, &mut hv);
    let h = 1e-5;
    let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    let fd: Vec<f64> = gradient(&xp).iter().zip(gradient(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect();
    for k in 0..6 {
        assert!((hv[k] - fd[k]).abs() <= 1e-6 * fd[k].abs().max(1.0), "hv[{k}]: {} vs {}", hv[k], fd[k]);
        assert!((g[k] - gradient(&x)[k]).abs() <= 1e-12 * g[k].abs().max(1.0), "g[{k}]");
    }
    assert!(hv.iter().any(|h| h.abs() > 1e-3), "the hvp is not trivially zero: {hv:?}");
}
