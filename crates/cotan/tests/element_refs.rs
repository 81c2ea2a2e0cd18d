//! Elements taken by `&mut`: `let x = &mut v[i];`, `v.get_mut(i)`, `v.first_mut()`,
//! `v.last_mut()` (with `if let`, `match`, `unwrap`, `copied`), passed on to helpers and
//! local closures, and copied out by `&mut x` patterns and `*x`. A name bound to an
//! element reads and writes it where it is used, so writes through the name and through
//! the vector must stay in order. Every function is checked for its value, against finite
//! differences, forward against reverse (dot-product test); two for second order.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

mod common;

use common::{check_hvp_against_gradient, check_slice_fn as check};
use cotan::{autodiff_forward, autodiff_reverse, hvp};

fn bump(x: &mut f64, by: f64) {
    *x += by * by;
}

/// `let x = &mut v[i];` read and written, in a loop too, and lent to a helper.
#[autodiff_reverse(d_let_refs, Duplicated, Active)]
#[autodiff_forward(t_let_refs, Dual, Dual)]
#[hvp(hv_let_refs)]
fn let_refs(w: &[f64]) -> f64 {
    let mut v = w.to_vec();
    let n = v.len();
    let last = &mut v[n - 1];
    *last *= 3.0;
    let old = *last;
    *last += old * w[0];
    let x = &mut v[1];
    bump(x, w[0]);
    for i in 0..v.len() {
        let e = &mut v[i];
        *e = e.powi(2) + 0.1 * *e;
    }
    let mut m = vec![vec![0.0; 3]; 2];
    for i in 0..2 {
        for j in 0..3 {
            let e = &mut m[i][j];
            *e = w[i + j] * (i as f64 + 1.0);
            *e += w[0] * *e;
        }
    }
    v.iter().sum::<f64>() + m[1][2] * m[0][1]
}

#[test]
fn let_bound_element_references() {
    let w = [0.3, -1.2, 2.0, 0.7, 0.4, -0.5];
    check("let_refs", let_refs, d_let_refs, t_let_refs, &w);
    check_hvp_against_gradient(
        &|x, g| {
            d_let_refs(x, g, 1.0);
        },
        &|x, v, g, hv| {
            hv_let_refs(x, v, g, hv);
        },
    );
}

/// `get_mut`, `first_mut` and `last_mut` with `if let` (an `else` taken when the index is
/// out of range or the vector empty), `match`, `unwrap` and `copied`.
#[autodiff_reverse(d_option_refs, Duplicated, Active)]
#[autodiff_forward(t_option_refs, Dual, Dual)]
#[hvp(hv_option_refs)]
fn option_refs(w: &[f64]) -> f64 {
    let mut v = w.to_vec();
    *v.last_mut().unwrap() *= 3.0;
    if let Some(x) = v.get_mut(1) {
        *x += w[0] * w[2];
    }
    if let Some(f) = v.first_mut() {
        *f = f.sin();
    }
    if let Some(z) = v.get_mut(10) {
        *z = 100.0;
    } else {
        v[0] += w[3];
    }
    let keep = *v.last_mut().unwrap();
    *v.last_mut().unwrap() = 0.5 * keep * keep;
    let e = v.get_mut(2).unwrap();
    *e = e.cos() + keep;
    match v.last_mut() {
        Some(l) => *l *= 2.0,
        None => {}
    }
    let k = v.get_mut(3).copied().unwrap_or(0.0);
    v[3] = 1.0;
    v[2] += k;
    let mut empty: Vec<f64> = Vec::new();
    if let Some(z) = empty.last_mut() {
        *z = 1.0;
    } else {
        v[1] *= w[1];
    }
    v.iter().sum::<f64>() + keep
}

#[test]
fn option_element_references() {
    let w = [0.3, -1.2, 2.0, 0.7, 0.4, -0.5];
    check("option_refs", option_refs, d_option_refs, t_option_refs, &w);
    check_hvp_against_gradient(
        &|x, g| {
            d_option_refs(x, g, 1.0);
        },
        &|x, v, g, hv| {
            hv_option_refs(x, v, g, hv);
        },
    );
}

/// `Some(&mut c)` and `.clone()` copy the element: later writes to it do not change them.
#[autodiff_reverse(d_copies, Duplicated, Active)]
#[autodiff_forward(t_copies, Dual, Dual)]
fn copies(w: &[f64]) -> f64 {
    let mut v = w.to_vec();
    if let Some(&mut c) = v.get_mut(1) {
        v[1] = 0.0;
        v[0] += c * 2.0;
    }
    let kk = v.get_mut(2).unwrap().clone();
    v[2] = 0.5;
    v[0] += kk * w[3];
    let d = *v.first_mut().unwrap();
    v[0] = 1.0;
    v.iter().sum::<f64>() * d
}

#[test]
fn copies_of_element_references() {
    check("copies", copies, d_copies, t_copies, &[0.3, -1.2, 2.0, 0.7]);
}

