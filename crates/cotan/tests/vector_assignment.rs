//! Vectors the function makes, assigned whole (`a = layer.forward(&a)`, `v = vec![..]`),
//! grown by `push` inside loops and branches, and changed by `clear`, `truncate`,
//! `resize`, `extend` and `extend_from_slice`, as layer-by-layer network code and
//! per-sample buffers are written. Every function is checked for its value, against finite
//! differences, forward against reverse (dot-product test); some for second order and
//! split mode.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

mod common;

use common::{check_hvp_against_gradient, check_slice_fn as check};
use cotan::{autodiff_forward, autodiff_reverse, autodiff_split, hvp};

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// A dense layer of `n_out` units over `input`, its weights at `w[off..]` (row-major)
/// followed by the biases.
fn dense(w: &[f64], off: usize, input: &[f64], n_out: usize) -> Vec<f64> {
    let n_in = input.len();
    let mut out = Vec::new();
    for i in 0..n_out {
        let mut z = w[off + n_out * n_in + i];
        for j in 0..n_in {
            z += w[off + i * n_in + j] * input[j];
        }
        out.push(sigmoid(z));
    }
    out
}

/// Layers of widths 3 → 4 → 2 → 3: the activations change length at each step.
#[autodiff_reverse(d_network, Duplicated, Active)]
#[autodiff_forward(t_network, Dual, Dual)]
#[hvp(hv_network)]
fn network(w: &[f64]) -> f64 {
    let widths = [4, 2, 3];
    let mut a = vec![0.5, -0.25, 1.0];
    let mut off = 0;
    for l in 0..widths.len() {
        let n_in = a.len();
        a = dense(w, off, &a, widths[l]);
        off += widths[l] * (n_in + 1);
    }
    a.iter().map(|v| v * v).sum()
}

fn network_size() -> usize {
    4 * 4 + 2 * 5 + 3 * 3
}

#[test]
fn activations_assigned_layer_by_layer() {
    let w: Vec<f64> = (0..network_size()).map(|k| (k as f64 * 0.37).sin()).collect();
    check("network", network, d_network, t_network, &w);
}

#[test]
fn second_order_through_assigned_vectors() {
    // The first six weights as variables, the others fixed.
    let rest: Vec<f64> = (0..network_size()).map(|k| (k as f64 * 0.37).cos()).collect();
    let full = |x: &[f64]| -> Vec<f64> { x.iter().chain(&rest[6..]).copied().collect() };
    check_hvp_against_gradient(
        &|x, g| {
            let mut dw = vec![0.0; network_size()];
            d_network(&full(x), &mut dw, 1.0);
            g.copy_from_slice(&dw[..6]);
        },
        &|x, v, g, hv| {
            let (mut dw, mut hw) = (vec![0.0; network_size()], vec![0.0; network_size()]);
            let vv: Vec<f64> = v.iter().copied().chain(std::iter::repeat(0.0)).take(network_size()).collect();
            hv_network(&full(x), &vv, &mut dw, &mut hw);
            g.copy_from_slice(&dw[..6]);
            hv.copy_from_slice(&hw[..6]);
        },
    );
}

/// A buffer made and grown per sample, inside the loop; a vector assigned in a branch.
#[autodiff_reverse(d_per_sample, Duplicated, Active)]
#[autodiff_forward(t_per_sample, Dual, Dual)]
fn per_sample(x: &[f64]) -> f64 {
    let mut total = 0.0;
    for s in 0..3 {
        let mut feats = Vec::new();
        for j in 0..x.len() {
            if (j + s) % 2 == 0 {
                feats.push(x[j] * (s as f64 + 1.0));
            }
        }
        if s == 1 {
            feats = feats.iter().map(|f| f.sin()).collect();
            feats.push(x[0] * x[1]);
        }
        total += feats.iter().map(|f| f * f).sum::<f64>() / feats.len() as f64;
    }
    total
}

#[test]
fn buffers_grown_inside_loops_and_assigned_in_branches() {
    for x in [vec![0.3, -1.2, 2.5, 0.7, 1.1], vec![1.0, 0.5, -2.0, 0.25]] {
        check("per_sample", per_sample, d_per_sample, t_per_sample, &x);
    }
}

/// Assigned at the top level, shorter and longer, from literals, copies and moves.
#[autodiff_reverse(d_reshaped, Duplicated, Active)]
#[autodiff_forward(t_reshaped, Dual, Dual)]
fn reshaped(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    let first = v[0] * v[v.len() - 1];
    v = vec![v[1] * v[2], first];
    let mut w = vec![0.0; 5];
    for i in 0..w.len() {
        w[i] = v[i % 2] + x[i % x.len()];
    }
    v = w;
    let mut longer = v.clone();
    longer.push(x[0].exp());
    v = longer;
    v = v.iter().map(|e| e.tanh()).collect();
    v.iter().enumerate().map(|(i, e)| e * (i as f64 + 1.0)).sum()
}

#[test]
fn vectors_assigned_other_lengths() {
    check("reshaped", reshaped, d_reshaped, t_reshaped, &[0.3, -1.2, 2.5, 0.7]);
}

