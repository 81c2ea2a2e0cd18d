//! Two-dimensional data: `&[Vec<f64>]`, `&mut [[f64; K]]`, `&[[f64; K]; N]`,
//! `[[f64; K]; N]` by value, `&[[[f32; 2]; 2]; 2]`, local `vec![vec![0.0; m]; n]`,
//! `vec![[0.0; 2]; n]` and `[[0.0; 3]; 4]`, matrices written out (`[[a, b], [c, d]]`) and
//! rows repeated from inputs (`[[x, 2x]; 3]`, `vec![p.to_vec(); n]`); rows read, written,
//! iterated and passed to helpers. Every derivative is checked against finite differences and forward mode
//! against reverse mode (dot-product test); second order against finite differences of the
//! gradient.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, clippy::needless_range_loop)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Scales a row in place.
fn scale(row: &mut [f64], k: f64) {
    for v in row.iter_mut() {
        *v *= k;
    }
}

/// `F(x)` by central differences along `u` (one Richardson step), and the checks: forward
/// `J·u`, reverse `Jᵀ·w` (w = 1: scalar functions), the dot-product test.
fn check(
    what: &str,
    f: &dyn Fn(&[f64]) -> f64,
    jvp: &dyn Fn(&[f64], &[f64]) -> f64,
    grad: &dyn Fn(&[f64]) -> Vec<f64>,
    x: &[f64],
) {
    common::check_scalar(what, f, jvp, grad, x, 2);
}

fn rows_of(x: &[f64], k: usize) -> Vec<Vec<f64>> {
    x.chunks(k).map(|c| c.to_vec()).collect()
}

fn flat(m: &[Vec<f64>]) -> Vec<f64> {
    m.iter().flatten().copied().collect()
}

#[autodiff_reverse(d_vec_of_vecs, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_vec_of_vecs, Dual, Dual, Dual)]
fn vec_of_vecs(m: &[Vec<f64>], w: &[f64]) -> f64 {
    let mut s = 0.0;
    for row in m.iter() {
        s += dot(row, w).tanh();
    }
    let mut t = vec![vec![0.0; w.len()]; m.len()];
    for i in 0..m.len() {
        for j in 0..w.len() {
            t[i][j] = m[i][j] * w[j] + m[i].len() as f64;
        }
        scale(&mut t[i], m[i][0]);
    }
    let mut g = [[0.0; 2]; 3];
    g[1][0] = t[0][1] * s;
    s + t[1][0] * t[0][0] + g[1][0] + m.iter().map(|r| r[0] * r[0]).sum::<f64>()
}

#[test]
fn vectors_of_vectors() {
    let (n, k) = (3, 4);
    let x: Vec<f64> = (0..n * k + k).map(|i| ((i as f64) * 0.37).sin()).collect();
    let split = |x: &[f64]| (rows_of(&x[..n * k], k), x[n * k..].to_vec());
    let f = |x: &[f64]| {
        let (m, w) = split(x);
        vec_of_vecs(&m, &w)
    };
    let jvp = |x: &[f64], u: &[f64]| {
        let (m, w) = split(x);
        let (dm, dw) = split(u);
        t_vec_of_vecs(&m, &dm, &w, &dw).1
    };
    let grad = |x: &[f64]| {
        let (m, w) = split(x);
        let mut dm = vec![vec![0.0; k]; n];
        let mut dw = vec![0.0; k];
        d_vec_of_vecs(&m, &mut dm, &w, &mut dw, 1.0);
        let mut g = flat(&dm);
        g.extend(dw);
        g
    };
    check("vec_of_vecs", &f, &jvp, &grad, &x);
}

/// Rows of fixed length, written in place: `&mut [[f64; 2]]`.
#[autodiff_reverse(d_step, Duplicated, Active)]
#[autodiff_forward(t_step, Dual, Dual)]
fn step(p: &mut [[f64; 2]], dt: f64) {
    let n = p.len();
    let mut f = vec![[0.0; 2]; n];
    for i in 0..n {
        let j = (i + 1) % n;
        let dx = p[j][0] - p[i][0];
        let dy = p[j][1] - p[i][1];
        let r = (dx * dx + dy * dy).sqrt();
        f[i][0] += dx * (r - 1.0);
        f[i][1] += dy * (r - 1.0);
        f[j][0] -= dx * (r - 1.0);
        f[j][1] -= dy * (r - 1.0);
    }
    for (i, row) in p.iter_mut().enumerate() {
        row[0] += dt * f[i][0];
        row[1] += dt * f[i][1] * row[0];
    }
}

