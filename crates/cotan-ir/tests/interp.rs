//! The reference interpreter computes what Rust computes, and fails where Rust panics.

mod common;

use common::*;
use cotan_ir::*;

fn f64s(xs: &[f64]) -> Arg {
    Arg::Mem(xs.iter().map(|&x| Val::F64(x)).collect())
}

fn f64_result(f: &Function, args: &mut [Arg]) -> f64 {
    let r = run(f, args).unwrap_or_else(|e| panic!("{e}\n{f}"));
    assert_eq!(r.len(), 1);
    r[0].as_f64().unwrap()
}

fn one_usize(b: &mut Builder) -> Value {
    b.int(1, Scalar::Usize)
}

fn usize_val(n: usize) -> Val {
    Val::Int(n as i128, Scalar::Usize)
}

#[test]
fn straight_line_arithmetic() {
    let f = rosenbrock();
    let (x, y) = (0.3_f64, -1.7_f64);
    let expected = (1.0 - x).powi(2) + 100.0 * ((y - x * x) * (y - x * x));
    assert_eq!(f64_result(&f, &mut [Arg::Scalar(Val::F64(x)), Arg::Scalar(Val::F64(y))]), expected);
}

#[test]
fn if_else() {
    let f = branch();
    assert_eq!(f64_result(&f, &mut [Arg::Scalar(Val::F64(-3.0))]), 3.0);
    assert_eq!(f64_result(&f, &mut [Arg::Scalar(Val::F64(2.5))]), 5.0);
}

#[test]
fn loop_sum_of_sines() {
    let xs: Vec<f64> = (0..100).map(|i| (i as f64 * 0.37).cos() * 3.0).collect();
    let expected: f64 = xs.iter().fold(0.0, |s, x| s + x.sin());
    let got = f64_result(&sum_sin(), &mut [f64s(&xs)]);
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
}

#[test]
fn for_with_exit_var() {
    let f = find_first();
    let xs = [0.5, 1.0, 4.0, 2.0, 5.0];
    let found = |t: f64| run(&f, &mut [f64s(&xs), Arg::Scalar(Val::F64(t))]).unwrap();
    assert_eq!(found(1.5), vec![usize_val(2)]);
    assert_eq!(found(0.0), vec![usize_val(0)]);
    assert_eq!(found(9.0), vec![usize_val(5)]);
}

#[test]
fn while_loop_and_several_results() {
    let r = run(&halve(), &mut [Arg::Scalar(Val::F64(20.0))]).unwrap();
    assert_eq!(r, vec![Val::F64(0.625), usize_val(5)]);
}

#[test]
fn tape_and_in_place_outputs() {
    let f = reverse_copy();
    let mut args = [f64s(&[1.0, 2.0, 3.0]), f64s(&[0.0; 3])];
    assert_eq!(run(&f, &mut args).unwrap(), vec![]);
    assert_eq!(args[0], f64s(&[1.0, 2.0, 3.0]));
    assert_eq!(args[1], f64s(&[3.0, 2.0, 1.0]));
}

#[test]
fn loops_visit_the_indices_rust_visits() {
    let cases =
        [(0, 10, 3), (0, 9, 3), (-7, 8, 4), (5, 5, 1), (5, 4, 2), (-3, 3, 1), (2, 3, 100), (i32::MAX - 5, i32::MAX, 2)];
    for (lo, hi, step) in cases {
        for (inclusive, reverse) in [(false, false), (false, true), (true, false), (true, true)] {
            let expected: Vec<i32> = match (inclusive, reverse) {
                (false, false) => (lo..hi).step_by(step as usize).collect(),
                (false, true) => (lo..hi).step_by(step as usize).rev().collect(),
                (true, false) => (lo..=hi).step_by(step as usize).collect(),
                // `StepBy<RangeInclusive<i32>>` is not double-ended; reverse the same indices.
                (true, true) => (lo..=hi).step_by(step as usize).collect::<Vec<_>>().into_iter().rev().collect(),
            };
            let int = |i: i32| Val::Int(i as i128, Scalar::I32);
            let mut args =
                [Arg::Scalar(int(lo)), Arg::Scalar(int(hi)), Arg::Scalar(int(step)), Arg::Mem(vec![int(-1); 20])];
            let count = run(&visit(inclusive, reverse), &mut args).unwrap();
            let Arg::Mem(out) = &args[3] else { unreachable!() };
            let got: Vec<i32> = out[..expected.len()].iter().map(|v| v.as_int().unwrap() as i32).collect();
            assert_eq!(count, vec![usize_val(expected.len())]);
            assert_eq!(got, expected, "{lo}..{hi} step {step} inclusive {inclusive} reverse {reverse}");
        }
    }
}

