//! Locals lent to calls. Structs of numbers: `step(&mut p, dt)`, `p.kick(dt)` with a
//! `&mut self` method, `show(&p)`, methods of trait impls, structs lent in loops, lent
//! twice to one call's arguments, returned from a `&mut self` method, copied before they
//! are lent (the copy keeps its value). Numbers: `add_to(&mut acc, x)`, `&x` of a
//! parameter, `&mut s.x` and `&mut t.0` of local structs and tuples, `&mut p.x` of a
//! struct parameter. Elements: `bump(&mut w[i], x)` of local arrays and of `Duplicated`
//! slices. Every derivative is checked against finite differences, forward mode against
//! reverse mode (dot-product test), and second order against finite differences of the
//! gradient.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use common::{check_hvp_against_gradient, check_scalar};
use cotan::{autodiff_forward, autodiff_reverse, hvp};

#[derive(Clone, Copy)]
struct State {
    x: f64,
    v: f64,
}

fn step(s: &mut State, dt: f64) {
    s.v -= dt * s.x;
    s.x += dt * s.v;
}

fn spring_energy(s: &State, k: f64) -> f64 {
    0.5 * (k * s.x * s.x + s.v * s.v)
}

fn read_x(s: &State) -> f64 {
    s.x
}

impl State {
    /// `&mut self` with a result.
    fn kick(&mut self, dt: f64) -> f64 {
        self.v -= dt * self.x.sin();
        self.v
    }

    fn drift(&mut self, dt: f64) {
        self.x += dt * self.v;
    }

    /// `&mut self` calling another `&mut self` method and a free function on itself.
    fn leapfrog(&mut self, dt: f64) {
        self.kick(0.5 * dt);
        self.drift(dt);
        step(self, 0.1 * dt);
        self.kick(0.5 * dt);
    }

    /// `&mut self` returning a struct.
    fn advanced(&mut self, dt: f64) -> State {
        self.drift(dt);
        State { x: self.x * self.v, v: self.v }
    }
}

trait Integrator {
    fn advance(&mut self, dt: f64, k: f64);
}

impl Integrator for State {
    fn advance(&mut self, dt: f64, k: f64) {
        self.v -= dt * k * self.x;
        self.x += dt * self.v;
    }
}

#[autodiff_reverse(d_free_and_methods, Active, Active, Active)]
#[autodiff_forward(t_free_and_methods, Dual, Dual, Dual)]
fn free_and_methods(x0: f64, k: f64) -> f64 {
    let mut s = State { x: x0, v: 0.1 * k };
    let mut total = 0.0;
    for _ in 0..20 {
        step(&mut s, 0.1);
        total += s.kick(0.05 * k);
        s.drift(0.1);
    }
    // A copy taken before the next borrow keeps the value it had.
    let before = s;
    step(&mut s, 0.2);
    total + spring_energy(&s, k) + read_x(&s) * before.x
}

#[autodiff_reverse(d_nested_methods, Active, Active, Active)]
#[autodiff_forward(t_nested_methods, Dual, Dual, Dual)]
fn nested_methods(x0: f64, dt: f64) -> f64 {
    let mut s = State { x: x0, v: -x0 };
    let mut i = 0;
    while i < 8 {
        s.leapfrog(dt);
        s.advance(dt, 1.5);
        i += 1;
    }
    let t = s.advanced(dt);
    t.x + s.x * s.v
}

/// Two structs lent `&mut` to one call, one of them only in a branch.
fn exchange(a: &mut State, b: &mut State, w: f64) {
    let d = w * (a.x - b.x);
    a.v -= d;
    b.v += d;
}

#[autodiff_reverse(d_two_lent, Duplicated, Active)]
#[autodiff_forward(t_two_lent, Dual, Dual)]
fn two_lent(p: &[f64]) -> f64 {
    let mut a = State { x: p[0], v: p[1] };
    let mut b = State { x: p[2], v: p[3] };
    for k in 0..6 {
        exchange(&mut a, &mut b, p[4]);
        if k % 2 == 0 {
            a.drift(0.1);
        } else {
            exchange(&mut b, &mut a, 0.5 * p[4]);
        }
        b.drift(0.1);
    }
    a.x * b.v + (a.v - b.x).sin()
}

#[hvp(hvp_two_lent)]
#[autodiff_reverse(d_two_lent_h, Duplicated, Active)]
#[autodiff_forward(t_two_lent_h, Dual, Dual)]
fn two_lent_h(p: &[f64]) -> f64 {
    let mut a = State { x: p[0], v: p[1] };
    let mut b = State { x: p[2], v: p[3] };
    for _ in 0..4 {
        exchange(&mut a, &mut b, p[4]);
        a.leapfrog(p[5]);
    }
    a.x * b.v + (a.v - b.x).sin()
}

