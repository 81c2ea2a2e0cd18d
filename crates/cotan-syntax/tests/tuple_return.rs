//! Functions returning a tuple of scalars (custom reverse rules, as users write them).

use cotan_ir::{run, Arg, Val};

fn lower(src: &str) -> syn::Result<cotan_ir::Function> {
    let f: syn::ItemFn = syn::parse_str(src).unwrap();
    cotan_syntax::lower_fn(&f.sig, &f.block).map(|l| l.func)
}

#[test]
fn tuple_tail_is_lowered_to_several_results() {
    let f = lower("fn r(x: f64, dret: f64) -> (f64, f64) { let t = x.tanh(); (t, (1.0 - t * t) * dret) }").unwrap();
    assert_eq!(f.returns.len(), 2);
    cotan_ir::verify(&f).unwrap();
    let out = run(&f, &mut [Arg::Scalar(Val::F64(0.5)), Arg::Scalar(Val::F64(2.0))]).unwrap();
    let t = 0.5f64.tanh();
    assert_eq!(out, vec![Val::F64(t), Val::F64((1.0 - t * t) * 2.0)]);
}

#[test]
fn final_return_of_a_tuple_and_mixed_types() {
    let f = lower("fn r(x: f64, n: usize) -> (f64, usize) { let y = x * 2.0; return (y, n + 1); }").unwrap();
    let out = run(&f, &mut [Arg::Scalar(Val::F64(1.5)), Arg::Scalar(Val::Int(3, cotan_ir::Scalar::Usize))]).unwrap();
    assert_eq!(out, vec![Val::F64(3.0), Val::Int(4, cotan_ir::Scalar::Usize)]);
}

#[test]
fn early_returns_of_tuples_run() {
    let f = lower("fn r(x: f64) -> (f64, f64) { if x > 0.0 { return (x, x); } (x, 0.0) }").unwrap();
    assert_eq!(run(&f, &mut [Arg::Scalar(Val::F64(2.0))]).unwrap(), vec![Val::F64(2.0), Val::F64(2.0)]);
    assert_eq!(run(&f, &mut [Arg::Scalar(Val::F64(-1.0))]).unwrap(), vec![Val::F64(-1.0), Val::F64(0.0)]);
}

#[test]
fn a_tuple_of_the_wrong_arity_is_an_error() {
    let e = lower("fn r(x: f64) -> (f64, f64) { (x, x, x) }").err().unwrap();
    assert!(e.to_string().contains("a tuple of 2 numbers"), "{e}");
}

#[test]
fn lower_fn_lowers_tuple_and_array_results_flat() {
    let f: syn::ItemFn =
        syn::parse_str("fn r(x: f64) -> (f64, f64) { if x < 0.0 { return (0.0, x); } (x, x * x) }").unwrap();
    let l = cotan_syntax::lower_fn(&f.sig, &f.block).unwrap();
    assert_eq!(l.ret_shape, Some(cotan_syntax::ResultShape::Tuple));
    cotan_ir::verify(&l.func).unwrap();
    let out = run(&l.func, &mut [Arg::Scalar(Val::F64(3.0))]).unwrap();
    assert_eq!(out, vec![Val::F64(3.0), Val::F64(9.0)]);
    let out = run(&l.func, &mut [Arg::Scalar(Val::F64(-2.0))]).unwrap();
    assert_eq!(out, vec![Val::F64(0.0), Val::F64(-2.0)]);
    let f: syn::ItemFn = syn::parse_str("fn r(x: f64) -> [f64; 3] { let mut a = [x; 3]; a[1] = 2.0 * x; a }").unwrap();
    let l = cotan_syntax::lower_fn(&f.sig, &f.block).unwrap();
    assert_eq!(l.ret_shape, Some(cotan_syntax::ResultShape::Array));
    let out = run(&l.func, &mut [Arg::Scalar(Val::F64(1.5))]).unwrap();
    assert_eq!(out, vec![Val::F64(1.5), Val::F64(3.0), Val::F64(1.5)]);
    let f: syn::ItemFn = syn::parse_str("fn r(x: f64) -> Vec<f64> { vec![x] }").unwrap();
    let e = cotan_syntax::lower_fn(&f.sig, &f.block).err().unwrap();
    assert!(e.to_string().contains("a tuple of numbers or an array"), "{e}");
}
