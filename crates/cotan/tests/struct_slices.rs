//! Slices, vectors and arrays of structs as parameters (`&[Spring]`, `&mut [Particle]`,
//! `&Vec<Body>`, `&[Body; 3]`), `Const`, `Duplicated` and `Dual`, as std takes them: the
//! shadow is a slice of the same structs. Elements are indexed, iterated (`for s in
//! springs`, `iter_mut`, iterator chains), their fields read and written, and passed to
//! helpers and methods. Checked against central finite differences, forward mode against
//! reverse mode, and batched forward mode against both.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse, hvp};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Particle {
    pub pos: [f64; 2],
    pub vel: [f64; 2],
    pub mass: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spring {
    pub a: usize,
    pub b: usize,
    pub rest: f64,
    pub k: f64,
}

impl Spring {
    fn energy(&self, particles: &[Particle]) -> f64 {
        let l = norm(sub(particles[self.b].pos, particles[self.a].pos));
        0.5 * self.k * (l - self.rest) * (l - self.rest)
    }
}

fn sub(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] - b[0], a[1] - b[1]]
}

fn norm(v: [f64; 2]) -> f64 {
    (v[0] * v[0] + v[1] * v[1]).sqrt()
}

fn kinetic(p: &Particle) -> f64 {
    0.5 * p.mass * (p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1])
}

/// One semi-implicit Euler step of the mass-spring system, in place.
fn step(particles: &mut [Particle], springs: &[Spring], dt: f64) {
    for s in springs {
        let d = sub(particles[s.b].pos, particles[s.a].pos);
        let len = norm(d);
        let f = s.k * (len - s.rest) / len;
        for c in 0..2 {
            particles[s.a].vel[c] += dt * f * d[c] / particles[s.a].mass;
            particles[s.b].vel[c] -= dt * f * d[c] / particles[s.b].mass;
        }
    }
    for p in particles.iter_mut() {
        for c in 0..2 {
            p.pos[c] += dt * p.vel[c];
        }
    }
}

#[autodiff_reverse(d_sim, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_sim, Dual, Dual, Dual)]
#[autodiff_forward(t2_sim, 2, Dual, Dual, Dual)]
fn sim(springs: &[Spring], particles: &mut [Particle]) -> f64 {
    for _ in 0..20 {
        step(particles, springs, 0.05);
    }
    let total: f64 = particles.iter().map(|p| p.mass).sum();
    let mut e = 0.0;
    for i in 0..particles.len() {
        e += kinetic(&particles[i]) + particles[i].pos[1] * particles[i].mass / total;
    }
    e + springs.iter().map(|s| s.energy(particles)).sum::<f64>() + springs[0].energy(particles)
}

fn scene() -> (Vec<Spring>, Vec<Particle>) {
    let springs = vec![
        Spring { a: 0, b: 1, rest: 1.0, k: 2.0 },
        Spring { a: 1, b: 2, rest: 0.5, k: 3.0 },
        Spring { a: 0, b: 2, rest: 1.5, k: 1.0 },
    ];
    let particles = vec![
        Particle { pos: [0.0, 0.0], vel: [0.1, 0.0], mass: 1.0 },
        Particle { pos: [1.1, 0.2], vel: [0.0, 0.3], mass: 1.5 },
        Particle { pos: [0.4, 1.0], vel: [-0.2, 0.0], mass: 0.8 },
    ];
    (springs, particles)
}

/// Every float of the scene, in a fixed order: a vector view for finite differences.
fn floats(s: &[Spring], p: &[Particle]) -> Vec<f64> {
    let mut out = vec![];
    for s in s {
        out.extend([s.rest, s.k]);
    }
    for p in p {
        out.extend([p.pos[0], p.pos[1], p.vel[0], p.vel[1], p.mass]);
    }
    out
}

fn with_floats(s: &[Spring], p: &[Particle], x: &[f64]) -> (Vec<Spring>, Vec<Particle>) {
    let (mut s, mut p) = (s.to_vec(), p.to_vec());
    let mut k = 0;
    for s in s.iter_mut() {
        s.rest = x[k];
        s.k = x[k + 1];
        k += 2;
    }
    for p in p.iter_mut() {
        p.pos = [x[k], x[k + 1]];
        p.vel = [x[k + 2], x[k + 3]];
        p.mass = x[k + 4];
        k += 5;
    }
    (s, p)
}

