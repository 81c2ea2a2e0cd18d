//! Sample functions built with the `Builder`, shared by the integration tests.
#![allow(dead_code)]

use cotan_ir::*;

pub fn mem(elem: Scalar, kind: MemKind, access: Access) -> Ty {
    Ty::Mem(MemTy { elem, kind, access })
}

pub fn slice(elem: Scalar) -> Ty {
    mem(elem, MemKind::Slice, Access::Shared)
}

pub fn slice_mut(elem: Scalar) -> Ty {
    mem(elem, MemKind::Slice, Access::Mut)
}

/// Builds a nested region with `b`, leaving the ops built so far in place.
pub fn region<'f>(b: &mut Builder<'f>, build: impl FnOnce(&mut Builder<'f>)) -> Region {
    let outer = std::mem::take(&mut b.ops);
    build(b);
    let r = b.finish();
    b.ops = outer;
    r
}

pub fn load(b: &mut Builder, mem: Value, index: Option<Value>) -> Value {
    let elem = b.func.ty(mem).mem().unwrap().elem;
    b.op(OpKind::Load { mem, index }, Ty::Scalar(elem))
}

pub fn store(b: &mut Builder, mem: Value, index: Option<Value>, value: Value) {
    b.effect(OpKind::Store { mem, index, value });
}

pub fn len(b: &mut Builder, mem: Value) -> Value {
    b.op(OpKind::Len(mem), Ty::USIZE)
}

pub fn decl(b: &mut Builder, name: &str, init: Value) -> Var {
    let ty = b.func.ty(init).scalar().unwrap();
    let var = b.func.new_var(ty, name);
    b.effect(OpKind::DeclVar { var, init });
    var
}

pub fn get(b: &mut Builder, var: Var) -> Value {
    let ty = b.func.var(var).ty;
    b.op(OpKind::GetVar(var), Ty::Scalar(ty))
}

pub fn set(b: &mut Builder, var: Var, v: Value) {
    b.effect(OpKind::SetVar(var, v));
}

/// `for i in lo..hi { body(i) }` with the options given.
#[allow(clippy::too_many_arguments)]
pub fn for_loop<'f>(
    b: &mut Builder<'f>,
    lo: Value,
    hi: Value,
    step: Option<Value>,
    inclusive: bool,
    reverse: bool,
    exit: Option<Var>,
    body: impl FnOnce(&mut Builder<'f>, Value),
) {
    let ty = b.func.ty(lo);
    let index = b.func.new_value(ty, Some("i".into()), b.span);
    let body = region(b, |b| body(b, index));
    b.effect(OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit });
}

/// Finishes `f` with the ops of `build`, which returns the types returned.
pub fn build(f: &mut Function, build: impl FnOnce(&mut Builder) -> Vec<Ty>) {
    let mut b = Builder::new(f);
    let returns = build(&mut b);
    let body = b.finish();
    f.body = body;
    f.returns = returns;
}

/// `(1 - x)^2 + 100 (y - x^2)^2`: straight-line arithmetic.
pub fn rosenbrock() -> Function {
    let mut f = Function::new("rosenbrock");
    let x = f.add_param(Ty::F64, "x", SpanId::NONE);
    let y = f.add_param(Ty::F64, "y", SpanId::NONE);
    build(&mut f, |b| {
        let one = b.float(1.0, Scalar::F64);
        let two = b.int(2, Scalar::I32);
        let hundred = b.float(100.0, Scalar::F64);
        let a = b.binary(BinOp::Sub, one, x);
        let a2 = b.math(MathFn::Powi, vec![a, two]);
        let xx = b.binary(BinOp::Mul, x, x);
        let d = b.binary(BinOp::Sub, y, xx);
        let d2 = b.binary(BinOp::Mul, d, d);
        let t = b.binary(BinOp::Mul, hundred, d2);
        let r = b.binary(BinOp::Add, a2, t);
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::F64]
    });
    f
}

