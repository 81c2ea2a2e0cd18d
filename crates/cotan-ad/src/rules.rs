//! Derivative rules of the primitive operations, as local partial derivatives.
//!
//! One rule serves both modes: forward mode computes `dr = Σ ∂r/∂aₖ · daₖ`, reverse mode
//! accumulates `daₖ += ∂r/∂aₖ · dr`. Conventions at kinks and domain edges (also in the
//! README): `abs'(0) = 0`; `max`/`min` give half the derivative to each argument on ties
//! (and the whole to the non-NaN argument); `clamp` gives it to `x` when `x` equals a bound;
//! `sqrt'(0) = +inf`, `cbrt'(0) = +inf`; `powf(x, y)` has `∂/∂y = 0` at `x = 0`;
//! `hypot(0, 0)` has zero partials; `signum`, `floor`, `ceil`, `round`, `trunc` have
//! derivative 0; `%` has `∂(a % b)/∂b = -trunc(a / b)`. The partials of `max`, `min`,
//! `clamp`, `abs`, `sqrt`, `cbrt`, `powf` (in `x`), `asin` and `acos` are
//! [`Partial::Strong`]: their product with a zero is zero, even where the other factor is
//! infinite.

use cotan_ir::{BinOp, Builder, CmpOp, Const, MathFn, OpKind, Scalar, Ty, UnOp, Value};

/// A partial derivative: the constants ±1 are kept symbolic to avoid multiplying by one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Partial {
    One,
    MinusOne,
    Of(Value),
    /// A partial whose product with a tangent or adjoint is 0 when either factor is 0
    /// ("strong zero"): a 0/1 mask (`max`, `clamp`, `abs`) against an infinite adjoint, or
    /// an infinite slope (`sqrt` at 0) against a zero tangent. Without it,
    /// `v.max(0.0).sqrt()` at `v < 0` has the derivative `0 · inf = NaN` instead of 0.
    Strong(Value),
}

/// Builds the expressions of a rule in one float type.
struct Expr<'a, 'f> {
    b: &'a mut Builder<'f>,
    ty: Scalar,
}

impl Expr<'_, '_> {
    fn c(&mut self, x: f64) -> Value {
        self.b.float(x, self.ty)
    }
    fn bin(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        self.b.binary(op, a, b)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinOp::Add, a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinOp::Sub, a, b)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinOp::Mul, a, b)
    }
    fn div(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinOp::Div, a, b)
    }
    fn neg(&mut self, a: Value) -> Value {
        self.b.unary(UnOp::Neg, a)
    }
    fn f(&mut self, f: MathFn, a: Value) -> Value {
        self.b.math(f, vec![a])
    }
    fn sq(&mut self, a: Value) -> Value {
        self.mul(a, a)
    }
    fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        self.b.cmp(op, a, b)
    }
    fn or(&mut self, a: Value, b: Value) -> Value {
        self.b.binary(BinOp::BitOr, a, b)
    }
    fn and(&mut self, a: Value, b: Value) -> Value {
        self.b.binary(BinOp::BitAnd, a, b)
    }
    /// 1 where `c` holds, else 0.
    fn indicator(&mut self, c: Value) -> Value {
        let (one, zero) = (self.c(1.0), self.c(0.0));
        self.b.select(c, one, zero)
    }
    /// `1 / sqrt(s)`.
    fn rsqrt(&mut self, s: Value) -> Value {
        let one = self.c(1.0);
        let r = self.f(MathFn::Sqrt, s);
        self.div(one, r)
    }
    /// `x` where `c` holds, else 0 (so that 0 · inf does not leak NaN into a convention).
    fn zero_where(&mut self, c: Value, x: Value) -> Value {
        let zero = self.c(0.0);
        self.b.select(c, zero, x)
    }
}

