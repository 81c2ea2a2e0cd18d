//! The constructs of issue 11 at their edges: each either expands in every mode or is a
//! compile error that names the construct, never an "internal error" or a panic.

use cotan_expand::{derivative_source, Mode};

/// Expands `src` in forward and reverse mode with every float argument active.
fn expand(src: &str) -> Vec<Result<String, String>> {
    let func: syn::ItemFn = syn::parse_str(src).expect("the test source parses");
    let n = func.sig.inputs.len();
    let has_ret = !matches!(func.sig.output, syn::ReturnType::Default);
    let acts = |act: &str| {
        let mut a: Vec<&str> = func
            .sig
            .inputs
            .iter()
            .map(|arg| {
                let t = quote::ToTokens::to_token_stream(arg).to_string();
                if t.contains("f64") {
                    act
                } else {
                    "Const"
                }
            })
            .collect();
        if has_ret {
            a.push(if act == "Dual" { "Dual" } else { "Active" });
        }
        let _ = n;
        a.join(", ")
    };
    let rev = acts("Active").replace("Active", "ACT");
    // `&[f64]` parameters are `Duplicated` in reverse mode.
    let rev_acts: Vec<String> = func
        .sig
        .inputs
        .iter()
        .zip(rev.split(", "))
        .map(|(arg, a)| {
            let t = quote::ToTokens::to_token_stream(arg).to_string();
            if a == "ACT" && t.contains('&') {
                "Duplicated".into()
            } else {
                a.replace("ACT", "Active")
            }
        })
        .chain(has_ret.then(|| "Active".to_string()))
        .collect();
    let runs =
        [(Mode::Forward, format!("d, {}", acts("Dual"))), (Mode::Reverse, format!("d, {}", rev_acts.join(", ")))];
    runs.into_iter()
        .map(|(mode, attr)| derivative_source(mode, attr.parse().unwrap(), &func).map_err(|e| e.to_string()))
        .collect()
}

fn assert_no_internal_error(src: &str) {
    for r in expand(src) {
        if let Err(e) = r {
            assert!(!e.contains("internal error"), "{src}\n{e}");
        }
    }
}

#[test]
fn edges_never_end_in_internal_errors() {
    let cases = [
        "fn f(x: f64) -> f64 { let o = if x > 0.0 { Some((x, x)) } else { None }; o.unwrap().0 }",
        "fn f(x: f64) -> f64 { let g = |v: f64| { if v > 0.0 { return v; } 0.0 }; g(x) }",
        "fn f(x: &[f64]) -> f64 { let mut s = 0.0; for &v in x { let g = |w: f64| { if w > 1.0 { 1.0 } else { w } }; s += g(v); } s }",
        "fn f(x: f64) -> f64 { let id = |v| v; id(id(x)) }",
        "fn f(x: f64) -> f64 { let mk = |a: f64| { let inner = |b: f64| a * b; inner(a) }; mk(x) }",
        "fn f(x: f64) -> f64 { let t = (x, x); g(t) }",
        "fn f(x: &[f64]) -> f64 { let t = (x[0], x[1]); for (a, b) in t { } 0.0 }",
        "fn f(x: f64) -> f64 { match x { } }",
        "fn f(x: f64) -> f64 { let (a, b) = x; a }",
        "fn f(x: f64) -> f64 { let [a, b] = x; a }",
        "fn f(x: &[f64]) -> f64 { let [a, b] = *x; a }",
        "fn f(x: f64) -> (f64, f64) { x }",
        "fn f(x: f64) -> [f64; 2] { (x, x) }",
        "fn f(x: f64) -> f64 { let o: Option<f64> = None; o.unwrap_or(x) }",
        "fn f(x: f64) -> f64 { let o = None; if x > 0.0 { o.unwrap_or(x) } else { 0.0 } }",
        "fn f(x: &[f64]) -> f64 { x.iter().max_by_key(|v| 1usize).copied().unwrap_or(0.0) }",
        "fn f(x: &[f64]) -> f64 { x.iter().copied().max_by(|a, b| b.abs().partial_cmp(&a.abs()).unwrap()).unwrap() }",
        "fn f(x: &[f64]) -> f64 { x.iter().copied().max_by(|a, b| if a > b { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less }).unwrap() }",
        "fn f(x: &[f64]) -> f64 { x.iter().filter(|v| **v > 0.0).enumerate().map(|(i, v)| v * i as f64).sum() }",
        "fn f(x: &[f64]) -> f64 { x.iter().filter(|v| **v > 0.0).position(|v| *v > 1.0).unwrap_or(0) as f64 }",
        "fn f(x: &[f64]) -> f64 { let it = x.iter(); 0.0 }",
        "fn f(x: f64, m: Mode) -> f64 { match m { Mode::A(r) => r * x, _ => x } }",
        "fn f(x: f64, n: usize) -> f64 { match n { consts::LIMIT => x, _ => 0.0 } }",
        "fn f(x: f64) -> f64 { let m = Mode::A; match m { Mode::B(v) => v, _ => x } }",
        "fn f(x: f64) -> f64 { let m = Mode::A; m * x }",
        "fn f(x: f64) -> f64 { println!(\"{:1$}\", x, 5); x }",
        "fn f(x: f64) -> f64 { println!(\"{}\"); x }",
        "fn f(x: f64) -> f64 { let t = (x, 1.0); println!(\"{:?}\", t); x }",
        "fn f(x: f64) -> f64 { dbg!(x, x); x }",
        "fn f(x: f64) -> f64 { let mut t = (x, 1.0); t = (1.0, (2.0, 3.0)); t.0 }",
        "fn f(x: f64) -> f64 { let t = (x, 1.0); t.5 }",
        "fn f(x: f64) -> f64 { let t = (x, 1.0); t.0 = 2.0; t.0 }",
        "fn f(x: f64) -> f64 { let f = |a: f64, b: f64| a * b; f(x) }",
        "fn f(x: &[f64]) -> f64 { let f = |a: f64| a; x.iter().map(f).sum() }",
        "fn f(x: f64) -> f64 { let y; if x > 0.0 { y = (x, x); } else { y = (0.0, 0.0); } y.0 }",
        "fn f(x: f64) -> f64 { let Some(v) = Some(x) else { panic!() }; v }",
        "fn f(x: f64) -> f64 { if let Some(v) = x { v } else { 0.0 } }",
        "fn f(x: f64) -> f64 { matches!(x, Some(_)) as i32 as f64 }",
        "fn f(x: f64) -> f64 { let mut o = Some(x); o = None; o.unwrap_or(1.0) }",
        "fn f(x: f64) -> f64 { unimplemented!() }",
        "fn f(x: f64) -> (f64, f64) { todo!() }",
        "fn f(x: [f64; 2]) -> f64 { x[0] * x[1] }",
        "fn f(x: &[f64]) -> f64 { let v: Vec<f64> = x.iter().copied().filter(|v| *v > 0.0).map(|v| v * 2.0).collect(); v.iter().sum() }",
        "fn f(x: &mut [f64]) { for e in x.iter() { *e = 1.0; } }",
        "fn f(x: &[f64]) { for e in x { *e = 1.0; } }",
        "fn f(x: f64) -> f64 { let mut a = x; let b = 2.0; std::mem::swap(&mut a, &mut b); a }",
        "fn f(x: f64) -> f64 { let w = |v: f64| v; let c = w; c(x) }",
    ];
    for src in cases {
        assert_no_internal_error(src);
    }
}

