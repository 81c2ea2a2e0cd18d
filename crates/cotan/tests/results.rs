//! Functions returning tuples and small arrays, and arrays passed by value (issue 11, item
//! 1), with std's signatures: forward mode returns `(R, dR)` where `R` is the tuple or
//! array; reverse mode takes the seed `dret: R` (each float element a seed) and returns
//! `(R, gradients...)`; an `Active` array `[f64; N]` gets its gradient as an array. Each
//! derivative is checked against central finite differences.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

use cotan::{autodiff_forward, autodiff_reverse};

const H: f64 = 1e-6;

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() <= 1e-7 * b.abs().max(1.0), "{what}: AD {a}, finite differences {b}");
}

#[autodiff_forward(polar_fwd, Dual, Dual, Dual)]
#[autodiff_forward(polar_only, Dual, Const, DualOnly)]
#[autodiff_reverse(polar_rev, Active, Active, Active)]
#[autodiff_reverse(polar_rev_only, Active, Const, ActiveOnly)]
fn polar(r: f64, t: f64) -> (f64, f64) {
    if r < 0.0 {
        return (0.0, 0.0);
    }
    let (s, c) = t.sin_cos();
    (r * c, r * s)
}

#[test]
fn tuple_result_forward_and_reverse() {
    let (r, t) = (1.3, 0.4);
    let ((x, y), (dx, dy)) = polar_fwd(r, 0.5, t, -1.0);
    assert_eq!((x, y), polar(r, t));
    let fd = |f: &dyn Fn(f64) -> (f64, f64)| {
        let (a, b) = (f(H), f(-H));
        ((a.0 - b.0) / (2.0 * H), (a.1 - b.1) / (2.0 * H))
    };
    let (fx, fy) = fd(&|h| polar(r + 0.5 * h, t - h));
    close(dx, fx, "dx");
    close(dy, fy, "dy");
    let (ox, oy) = polar_only(r, 1.0, t);
    let (gx, gy) = fd(&|h| polar(r + h, t));
    close(ox, gx, "d/dr x");
    close(oy, gy, "d/dr y");
    // Reverse: the seed is a tuple; the gradients follow the result.
    let w = (0.7, -0.2);
    let ((vx, vy), dr, dt) = polar_rev(r, t, w);
    assert_eq!((vx, vy), polar(r, t));
    let (ar, _) = fd(&|h| polar(r + h, t));
    let (gr_x, gr_y) = fd(&|h| polar(r + h, t));
    let (gt_x, gt_y) = fd(&|h| polar(r, t + h));
    let _ = ar;
    close(dr, w.0 * gr_x + w.1 * gr_y, "dr");
    close(dt, w.0 * gt_x + w.1 * gt_y, "dt");
    let dr_only: f64 = polar_rev_only(r, t, w);
    close(dr_only, dr, "dr (ActiveOnly)");
    // The early return's branch.
    let ((vx, vy), dr, dt) = polar_rev(-1.0, t, w);
    assert_eq!((vx, vy, dr, dt), (0.0, 0.0, 0.0, 0.0));
}

#[autodiff_forward(cross_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(cross_rev, Duplicated, Active, Active)]
fn cross(a: &[f64; 3], s: f64) -> [f64; 3] {
    let b = [s, s * s, 1.0];
    let mut out = [0.0; 3];
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
    out
}

#[test]
fn array_result_forward_and_reverse() {
    let a = [0.3, -1.2, 2.5];
    let s = 0.7;
    let da = [0.5, 0.25, -1.0];
    let (v, t) = cross_fwd(&a, &da, s, 0.3);
    assert_eq!(v, cross(&a, s));
    let at = |h: f64| {
        let x = [a[0] + h * da[0], a[1] + h * da[1], a[2] + h * da[2]];
        cross(&x, s + 0.3 * h)
    };
    let (p, m) = (at(H), at(-H));
    for k in 0..3 {
        close(t[k], (p[k] - m[k]) / (2.0 * H), "tangent");
    }
    let w = [1.0, -0.5, 2.0];
    let mut ga = [0.0; 3];
    let (v, ds) = cross_rev(&a, &mut ga, s, w);
    assert_eq!(v, cross(&a, s));
    let dot = |x: [f64; 3]| x[0] * w[0] + x[1] * w[1] + x[2] * w[2];
    for k in 0..3 {
        let (mut ap, mut am) = (a, a);
        ap[k] += H;
        am[k] -= H;
        close(ga[k], (dot(cross(&ap, s)) - dot(cross(&am, s))) / (2.0 * H), "gradient of a");
    }
    close(ds, (dot(cross(&a, s + H)) - dot(cross(&a, s - H))) / (2.0 * H), "gradient of s");
}

/// An array passed by value, `Active`: std returns its gradient as an array.
#[autodiff_reverse(energy_rev, Active, Const, Active)]
#[autodiff_forward(energy_fwd, Dual, Const, Dual)]
fn energy(mut p: [f64; 3], k: f64) -> f64 {
    p[2] += 1.0;
    let [x, y, z] = p;
    k * (x * x + y * y) + z.sin()
}

#[test]
fn array_by_value() {
    let p = [0.3, -1.2, 2.5];
    let (v, g): (f64, [f64; 3]) = energy_rev(p, 2.0, 1.0);
    assert_eq!(v, energy(p, 2.0));
    for k in 0..3 {
        let (mut a, mut b) = (p, p);
        a[k] += H;
        b[k] -= H;
        close(g[k], (energy(a, 2.0) - energy(b, 2.0)) / (2.0 * H), "gradient");
        let mut e = [0.0; 3];
        e[k] = 1.0;
        let (_, t) = energy_fwd(p, e, 2.0);
        close(t, g[k], "tangent");
    }
}

/// Several `Active` arrays and a tuple result with an integer-free mix of types.
#[autodiff_reverse(mix_rev, Active, Active, Active)]
fn mix(a: [f64; 2], b: [f64; 2]) -> (f64, f64) {
    (a[0] * b[1], a[1] + b[0] * b[0])
}

#[test]
fn tuple_result_with_array_gradients() {
    let (v, ga, gb) = mix_rev([1.0, 2.0], [3.0, 4.0], (1.0, 10.0));
    assert_eq!(v, (4.0, 11.0));
    assert_eq!(ga, [4.0, 10.0]);
    assert_eq!(gb, [60.0, 1.0]);
}

/// Batched forward mode of a tuple result, as std: `[R; N + 1]` (`DualOnly`: `[R; N]`).
#[autodiff_forward(polar_b2, 2, Dual, Dual, Dual)]
#[autodiff_forward(polar_b2_only, 2, Dual, Dual, DualOnly)]
fn polar2(r: f64, t: f64) -> (f64, f64) {
    (r * t.cos(), r * t.sin())
}

#[autodiff_forward(polar2_fwd, Dual, Dual, Dual)]
fn polar2_one(r: f64, t: f64) -> (f64, f64) {
    (r * t.cos(), r * t.sin())
}

#[test]
fn batched_tuple_result() {
    let (r, t) = (1.3, 0.4);
    let [v, a, b] = polar_b2(r, 1.0, 0.0, t, 0.0, 1.0);
    assert_eq!(v, polar2(r, t));
    assert_eq!(a, polar2_fwd(r, 1.0, t, 0.0).1);
    assert_eq!(b, polar2_fwd(r, 0.0, t, 1.0).1);
    let [a2, b2] = polar_b2_only(r, 1.0, 0.0, t, 0.0, 1.0);
    assert_eq!((a2, b2), (a, b));
}