#[test]
fn free_functions_and_mut_self_methods() {
    let f = |x: &[f64]| free_and_methods(x[0], x[1]);
    let jvp = |x: &[f64], u: &[f64]| t_free_and_methods(x[0], u[0], x[1], u[1]).1;
    let grad = |x: &[f64]| {
        let (v, g0, g1) = d_free_and_methods(x[0], x[1], 1.0);
        assert_eq!(v, free_and_methods(x[0], x[1]));
        vec![g0, g1]
    };
    check_scalar("free_and_methods", &f, &jvp, &grad, &[0.7, 1.3], 3);
}

#[test]
fn methods_calling_methods_and_trait_methods() {
    let f = |x: &[f64]| nested_methods(x[0], x[1]);
    let jvp = |x: &[f64], u: &[f64]| t_nested_methods(x[0], u[0], x[1], u[1]).1;
    let grad = |x: &[f64]| {
        let (_, g0, g1) = d_nested_methods(x[0], x[1], 1.0);
        vec![g0, g1]
    };
    check_scalar("nested_methods", &f, &jvp, &grad, &[0.4, 0.15], 3);
}

#[test]
fn two_structs_lent_to_one_call() {
    let jvp = |x: &[f64], u: &[f64]| t_two_lent(x, u).1;
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        d_two_lent(x, &mut g, 1.0);
        g
    };
    check_scalar("two_lent", &|x| two_lent(x), &jvp, &grad, &[0.3, -0.2, 1.1, 0.5, 0.7], 3);
}

#[test]
fn second_order_through_lent_structs() {
    let jvp = |x: &[f64], u: &[f64]| t_two_lent_h(x, u).1;
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        d_two_lent_h(x, &mut g, 1.0);
        g
    };
    let x = [0.3, -0.2, 1.1, 0.5, 0.7, 0.2];
    check_scalar("two_lent_h", &|x| two_lent_h(x), &jvp, &grad, &x, 3);
    check_hvp_against_gradient(
        &|x, g| {
            g.fill(0.0);
            d_two_lent_h(x, g, 1.0);
        },
        &|x, v, g, hv| {
            hvp_two_lent(x, v, g, hv);
        },
    );
}

fn add_to(acc: &mut f64, x: f64) {
    *acc += x.sin() * x;
}

fn add_scaled(acc: &mut f64, x: &f64, w: f64) {
    *acc += w * x.cos();
}

fn twice(a: &f64) -> f64 {
    2.0 * *a
}

const SCALE: f64 = 1.5;

/// Numbers, elements and fields lent: accumulators, elements of a local array and of the
/// argument, a field of a local struct and of a local tuple, a shared reference to a
/// parameter.
#[autodiff_reverse(d_numbers, Duplicated, Active, Active)]
#[autodiff_forward(t_numbers, Dual, Dual, Dual)]
fn numbers(v: &mut [f64], x: f64) -> f64 {
    let mut w = [0.0; 3];
    let mut acc = 0.0;
    let mut s = State { x: 0.5 * x, v: 1.0 };
    let mut pair = (x, 0.0);
    for i in 0..v.len() {
        add_to(&mut w[i % 3], x * v[i]);
        add_to(&mut v[i], x);
        add_scaled(&mut acc, &v[i], x);
        add_scaled(&mut acc, &x, w[i % 3]);
        add_to(&mut s.v, v[i]);
        add_to(&mut pair.1, s.v);
    }
    let y = acc * 0.5;
    // A constant and values of expressions, lent: copies (the temporaries Rust makes).
    let mut scratch = 0.0;
    add_scaled(&mut scratch, &SCALE, x);
    add_to(&mut (x * 2.0), 1.0);
    w[0] + w[1] * w[2] + v[0] + acc + twice(&y) + twice(&x) + s.v * pair.1 + twice(&(x * y)) + scratch
}

/// A number field of a struct parameter lent `&mut`.
#[autodiff_reverse(d_param_field, Duplicated, Active, Active)]
#[autodiff_forward(t_param_field, Dual, Dual, Dual)]
fn param_field(s: &mut State, k: f64) -> f64 {
    for _ in 0..3 {
        add_to(&mut s.x, k * s.v);
        add_scaled(&mut s.v, &s.x, k);
    }
    s.x * s.v
}

#[hvp(hvp_numbers)]
#[autodiff_reverse(d_numbers_h, Duplicated, Active)]
fn numbers_h(p: &[f64]) -> f64 {
    let mut acc = 0.0;
    let mut w = [p[0], p[1]];
    for i in 0..p.len() {
        add_to(&mut acc, p[i]);
        add_to(&mut w[i % 2], acc);
    }
    acc * w[0] + w[1]
}

