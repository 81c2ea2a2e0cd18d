//! Structs and tuples: parameters read and written field by field, methods, calls.
#![allow(clippy::needless_range_loop)]

use cotan::{autodiff_forward, autodiff_reverse};

#[derive(Clone, Debug, PartialEq, cotan::Differentiable)]
struct Layer {
    w: Vec<f64>,
    b: f64,
}

#[derive(Clone, Debug, PartialEq, cotan::Differentiable)]
struct Model {
    layer: Layer,
    scale: [f64; 2],
    n: usize,
}

#[autodiff_reverse(d_predict, Duplicated, Duplicated, Active)]
#[autodiff_forward(f_predict, Dual, Dual, Dual)]
fn predict(m: &Model, x: &[f64]) -> f64 {
    let mut s = m.layer.b;
    for i in 0..m.n {
        s += m.layer.w[i] * x[i];
    }
    m.scale[0] * s.tanh() + m.scale[1] * s * s
}

fn zero_model(m: &Model) -> Model {
    use cotan::Differentiable;
    let z = m.zero_like();
    assert_eq!(z, Model { layer: Layer { w: vec![0.0; m.layer.w.len()], b: 0.0 }, scale: [0.0; 2], n: m.n });
    z
}

fn model() -> Model {
    Model { layer: Layer { w: vec![0.3, -0.2, 0.5], b: 0.1 }, scale: [1.5, -0.25], n: 3 }
}

#[test]
fn reverse_through_nested_struct_fields() {
    let m = model();
    let x = [0.7, -1.1, 0.4];
    let mut dm = zero_model(&m);
    let mut dx = [0.0; 3];
    let y = d_predict(&m, &mut dm, &x, &mut dx, 1.0);
    assert!((y - predict(&m, &x)).abs() < 1e-14);
    // Central differences on every float field.
    let h = 1e-6;
    let fd = |f: &dyn Fn(&mut Model)| {
        let (mut a, mut b) = (m.clone(), m.clone());
        f(&mut a);
        let _ = &mut b;
        (predict(&a, &x) - predict(&m, &x)) / h
    };
    let _ = fd;
    let central = |set: &dyn Fn(&mut Model, f64)| {
        let (mut a, mut b) = (m.clone(), m.clone());
        set(&mut a, h);
        set(&mut b, -h);
        (predict(&a, &x) - predict(&b, &x)) / (2.0 * h)
    };
    let tol = 1e-7;
    assert!((dm.layer.b - central(&|m, e| m.layer.b += e)).abs() < tol, "{}", dm.layer.b);
    for k in 0..3 {
        let g = central(&|m, e| m.layer.w[k] += e);
        assert!((dm.layer.w[k] - g).abs() < tol, "w[{k}]: {} vs {g}", dm.layer.w[k]);
    }
    for k in 0..2 {
        let g = central(&|m, e| m.scale[k] += e);
        assert!((dm.scale[k] - g).abs() < tol, "scale[{k}]: {} vs {g}", dm.scale[k]);
    }
    // Forward mode along a direction agrees with the reverse gradient (dot-product test).
    let mut tm = zero_model(&m);
    tm.layer.w = vec![0.2, 0.1, -0.3];
    tm.layer.b = 0.5;
    tm.scale = [-0.4, 0.9];
    let tx = [0.3, 0.2, -0.1];
    let (y2, dy) = f_predict(&m, &tm, &x, &tx);
    assert_eq!(y, y2);
    let mut dot = dm.layer.b * tm.layer.b;
    for k in 0..3 {
        dot += dm.layer.w[k] * tm.layer.w[k] + dx[k] * tx[k];
    }
    dot += dm.scale[0] * tm.scale[0] + dm.scale[1] * tm.scale[1];
    assert!((dot - dy).abs() < 1e-12 * dot.abs().max(1.0), "{dot} vs {dy}");
}