#[test]
fn zero_step_is_an_error() {
    let int = |i: i128| Arg::Scalar(Val::Int(i, Scalar::I32));
    let e = run(&visit(false, false), &mut [int(0), int(3), int(0), Arg::Mem(vec![])]).unwrap_err();
    assert!(e.message.contains("positive step"), "{e}");
}

#[test]
fn integer_overflow_is_an_error() {
    let u8s = |a, b| [Arg::Scalar(Val::Int(a, Scalar::U8)), Arg::Scalar(Val::Int(b, Scalar::U8))];
    assert_eq!(run(&add(Scalar::U8), &mut u8s(200, 55)).unwrap(), vec![Val::Int(255, Scalar::U8)]);
    let e = run(&add(Scalar::U8), &mut u8s(200, 56)).unwrap_err();
    assert_eq!(e.message, "attempt to add with overflow (u8)");
    assert_eq!(e.to_string(), "attempt to add with overflow (u8) (in `%2: u8 = add %0, %1`)");
    let i64s =
        |a: i64, b: i64| [Arg::Scalar(Val::Int(a.into(), Scalar::I64)), Arg::Scalar(Val::Int(b.into(), Scalar::I64))];
    assert!(run(&add(Scalar::I64), &mut i64s(i64::MIN, -1)).is_err());
    assert_eq!(
        run(&add(Scalar::I64), &mut i64s(i64::MIN, 1)).unwrap(),
        vec![Val::Int(i64::MIN as i128 + 1, Scalar::I64)]
    );
}

#[test]
fn out_of_bounds_is_an_error() {
    let f = index();
    let mut args = [f64s(&[1.0, 2.0]), Arg::Scalar(usize_val(1))];
    assert_eq!(run(&f, &mut args).unwrap(), vec![Val::F64(2.0)]);
    let mut args = [f64s(&[1.0, 2.0]), Arg::Scalar(usize_val(2))];
    let e = run(&f, &mut args).unwrap_err();
    assert_eq!(e.message, "index out of bounds: the len is 2 but the index is 2");
    // The buffer is handed back even after an error.
    assert_eq!(args[0], f64s(&[1.0, 2.0]));
}

/// Runs a function of one parameter of type `from` computing a single op on it.
fn unary_op(
    from: Scalar,
    to: Scalar,
    arg: Val,
    op: impl FnOnce(&mut Builder, Value) -> Value,
) -> Result<Val, InterpError> {
    let mut f = Function::new("op");
    let x = f.add_param(Ty::Scalar(from), "x", SpanId::NONE);
    build(&mut f, |b| {
        let r = op(b, x);
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::Scalar(to)]
    });
    verify(&f).unwrap();
    run(&f, &mut [Arg::Scalar(arg)]).map(|r| r[0])
}