/// `if x < 0 { -x } else { 2x }` through a var.
pub fn branch() -> Function {
    let mut f = Function::new("branch");
    let x = f.add_param(Ty::F64, "x", SpanId::NONE);
    build(&mut f, |b| {
        let r = decl(b, "r", x);
        let zero = b.float(0.0, Scalar::F64);
        let cond = b.cmp(CmpOp::Lt, x, zero);
        let then_region = region(b, |b| {
            let n = b.unary(UnOp::Neg, x);
            set(b, r, n);
        });
        let else_region = region(b, |b| {
            let two = b.float(2.0, Scalar::F64);
            let d = b.binary(BinOp::Mul, x, two);
            set(b, r, d);
        });
        b.effect(OpKind::If { cond, then_region, else_region });
        let v = get(b, r);
        b.effect(OpKind::Return(vec![v]));
        vec![Ty::F64]
    });
    f
}

/// The sum of `sin(x[i])`.
pub fn sum_sin() -> Function {
    let mut f = Function::new("sum_sin");
    let x = f.add_param(slice(Scalar::F64), "x", SpanId::NONE);
    build(&mut f, |b| {
        let zero = b.float(0.0, Scalar::F64);
        let s = decl(b, "s", zero);
        let lo = b.int(0, Scalar::Usize);
        let n = len(b, x);
        for_loop(b, lo, n, None, false, false, None, |b, i| {
            let xi = load(b, x, Some(i));
            let si = b.math(MathFn::Sin, vec![xi]);
            let old = get(b, s);
            let new = b.binary(BinOp::Add, old, si);
            set(b, s, new);
        });
        let r = get(b, s);
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::F64]
    });
    f
}

/// The first index `i` with `x[i] > t` (or `x.len()`), via a `for` with an exit var.
pub fn find_first() -> Function {
    let mut f = Function::new("find_first");
    let x = f.add_param(slice(Scalar::F64), "x", SpanId::NONE);
    let t = f.add_param(Ty::F64, "t", SpanId::NONE);
    build(&mut f, |b| {
        let no = b.bool(false);
        let found = decl(b, "found", no);
        let n = len(b, x);
        let pos = decl(b, "pos", n);
        let lo = b.int(0, Scalar::Usize);
        for_loop(b, lo, n, None, false, false, Some(found), |b, i| {
            let xi = load(b, x, Some(i));
            let cond = b.cmp(CmpOp::Gt, xi, t);
            let then_region = region(b, |b| {
                set(b, pos, i);
                let yes = b.bool(true);
                set(b, found, yes);
            });
            b.effect(OpKind::If { cond, then_region, else_region: Region::default() });
        });
        let r = get(b, pos);
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::USIZE]
    });
    f
}

/// Halves `x` while it exceeds 1; returns the result and the number of halvings.
pub fn halve() -> Function {
    let mut f = Function::new("halve");
    let x = f.add_param(Ty::F64, "x", SpanId::NONE);
    build(&mut f, |b| {
        let v = decl(b, "v", x);
        let zero = b.int(0, Scalar::Usize);
        let n = decl(b, "n", zero);
        let mut cond = None;
        let cond_region = region(b, |b| {
            let cur = get(b, v);
            let one = b.float(1.0, Scalar::F64);
            cond = Some(b.cmp(CmpOp::Gt, cur, one));
        });
        let body = region(b, |b| {
            let cur = get(b, v);
            let two = b.float(2.0, Scalar::F64);
            let h = b.binary(BinOp::Div, cur, two);
            set(b, v, h);
            let k = get(b, n);
            let one = b.int(1, Scalar::Usize);
            let k1 = b.binary(BinOp::Add, k, one);
            set(b, n, k1);
        });
        b.effect(OpKind::While { cond_region, cond: cond.unwrap(), body, exit: None });
        let rv = get(b, v);
        let rn = get(b, n);
        b.effect(OpKind::Return(vec![rv, rn]));
        vec![Ty::F64, Ty::USIZE]
    });
    f
}

