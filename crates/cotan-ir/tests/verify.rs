//! The verifier accepts well-formed functions and explains what is wrong with broken ones.

mod common;

use common::*;
use cotan_ir::*;

#[test]
fn accepts_samples() {
    for f in [
        rosenbrock(),
        branch(),
        sum_sin(),
        find_first(),
        halve(),
        reverse_copy(),
        visit(false, true),
        add(Scalar::I64),
        index(),
        kitchen_sink(),
    ] {
        if let Err(errors) = verify(&f) {
            let errors: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            panic!("{} rejected:\n{}\n{f}", f.name, errors.join("\n"));
        }
    }
}

/// The single error reported for `f`, as text.
fn single_error(f: &Function) -> String {
    match verify(f) {
        Ok(()) => panic!("accepted:\n{f}"),
        Err(errors) => {
            assert_eq!(errors.len(), 1, "{errors:#?}");
            errors[0].to_string()
        }
    }
}

fn f64_fn(build_body: impl FnOnce(&mut Builder, Value)) -> Function {
    let mut f = Function::new("f");
    let x = f.add_param(Ty::F64, "x", SpanId::NONE);
    build(&mut f, |b| {
        build_body(b, x);
        vec![]
    });
    f
}

#[test]
fn use_before_definition() {
    let mut f = f64_fn(|b, x| {
        let one = b.float(1.0, Scalar::F64);
        b.binary(BinOp::Add, x, one);
    });
    f.body.ops.swap(0, 1);
    assert_eq!(single_error(&f), "`%2: f64 = add %0, %1`: uses %1 before its definition");
}

#[test]
fn inner_value_used_outside() {
    let mut inner = None;
    let f = f64_fn(|b, x| {
        let t = b.bool(true);
        let then_region = region(b, |b| inner = Some(b.unary(UnOp::Neg, x)));
        b.effect(OpKind::If { cond: t, then_region, else_region: Region::default() });
        b.binary(BinOp::Mul, inner.unwrap(), x);
    });
    assert_eq!(single_error(&f), "`%3: f64 = mul %2, %0`: uses %2 outside the region that defines it");
}

#[test]
fn loop_index_outside_body() {
    let mut index = None;
    let f = f64_fn(|b, _| {
        let zero = b.int(0, Scalar::Usize);
        for_loop(b, zero, zero, None, false, false, None, |_, i| index = Some(i));
        b.cast(index.unwrap(), Scalar::F64);
    });
    assert!(single_error(&f).contains("uses %2 outside the region that defines it"));
}

#[test]
fn type_mismatch() {
    let f = f64_fn(|b, x| {
        let y = b.float(1.0, Scalar::F32);
        b.binary(BinOp::Add, x, y);
    });
    assert_eq!(single_error(&f), "`%2: f64 = add %0, %1`: right operand %1 is f32, expected f64");
}

#[test]
fn store_to_shared_memory() {
    let mut f = Function::new("f");
    let x = f.add_param(slice(Scalar::F64), "x", SpanId::NONE);
    build(&mut f, |b| {
        let zero = b.int(0, Scalar::Usize);
        let v = b.float(1.0, Scalar::F64);
        store(b, x, Some(zero), v);
        vec![]
    });
    assert_eq!(single_error(&f), "`store %0[%1], %2`: writes to %0, which is shared memory (&[f64])");
}

#[test]
fn memory_access_shapes() {
    let mut f = Function::new("f");
    let c = f.add_param(mem(Scalar::F64, MemKind::Cell, Access::Mut), "c", SpanId::NONE);
    let x = f.add_param(slice_mut(Scalar::F32), "x", SpanId::NONE);
    build(&mut f, |b| {
        let i = b.int(0, Scalar::I32);
        b.op(OpKind::Load { mem: c, index: Some(i) }, Ty::F64);
        b.op(OpKind::Load { mem: x, index: Some(i) }, Ty::F32);
        b.op(OpKind::Load { mem: x, index: None }, Ty::F32);
        b.op(OpKind::Load { mem: x, index: Some(i) }, Ty::F64);
        b.op(OpKind::Len(c), Ty::USIZE);
        vec![]
    });
    let errors: Vec<String> = verify(&f).unwrap_err().iter().map(|e| e.message.clone()).collect();
    assert_eq!(
        errors,
        [
            "a cell is accessed without an index",
            "index %2 is i32, expected usize",
            "an array is accessed with an index",
            "index %2 is i32, expected usize",
            "%0 is a cell, which has no length",
        ]
    );
}