#[test]
fn casts_follow_rust() {
    let cast = |from: Scalar, to: Scalar, v: Val| unary_op(from, to, v, |b, x| b.cast(x, to)).unwrap();
    use Scalar::*;
    assert_eq!(cast(F64, U8, Val::F64(300.7)), Val::Int(300.7f64 as u8 as i128, U8));
    assert_eq!(cast(F64, I8, Val::F64(-1e9)), Val::Int(-128, I8));
    assert_eq!(cast(F64, I32, Val::F64(f64::NAN)), Val::Int(0, I32));
    assert_eq!(cast(F32, U64, Val::F32(-2.5)), Val::Int(0, U64));
    assert_eq!(cast(F64, I64, Val::F64(-2.9)), Val::Int(-2, I64));
    assert_eq!(cast(I32, U8, Val::Int(-1, I32)), Val::Int(255, U8));
    assert_eq!(cast(U16, I8, Val::Int(200, U16)), Val::Int(200u16 as i8 as i128, I8));
    assert_eq!(cast(U64, F32, Val::Int(u64::MAX as i128, U64)), Val::F32(u64::MAX as f32));
    assert_eq!(cast(I64, F64, Val::Int(-(1 << 60) - 1, I64)), Val::F64((-(1i64 << 60) - 1) as f64));
    assert_eq!(cast(Bool, Usize, Val::Bool(true)), Val::Int(1, Usize));
    assert_eq!(cast(F64, F32, Val::F64(0.1)), Val::F32(0.1f64 as f32));
}

#[test]
fn integer_ops_follow_rust() {
    use Scalar::*;
    let bin = |s: Scalar, op: BinOp, a: i128, c: i128| {
        let mut f = Function::new("op");
        let x = f.add_param(Ty::Scalar(s), "a", SpanId::NONE);
        let y = f.add_param(Ty::Scalar(s), "b", SpanId::NONE);
        build(&mut f, |b| {
            let r = b.binary(op, x, y);
            b.effect(OpKind::Return(vec![r]));
            vec![Ty::Scalar(s)]
        });
        run(&f, &mut [Arg::Scalar(Val::Int(a, s)), Arg::Scalar(Val::Int(c, s))]).map(|r| r[0].as_int().unwrap())
    };
    assert_eq!(bin(I32, BinOp::Div, -7, 2), Ok(-3));
    assert_eq!(bin(I32, BinOp::Rem, -7, 2), Ok(-1));
    assert!(bin(I32, BinOp::Div, 1, 0).unwrap_err().message.contains("divide by zero"));
    assert!(bin(I32, BinOp::Div, i32::MIN.into(), -1).is_err());
    assert!(bin(I32, BinOp::Rem, i32::MIN.into(), -1).is_err());
    assert_eq!(bin(I8, BinOp::Shl, 0x41, 2), Ok(0x41i8.wrapping_shl(2).into()));
    assert_eq!(bin(I16, BinOp::Shr, -64, 3), Ok(-8));
    assert!(bin(U32, BinOp::Shl, 1, 32).unwrap_err().message.contains("shift left with overflow"));
    assert_eq!(bin(U8, BinOp::BitXor, 0b1100, 0b1010), Ok(0b0110));
    assert!(bin(U64, BinOp::Sub, 0, 1).is_err());
    assert!(bin(U64, BinOp::Mul, u64::MAX.into(), u64::MAX.into()).is_err());
    let not = unary_op(U8, U8, Val::Int(5, U8), |b, x| b.unary(UnOp::Not, x)).unwrap();
    assert_eq!(not, Val::Int((!5u8).into(), U8));
    let neg = unary_op(I8, I8, Val::Int(-128, I8), |b, x| b.unary(UnOp::Neg, x));
    assert!(neg.unwrap_err().message.contains("negate with overflow"));
}