/// Central difference of `f` along the setter `set`.
fn central<S: Clone>(s: &S, f: &dyn Fn(&S) -> f64, set: &dyn Fn(&mut S, f64)) -> f64 {
    let h = 1e-6;
    let (mut a, mut b) = (s.clone(), s.clone());
    set(&mut a, h);
    set(&mut b, -h);
    (f(&a) - f(&b)) / (2.0 * h)
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() <= 1e-7 * (1.0 + b.abs()), "{what}: AD {a} vs FD {b}");
}

#[derive(Clone, Debug)]
struct Particle {
    pos: [f64; 2],
    vel: [f64; 2],
    mass: f64,
}

impl Particle {
    #[autodiff_reverse(d_energy, Duplicated, Active)]
    #[cotan::differentiable]
    fn energy(&self) -> f64 {
        0.5 * self.mass * (self.vel[0] * self.vel[0] + self.vel[1] * self.vel[1]) + self.potential()
    }

    #[cotan::differentiable]
    fn potential(&self) -> f64 {
        self.mass * 9.81 * self.pos[1] + (self.pos[0] * self.pos[1]).sin()
    }

    /// `&mut self`: one explicit Euler step.
    #[autodiff_reverse(d_step, Duplicated, Const)]
    fn step(&mut self, dt: f64) {
        self.pos[0] += dt * self.vel[0];
        self.pos[1] += dt * self.vel[1];
        self.vel[1] -= dt * 9.81 / self.mass;
    }
}

fn particle() -> Particle {
    Particle { pos: [0.3, 1.2], vel: [0.5, -0.7], mass: 2.0 }
}

fn zero_particle() -> Particle {
    Particle { pos: [0.0; 2], vel: [0.0; 2], mass: 0.0 }
}

#[test]
fn methods_with_self_and_calls_between_them() {
    let p = particle();
    let mut dp = zero_particle();
    let e = p.d_energy(&mut dp, 1.0);
    close(e, p.energy(), "value");
    let f = |q: &Particle| q.energy();
    close(dp.mass, central(&p, &f, &|q, h| q.mass += h), "mass");
    for k in 0..2 {
        close(dp.pos[k], central(&p, &f, &|q, h| q.pos[k] += h), "pos");
        close(dp.vel[k], central(&p, &f, &|q, h| q.vel[k] += h), "vel");
    }
}

#[test]
fn mut_self_methods_write_fields() {
    // Reverse through `step`: seed the adjoint of the final state with `w`, read the
    // adjoint of the initial state; compare with differences of <w, step(p)>.
    let w = [0.3, -0.4, 0.7, 0.2];
    let dot = |q: &Particle| w[0] * q.pos[0] + w[1] * q.pos[1] + w[2] * q.vel[0] + w[3] * q.vel[1];
    let stepped = |q: &Particle| {
        let mut q = q.clone();
        q.step(0.1);
        dot(&q)
    };
    let p = particle();
    let mut q = p.clone();
    let mut dq = Particle { pos: [w[0], w[1]], vel: [w[2], w[3]], mass: 0.0 };
    q.d_step(&mut dq, 0.1);
    let mut moved = p.clone();
    moved.step(0.1);
    assert_eq!((q.pos, q.vel), (moved.pos, moved.vel), "the derivative also runs the primal");
    close(dq.mass, central(&p, &stepped, &|q, h| q.mass += h), "mass");
    for k in 0..2 {
        close(dq.pos[k], central(&p, &stepped, &|q, h| q.pos[k] += h), "pos");
        close(dq.vel[k], central(&p, &stepped, &|q, h| q.vel[k] += h), "vel");
    }
}

#[cotan::differentiable]
fn layer_out(l: &Layer, x: &[f64]) -> f64 {
    let mut s = l.b;
    for (w, xi) in l.w.iter().zip(x) {
        s += w * xi;
    }
    s.tanh()
}