/// A recurrence whose state vector is replaced each step (`h = next(&h, ..)`).
fn next_state(h: &[f64], x: f64, w: &[f64]) -> Vec<f64> {
    h.iter().enumerate().map(|(i, v)| (w[i] * v + x).tanh()).collect()
}

#[autodiff_split(rnn_forward, rnn_reverse, Duplicated, Const, Active)]
#[autodiff_reverse(d_rnn, Duplicated, Const, Active)]
fn rnn(w: &[f64], xs: &[f64]) -> f64 {
    let mut h = vec![0.0; w.len()];
    for t in 0..xs.len() {
        h = next_state(&h, xs[t], w);
    }
    h.iter().sum()
}

#[test]
fn split_mode_keeps_what_assigned_vectors_need() {
    let w = [0.5, -0.3, 0.8];
    let xs = [0.2, -0.4, 0.9, 0.1];
    let (value, record) = rnn_forward(&w, &xs);
    assert_eq!(value, rnn(&w, &xs));
    for seed in [1.0, -0.5] {
        let mut dw = [0.0; 3];
        rnn_reverse(&record, &mut dw, seed);
        let mut want = [0.0; 3];
        d_rnn(&w, &mut want, &xs, seed);
        assert_eq!(dw, want, "seed {seed}");
    }
    // The gradient against central differences.
    let mut g = [0.0; 3];
    d_rnn(&w, &mut g, &xs, 1.0);
    for k in 0..3 {
        let (mut p, mut m) = (w, w);
        p[k] += 1e-6;
        m[k] -= 1e-6;
        let fd = (rnn(&p, &xs) - rnn(&m, &xs)) / 2e-6;
        assert!((g[k] - fd).abs() < 1e-8, "w[{k}]: {} vs {fd}", g[k]);
    }
}

// Two programs that were refused before (a vector made in a loop and pushed to; a vector
// assigned anew), now differentiated.

#[autodiff_reverse(d_pushed_in_loop, Duplicated, Active)]
#[autodiff_forward(t_pushed_in_loop, Dual, Dual)]
fn pushed_in_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let mut v = Vec::new();
        v.push(x[i] * 2.0);
        s += v[0] * v[0];
    }
    s
}

#[autodiff_reverse(d_assigned_anew, Active, Active)]
fn assigned_anew(x: f64) -> f64 {
    let mut a = vec![x; 2];
    let s = a[0];
    a = vec![s, 2.0 * x];
    a[0] * a[1]
}

#[test]
fn formerly_refused_programs() {
    check("pushed_in_loop", pushed_in_loop, d_pushed_in_loop, t_pushed_in_loop, &[0.3, -1.2, 2.5]);
    for x in [0.7, -1.3] {
        let (v, g) = d_assigned_anew(x, 1.0);
        assert_eq!(v, assigned_anew(x));
        assert!((g - 4.0 * x).abs() < 1e-12, "{g} vs {}", 4.0 * x);
    }
}

/// The length-changing methods of `Vec`, at the top level and in a loop.
#[autodiff_reverse(d_vec_methods, Duplicated, Active)]
#[autodiff_forward(t_vec_methods, Dual, Dual)]
#[hvp(hv_vec_methods)]
fn vec_methods(x: &[f64]) -> f64 {
    let mut v = Vec::new();
    v.extend_from_slice(&x[1..]);
    v.extend(x.iter().map(|e| e.sin()));
    v.truncate(x.len() + 1);
    v.truncate(100);
    v.resize(v.len() + 2, x[0] * x[1]);
    v.resize(3, 0.0);
    let mut total: f64 = v.iter().enumerate().map(|(i, e)| (i as f64 + 1.0) * e * e).sum();
    let mut buf = Vec::with_capacity(x.len());
    for k in 0..3 {
        buf.clear();
        buf.extend(x.iter().skip(k).map(|e| e * (k as f64 + 0.5)));
        buf.push(total.tanh());
        total += buf.iter().map(|e| e.cos()).sum::<f64>() / buf.len() as f64;
    }
    total
}

#[test]
fn clear_truncate_resize_extend() {
    for x in [vec![0.3, -1.2, 2.5, 0.7, 1.1, -0.4], vec![1.0, 0.5, -2.0, 0.25]] {
        check("vec_methods", vec_methods, d_vec_methods, t_vec_methods, &x);
    }
    check_hvp_against_gradient(
        &|x, g| {
            d_vec_methods(x, g, 1.0);
        },
        &|x, v, g, hv| {
            hv_vec_methods(x, v, g, hv);
        },
    );
}

/// A stack: `pop` in `while let` (with a labelled `continue` and a `break`), `pop().unwrap()`.
#[autodiff_reverse(d_stack, Duplicated, Active)]
#[autodiff_forward(t_stack, Dual, Dual)]
fn stack(x: &[f64]) -> f64 {
    let mut st = x.to_vec();
    let top = st.pop().unwrap();
    let mut s = top * top;
    'drain: while let Some(e) = st.pop() {
        if e > 2.0 {
            continue 'drain;
        }
        s = 0.5 * s + e.sin() * top;
        if st.len() == 1 {
            break;
        }
    }
    st.push(s);
    while let Some(e) = st.pop() {
        s += e * 0.25;
    }
    s
}