#[test]
fn fixed_length_rows_in_place() {
    let pts = [[0.1, 0.2], [1.3, -0.4], [0.7, 1.1], [-0.5, 0.6]];
    let dt = 0.3;
    let flat2 = |p: &[[f64; 2]]| p.iter().flatten().copied().collect::<Vec<f64>>();
    let rows2 = |x: &[f64]| x.chunks(2).map(|c| [c[0], c[1]]).collect::<Vec<[f64; 2]>>();
    // F(x) = the final positions; checked one output at a time through w.
    for out in 0..8 {
        let f = |x: &[f64]| {
            let mut p = rows2(x);
            step(&mut p, dt);
            flat2(&p)[out]
        };
        let jvp = |x: &[f64], u: &[f64]| {
            let (mut p, mut dp) = (rows2(x), rows2(u));
            t_step(&mut p, &mut dp, dt, 0.0);
            flat2(&dp)[out]
        };
        let grad = |x: &[f64]| {
            let mut p = rows2(x);
            let mut dp = vec![[0.0; 2]; 4];
            dp[out / 2][out % 2] = 1.0;
            d_step(&mut p, &mut dp, dt);
            flat2(&dp)
        };
        check("step", &f, &jvp, &grad, &flat2(&pts));
    }
}

/// A fixed-size matrix by reference and by value, and a three-level array of `f32`.
#[autodiff_reverse(d_fixed, Duplicated, Active, Duplicated, Active)]
fn fixed(a: &[[f64; 3]; 2], b: [[f64; 2]; 2], c: &[[[f32; 2]; 2]; 2]) -> f64 {
    let mut s = 0.0;
    for i in 0..2 {
        for j in 0..3 {
            s += a[i][j] * b[i][j % 2];
        }
    }
    let mut local = [[0.0; 3]; 4];
    local[3][2] = s * s;
    let mut z = 0.0f32;
    for plane in c.iter() {
        for row in plane {
            z += row[0] * row[1];
        }
    }
    local[3][2] + b[1][1].exp() + z as f64
}

#[test]
fn fixed_size_matrices() {
    let a = [[0.2, -0.4, 1.1], [0.5, 0.3, -0.7]];
    let b = [[1.5, -0.5], [0.25, 0.8]];
    let c = [[[0.5f32, 1.5], [2.0, -1.0]], [[0.25, 4.0], [1.0, 1.0]]];
    let mut da = [[0.0; 3]; 2];
    let mut dc = [[[0.0f32; 2]; 2]; 2];
    let (value, db) = d_fixed(&a, &mut da, b, &c, &mut dc, 1.0);
    assert_eq!(value, fixed(&a, b, &c));
    let h = 1e-6;
    let s: f64 = (0..2).flat_map(|i| (0..3).map(move |j| (i, j))).map(|(i, j)| a[i][j] * b[i][j % 2]).sum();
    for i in 0..2 {
        for j in 0..3 {
            let want = 2.0 * s * b[i][j % 2];
            assert!((da[i][j] - want).abs() < 1e-12 * want.abs().max(1.0), "da[{i}][{j}] = {} vs {want}", da[i][j]);
        }
    }
    for i in 0..2 {
        for k in 0..2 {
            let mut bp = b;
            let mut bm = b;
            bp[i][k] += h;
            bm[i][k] -= h;
            let want = (fixed(&a, bp, &c) - fixed(&a, bm, &c)) / (2.0 * h);
            assert!((db[i][k] - want).abs() < 1e-6 * want.abs().max(1.0), "db[{i}][{k}] = {} vs {want}", db[i][k]);
        }
    }
    assert_eq!(dc[0][0], [1.5, 0.5]);
    assert_eq!(dc[1][0], [4.0, 0.25]);
}

// `let r = p[i];` copies the row (later writes to `p` leave it), and `[a, b]` patterns over
// `iter_mut()` bind `&mut`s to the elements.
slice_case!(
    rows_copied_by_let_and_written_through_patterns,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7]],
    fn f(x: &[f64]) -> f64 {
        let mut p = [[0.0; 2]; 3];
        for i in 0..3 {
            p[i][0] = x[2 * i];
            p[i][1] = x[2 * i + 1];
        }
        let r = p[1];
        p[1][0] = p[1][0] * x[0] + 1.0;
        for [a, b] in p.iter_mut() {
            *a = (*a * *b).sin();
            *b += *a;
        }
        let mut s = 0.0;
        for (i, [a, _]) in p.iter_mut().enumerate() {
            *a *= r[i % 2];
            s += *a;
        }
        s + r[0] * p[1][0] + r[1] * p[2][1]
    }
);

fn w3(p: &[f64]) -> [f64; 3] {
    [1.0, p[0] * p[3], 0.5]
}