/// Structs passed to other functions, a tuple, and a struct by value (constant).
#[autodiff_reverse(d_two_layers, Duplicated, Duplicated, Duplicated, Const, Active)]
#[autodiff_forward(f_two_layers, Dual, Dual, Dual, Const, Dual)]
fn two_layers(a: &Layer, b: &Layer, t: &(f64, Vec<f64>), cfg: (usize, f64)) -> f64 {
    let h = layer_out(a, &t.1);
    let g = layer_out(b, &t.1);
    t.0 * h * g + cfg.1 * (cfg.0 as f64)
}

#[test]
fn structs_passed_to_calls_and_tuples() {
    let a = Layer { w: vec![0.2, -0.5, 0.1], b: 0.3 };
    let b = Layer { w: vec![-0.3, 0.4, 0.6], b: -0.1 };
    let t = (1.7, vec![0.5, 1.5, -0.8]);
    let cfg = (3, 0.25);
    let zl = |l: &Layer| Layer { w: vec![0.0; l.w.len()], b: 0.0 };
    let (mut da, mut db, mut dt) = (zl(&a), zl(&b), (0.0, vec![0.0; 3]));
    let y = d_two_layers(&a, &mut da, &b, &mut db, &t, &mut dt, cfg, 1.0);
    close(y, two_layers(&a, &b, &t, cfg), "value");
    let all = (a.clone(), b.clone(), t.clone());
    let f = |s: &(Layer, Layer, (f64, Vec<f64>))| two_layers(&s.0, &s.1, &s.2, cfg);
    close(da.b, central(&all, &f, &|s, h| s.0.b += h), "a.b");
    close(db.b, central(&all, &f, &|s, h| s.1.b += h), "b.b");
    close(dt.0, central(&all, &f, &|s, h| s.2 .0 += h), "t.0");
    for k in 0..3 {
        close(da.w[k], central(&all, &f, &|s, h| s.0.w[k] += h), "a.w");
        close(db.w[k], central(&all, &f, &|s, h| s.1.w[k] += h), "b.w");
        close(dt.1[k], central(&all, &f, &|s, h| s.2 .1[k] += h), "t.1");
    }
    // Dot-product test against forward mode.
    let ta = Layer { w: vec![0.1, 0.2, -0.3], b: 0.4 };
    let tb = Layer { w: vec![-0.2, 0.5, 0.1], b: 0.3 };
    let tt = (0.6, vec![0.3, -0.1, 0.2]);
    let (y2, dy) = f_two_layers(&a, &ta, &b, &tb, &t, &tt, cfg);
    assert_eq!(y, y2);
    let mut dot = da.b * ta.b + db.b * tb.b + dt.0 * tt.0;
    for k in 0..3 {
        dot += da.w[k] * ta.w[k] + db.w[k] * tb.w[k] + dt.1[k] * tt.1[k];
    }
    assert!((dot - dy).abs() < 1e-12 * dy.abs().max(1.0), "{dot} vs {dy}");
}

#[derive(Clone, cotan::Differentiable)]
struct Quad {
    a: [f64; 2],
    c: f64,
}

#[cotan::differentiable]
fn quad_energy(q: &Quad, x: &[f64]) -> f64 {
    q.a[0] * x[0] * x[0] * x[1] + q.a[1] * (x[1] * x[0]).sin() + q.c * x[0]
}

/// Second order through a struct passed to a helper (forward over reverse).
#[cotan::hessian(quad_hessian)]
#[cotan::hvp(quad_hvp)]
fn quad_loss(x: &[f64], q: &Quad) -> f64 {
    quad_energy(q, x) * 0.5
}