/// The partial derivatives of a float op with respect to its differentiable operands
/// (those listed by `activity::differentiable_operands`, in that order). `get` maps a
/// primal value to the value that holds it where the rule is emitted.
pub fn partials(
    b: &mut Builder,
    kind: &OpKind,
    result: Value,
    ty: Scalar,
    get: &mut dyn FnMut(Value) -> Value,
) -> Vec<Partial> {
    use Partial::{MinusOne, Of, One};
    let mut e = Expr { b, ty };
    match kind {
        OpKind::Unary(UnOp::Neg, _) => vec![MinusOne],
        OpKind::Binary(op, a, c) => {
            let (a, c) = (get(*a), get(*c));
            match op {
                BinOp::Add => vec![One, One],
                BinOp::Sub => vec![One, MinusOne],
                BinOp::Mul => vec![Of(c), Of(a)],
                BinOp::Div => {
                    let one = e.c(1.0);
                    let inv = e.div(one, c);
                    // ∂/∂c = −r/c, as r · (1/c): one division per op, and none in a loop
                    // whose divisor is invariant (the compiler hoists 1/c).
                    let r = get(result);
                    let q = e.mul(r, inv);
                    vec![Of(inv), Of(e.neg(q))]
                }
                BinOp::Rem => {
                    let q = e.div(a, c);
                    let t = e.f(MathFn::Trunc, q);
                    vec![One, Of(e.neg(t))]
                }
                _ => vec![],
            }
        }
        OpKind::Select(c, _, _) => {
            let c = get(*c);
            let on = e.indicator(c);
            let one = e.c(1.0);
            vec![Partial::Strong(on), Partial::Strong(e.sub(one, on))]
        }
        OpKind::Math(f, args) => {
            let args: Vec<Value> = args.iter().map(|&a| get(a)).collect();
            math(&mut e, *f, &args, &mut || get(result))
        }
        _ => vec![],
    }
}

fn math(e: &mut Expr, f: MathFn, a: &[Value], r: &mut dyn FnMut() -> Value) -> Vec<Partial> {
    use MathFn::*;
    use Partial::{Of, One, Strong};
    let x = a[0];
    let one_arg = |p: Value| vec![Of(p)];
    let strong_arg = |p: Value| vec![Strong(p)];
    match f {
        Abs => {
            let zero = e.c(0.0);
            let pos = e.cmp(CmpOp::Gt, x, zero);
            let neg = e.cmp(CmpOp::Lt, x, zero);
            let p = e.indicator(pos);
            let n = e.indicator(neg);
            strong_arg(e.sub(p, n))
        }
        Sqrt => {
            let half = e.c(0.5);
            let r = r();
            strong_arg(e.div(half, r))
        }
        Cbrt => {
            let r = r();
            let three = e.c(3.0);
            let s = e.sq(r);
            let d = e.mul(three, s);
            let one = e.c(1.0);
            strong_arg(e.div(one, d))
        }
        Exp => one_arg(r()),
        Exp2 => {
            let ln2 = e.c(std::f64::consts::LN_2);
            let r = r();
            one_arg(e.mul(r, ln2))
        }
        ExpM1 => {
            let one = e.c(1.0);
            let r = r();
            one_arg(e.add(r, one))
        }
        Ln => {
            let one = e.c(1.0);
            one_arg(e.div(one, x))
        }
        Log2 | Log10 => {
            let k = e.c(if f == Log2 { std::f64::consts::LN_2 } else { std::f64::consts::LN_10 });
            let d = e.mul(x, k);
            let one = e.c(1.0);
            one_arg(e.div(one, d))
        }
        Log => {
            // log_b(x) = ln x / ln b
            let base = a[1];
            let lnb = e.f(Ln, base);
            let d = e.mul(x, lnb);
            let one = e.c(1.0);
            let dx = e.div(one, d);
            let r = r();
            let bl = e.mul(base, lnb);
            let q = e.div(r, bl);
            vec![Of(dx), Of(e.neg(q))]
        }
        Ln1p => {
            let one = e.c(1.0);
            let d = e.add(one, x);
            one_arg(e.div(one, d))
        }
        Powi => {
            let n = e.b.cast(a[1], e.ty);
            let one = e.b.int(1, Scalar::I32);
            let nm1 = e.b.binary(BinOp::Sub, a[1], one);
            let p = e.b.math(Powi, vec![x, nm1]);
            one_arg(e.mul(n, p))
        }
        Powf => {
            let y = a[1];
            let one = e.c(1.0);
            let ym1 = e.sub(y, one);
            let p = e.b.math(Powf, vec![x, ym1]);
            let dx = e.mul(y, p);
            let r = r();
            let lnx = e.f(Ln, x);
            let dy = e.mul(r, lnx);
            let zero = e.c(0.0);
            let at0 = e.cmp(CmpOp::Eq, x, zero);
            vec![Strong(dx), Of(e.zero_where(at0, dy))]
        }
        Sin => one_arg(e.f(Cos, x)),
        Cos => {
            let s = e.f(Sin, x);
            one_arg(e.neg(s))
        }
        Tan => {
            let r = r();
            let s = e.sq(r);
            let one = e.c(1.0);
            one_arg(e.add(one, s))
        }
        Asin | Acos => {
            let one = e.c(1.0);
            let s = e.sq(x);
            let d = e.sub(one, s);
            let p = e.rsqrt(d);
            strong_arg(if f == Asin { p } else { e.neg(p) })
        }
        Atan => {
            let one = e.c(1.0);
            let s = e.sq(x);
            let d = e.add(one, s);
            one_arg(e.div(one, d))
        }
        Atan2 => {
            // atan2(y, x): receiver y
            let (y, xx) = (a[0], a[1]);
            let y2 = e.sq(y);
            let x2 = e.sq(xx);
            let d = e.add(y2, x2);
            let dy = e.div(xx, d);
            let q = e.div(y, d);
            vec![Of(dy), Of(e.neg(q))]
        }
        Sinh => one_arg(e.f(Cosh, x)),
        Cosh => one_arg(e.f(Sinh, x)),
        Tanh => {
            let r = r();
            let s = e.sq(r);
            let one = e.c(1.0);
            one_arg(e.sub(one, s))
        }
        Asinh | Acosh => {
            let one = e.c(1.0);
            let s = e.sq(x);
            let d = if f == Asinh { e.add(s, one) } else { e.sub(s, one) };
            one_arg(e.rsqrt(d))
        }
        Atanh => {
            let one = e.c(1.0);
            let s = e.sq(x);
            let d = e.sub(one, s);
            one_arg(e.div(one, d))
        }
        Hypot => {
            let r = r();
            let zero = e.c(0.0);
            let at0 = e.cmp(CmpOp::Eq, r, zero);
            let px = e.div(a[0], r);
            let py = e.div(a[1], r);
            vec![Of(e.zero_where(at0, px)), Of(e.zero_where(at0, py))]
        }
        Recip => {
            let r = r();
            let s = e.sq(r);
            one_arg(e.neg(s))
        }
        MulAdd => vec![Of(a[1]), Of(a[0]), One],
        Max | Min => {
            // To the argument returned; on a tie half to each (the mean of the one-sided
            // derivatives, as `abs'(0) = 0` is: `x.max(0.0) + (-x.abs()).exp().ln_1p()`, the
            // stable softplus, then has its derivative 1/2 at 0); past a NaN, to the other.
            let (p, q) = (a[0], a[1]);
            let op = if f == Max { CmpOp::Gt } else { CmpOp::Lt };
            let wins = e.cmp(op, p, q);
            let q_nan = e.cmp(CmpOp::Ne, q, q);
            let first = e.or(wins, q_nan);
            let tie = e.cmp(CmpOp::Eq, p, q);
            let (one, half, zero) = (e.c(1.0), e.c(0.5), e.c(0.0));
            let other = e.b.select(tie, half, zero);
            let on = e.b.select(first, one, other);
            vec![Strong(on), Strong(e.sub(one, on))]
        }
        Clamp => {
            let (lo, hi) = (a[1], a[2]);
            let above = e.cmp(CmpOp::Ge, x, lo);
            let below = e.cmp(CmpOp::Le, x, hi);
            let inside = e.and(above, below);
            let under = e.cmp(CmpOp::Lt, x, lo);
            let over = e.cmp(CmpOp::Gt, x, hi);
            vec![Strong(e.indicator(inside)), Strong(e.indicator(under)), Strong(e.indicator(over))]
        }
        Signum | Floor | Ceil | Round | Trunc => vec![],
    }
}