#[test]
fn numbers_elements_and_fields_lent() {
    let n = 4;
    let f = |x: &[f64]| numbers(&mut x[..n].to_vec(), x[n]);
    let jvp = |x: &[f64], u: &[f64]| t_numbers(&mut x[..n].to_vec(), &mut u[..n].to_vec(), x[n], u[n]).1;
    let grad = |x: &[f64]| {
        let (mut v, mut dv) = (x[..n].to_vec(), vec![0.0; n]);
        let (value, dx) = d_numbers(&mut v, &mut dv, x[n], 1.0);
        let mut v2 = x[..n].to_vec();
        assert_eq!(value, numbers(&mut v2, x[n]));
        assert_eq!(v, v2, "the argument is left as the primal leaves it");
        dv.push(dx);
        dv
    };
    check_scalar("numbers", &f, &jvp, &grad, &[0.3, -0.5, 0.8, 1.2, 0.7], 3);
}

#[test]
fn a_field_of_a_struct_parameter_lent() {
    let f = |x: &[f64]| param_field(&mut State { x: x[0], v: x[1] }, x[2]);
    let jvp = |x: &[f64], u: &[f64]| {
        t_param_field(&mut State { x: x[0], v: x[1] }, &mut State { x: u[0], v: u[1] }, x[2], u[2]).1
    };
    let grad = |x: &[f64]| {
        let mut ds = State { x: 0.0, v: 0.0 };
        let (_, dk) = d_param_field(&mut State { x: x[0], v: x[1] }, &mut ds, x[2], 1.0);
        vec![ds.x, ds.v, dk]
    };
    check_scalar("param_field", &f, &jvp, &grad, &[0.4, -0.3, 0.9], 3);
}

#[test]
fn second_order_through_lent_numbers() {
    check_hvp_against_gradient(
        &|x, g| {
            g.fill(0.0);
            d_numbers_h(x, g, 1.0);
        },
        &|x, v, g, hv| {
            hvp_numbers(x, v, g, hv);
        },
    );
}

/// A local struct with arrays, lent to `&mut self` and `&self` methods and to functions
/// taking `&mut Body` and `&Body`, and passed by value (`b = pushed(b, f)`): these
/// callees are lowered at their calls, on the caller's own variables and arrays (a
/// by-value struct gets copies).
#[derive(Clone, Copy)]
struct Body {
    pos: [f64; 2],
    vel: [f64; 2],
    m: f64,
}

impl Body {
    fn push(&mut self, f: f64) {
        self.vel[0] += f / self.m;
        self.m *= 1.01;
    }

    fn step(&mut self, dt: f64) {
        for i in 0..2 {
            self.pos[i] += dt * self.vel[i];
        }
    }

    fn energy(&self) -> f64 {
        0.5 * self.m * (self.vel[0] * self.vel[0] + self.vel[1] * self.vel[1])
    }
}

fn kick(b: &mut Body, g: f64) {
    b.vel[1] -= g;
    b.step(0.1);
}

fn height(b: &Body) -> f64 {
    b.pos[1]
}

impl Body {
    fn new(x: f64, m: f64) -> Self {
        Body { pos: [x, 2.0 * x], vel: [0.0; 2], m }
    }

    fn moved(&self, d: f64) -> Body {
        Body { pos: [self.pos[0] + d, self.pos[1]], ..*self }
    }
}

fn at_rest(x: f64) -> Body {
    Body { pos: [x, 1.0], vel: [0.0, 0.0], m: x }
}

fn pushed(mut b: Body, f: f64) -> Body {
    b.pos[0] += f / b.m;
    b
}

fn moved(b: Body, other: &mut Body) -> f64 {
    other.pos[0] = 10.0;
    b.pos[0]
}

#[hvp(hvp_struct_with_arrays)]
#[autodiff_reverse(d_struct_with_arrays, Duplicated, Active)]
#[autodiff_forward(t_struct_with_arrays, Dual, Dual)]
fn struct_with_arrays(p: &[f64]) -> f64 {
    let mut b = Body { pos: [p[0], 0.0], vel: [0.0, p[1]], m: 2.0 };
    let mut e = 0.0;
    for _ in 0..5 {
        b.push(p[2]);
        kick(&mut b, 0.3 * p[0]);
        e += b.energy() + height(&b);
    }
    let c = b;
    b = pushed(b, p[1]);
    let mut o = Body { pos: [0.0; 2], vel: [0.0; 2], m: 1.0 };
    let keep = moved(c, &mut o);
    e + b.pos[0] * b.m + c.pos[0] * keep + o.pos[0] * p[0]
}