/// Writes `x` reversed into `out` through the tape: pushes in one loop, pops in another.
pub fn reverse_copy() -> Function {
    let mut f = Function::new("reverse_copy");
    let x = f.add_param(slice(Scalar::F64), "x", SpanId::NONE);
    let out = f.add_param(slice_mut(Scalar::F64), "out", SpanId::NONE);
    build(&mut f, |b| {
        let lo = b.int(0, Scalar::Usize);
        let n = len(b, x);
        for_loop(b, lo, n, None, false, false, None, |b, i| {
            let xi = load(b, x, Some(i));
            b.effect(OpKind::Push(xi));
        });
        for_loop(b, lo, n, None, false, false, None, |b, i| {
            let v = b.op(OpKind::Pop, Ty::F64);
            store(b, out, Some(i), v);
        });
        vec![]
    });
    f
}

/// Writes the indices of `for i in (lo..hi).step_by(step).rev()` (or `..=` when
/// `inclusive`) into `out` and returns how many there are.
pub fn visit(inclusive: bool, reverse: bool) -> Function {
    let mut f = Function::new("visit");
    let lo = f.add_param(Ty::Scalar(Scalar::I32), "lo", SpanId::NONE);
    let hi = f.add_param(Ty::Scalar(Scalar::I32), "hi", SpanId::NONE);
    let step = f.add_param(Ty::Scalar(Scalar::I32), "step", SpanId::NONE);
    let out = f.add_param(slice_mut(Scalar::I32), "out", SpanId::NONE);
    build(&mut f, |b| {
        let zero = b.int(0, Scalar::Usize);
        let count = decl(b, "count", zero);
        for_loop(b, lo, hi, Some(step), inclusive, reverse, None, |b, i| {
            let c = get(b, count);
            store(b, out, Some(c), i);
            let one = b.int(1, Scalar::Usize);
            let c1 = b.binary(BinOp::Add, c, one);
            set(b, count, c1);
        });
        let r = get(b, count);
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::USIZE]
    });
    f
}

/// `a + b` in `ty`.
pub fn add(ty: Scalar) -> Function {
    let mut f = Function::new("add");
    let a = f.add_param(Ty::Scalar(ty), "a", SpanId::NONE);
    let c = f.add_param(Ty::Scalar(ty), "b", SpanId::NONE);
    build(&mut f, |b| {
        let r = b.binary(BinOp::Add, a, c);
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::Scalar(ty)]
    });
    f
}

/// `x[i]`.
pub fn index() -> Function {
    let mut f = Function::new("index");
    let x = f.add_param(slice(Scalar::F64), "x", SpanId::NONE);
    let i = f.add_param(Ty::USIZE, "i", SpanId::NONE);
    build(&mut f, |b| {
        let r = load(b, x, Some(i));
        b.effect(OpKind::Return(vec![r]));
        vec![Ty::F64]
    });
    f
}