/// A gradient against central finite differences, float by float.
fn check_gradient(f: &dyn Fn(&[f64]) -> f64, x: &[f64], grad: &[f64]) {
    for i in 0..x.len() {
        let h = 1e-6 * x[i].abs().max(1.0);
        let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
        xp[i] += h;
        xm[i] -= h;
        let fd = (f(&xp) - f(&xm)) / (2.0 * h);
        assert!((grad[i] - fd).abs() < 1e-6 * fd.abs().max(1.0), "float {i}: {} vs {fd}", grad[i]);
    }
}

#[test]
fn slices_of_structs_against_finite_differences_in_both_modes() {
    let (springs, parts) = scene();
    let f = |x: &[f64]| {
        let (s, mut p) = with_floats(&springs, &parts, x);
        sim(&s, &mut p)
    };
    let mut ds = vec![Spring::default(); 3];
    let mut p = parts.clone();
    let mut dp = vec![Particle::default(); 3];
    let v = d_sim(&springs, &mut ds, &mut p, &mut dp, 1.0);
    let x = floats(&springs, &parts);
    assert_eq!(v, f(&x));
    // The integer fields of the shadows are left as they were.
    assert!(ds.iter().all(|s| s.a == 0 && s.b == 0));
    let grad = floats(&ds, &dp);
    check_gradient(&f, &x, &grad);
    // Forward mode against reverse mode (dot-product test), and the final state.
    let u: Vec<f64> = (0..x.len()).map(|i| ((i * 7 + 3) % 11) as f64 / 11.0 - 0.5).collect();
    let (ts, tp) = with_floats(&springs, &parts, &u);
    let mut p2 = parts.clone();
    let mut tp2 = tp.clone();
    let (v2, t) = t_sim(&springs, &ts, &mut p2, &mut tp2);
    assert_eq!(v2, v);
    assert_eq!(p2, p);
    let want: f64 = grad.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!((t - want).abs() < 1e-10 * want.abs().max(1.0), "{t} vs {want}");
    // Two directions at once: the second is the first, doubled.
    let (ts2, tp2b) = with_floats(&springs, &parts, &u.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    let mut p3 = parts.clone();
    let (mut l0, mut l1) = (tp.clone(), tp2b.clone());
    let [v3, a, b] = t2_sim(&springs, &ts, &ts2, &mut p3, &mut l0, &mut l1);
    assert_eq!(v3, v);
    assert!((a - t).abs() < 1e-12 * t.abs().max(1.0) && (b - 2.0 * t).abs() < 1e-12 * t.abs().max(1.0));
}

/// The slice of structs held constant, the derivative taken with respect to numbers.
#[autodiff_reverse(d_stiff, Duplicated, Const, Const, Active)]
#[autodiff_forward(t_stiff, Dual, Const, Const, Dual)]
fn stiffness_loss(k: &[f64], springs: &Vec<Spring>, bodies: &[Particle; 3]) -> f64 {
    let mut e = 0.0;
    for (s, ks) in springs.iter().zip(k) {
        let l = norm(sub(bodies[s.b].pos, bodies[s.a].pos));
        e += ks * (l - s.rest).powi(2) + ks.sin() * bodies[s.a].mass;
    }
    e
}

#[test]
fn constant_slices_and_arrays_of_structs() {
    let (springs, parts) = scene();
    let bodies = [parts[0], parts[1], parts[2]];
    let k = [0.7, 1.3, -0.4];
    let mut dk = [0.0; 3];
    let v = d_stiff(&k, &mut dk, &springs, &bodies, 1.0);
    assert_eq!(v, stiffness_loss(&k, &springs, &bodies));
    for i in 0..3 {
        let h = 1e-6;
        let (mut kp, mut km) = (k, k);
        kp[i] += h;
        km[i] -= h;
        let fd = (stiffness_loss(&kp, &springs, &bodies) - stiffness_loss(&km, &springs, &bodies)) / (2.0 * h);
        assert!((dk[i] - fd).abs() < 1e-7 * fd.abs().max(1.0), "k[{i}]: {} vs {fd}", dk[i]);
    }
    let u = [0.5, -1.0, 0.25];
    let (_, t) = t_stiff(&k, &u, &springs, &bodies);
    let want: f64 = dk.iter().zip(&u).map(|(a, b)| a * b).sum();
    assert!((t - want).abs() < 1e-12 * want.abs().max(1.0), "{t} vs {want}");
}

pub const NE: usize = 3;

/// Arrays of tuples in a field, their length a constant (`[(usize, usize); NE]`),
/// destructured in a `for`; arrays of arrays copied from behind a reference (`*x0`).
pub struct Edges {
    pub ends: [(usize, usize); NE],
    pub rest: [f64; NE],
}

#[autodiff_reverse(d_edges, Duplicated, Const, Active)]
#[autodiff_forward(t_edges, Dual, Const, Dual)]
fn edge_energy(x0: &[[f64; 2]; 3], e: &Edges) -> f64 {
    let mut x = *x0;
    x[1][0] += 0.5 * x[2][1];
    let mut s = 0.0;
    for (k, &(a, b)) in e.ends.iter().enumerate() {
        let d = [x[b][0] - x[a][0], x[b][1] - x[a][1]];
        let l = (d[0] * d[0] + d[1] * d[1]).sqrt();
        s += (l - e.rest[k]).powi(2);
    }
    s
}

#[test]
fn arrays_of_tuples_in_fields_and_copied_arrays_of_arrays() {
    let e = Edges { ends: [(0, 1), (1, 2), (0, 2)], rest: [1.0, 0.5, 1.5] };
    let x0 = [[0.0, 0.1], [1.1, 0.2], [0.4, 1.0]];
    let mut dx = [[0.0; 2]; 3];
    let v = d_edges(&x0, &mut dx, &e, 1.0);
    assert_eq!(v, edge_energy(&x0, &e));
    let u = [[0.3, -0.2], [0.1, 0.5], [-0.4, 0.25]];
    let (v2, t) = t_edges(&x0, &u, &e);
    assert_eq!(v2, v);
    let mut want = 0.0;
    for i in 0..3 {
        for c in 0..2 {
            let h = 1e-6;
            let (mut p, mut m) = (x0, x0);
            p[i][c] += h;
            m[i][c] -= h;
            let fd = (edge_energy(&p, &e) - edge_energy(&m, &e)) / (2.0 * h);
            assert!((dx[i][c] - fd).abs() < 1e-7 * fd.abs().max(1.0), "x[{i}][{c}]: {} vs {fd}", dx[i][c]);
            want += dx[i][c] * u[i][c];
        }
    }
    assert!((t - want).abs() < 1e-12 * want.abs().max(1.0), "{t} vs {want}");
    assert_eq!(x0, [[0.0, 0.1], [1.1, 0.2], [0.4, 1.0]], "the copy is written, not the argument");
}

/// A local copy of a slice of structs (`initial.to_vec()`), written and passed on; an array
/// accumulator in `fold`. As the DiffTaichi-style mass-spring models write them.
#[autodiff_reverse(d_local, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_local, Dual, Dual, Dual)]
fn local_copy_of_structs(springs: &[Spring], initial: &[Particle]) -> f64 {
    let mut particles = initial.to_vec();
    for _ in 0..10 {
        step(&mut particles, springs, 0.05);
    }
    let c = particles.iter().fold([0.0, 0.0], |acc, p| [acc[0] + p.mass * p.pos[0], acc[1] + p.mass * p.vel[1]]);
    c[0] * c[1] + particles[2].pos[0]
}

#[test]
fn local_vectors_of_structs_and_array_accumulators() {
    let (springs, parts) = scene();
    let f = |x: &[f64]| {
        let (s, p) = with_floats(&springs, &parts, x);
        local_copy_of_structs(&s, &p)
    };
    let mut ds = vec![Spring::default(); 3];
    let mut dp = vec![Particle::default(); 3];
    let v = d_local(&springs, &mut ds, &parts, &mut dp, 1.0);
    let x = floats(&springs, &parts);
    assert_eq!(v, f(&x));
    let grad = floats(&ds, &dp);
    check_gradient(&f, &x, &grad);
    let u: Vec<f64> = (0..x.len()).map(|i| ((i * 5 + 1) % 7) as f64 / 7.0 - 0.5).collect();
    let (ts, tp) = with_floats(&springs, &parts, &u);
    let (v2, t) = t_local(&springs, &ts, &parts, &tp);
    assert_eq!(v2, v);
    let want: f64 = grad.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!((t - want).abs() < 1e-10 * want.abs().max(1.0), "{t} vs {want}");
}

/// Vectors of structs collected from struct literals: update syntax over a slice of
/// structs (`Spring { k, ..*s }`, with only numbers; `Particle { vel, ..*p }`, with arrays),
/// and a literal naming every field. `x` holds three stiffnesses, then three velocities.
#[hvp(collected_hvp)]
#[autodiff_reverse(d_collected, Duplicated, Const, Const, Active)]
#[autodiff_forward(t_collected, Dual, Const, Const, Dual)]
#[autodiff_forward(t2_collected, 2, Dual, Const, Const, Dual)]
fn collected(x: &[f64], springs: &[Spring], parts: &[Particle]) -> f64 {
    let stiff: Vec<Spring> = springs.iter().zip(&x[..3]).map(|(s, &k)| Spring { k, ..*s }).collect();
    let vels: Vec<[f64; 2]> = x[3..].chunks(2).map(|c| [c[0], c[1]]).collect();
    let mut moving: Vec<Particle> = parts.iter().zip(&vels).map(|(p, &vel)| Particle { vel, ..*p }).collect();
    for _ in 0..10 {
        step(&mut moving, &stiff, 0.05);
    }
    // Every field named, one of them an array built in place.
    let shifted: Vec<Particle> = moving
        .iter()
        .enumerate()
        .map(|(i, p)| Particle { pos: [p.pos[0] + x[i], p.pos[1] * x[i + 3]], vel: p.vel, mass: p.mass * 2.0 })
        .collect();
    shifted.iter().map(|p| kinetic(p) + p.pos[0] * p.pos[1]).sum::<f64>()
        + stiff.iter().map(|s| s.k * s.rest).sum::<f64>()
}

#[test]
fn vectors_of_structs_collected_from_literals() {
    let (springs, parts) = scene();
    let x = [2.0, 3.0, 1.0, 0.1, 0.0, 0.0, 0.3, -0.2, 0.0];
    let f = |x: &[f64]| collected(x, &springs, &parts);
    let mut g = [0.0; 9];
    let v = d_collected(&x, &mut g, &springs, &parts, 1.0);
    assert_eq!(v, f(&x));
    check_gradient(&f, &x, &g);
    // Forward against reverse (dot-product test), one direction and two at once.
    let u: Vec<f64> = (0..9).map(|i| ((i * 5 + 2) % 7) as f64 / 7.0 - 0.4).collect();
    let (v1, t) = t_collected(&x, &u, &springs, &parts);
    assert_eq!(v1, v);
    let want: f64 = g.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!((t - want).abs() < 1e-10 * want.abs().max(1.0), "{t} vs {want}");
    let u2: Vec<f64> = u.iter().map(|v| -3.0 * v).collect();
    let [v2, a, b] = t2_collected(&x, &u, &u2, &springs, &parts);
    assert_eq!(v2, v);
    assert!((a - t).abs() < 1e-12 * t.abs().max(1.0) && (b + 3.0 * t).abs() < 1e-12 * t.abs().max(1.0));
    // Second order: against central differences of the gradient.
    let (mut g2, mut hv) = ([0.0; 9], [0.0; 9]);
    let v3 = collected_hvp(&x, &u, &springs, &parts, &mut g2, &mut hv);
    assert_eq!(v3, v);
    assert_eq!(g2, g);
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; 9];
        d_collected(x, &mut g, &springs, &parts, 1.0);
        g
    };
    let h = 1e-4;
    let xp: Vec<f64> = x.iter().zip(&u).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&u).map(|(a, b)| a - h * b).collect();
    for k in 0..9 {
        let want = (grad(&xp)[k] - grad(&xm)[k]) / (2.0 * h);
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
    }
}