/// Structs with arrays made by the crate's functions: a constructor (`Body::new`), a
/// function, a `&self` method returning a new one (lowered at their calls).
#[autodiff_reverse(d_made_by_functions, Duplicated, Active)]
#[autodiff_forward(t_made_by_functions, Dual, Dual)]
fn made_by_functions(p: &[f64]) -> f64 {
    let mut b = at_rest(p[0]);
    b.pos[1] = p[1] * p[1];
    let c = Body::new(p[2], 3.0);
    let mut d = c.moved(p[0]);
    d.step(0.5);
    b.pos[1] * c.m + b.pos[0] * d.pos[0] + c.pos[1] + d.energy()
}

#[test]
fn local_structs_with_arrays_lent_to_methods_and_functions() {
    let x = [0.7, -0.4, 1.3];
    let jvp = |x: &[f64], u: &[f64]| t_struct_with_arrays(x, u).1;
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        assert_eq!(d_struct_with_arrays(x, &mut g, 1.0), struct_with_arrays(x));
        g
    };
    check_scalar("struct_with_arrays", &|x| struct_with_arrays(x), &jvp, &grad, &x, 3);
    let jvp = |x: &[f64], u: &[f64]| t_made_by_functions(x, u).1;
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        assert_eq!(d_made_by_functions(x, &mut g, 1.0), made_by_functions(x));
        g
    };
    check_scalar("made_by_functions", &|x| made_by_functions(x), &jvp, &grad, &x, 3);
    check_hvp_against_gradient(
        &|x, g| {
            d_struct_with_arrays(&x[..3], &mut g[..3], 1.0);
        },
        &|x, v, g, hv| {
            hvp_struct_with_arrays(&x[..3], &v[..3], &mut g[..3], &mut hv[..3]);
        },
    );
}

// Locals lent `&mut` to helpers that cotan lowers at their calls (they take a closure, or
// are generic over a constant): what the helper writes reaches the caller's local. (Until
// 2026-11-30 it did not: the primal and both derivatives silently used the old value.)

fn map_state<F: Fn(f64) -> f64>(s: &mut State, f: F) {
    s.x = f(s.x);
    s.v = f(s.v) * s.x;
}

fn bump_by<F: Fn(f64) -> f64>(a: &mut f64, f: F) {
    *a = f(*a) + *a;
}

fn scale_by_all<const N: usize>(a: &mut f64, w: &[f64; N]) {
    for k in 0..N {
        *a *= w[k];
    }
}

#[autodiff_reverse(d_lent_to_inlined, Duplicated, Active)]
#[autodiff_forward(t_lent_to_inlined, Dual, Dual)]
fn lent_to_inlined(x: &[f64]) -> f64 {
    let mut s = State { x: x[0], v: x[1] };
    map_state(&mut s, |t| t * t + x[2]);
    let mut a = x[2];
    bump_by(&mut a, |t| t * x[0]);
    let w = [x[1], 2.0];
    scale_by_all(&mut a, &w);
    s.x + 2.0 * s.v + a
}

#[test]
fn locals_lent_mut_to_helpers_lowered_at_their_calls() {
    let x = [0.3, 0.7, -0.4];
    // The written values, by hand: s = (0.3² - 0.4, (0.7² - 0.4)·s.x), a = (-0.4·0.3 - 0.4)·0.7·2.
    let sx = 0.3 * 0.3 - 0.4;
    let want = sx + 2.0 * ((0.7 * 0.7 - 0.4) * sx) + (-0.4 * 0.3 - 0.4) * 0.7 * 2.0;
    assert!((lent_to_inlined(&x) - want).abs() < 1e-14);
    common::check_slice_fn("lent_to_inlined", lent_to_inlined, d_lent_to_inlined, t_lent_to_inlined, &x);
}

#[autodiff_reverse(d_lent_to_closures, Duplicated, Active)]
#[autodiff_forward(t_lent_to_closures, Dual, Dual)]
fn lent_to_closures(x: &[f64]) -> f64 {
    let mut s = State { x: x[0], v: x[1] };
    let mut a = x[0];
    let kick = |p: &mut State, k: f64| {
        p.x *= k;
        p.v += p.x;
    };
    let add_square = |t: &mut f64, k: f64| *t += k * k;
    kick(&mut s, x[1]);
    add_square(&mut a, x[1]);
    s.x + 2.0 * s.v + a
}

#[test]
fn locals_lent_mut_to_local_closures() {
    let x = [0.3, 0.7];
    let want = 0.21 + 2.0 * (0.7 + 0.21) + 0.3 + 0.49;
    assert!((lent_to_closures(&x) - want).abs() < 1e-14);
    common::check_slice_fn("lent_to_closures", lent_to_closures, d_lent_to_closures, t_lent_to_closures, &x);
}