/// Every op kind, every memory kind, spans, names that need escaping, a value that no op
/// defines and a var that no op declares. Well formed.
pub fn kitchen_sink() -> Function {
    use Scalar::*;
    let mut f = Function::new("kitchen_sink");
    let x = f.add_param(Ty::F64, "x", SpanId(3));
    let xs = f.add_param(slice(F64), "xs", SpanId::NONE);
    let ys = f.add_param(mem(F32, MemKind::Array(3), Access::Mut), "ys", SpanId(4));
    let vs = f.add_param(mem(F64, MemKind::Vec, Access::Mut), "vs", SpanId::NONE);
    let cell = f.add_param(mem(F64, MemKind::Cell, Access::Mut), "cell", SpanId::NONE);
    let shared_cell = f.add_param(mem(I64, MemKind::Cell, Access::Shared), "shared", SpanId::NONE);
    let shared_vec = f.add_param(mem(U8, MemKind::Vec, Access::Shared), "bytes", SpanId::NONE);
    let k = f.add_param(Ty::Scalar(I32), "k", SpanId::NONE);
    f.new_value(Ty::F32, Some("dead".into()), SpanId(2));
    f.new_var(I16, "never declared");
    f.values[x.0 as usize].name = Some("x \"quoted\"\n\tünï\u{200b}".into());
    build(&mut f, |b| {
        // Literals of every scalar type, including floats that need care.
        for c in [1.5, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1e300, 5e-324, 1e16] {
            b.float(c, F64);
        }
        b.float(0.1f32 as f64, F32);
        for (i, s) in [(-128, I8), (-3, I16), (7, I32), (i64::MIN as i128, I64), (-1, Isize)] {
            b.int(i, s);
        }
        for (i, s) in [(255, U8), (9, U16), (10, U32), (u64::MAX as i128, U64), (3, Usize)] {
            b.int(i, s);
        }
        let t = b.bool(true);
        b.span = SpanId(11);
        // Arithmetic, comparisons, casts.
        let neg = b.unary(UnOp::Neg, x);
        let nt = b.unary(UnOp::Not, t);
        for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Rem] {
            b.binary(op, x, neg);
        }
        for op in [BinOp::BitAnd, BinOp::BitOr, BinOp::BitXor] {
            b.binary(op, t, nt);
        }
        let three = b.int(3, I32);
        let two_u8 = b.int(2, U8);
        b.op(OpKind::Binary(BinOp::Shl, k, two_u8), Ty::Scalar(I32));
        b.binary(BinOp::Shr, k, three);
        for op in [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge] {
            b.cmp(op, x, neg);
        }
        let xf = b.cast(x, F32);
        b.span = SpanId::NONE;
        let mut last = x;
        for &m in MathFn::ALL {
            let args = match (m, m.arity()) {
                (MathFn::Powi, _) => vec![x, k],
                (_, 1) => vec![x],
                (_, 2) => vec![x, neg],
                _ => vec![x, neg, last],
            };
            last = b.math(m, args);
        }
        // The value has a span of its own, different from its op's.
        let sel = b.select(t, x, last);
        b.func.values[sel.0 as usize].span = SpanId(12);
        // Memory of every kind.
        let zero = b.int(0, Usize);
        let x0 = load(b, xs, Some(zero));
        store(b, vs, Some(zero), x0);
        store(b, ys, Some(zero), xf);
        let c = load(b, cell, None);
        store(b, cell, None, c);
        load(b, shared_cell, None);
        let n = len(b, shared_vec);
        len(b, ys);
        let buf = b.op(OpKind::Alloc { len: n, init: x }, mem(F64, MemKind::Vec, Access::Owned));
        b.effect(OpKind::Fill { mem: buf, value: c, resize: None });
        b.effect(OpKind::Fill { mem: ys, value: xf, resize: None });
        let three_usize = b.int(3, Usize);
        b.op(OpKind::Alloc { len: three_usize, init: xf }, mem(F32, MemKind::Array(3), Access::Owned));
        // Vars and control flow.
        let v = decl(b, "acc", x);
        let no = b.bool(false);
        let done = decl(b, "done", no);
        let copy = |b: &mut Builder| {
            let g = get(b, v);
            set(b, v, g);
        };
        let then_region = region(b, copy);
        b.effect(OpKind::If { cond: t, then_region, else_region: Region::default() });
        let then_region = region(b, copy);
        let else_region = region(b, |b| set(b, done, t));
        b.effect(OpKind::If { cond: t, then_region, else_region });
        let one = b.int(1, Usize);
        b.span = SpanId(20);
        for_loop(b, zero, n, Some(three_usize), true, true, Some(done), |b, i| {
            let e = load(b, buf, Some(i));
            b.effect(OpKind::Push(e));
            let p = b.op(OpKind::Pop, Ty::F64);
            store(b, buf, Some(i), p);
        });
        b.span = SpanId::NONE;
        for_loop(b, one, n, None, false, false, None, |_, _| {});
        let mut cond = None;
        let cond_region = region(b, |b| cond = Some(b.cmp(CmpOp::Lt, x, neg)));
        let body = region(b, |b| set(b, done, t));
        b.effect(OpKind::While { cond_region, cond: cond.unwrap(), body, exit: Some(done) });
        let mut cond = None;
        let cond_region = region(b, |b| cond = Some(b.bool(false)));
        b.effect(OpKind::While { cond_region, cond: cond.unwrap(), body: Region::default(), exit: None });
        b.effect(OpKind::Assert { cond: t, message: "t must \"hold\"".into() });
        let g = get(b, v);
        b.effect(OpKind::Return(vec![g, xf, t]));
        vec![Ty::F64, Ty::F32, Ty::BOOL]
    });
    f
}