/// Element references passed to a helper, a local closure and an inlined loop, on a
/// `&mut [f64]` parameter as well as a local vector.
#[autodiff_reverse(d_lent, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_lent, Dual, Dual, Dual)]
fn lent(w: &[f64], out: &mut [f64]) -> f64 {
    let mut v = w.to_vec();
    bump(v.last_mut().unwrap(), w[2]);
    if let Some(e) = v.get_mut(1) {
        bump(e, w[3]);
    }
    let square = |e: &mut f64| *e = *e * *e;
    square(v.first_mut().unwrap());
    for e in v.iter_mut() {
        bump(e, 0.5);
    }
    if let Some(o) = out.get_mut(0) {
        *o = *o * w[1] + v[2];
    }
    bump(out.last_mut().unwrap(), w[0]);
    v.iter().sum::<f64>() + out[0] * out[1]
}

#[test]
fn element_references_lent_to_calls() {
    let w = [0.3, -1.2, 2.0, 0.7];
    let o0 = [0.4, 1.0];
    let f = |w: &[f64], o: &[f64]| {
        let mut o = o.to_vec();
        lent(w, &mut o)
    };
    // The reverse derivative against finite differences in each input, and against forward
    // mode along each input's direction.
    let mut dw = [0.0; 4];
    let mut out = o0;
    let mut dout = [0.0; 2];
    let value = d_lent(&w, &mut dw, &mut out, &mut dout, 1.0);
    assert_eq!(value, f(&w, &o0), "the reverse derivative's value");
    let mut written = o0;
    lent(&w, &mut written);
    assert_eq!(out, written, "what the reverse derivative writes to `out`");
    let h = 1e-6;
    for i in 0..4 {
        let (mut p, mut m) = (w, w);
        p[i] += h;
        m[i] -= h;
        let fd = (f(&p, &o0) - f(&m, &o0)) / (2.0 * h);
        assert!((fd - dw[i]).abs() <= 1e-6 * fd.abs().max(1.0), "dw[{i}]: {} vs {fd}", dw[i]);
        let mut dir = [0.0; 4];
        dir[i] = 1.0;
        let (mut o, mut dir_o) = (o0, [0.0; 2]);
        let (_, jvp) = t_lent(&w, &dir, &mut o, &mut dir_o);
        assert!((jvp - dw[i]).abs() <= 1e-12 * jvp.abs().max(1.0), "forward along w[{i}]: {jvp} vs {}", dw[i]);
    }
    for k in 0..2 {
        let (mut p, mut m) = (o0, o0);
        p[k] += h;
        m[k] -= h;
        let fd = (f(&w, &p) - f(&w, &m)) / (2.0 * h);
        assert!((fd - dout[k]).abs() <= 1e-6 * fd.abs().max(1.0), "dout[{k}]: {} vs {fd}", dout[k]);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Particle {
    pub x: f64,
    pub v: f64,
}

/// `let p = &mut ps[i];` of a struct: its fields read and written through `p`, as
/// simulation code steps each particle.
#[autodiff_reverse(d_step_particles, Duplicated, Active)]
#[autodiff_forward(t_step_particles, Dual, Dual)]
fn step_particles(ps: &mut [Particle]) -> f64 {
    for _ in 0..3 {
        for i in 0..ps.len() {
            let p = &mut ps[i];
            p.v -= 0.1 * p.x * p.x;
            p.x += 0.1 * p.v;
        }
        let n = ps.len();
        if 0 < n {
            let last = &mut ps[n - 1];
            last.v *= 0.5;
        }
    }
    ps.iter().map(|p| p.x * p.x + p.v).sum()
}

#[test]
fn struct_element_references() {
    let p0 = vec![Particle { x: 0.3, v: 0.1 }, Particle { x: -1.0, v: 0.4 }, Particle { x: 0.7, v: -0.2 }];
    let f = |k: usize, h: f64| {
        let mut q = p0.clone();
        if k % 2 == 0 {
            q[k / 2].x += h
        } else {
            q[k / 2].v += h
        }
        step_particles(&mut q)
    };
    let mut ps = p0.clone();
    let mut dps = vec![Particle { x: 0.0, v: 0.0 }; 3];
    let value = d_step_particles(&mut ps, &mut dps, 1.0);
    assert_eq!(value, f(0, 0.0), "the reverse derivative's value");
    let mut stepped = p0.clone();
    step_particles(&mut stepped);
    assert_eq!(ps, stepped, "what the reverse derivative writes");
    for k in 0..6 {
        let fd = (f(k, 1e-6) - f(k, -1e-6)) / 2e-6;
        let g = if k % 2 == 0 { dps[k / 2].x } else { dps[k / 2].v };
        assert!((fd - g).abs() <= 1e-6 * fd.abs().max(1.0), "input {k}: {g} vs {fd}");
        let mut dir = vec![Particle { x: 0.0, v: 0.0 }; 3];
        if k % 2 == 0 {
            dir[k / 2].x = 1.0
        } else {
            dir[k / 2].v = 1.0
        }
        let mut q = p0.clone();
        let (_, jvp) = t_step_particles(&mut q, &mut dir);
        assert!((jvp - g).abs() <= 1e-12 * g.abs().max(1.0), "forward along input {k}: {jvp} vs {g}");
    }
}