#[derive(Clone, Copy)]
pub struct Node {
    pub op: u8,
    pub a: usize,
    pub c: f64,
}

/// Fields of an element of a slice of structs (a copy and a reference) read in both
/// branches of an `if` and in the arms of a `match`: each branch reads them itself (the
/// field taken in one branch was once reused in the other, which is invalid IR).
#[cotan::autodiff_forward(t_fields_in_branches, Const, Dual, Dual)]
#[cotan::autodiff_reverse(d_fields_in_branches, Const, Duplicated, Active)]
fn fields_in_branches(nodes: &[Node], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..nodes.len() {
        let n = nodes[k];
        let m = &nodes[(k + 1) % nodes.len()];
        if n.op == 0 {
            s += n.c * x[n.a]
        } else {
            s += x[n.a].sin() * m.c
        }
        match m.op {
            0 => s += m.c * x[m.a],
            _ => s -= x[n.a] * m.c,
        }
    }
    s
}

#[test]
fn fields_read_in_each_branch() {
    let nodes = [Node { op: 0, a: 1, c: 0.5 }, Node { op: 1, a: 0, c: -1.5 }, Node { op: 1, a: 2, c: 2.0 }];
    let x = [0.3, -1.2, 0.8];
    let mut dx = [0.0; 3];
    assert_eq!(d_fields_in_branches(&nodes, &x, &mut dx, 1.0), fields_in_branches(&nodes, &x));
    for i in 0..3 {
        let (mut p, mut m) = (x, x);
        p[i] += 1e-6;
        m[i] -= 1e-6;
        let fd = (fields_in_branches(&nodes, &p) - fields_in_branches(&nodes, &m)) / 2e-6;
        assert!((fd - dx[i]).abs() <= 1e-6 * fd.abs().max(1.0), "dx[{i}]: {} vs {fd}", dx[i]);
        let mut dir = [0.0; 3];
        dir[i] = 1.0;
        let (_, jvp) = t_fields_in_branches(&nodes, &x, &dir);
        assert!((jvp - dx[i]).abs() <= 1e-12 * jvp.abs().max(1.0), "forward along x[{i}]");
    }
}