/// Raw pointers at their edges: pointer parameters `Dual` in forward mode and `Duplicated`
/// in reverse mode, floats `Dual`/`Active`, the rest `Const`.
#[test]
fn pointer_edges_never_end_in_internal_errors() {
    let cases = [
        "fn f(x: *const f64) -> f64 { unsafe { *x.add(1) } }",
        "unsafe fn f(x: *const f64) -> f64 { *x * *x.add(1).add(2) }",
        "fn f(x: *const [f64; 2]) -> f64 { unsafe { (*x)[0] * (&*x)[1] + *(*x).get_unchecked(1) } }",
        "fn f(x: *mut [f64; 2]) { unsafe { *x = [1.0, 2.0]; } }",
        "fn f(x: *mut [f64; 2]) { unsafe { let a = *x; (*x)[1] = a[0] * a[1]; } }",
        "fn f(x: *const f64) -> f64 { unsafe { (*x.cast::<[f64; 2]>())[0] } }",
        "fn f(x: *const f64) -> f64 { unsafe { x.is_null() as i32 as f64 } }",
        "fn f(x: *const f64, n: usize) -> f64 { unsafe { std::slice::from_raw_parts(x, n).iter().sum() } }",
        "fn f(x: *mut f64, n: usize) { unsafe { let s = std::slice::from_raw_parts_mut(x, n); s.fill(1.0) } }",
        "fn f(x: *const f64, n: usize) -> f64 { let s = unsafe { std::slice::from_raw_parts(x, n) }; s[1..].iter().sum::<f64>() * s[0] }",
        "fn f(x: *const f64) -> f64 { let p = x; unsafe { *p } }",
        "fn f(x: &[f64]) -> f64 { let p = x.as_ptr(); unsafe { *p.add(1) + *x.get_unchecked(0) } }",
        "fn f(x: *const f64) -> f64 { let a = [1.0f64, 2.0]; unsafe { *a.as_ptr() * *x } }",
        "fn f(x: *mut f64) -> f64 { let r = unsafe { &mut *x }; *r = 2.0 * *r; *r }",
        "fn f(x: *const f64) -> f64 { unsafe { *x.offset(-1) + *x.sub(1) } }",
        "fn f(x: *const f64) -> f64 { unsafe { let mut q = x; q = q.add(1); *q } }",
        "fn f(x: *const f64) -> f64 { let mut q = x; unsafe { *q } }",
        "fn f(x: *const i32, y: *const f64) -> f64 { unsafe { *y * *x as f64 } }",
        "fn f(x: *const f64) -> f64 { unsafe { std::ptr::read(x) } }",
        "fn f(x: *mut f64) { unsafe { std::ptr::write(x, 1.0 + *x) } }",
        "fn f(x: *mut f64) { unsafe { std::ptr::swap(x, x) } }",
        "fn f(x: *const f64) { unsafe { std::ptr::swap(x, x) } }",
        "fn f(x: *mut f64, y: *const f64) { unsafe { std::ptr::copy_nonoverlapping(y, x, 2) } }",
        "fn f(x: *mut f64, y: *const f64) { unsafe { std::ptr::copy_nonoverlapping(x, y, 2) } }",
        "fn f(x: *const f64) -> f64 { unsafe { *(x as *mut f64) } }",
        "fn f(x: *const f64) -> f64 { unsafe { (*(x as *const [f64; 2]))[1] } }",
        "fn f(x: *const f64) -> f64 { unsafe { *(x as *const i32) as f64 } }",
        "fn f(x: f64) -> f64 { let p = &x as *const f64; unsafe { *p } }",
        "fn f(x: &mut [f64]) { unsafe { *x.get_unchecked_mut(0) = 2.0 * x[1]; } }",
        "fn f(x: &mut [f64]) { unsafe { *x.get_unchecked_mut(0..1) = 2.0; } }",
        "fn f(x: &mut [f64]) { let p = x.as_mut_ptr(); unsafe { *p = x[1] * *p.add(1); } }",
        "fn f(x: &[f64]) { let p = x.as_mut_ptr(); }",
        "fn f(x: &mut f64) -> f64 { let p = x as *mut f64; unsafe { *p *= 2.0; *p } }",
        "fn f(x: *const f64) -> f64 { unsafe { x.read() + x.add(1).read() } }",
        "fn f(x: *mut f64) { unsafe { x.add(1).write(*x); x.write(0.5); } }",
        "fn f(x: *const f64) { unsafe { x.write(0.5); } }",
        "fn f(x: *const f64) -> f64 { unsafe { x.read_volatile() } }",
        "fn f(x: f64) -> f64 { x.add(1.0) }",
        "unsafe fn f(x: *mut f64, n: usize) { for i in 0..n { *x.add(i) = (*x.add(i)).sin(); } }",
        "fn f(x: *const f64, n: usize) -> f64 { unsafe { let mut s = 0.0; for i in 0..n { if *x.add(i) > 0.0 { s += *x.add(i); } } s } }",
        "fn f(s: &S) -> f64 { unsafe { *s.p * 2.0 } }",
        "fn f(x: *const f64) -> f64 { let s = [x]; 0.0 }",
        "fn f(x: *const f64) -> f64 { let t = (x, 1.0); unsafe { *t.0 } }",
        "fn f(x: *const f64) -> f64 { let c = |i: usize| unsafe { *x.add(i) }; c(0) * c(1) }",
        "fn f(x: *const f64, n: usize) -> f64 { (0..n).map(|i| unsafe { *x.add(i) }).sum() }",
        "fn f(x: *mut f64, n: usize) { let s = unsafe { std::slice::from_raw_parts_mut(x, n) }; for e in s.iter_mut() { *e *= 2.0; } }",
        "fn f(x: *mut f64, n: usize) { let s = unsafe { std::slice::from_raw_parts_mut(x, n) }; let (a, b) = s.split_at_mut(1); a[0] += b[0]; }",
        "fn f(x: *const f64) -> f64 { if x == x { 1.0 } else { 0.0 } }",
        "fn f(x: *mut f64) { unsafe { *x.add(1) = *x; *x.add(1) -= 1.0; } }",
    ];
    for src in cases {
        let func: syn::ItemFn = syn::parse_str(src).expect("the test source parses");
        let has_ret = !matches!(func.sig.output, syn::ReturnType::Default);
        let act = |arg: &syn::FnArg, fwd: bool| {
            let t = quote::ToTokens::to_token_stream(arg).to_string();
            match (t.contains('*') || t.contains('&'), t.contains("f64"), fwd) {
                (_, false, _) => "Const",
                (true, true, true) | (false, true, true) => "Dual",
                (true, true, false) => "Duplicated",
                (false, true, false) => "Active",
            }
        };
        for (mode, fwd, ret) in [(Mode::Forward, true, "Dual"), (Mode::Reverse, false, "Active")] {
            let mut acts: Vec<&str> = func.sig.inputs.iter().map(|a| act(a, fwd)).collect();
            if has_ret {
                acts.push(ret);
            }
            let attr = format!("d, {}", acts.join(", "));
            if let Err(e) = derivative_source(mode, attr.parse().unwrap(), &func) {
                let e = e.to_string();
                assert!(!e.contains("internal error") && !e.contains("__cotan"), "{src}\n{e}");
            }
        }
    }
}