#[test]
fn float_math_follows_std() {
    let x = 0.7_f64;
    let call = |m: MathFn, extra: &[f64]| {
        let mut f = Function::new("m");
        let p = f.add_param(Ty::F64, "x", SpanId::NONE);
        build(&mut f, |b| {
            let mut args = vec![p];
            args.extend(extra.iter().map(|&e| b.float(e, Scalar::F64)));
            let r = b.math(m, args);
            b.effect(OpKind::Return(vec![r]));
            vec![Ty::F64]
        });
        run(&f, &mut [Arg::Scalar(Val::F64(x))]).map(|r| r[0].as_f64().unwrap())
    };
    assert_eq!(call(MathFn::Log, &[3.0]), Ok(x.log(3.0)));
    assert_eq!(call(MathFn::Atan2, &[-2.0]), Ok(x.atan2(-2.0)));
    assert_eq!(call(MathFn::MulAdd, &[2.0, 1.0]), Ok(x.mul_add(2.0, 1.0)));
    assert_eq!(call(MathFn::Hypot, &[2.0]), Ok(x.hypot(2.0)));
    assert_eq!(call(MathFn::Max, &[f64::NAN]), Ok(x));
    assert_eq!(call(MathFn::Clamp, &[0.0, 0.5]), Ok(0.5));
    assert!(call(MathFn::Clamp, &[1.0, 0.5]).is_err());
    assert_eq!(call(MathFn::Signum, &[]), Ok(1.0));
    let powi = unary_op(Scalar::F32, Scalar::F32, Val::F32(1.1), |b, x| {
        let n = b.int(-3, Scalar::I32);
        b.math(MathFn::Powi, vec![x, n])
    });
    assert_eq!(powi, Ok(Val::F32(1.1f32.powi(-3))));
    // f32 arithmetic is done in f32.
    let third = unary_op(Scalar::F32, Scalar::F32, Val::F32(1.0), |b, x| {
        let three = b.float(3.0, Scalar::F32);
        b.binary(BinOp::Div, x, three)
    });
    assert_eq!(third, Ok(Val::F32(1.0f32 / 3.0)));
}

#[test]
fn kitchen_sink_runs() {
    let f = kitchen_sink();
    let f32s = |xs: &[f32]| Arg::Mem(xs.iter().map(|&x| Val::F32(x)).collect());
    let mut args = [
        Arg::Scalar(Val::F64(0.5)),
        f64s(&[2.0]),
        f32s(&[0.0, 0.0, 0.0]),
        f64s(&[9.0]),
        f64s(&[4.0]),
        Arg::Mem(vec![Val::Int(-1, Scalar::I64)]),
        Arg::Mem((0..7).map(|i| Val::Int(i, Scalar::U8)).collect()),
        Arg::Scalar(Val::Int(3, Scalar::I32)),
    ];
    let r = run(&f, &mut args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r, vec![Val::F64(0.5), Val::F32(0.5), Val::Bool(true)]);
    assert_eq!(args[2], f32s(&[0.5; 3]));
    assert_eq!(args[3], f64s(&[2.0]));
    assert_eq!(args[4], f64s(&[4.0]));
}

#[test]
fn alloc_fill_and_assert() {
    let mut f = Function::new("alloc");
    let n = f.add_param(Ty::USIZE, "n", SpanId::NONE);
    build(&mut f, |b| {
        let one = b.float(1.0, Scalar::F64);
        let v = b.op(OpKind::Alloc { len: n, init: one }, mem(Scalar::F64, MemKind::Vec, Access::Owned));
        let two = b.float(2.0, Scalar::F64);
        b.effect(OpKind::Fill { mem: v, value: two, resize: None });
        let l = len(b, v);
        let zero = b.int(0, Scalar::Usize);
        let nonempty = b.cmp(CmpOp::Gt, l, zero);
        b.effect(OpKind::Assert { cond: nonempty, message: "n must be positive".into() });
        let one = one_usize(b);
        let last = b.binary(BinOp::Sub, l, one);
        let e = load(b, v, Some(last));
        b.effect(OpKind::Return(vec![e]));
        vec![Ty::F64]
    });
    verify(&f).unwrap();
    assert_eq!(run(&f, &mut [Arg::Scalar(usize_val(4))]).unwrap(), vec![Val::F64(2.0)]);
    let e = run(&f, &mut [Arg::Scalar(usize_val(0))]).unwrap_err();
    assert_eq!(e.message, "assertion failed: n must be positive");
    let e = run(&f, &mut [Arg::Scalar(usize_val(1 << 40))]).unwrap_err();
    assert!(e.message.contains("step limit"), "{e}");
}