/// What the message for a part of a slice of structs or rows (`&ps[1..]`) suggests: the
/// elements by index, or `iter().skip(..)`.
#[cotan::autodiff_reverse(d_tail_of_structs, Duplicated, Active)]
fn tail_of_structs(ps: &[Spring]) -> f64 {
    let mut s = 0.0;
    for i in 1..ps.len() {
        let p = &ps[i];
        s += p.k * p.rest;
    }
    for b in ps.iter().skip(1) {
        s += b.k;
    }
    s
}

#[cotan::autodiff_reverse(d_tail_of_rows, Duplicated, Active)]
fn tail_of_rows(m: &[Vec<f64>]) -> f64 {
    let mut t = 0.0;
    for i in 1..m.len() {
        let row = &m[i];
        t += row[0] * row[1];
    }
    for r in m.iter().skip(1) {
        t += r[0];
    }
    t
}

#[test]
fn parts_of_slices_of_structs_and_rows_by_index() {
    let sp = |k, rest| Spring { a: 0, b: 1, rest, k };
    let ps = [sp(1.0, 2.0), sp(3.0, 4.0), sp(5.0, 6.0)];
    let mut dps = [sp(0.0, 0.0), sp(0.0, 0.0), sp(0.0, 0.0)];
    assert_eq!(d_tail_of_structs(&ps, &mut dps, 1.0), tail_of_structs(&ps));
    // d/dk = rest + 1 and d/drest = k past the first; nothing for the first.
    let got: Vec<(f64, f64)> = dps.iter().map(|s| (s.k, s.rest)).collect();
    assert_eq!(got, vec![(0.0, 0.0), (5.0, 3.0), (7.0, 5.0)]);
    let m = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![-1.0, 0.5]];
    let mut dm = vec![vec![0.0; 2]; 3];
    assert_eq!(d_tail_of_rows(&m, &mut dm, 1.0), tail_of_rows(&m));
    assert_eq!(dm, vec![vec![0.0, 0.0], vec![5.0, 3.0], vec![1.5, -1.0]]);
}