#[test]
fn hessian_through_struct_helpers() {
    let q = Quad { a: [1.5, -0.7], c: 0.3 };
    let x = [0.4, -1.1];
    let mut g = [0.0; 2];
    let mut h = [0.0; 4];
    let y = quad_hessian(&x, &q, &mut g, &mut h);
    assert!((y - quad_loss(&x, &q)).abs() < 1e-15);
    // Each Hessian column against central differences of the gradient.
    let grad = |x: &[f64]| {
        let mut g = [0.0; 2];
        let mut hv = [0.0; 2];
        quad_hvp(x, &[0.0, 0.0], &q, &mut g, &mut hv);
        g
    };
    let eps = 1e-5;
    for j in 0..2 {
        let (mut a, mut b) = (x, x);
        a[j] += eps;
        b[j] -= eps;
        let (ga, gb) = (grad(&a), grad(&b));
        for i in 0..2 {
            let fd = (ga[i] - gb[i]) / (2.0 * eps);
            assert!((h[i * 2 + j] - fd).abs() < 1e-7, "H[{i}][{j}] = {} vs {fd}", h[i * 2 + j]);
        }
    }
    assert_eq!(h[1], h[2]);
}

/// A struct whose float fields are the components of a flat vector, for finite differences.
#[derive(Clone, Debug, Default, cotan::Differentiable)]
struct Mixed {
    a: [f64; 2],
    m: f64,
    s: f64,
    n: usize,
}

impl Mixed {
    fn get(&self) -> [f64; 4] {
        [self.a[0], self.a[1], self.m, self.s]
    }
    fn set(&mut self, v: [f64; 4]) {
        (self.a[0], self.a[1], self.m, self.s) = (v[0], v[1], v[2], v[3]);
    }
}

fn mixed() -> Mixed {
    Mixed { a: [0.7, -0.4], m: 1.3, s: 0.45, n: 3 }
}

/// The reverse gradient `d` of `f` at `p` against central differences.
fn check_mixed(p: &Mixed, d: &Mixed, f: &dyn Fn(&Mixed) -> f64) {
    for k in 0..4 {
        let g = central(p, f, &|q, h| {
            let mut v = q.get();
            v[k] += h;
            q.set(v);
        });
        close(d.get()[k], g, &format!("component {k}"));
    }
}

#[cotan::differentiable]
fn scaled_first(a: &[f64], m: f64) -> f64 {
    a[0] * m
}

#[cotan::differentiable]
fn dot(p: &[f64], q: &[f64]) -> f64 {
    p[0] * q[0] + p[1] * q[1]
}

/// Fields typed only by a float method, a call's parameter, a loop bound or a cast.
#[autodiff_reverse(d_field_uses, Duplicated, Active)]
fn field_uses(p: &Mixed) -> f64 {
    let mut acc = p.s.powi(2) + scaled_first(&p.a, p.m);
    let mut k = 0;
    while k < p.n {
        acc *= 1.1;
        k += 1;
    }
    for w in &p.a {
        acc += w * w;
    }
    acc + dot(&p.a, &p.a) * p.n as f64
}

#[test]
fn field_types_from_their_uses() {
    let p = mixed();
    let mut d = Mixed::default();
    let y = d_field_uses(&p, &mut d, 1.0);
    close(y, field_uses(&p), "value");
    check_mixed(&p, &d, &field_uses);
}

#[cotan::differentiable]
fn scale_by(a: &mut [f64], b: &mut [f64]) {
    a[0] *= b[0];
    a[1] *= b[1];
}

/// `&mut` structs: fields written in place (`*=` of two fields), fields only passed on.
#[autodiff_reverse(d_in_place, Duplicated, Active, Active)]
fn in_place(p: &mut Mixed, dt: f64) -> f64 {
    p.m *= p.s;
    p.s *= dt;
    scale_by(&mut p.a, &mut [dt, 2.0]);
    p.a[0] * p.m + p.s
}

#[test]
fn written_fields_and_fields_passed_on() {
    let p = mixed();
    let dt = 0.8;
    let mut q = p.clone();
    let mut d = Mixed::default();
    let (y, ddt) = d_in_place(&mut q, &mut d, dt, 1.0);
    let f = |p: &Mixed| in_place(&mut p.clone(), dt);
    close(y, f(&p), "value");
    check_mixed(&p, &d, &f);
    let g = central(&dt, &|dt: &f64| in_place(&mut p.clone(), *dt), &|dt, h| *dt += h);
    close(ddt, g, "dt");
}