/// A fill that resizes is `Vec::resize`: the first elements kept, the new ones the value
/// (`v = w`, `truncate` and `pop` are made of it); its text form parses back.
#[test]
fn fill_that_resizes() {
    let mut f = Function::new("resize");
    let n = f.add_param(Ty::USIZE, "n", SpanId::NONE);
    build(&mut f, |b| {
        let one = b.float(1.0, Scalar::F64);
        let three = b.int(3, Scalar::Usize);
        let v = b.op(OpKind::Alloc { len: three, init: one }, mem(Scalar::F64, MemKind::Vec, Access::Owned));
        let old = len(b, v);
        let two = b.float(2.0, Scalar::F64);
        b.effect(OpKind::Fill { mem: v, value: two, resize: Some([n, old]) });
        let l = len(b, v);
        let lf = b.op(OpKind::Cast(l), Ty::F64);
        let one = one_usize(b);
        let last = b.binary(BinOp::Sub, l, one);
        let e = load(b, v, Some(last));
        let r = b.binary(BinOp::Mul, lf, e);
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::F64]
    });
    verify(&f).unwrap();
    // `len * v[len - 1]`: kept ones up to 3, twos after.
    for (k, want) in [(1, 1.0), (3, 3.0), (7, 14.0)] {
        assert_eq!(run(&f, &mut [Arg::Scalar(usize_val(k))]).unwrap(), vec![Val::F64(want)]);
    }
    assert!(run(&f, &mut [Arg::Scalar(usize_val(0))]).is_err(), "v[0 - 1] of an empty vector");
    let text = print(&f);
    assert!(text.contains("fill %"), "{text}");
    assert_eq!(parse(&text).unwrap(), f, "{text}");
}

#[test]
fn step_limit_stops_endless_loops() {
    let mut f = Function::new("forever");
    build(&mut f, |b| {
        let mut cond = None;
        let cond_region = region(b, |b| cond = Some(b.bool(true)));
        b.effect(OpKind::While { cond_region, cond: cond.unwrap(), body: Region::default(), exit: None });
        vec![]
    });
    let e = run_with_limit(&f, &mut [], 1000).unwrap_err();
    assert_eq!(e.message, "step limit of 1000 exceeded");
}

#[test]
fn pop_of_empty_tape_is_an_error() {
    let mut f = Function::new("pop");
    let x = f.add_param(Ty::F64, "x", SpanId::NONE);
    build(&mut f, |b| {
        b.effect(OpKind::Push(x));
        b.op(OpKind::Pop, Ty::F64);
        b.op(OpKind::Pop, Ty::F64);
        vec![]
    });
    let e = run(&f, &mut [Arg::Scalar(Val::F64(1.0))]).unwrap_err();
    assert_eq!(e.to_string(), "pop from the empty f64 tape (in `%2: f64 = pop`)");
}

#[test]
fn bad_arguments_are_errors() {
    let f = index();
    let e = run(&f, &mut [f64s(&[1.0])]).unwrap_err();
    assert_eq!(e.message, "index takes 2 arguments, got 1");
    let e = run(&f, &mut [Arg::Mem(vec![Val::F32(1.0)]), Arg::Scalar(usize_val(0))]).unwrap_err();
    assert!(e.message.starts_with("argument 0: expected a f64"), "{e}");
}

#[test]
fn errors_name_the_innermost_op() {
    let int = |i: i128| Arg::Scalar(Val::Int(i, Scalar::I32));
    let mut args = [int(0), int(5), int(1), Arg::Mem(vec![Val::Int(0, Scalar::I32); 3])];
    let e = run(&visit(false, false), &mut args).unwrap_err();
    assert_eq!(e.to_string(), "index out of bounds: the len is 3 but the index is 3 (in `store %3[%6], %5`)");
    // The writes made before the error are visible.
    assert_eq!(args[3], Arg::Mem((0..3).map(|i| Val::Int(i, Scalar::I32)).collect()));
}