/// A vector of structs collected from a constructor (`.map(|k| Biquad::new(..)).collect()`),
/// then run in place through a `&mut self` method: a cascade of filters.
#[derive(Clone, Copy, Default)]
pub struct Biquad {
    b0: f64,
    b1: f64,
    a1: f64,
    z: f64,
}

impl Biquad {
    pub fn new(b0: f64, b1: f64, a1: f64) -> Self {
        Biquad { b0, b1, a1, z: 0.0 }
    }
    pub fn process(&mut self, x: f64) -> f64 {
        let y = self.b0 * x + self.z;
        self.z = self.b1 * x - self.a1 * y;
        y
    }
}

#[cotan::autodiff_reverse(d_cascade, Duplicated, Const, Active)]
#[cotan::autodiff_forward(t_cascade, Dual, Const, Dual)]
fn cascade(c: &[f64], xs: &[f64]) -> f64 {
    let mut filters: Vec<Biquad> = c.chunks_exact(3).map(|k| Biquad::new(k[0], k[1], k[2])).collect();
    let mut s = 0.0;
    for &x in xs {
        let mut y = x;
        for b in filters.iter_mut() {
            y = b.process(y);
        }
        s += y * y;
    }
    s
}

#[test]
fn structs_collected_from_a_constructor() {
    let xs = [1.0, 0.5, -0.25, 0.75];
    let f = |c: &[f64]| cascade(c, &xs);
    let rev = |c: &[f64], dc: &mut [f64], s: f64| d_cascade(c, dc, &xs, s);
    let fwd = |c: &[f64], t: &[f64]| t_cascade(c, t, &xs);
    let c = [0.5, 0.2, 0.1, 0.9, -0.3, 0.2];
    let mut dc = [0.0; 6];
    assert_eq!(rev(&c, &mut dc, 1.0), f(&c));
    let grad = |c: &[f64]| {
        let mut g = vec![0.0; c.len()];
        rev(c, &mut g, 1.0);
        g
    };
    common::check_scalar("cascade", &f, &|c, t| fwd(c, t).1, &grad, &c, 3);
}