/// Matrices written out (`[[a, b], [c, d]]`, `[p, q]` of arrays, `vec![[..], [..]]`) and rows repeated from
/// values that depend on the inputs (`[[x, 2x]; 3]`, `[a; 2]`, `vec![vec![x; 3]; 2]`,
/// `vec![p.to_vec(); n]`): rows of copies, differentiated like any local matrix.
#[autodiff_reverse(d_written_matrices, Duplicated, Active)]
#[autodiff_forward(t_written_matrices, Dual, Dual)]
fn written_matrices(p: &[f64]) -> f64 {
    let rot = [[p[0].cos(), -p[0].sin()], [p[0].sin(), p[0].cos()]];
    let v = [p[1], p[2]];
    let w = [rot[0][0] * v[0] + rot[0][1] * v[1], rot[1][0] * v[0] + rot[1][1] * v[1]];
    let mut m = [v, w];
    m[1][0] += p[3];
    let mut reps = [[p[1], 2.0 * p[2]]; 3];
    reps[2][1] *= p[0];
    let cols = [v; 2];
    let mut g = vec![vec![p[3]; 3]; 2];
    g[1][2] *= p[1];
    let mut rows = vec![p.to_vec(); 2];
    rows[0][1] = 0.5;
    // A vector of arrays written out, as points are (`Vec<[f64; 3]>`).
    let mut pts = vec![[p[0], p[1], 0.0], [p[2], 0.0, p[3]], w3(p)];
    pts[2][0] += pts[0][1];
    let mut s = pts.iter().map(|q| q[0] * q[1] + q[2]).sum::<f64>();
    for r in m.iter() {
        s += r[0] * r[1];
    }
    s + reps[2][1] * reps[0][0] + cols[1][0] * g[1][2] + g[0][0] + dot(&rows[0], &rows[1])
}

#[test]
fn matrices_written_out_and_repeated_rows() {
    let jvp = |x: &[f64], u: &[f64]| t_written_matrices(x, u).1;
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        assert_eq!(d_written_matrices(x, &mut g, 1.0), written_matrices(x));
        g
    };
    check("written_matrices", &|x| written_matrices(x), &jvp, &grad, &[0.4, -0.7, 1.1, 0.3]);
}

/// `flatten` of a matrix's rows: an L2 penalty over `&[Vec<f64>]`, a local `[[f64; 2]; 3]`
/// and a local `Vec<Vec<f64>>` written through `iter_mut().flatten()`.
#[autodiff_reverse(d_flattened, Duplicated, Active)]
#[autodiff_forward(t_flattened, Dual, Dual)]
fn flattened(m: &[Vec<f64>]) -> f64 {
    let l2: f64 = m.iter().flatten().map(|v| v * v).sum();
    let g = [[m[0][0], m[0][1]], [m[1][0], 1.0], [m[0][0] * m[1][1], m[2][2]]];
    let weighted: f64 = g.iter().flatten().enumerate().map(|(i, v)| v * i as f64).sum();
    let mut t = vec![vec![0.0; 2]; 2];
    for i in 0..2 {
        for j in 0..2 {
            t[i][j] = m[i][j] * m[j][i + 1];
        }
    }
    for v in t.iter_mut().flatten() {
        *v = v.sin();
    }
    l2 + weighted + t.iter().flatten().rev().step_by(3).sum::<f64>() + t.iter().flatten().product::<f64>()
}

#[test]
fn flattened_rows() {
    let (n, k) = (3, 4);
    let x: Vec<f64> = (0..n * k).map(|i| ((i as f64) * 0.37).sin()).collect();
    let f = |x: &[f64]| flattened(&rows_of(x, k));
    let jvp = |x: &[f64], u: &[f64]| t_flattened(&rows_of(x, k), &rows_of(u, k)).1;
    let grad = |x: &[f64]| {
        let mut dm = vec![vec![0.0; k]; n];
        d_flattened(&rows_of(x, k), &mut dm, 1.0);
        flat(&dm)
    };
    check("flattened", &f, &jvp, &grad, &x);
    // Rows of different lengths (which the primal takes): the derivative refuses them at
    // run time, since it numbers the items.
    let ragged = vec![vec![1.0, 2.0, 3.0, 4.0], vec![1.0, 2.0, 3.0], vec![0.5; 4]];
    assert!(flattened(&ragged).is_finite());
    let mut dm = vec![vec![0.0; 4], vec![0.0; 3], vec![0.0; 4]];
    let r = std::panic::catch_unwind(move || d_flattened(&ragged, &mut dm, 1.0));
    let message =
        r.err().and_then(|p| p.downcast_ref::<String>().cloned().or(p.downcast_ref::<&str>().map(|s| s.to_string())));
    assert!(message.is_some_and(|m| m.contains("rows have the same length")));
}