#[test]
fn while_condition_rules() {
    let f = f64_fn(|b, x| {
        let v = decl(b, "v", x);
        let outside = b.bool(true);
        let cond_region = region(b, |b| set(b, v, x));
        b.effect(OpKind::While { cond_region, cond: outside, body: Region::default(), exit: Some(v) });
    });
    let errors: Vec<String> = verify(&f).unwrap_err().iter().map(|e| e.to_string()).collect();
    assert_eq!(
        errors,
        [
            "`while exit $0 {`: exit var $0 is not a bool",
            "`set $0, %0`: a while loop's condition region may not write memory, vars or the tape",
            "`while exit $0 {`: the condition %1 is not defined at the top level of the condition region",
        ]
    );
}

#[test]
fn return_placement_and_types() {
    let mut f = Function::new("f");
    let x = f.add_param(Ty::F64, "x", SpanId::NONE);
    build(&mut f, |b| {
        let t = b.bool(true);
        let then_region = region(b, |b| b.effect(OpKind::Return(vec![x])));
        b.effect(OpKind::If { cond: t, then_region, else_region: Region::default() });
        b.effect(OpKind::Return(vec![t]));
        vec![Ty::F64]
    });
    let errors: Vec<String> = verify(&f).unwrap_err().iter().map(|e| e.to_string()).collect();
    assert_eq!(
        errors,
        [
            "`return %0`: `return` may only be the last op of the function's body",
            "`return %1`: returns (bool) but the function returns (f64)",
        ]
    );
    f.body.ops.pop();
    let errors: Vec<String> = verify(&f).unwrap_err().iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.last().unwrap(), "the function returns (f64) but its body does not end with `return`");
}

#[test]
fn defined_twice() {
    let mut f = f64_fn(|b, x| {
        b.unary(UnOp::Neg, x);
    });
    let op = f.body.ops[0].clone();
    f.body.ops.push(op);
    assert_eq!(single_error(&f), "`%1: f64 = neg %0`: defines %1, which is already defined elsewhere");
}

#[test]
fn misc_type_rules() {
    let mut f = Function::new("f");
    let x = f.add_param(Ty::F64, "x", SpanId::NONE);
    let v = f.add_param(mem(Scalar::F64, MemKind::Vec, Access::Mut), "v", SpanId::NONE);
    build(&mut f, |b| {
        let k = b.float(2.0, Scalar::F64);
        b.math(MathFn::Powi, vec![x, k]);
        b.math(MathFn::Atan2, vec![x]);
        let t = b.bool(true);
        let i = b.int(1, Scalar::I64);
        b.op(OpKind::Select(t, x, i), Ty::F64);
        b.op(OpKind::Cmp(CmpOp::Lt, x, k), Ty::F64);
        b.cast(t, Scalar::F64);
        b.int(300, Scalar::U8);
        let n = b.int(3, Scalar::Usize);
        b.op(OpKind::Alloc { len: n, init: x }, mem(Scalar::F64, MemKind::Vec, Access::Mut));
        b.effect(OpKind::Fill { mem: v, value: i, resize: None });
        b.effect(OpKind::Assert { cond: x, message: "x".into() });
        b.op(OpKind::Pop, mem(Scalar::F64, MemKind::Vec, Access::Owned));
        b.effect(OpKind::Push(v));
        b.unary(UnOp::Neg, n);
        vec![]
    });
    let errors: Vec<String> = verify(&f).unwrap_err().iter().map(|e| e.message.clone()).collect();
    assert_eq!(
        errors,
        [
            "argument 1 %2 is f64, expected i32",
            "atan2 takes 2 arguments, not 1",
            "second arm %6 is i64, expected f64",
            "a comparison's result is bool, not f64",
            "cannot cast bool to f64",
            "300 does not fit in u8",
            "allocates a &mut Vec<f64>; only owned Vec<T> and [T; N] can be allocated",
            "fill value %6 is i64, expected f64",
            "condition %0 is f64, expected bool",
            "pops memory; only scalars go on the tape",
            "pushed value %1 is memory (&mut Vec<f64>), not a scalar",
            "cannot apply `neg` to usize",
        ]
    );
}

#[test]
fn undefined_operand_index() {
    let f = f64_fn(|b, x| {
        b.effect(OpKind::SetVar(Var(5), x));
        b.op(OpKind::Unary(UnOp::Neg, Value(99)), Ty::F64);
    });
    let errors: Vec<String> = verify(&f).unwrap_err().iter().map(|e| e.to_string()).collect();
    assert_eq!(
        errors,
        [
            "`set $5, %0`: $5 is not in the function's var table",
            "`%1: f64 = neg %99`: uses %99, which is not in the function's value table",
        ]
    );
}