/// `if let Some(o) = obs.last()`, `obs.get(k)`, `let Some(o) = obs.first() else { .. }` and
/// `match obs.first() { Some(o) => .., None => .. }` of a slice of structs: the element is taken only where there is one (an empty slice too).
pub struct Observation {
    day: f64,
    value: f64,
}

#[autodiff_reverse(d_observed, Duplicated, Const, Active)]
#[autodiff_forward(t_observed, Dual, Const, Dual)]
fn observed(x: &[f64], obs: &[Observation]) -> f64 {
    let last = if let Some(o) = obs.last() { o.day } else { 0.0 };
    let k = 1;
    let mid = if let Some(o) = obs.get(k) { o.value * x[1] } else { 1.0 };
    let Some(first) = obs.first() else { return 0.0 };
    let early = match obs.first() {
        Some(o) => o.day * x[1],
        None => 0.0,
    };
    last * x[0] + mid + first.value * x[0] * x[1] + early
}

#[test]
fn optional_elements_of_a_slice_of_structs() {
    let obs = [Observation { day: 1.0, value: 2.0 }, Observation { day: 3.0, value: 5.0 }];
    let x = [0.3, 0.7];
    let mut dx = [0.0; 2];
    assert_eq!(d_observed(&x, &mut dx, &obs, 1.0), observed(&x, &obs));
    assert_eq!(dx, [3.0 + 2.0 * 0.7, 5.0 + 2.0 * 0.3 + 1.0]);
    assert_eq!(t_observed(&x, &[1.0, 0.0], &obs), (observed(&x, &obs), dx[0]));
    let mut dx = [0.0; 2];
    assert_eq!(d_observed(&x, &mut dx, &[], 1.0), 0.0);
    assert_eq!(dx, [0.0, 0.0]);
}