/// `y = &mut x[1..4]; y[0] = 7; y[2] += x[0]; return len(y) * y[1]` on `[1, 2, 3, 4, 5]`.
const SUB_SLICES: &str = r#"fn sub_slices(%0 "x": &mut [f64]) -> (f64) {
  %1: usize = const 1
  %2: usize = const 4
  %3 "y": &mut [f64] = slice %0[%1..%2]
  %4: usize = const 0
  %5: f64 = const 7.0
  store %3[%4], %5
  %6: usize = const 2
  %7: f64 = load %3[%6]
  %8: f64 = load %0[%4]
  %9: f64 = add %7, %8
  store %3[%6], %9
  %10: usize = len %3
  %11: f64 = cast %10
  %12: f64 = load %3[%1]
  %13: f64 = mul %11, %12
  return %13
}
"#;

#[test]
fn sub_slices_alias_their_base() {
    let f = parse(SUB_SLICES).unwrap();
    verify(&f).unwrap();
    assert_eq!(print(&parse(&print(&f)).unwrap()), print(&f));
    let mut args = [f64s(&[1.0, 2.0, 3.0, 4.0, 5.0])];
    assert_eq!(f64_result(&f, &mut args), 9.0);
    let Arg::Mem(x) = &args[0] else { panic!() };
    let x: Vec<f64> = x.iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(x, [1.0, 7.0, 3.0, 5.0, 5.0]);
}

#[test]
fn sub_slices_out_of_range_fail_like_rust() {
    for (range, message) in [("%2..%1", "starts at 4 but ends at 1"), ("%1..%14", "out of range for slice of length 5")]
    {
        let text = SUB_SLICES.replace("%1..%2", range).replace("  %3 \"y\"", "  %14: usize = const 9\n  %3 \"y\"");
        let f = parse(&text).unwrap();
        let err = run(&f, &mut [f64s(&[1.0, 2.0, 3.0, 4.0, 5.0])]).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
}

/// `m: &mut [Vec<f64>]`: `t = vec![[0.0; 2]; 2]; t[1][0] = m[1][2]; m[0][1] = 5; return t[1][0] + m[0].len()`.
const NESTED: &str = r#"fn nested(%0 "m": &mut [Vec<f64>]) -> (f64) {
  %1: usize = const 0
  %2: usize = const 1
  %3: usize = const 2
  %4: f64 = const 0.0
  %5: [f64; 2] = alloc [%4; %3]
  %6: Vec<[f64; 2]> = alloc [%5; %3]
  %7: &mut [f64; 2] = elem %6[%2]
  %8: &mut Vec<f64> = elem %0[%2]
  %9: f64 = load %8[%3]
  store %7[%1], %9
  %10: &mut Vec<f64> = elem %0[%1]
  %11: f64 = const 5.0
  store %10[%2], %11
  %12: f64 = load %7[%1]
  %13: usize = len %10
  %14: f64 = cast %13
  %15: f64 = add %12, %14
  return %15
}
"#;

/// A write through a sub-slice changes what a later read of its buffer sees: simplification
/// may not forward the value stored before it.
const WRITE_THROUGH_VIEW: &str = r#"fn f(%0 "x": &[f64]) -> (f64) {
  %1: f64 = const 0.0
  %2: usize = const 4
  %3 "buf": Vec<f64> = alloc [%1; %2]
  %4: usize = const 0
  %5: f64 = load %0[%4]
  %6: usize = const 2
  store %3[%6], %5
  %7 "a": f64 = load %3[%6]
  %8 "w": &mut [f64] = slice %3[%6..%2]
  %9: usize = const 1
  %10: f64 = load %0[%9]
  store %8[%4], %10
  %11 "b": f64 = load %3[%6]
  %12: f64 = add %7, %11
  return %12
}
"#;