/// `Σ pₖ · tₖ` over the given partials and tangents (forward mode), `None` if empty.
pub fn combine(b: &mut Builder, terms: &[(Partial, Value)]) -> Option<Value> {
    let mut acc: Option<Value> = None;
    for &(p, t) in terms {
        let term = scale(b, p, t);
        acc = Some(match acc {
            None => term,
            Some(a) => b.binary(BinOp::Add, a, term),
        });
    }
    acc
}

/// `p · t`.
pub fn scale(b: &mut Builder, p: Partial, t: Value) -> Value {
    match p {
        Partial::One => t,
        Partial::MinusOne => b.unary(UnOp::Neg, t),
        Partial::Of(v) => b.binary(BinOp::Mul, v, t),
        Partial::Strong(v) => {
            let product = b.binary(BinOp::Mul, v, t);
            let ty = b.func.ty(t).scalar().expect("a float");
            let zero = b.float(0.0, ty);
            let p0 = b.cmp(CmpOp::Eq, v, zero);
            let t0 = b.cmp(CmpOp::Eq, t, zero);
            let either = b.binary(BinOp::BitOr, p0, t0);
            b.select(either, zero, product)
        }
    }
}

/// A zero of a float type.
pub fn zero(b: &mut Builder, ty: Ty) -> Value {
    // (The "gradient" of an integer marked `Active` is an integer zero.)
    let c = match ty.scalar() {
        Some(s) if s.is_int() => Const::Int(0),
        Some(cotan_ir::Scalar::Bool) => Const::Bool(false),
        _ => Const::Float(0.0),
    };
    b.op(OpKind::Const(c), ty)
}