#[test]
fn pop_and_while_let() {
    // 2.5 > 2 takes the `continue`.
    for x in [vec![0.3, -1.2, 2.5, 0.7, 1.1], vec![1.0, 0.5, -2.0, 0.25]] {
        check("stack", stack, d_stack, t_stack, &x);
    }
}

/// Sorting (`sort_by`, `sort_unstable_by`, with the comparators people write): a median, a
/// trimmed mean, a descending weighted sum, a sort by a key; on a parameter `&mut [f64]` too.
#[autodiff_reverse(d_order_statistics, Duplicated, Active)]
#[autodiff_forward(t_order_statistics, Dual, Dual)]
#[hvp(hv_order_statistics)]
fn order_statistics(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) };
    let mut w = x.to_vec();
    w.sort_by(f64::total_cmp);
    let trimmed = w[1..n - 1].iter().sum::<f64>() / (n - 2) as f64;
    let mut d: Vec<f64> = x.iter().map(|e| e.sin()).collect();
    d.sort_unstable_by(|a, b| b.total_cmp(a));
    let weighted: f64 = d.iter().enumerate().map(|(i, e)| e * (i as f64 + 1.0)).sum();
    let mut k = x.to_vec();
    k.sort_by(|a, b| (a * a).partial_cmp(&(b * b)).unwrap());
    median * trimmed + weighted + k[0] * 3.0 + k[n - 1] * k[n - 1]
}

#[autodiff_reverse(d_sort_in_place, Duplicated, Active)]
fn sort_in_place(x: &mut [f64]) -> f64 {
    for e in x.iter_mut() {
        *e = e.tanh();
    }
    x.sort_by(|a, b| b.partial_cmp(a).unwrap());
    x[0] - 2.0 * x[1]
}

#[test]
fn sorting() {
    // Distinct values (a sort's derivative is a permutation of the derivatives).
    for x in [vec![0.3, -1.2, 2.5, 0.7, 1.1, -0.4], vec![1.0, 0.5, -2.0, 0.25]] {
        check("order_statistics", order_statistics, d_order_statistics, t_order_statistics, &x);
    }
    check_hvp_against_gradient(
        &|x, g| {
            d_order_statistics(x, g, 1.0);
        },
        &|x, v, g, hv| {
            hv_order_statistics(x, v, g, hv);
        },
    );
    let x0 = [0.3, -1.2, 2.5, 0.7];
    let (mut x, mut dx) = (x0, [0.0; 4]);
    let value = d_sort_in_place(&mut x, &mut dx, 1.0);
    let mut y = x0;
    assert_eq!(value, sort_in_place(&mut y));
    assert_eq!(x, y, "the sorted slice");
    // Largest tanh is at 2.5, then 0.7: d/dx = sech^2.
    let sech2 = |v: f64| 1.0 - v.tanh().powi(2);
    let want = [0.0, 0.0, sech2(2.5), -2.0 * sech2(0.7)];
    for k in 0..4 {
        assert!((dx[k] - want[k]).abs() < 1e-12, "dx[{k}] = {} vs {}", dx[k], want[k]);
    }
}

/// `insert`, `remove` and `swap_remove`: the elements move, the derivatives with them.
#[autodiff_reverse(d_shifted, Duplicated, Active)]
#[autodiff_forward(t_shifted, Dual, Dual)]
fn shifted(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.insert(2, x[0] * x[1]);
    v.insert(0, 0.5);
    v.insert(v.len(), x[3].sin());
    let r = v.remove(1);
    let s = v.swap_remove(0);
    let weighted: f64 = v.iter().enumerate().map(|(i, e)| e * (i as f64 + 1.0)).sum();
    weighted * r + s * s
}

#[test]
fn insert_and_remove() {
    for x in [vec![0.3, -1.2, 2.5, 0.7, 1.1], vec![1.0, 0.5, -2.0, 0.25]] {
        check("shifted", shifted, d_shifted, t_shifted, &x);
    }
}

/// A pair list built as one vector per part, as the message at `pairs.push((i, j))` says.
#[cotan::autodiff_reverse(d_pair_energy, Duplicated, Active)]
#[cotan::autodiff_forward(t_pair_energy, Dual, Dual)]
fn pair_energy(x: &[f64]) -> f64 {
    let mut pi: Vec<usize> = Vec::new();
    let mut pj: Vec<usize> = Vec::new();
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            if (x[i] - x[j]).abs() < 1.0 {
                pi.push(i);
                pj.push(j);
            }
        }
    }
    let mut e = 0.0;
    for k in 0..pi.len() {
        let (i, j) = (pi[k], pj[k]);
        e += (x[i] - x[j]).powi(2);
    }
    e
}

#[test]
fn a_pair_list_as_one_vector_per_part() {
    common::check_slice_fn("pair_energy", pair_energy, d_pair_energy, t_pair_energy, &[0.1, 0.5, 2.0, 1.2]);
}