#[test]
fn nested_memory_rows() {
    let f = parse(NESTED).unwrap();
    verify(&f).unwrap();
    assert_eq!(print(&parse(&print(&f)).unwrap()), print(&f));
    let rows = || Arg::Rows(vec![f64s(&[1.0, 2.0, 3.0]), f64s(&[4.0, 5.0, 6.0])]);
    let mut args = [rows()];
    assert_eq!(f64_result(&f, &mut args), 9.0);
    let Arg::Rows(rs) = &args[0] else { panic!() };
    let Arg::Mem(r0) = &rs[0] else { panic!() };
    assert_eq!(r0[1].as_f64(), Some(5.0));
    // A row out of range fails like Rust.
    let bad = NESTED.replace("elem %0[%2]", "elem %0[%3]");
    let err = run(&parse(&bad).unwrap(), &mut [rows()]).unwrap_err();
    assert!(err.to_string().contains("index out of bounds: the len is 2 but the index is 2"), "{err}");
}

#[test]
fn simplification_sees_writes_through_sub_slices() {
    let mut f = parse(WRITE_THROUGH_VIEW).unwrap();
    verify(&f).unwrap();
    assert_eq!(f64_result(&f, &mut [f64s(&[1.0, 10.0])]), 11.0);
    simplify::cse(&mut f);
    verify(&f).unwrap();
    assert_eq!(f64_result(&f, &mut [f64s(&[1.0, 10.0])]), 11.0, "{f}");
}

/// `dot(&x[0..3], &x[1..4])`: each sub-slice gets its own part of the buffer.
#[test]
fn overlapping_sub_slices_passed_to_one_call() {
    let dot = parse(
        r#"fn dot(%0 "a": &[f64], %1 "b": &[f64]) -> (f64) {
  %2: usize = const 0
  %3: f64 = load %0[%2]
  %4: f64 = load %1[%2]
  %5: f64 = mul %3, %4
  return %5
}
"#,
    )
    .unwrap();
    let f = parse(
        r#"fn f(%0 "x": &[f64]) -> (f64) {
  %1: usize = const 0
  %2: usize = const 1
  %3: usize = const 3
  %4: usize = const 4
  %5: &[f64] = slice %0[%1..%3]
  %6: &[f64] = slice %0[%2..%4]
  %7: f64 = const 0.0
  var $0 "r": f64 = %7
  call "dot"(%5, %6) -> $0
  %8: f64 = get $0
  return %8
}
"#,
    )
    .unwrap();
    struct One(std::rc::Rc<Function>);
    impl Callees for One {
        fn function(&self, _: &str) -> Result<std::rc::Rc<Function>, String> {
            Ok(self.0.clone())
        }
    }
    let out =
        exec_with(&f, &mut [f64s(&[2.0, 3.0, 5.0, 7.0])], DEFAULT_STEP_LIMIT, &One(std::rc::Rc::new(dot))).unwrap();
    assert_eq!(out, vec![Arg::Scalar(Val::F64(6.0))]);
}

/// A write through a row changes what a later read through another handle on the row sees.
#[test]
fn simplification_sees_writes_through_rows() {
    let text = r#"fn f(%0 "m": &mut [Vec<f64>]) -> (f64) {
  %1: usize = const 0
  %2: &mut Vec<f64> = elem %0[%1]
  %3: f64 = load %2[%1]
  %4: &mut Vec<f64> = elem %0[%1]
  %5: f64 = const 2.0
  store %4[%1], %5
  %6: f64 = load %2[%1]
  %7: f64 = add %3, %6
  return %7
}
"#;
    let mut f = parse(text).unwrap();
    let rows = || [Arg::Rows(vec![f64s(&[1.0])])];
    assert_eq!(f64_result(&f, &mut rows()), 3.0);
    simplify::cse(&mut f);
    verify(&f).unwrap();
    assert_eq!(f64_result(&f, &mut rows()), 3.0, "{f}");
}