struct Cell {
    w: Vec<f64>,
}

#[autodiff_reverse(d_cell_energy, Duplicated, Active)]
fn cell_energy(c: &Cell) -> f64 {
    c.w[0] * c.w[1]
}

#[test]
fn a_struct_named_cell() {
    let c = Cell { w: vec![2.0, 3.0] };
    let mut dc = Cell { w: vec![0.0; 2] };
    d_cell_energy(&c, &mut dc, 1.0);
    assert_eq!(dc.w, vec![3.0, 2.0]);
}

/// The same buffer passed twice to a call.
#[autodiff_reverse(d_self_dot, Duplicated, Active)]
fn self_dot(x: &[f64]) -> f64 {
    dot(x, x)
}

#[test]
fn the_same_buffer_passed_twice() {
    let x = [0.3, -1.2];
    let mut dx = [0.0; 2];
    d_self_dot(&x, &mut dx, 1.0);
    assert_eq!(dx, [0.6, -2.4]);
}

#[derive(Clone, Debug)]
struct Sim {
    x: [f64; 2],
    v: [f64; 2],
    k: f64,
}

impl Sim {
    #[cotan::differentiable]
    fn step(&mut self, dt: f64) {
        let a0 = -self.k * self.x[0].sin();
        let a1 = -self.k * self.x[1] * self.x[0];
        self.v[0] += dt * a0;
        self.v[1] += dt * a1;
        self.x[0] += dt * self.v[0];
        self.x[1] += dt * self.v[1];
    }

    /// `&mut self` methods calling each other in a loop (the state is saved before each call).
    #[autodiff_reverse(d_run, Duplicated, Const, Active)]
    fn run(&mut self, steps: usize) -> f64 {
        for _ in 0..steps {
            self.step(0.1);
        }
        self.x[0] * self.x[0] + self.v[1]
    }
}

#[test]
fn mut_self_methods_call_each_other_in_reverse() {
    let s = Sim { x: [0.4, -0.3], v: [0.2, 0.5], k: 1.7 };
    let mut t = s.clone();
    let mut ds = Sim { x: [0.0; 2], v: [0.0; 2], k: 0.0 };
    let y = t.d_run(&mut ds, 5, 1.0);
    let f = |s: &Sim| s.clone().run(5);
    close(y, f(&s), "value");
    close(ds.k, central(&s, &f, &|s, h| s.k += h), "k");
    for i in 0..2 {
        close(ds.x[i], central(&s, &f, &|s, h| s.x[i] += h), "x");
        close(ds.v[i], central(&s, &f, &|s, h| s.v[i] += h), "v");
    }
}

#[cotan::differentiable]
fn sum_into(l: &Layer, out: &mut [f64]) {
    for i in 0..out.len() {
        out[i] = l.w[i] * l.b;
    }
}

/// Fields used inside macros (`vec![0.0; m.n]`) and nested structs passed on.
#[autodiff_reverse(d_in_macros, Duplicated, Active)]
fn in_macros(m: &Model) -> f64 {
    let mut h = vec![0.0; m.n];
    sum_into(&m.layer, &mut h);
    assert!(m.n <= m.layer.w.len(), "n fits");
    h[0] * h[2] + m.scale[1]
}

#[test]
fn fields_in_macros_and_nested_structs_passed_on() {
    let m = model();
    let mut dm = zero_model(&m);
    in_macros(&m);
    d_in_macros(&m, &mut dm, 1.0);
    let f = |m: &Model| in_macros(m);
    close(dm.layer.b, central(&m, &f, &|m, h| m.layer.b += h), "b");
    close(dm.scale[1], central(&m, &f, &|m, h| m.scale[1] += h), "scale");
    for k in 0..3 {
        close(dm.layer.w[k], central(&m, &f, &|m, h| m.layer.w[k] += h), "w");
    }
}
