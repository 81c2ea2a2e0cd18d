//! Tuples and destructuring (issue 11, item 1), each checked by the harness: finite
//! differences in both modes, the dot-product test, and the interpreter.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

mod common;

scalar_case!(
    tuple_local_and_fields,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        let t = (x, 2.0 * x);
        t.0 * t.1 + t.1
    }
);

scalar_case!(
    let_tuple_pattern,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        let (a, b) = (x, 2.0 * x);
        a * b
    }
);

scalar_case!(
    nested_tuples_and_rest_patterns,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let t = ((x, y), x * y, 3.0);
        let ((a, _), c, ..) = t;
        let (.., d) = t;
        let u: (f64, f64) = t.0;
        a * c + d * u.1 + (t.0).0
    }
);

slice_case!(
    mutable_tuple_accumulator,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let mut t = (0.0, 1.0);
        for i in 0..x.len() {
            t.0 += x[i];
            t.1 *= x[i];
        }
        t = (t.1, t.0);
        t.0 + t.1 * t.1
    }
);

scalar_case!(
    tuple_from_branches,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let (hi, lo) = if x > y { (x, y) } else { (y, x) };
        let (p, q) = {
            let s = hi * 2.0;
            (s, s * lo)
        };
        hi - 2.0 * lo + p * q
    }
);

scalar_case!(
    destructuring_assignment_swaps,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let mut a = x;
        let mut b = y;
        for _ in 0..3 {
            (a, b) = (b, a * b + 0.5);
        }
        let _unused;
        (_unused, b) = (a, b.sin());
        a + 3.0 * b
    }
);

slice_case!(
    slice_patterns_from_arrays,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let arr = [x[0] * 2.0, x[1], x[2]];
        let [p, q, r] = arr;
        let [first, .., last] = arr;
        let [a, b] = [p * q, r];
        a * b + first * last
    }
);

scalar_case!(
    sin_cos,
    1,
    [[0.7], [-1.3], [2.9]],
    fn f(x: f64) -> f64 {
        let (s, c) = x.sin_cos();
        let t = (2.0 * x).sin_cos();
        s * c + s + t.1 * x.sin_cos().0
    }
);

slice_case!(
    fold_with_tuple_accumulator,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let (s, t) = x.iter().fold((0.0, 0.0), |(s, t), v| (s + v, t + v * v));
        let n = x.len() as f64;
        t / n - (s / n) * (s / n)
    }
);

slice_case!(
    tuple_items_in_closures_and_loops,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, 2.0, -0.3]],
    fn f(x: &[f64]) -> f64 {
        let pairs = |k: usize| (x[k], x[k + 1]);
        let mut s = 0.0;
        for k in 0..x.len() - 1 {
            let (a, b) = pairs(k);
            s += a * b;
        }
        let dot = x.iter().zip(x.iter().skip(1)).map(|(a, b)| (a * b, a + b)).fold(0.0, |acc, (p, q)| acc + p * q);
        let prod = |(a, b): (f64, f64)| a * b;
        s + dot + prod((x[0], x[3]))
    }
);

slice_case!(
    tuple_value_with_early_return,
    [[0.3, -1.2, 2.5], [-1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let (a, b) = {
            if x[0] < 0.0 {
                return x[1] * x[2];
            }
            (x[0], x[1] * x[2])
        };
        a.exp() * b
    }
);

/// `let [a, b, c] = *p;` with `p: &[f64; 3]`, against central differences.
#[cotan::autodiff_reverse(d_norm3, Duplicated, Active)]
#[cotan::autodiff_forward(t_norm3, Dual, Dual)]
fn norm3(p: &[f64; 3]) -> f64 {
    let [a, b, c] = *p;
    let &[x, y, _] = p;
    (a * a + b * b + c * c).sqrt() + x * y
}

#[test]
fn array_pattern_through_a_reference() {
    let p = [0.3, -1.2, 2.5];
    let mut g = [0.0; 3];
    let v = d_norm3(&p, &mut g, 1.0);
    assert_eq!(v, norm3(&p));
    for k in 0..3 {
        let h = 1e-6;
        let (mut a, mut b) = (p, p);
        a[k] += h;
        b[k] -= h;
        let fd = (norm3(&a) - norm3(&b)) / (2.0 * h);
        assert!((g[k] - fd).abs() < 1e-8, "gradient[{k}]: {} vs {fd}", g[k]);
        let mut e = [0.0; 3];
        e[k] = 1.0;
        assert!((t_norm3(&p, &e).1 - g[k]).abs() < 1e-12);
    }
}

/// `let (a, b) = two(x);`, which the message for `&mut` locals passed to calls suggests.
#[cotan::differentiable]
fn two(x: f64) -> (f64, f64) {
    (x * x, x.sin())
}

#[cotan::autodiff_reverse(d_uses_two, Active, Active)]
#[cotan::autodiff_forward(t_uses_two, Dual, Dual)]
fn uses_two(x: f64) -> f64 {
    let (a, b) = two(x);
    a * b
}

#[test]
fn tuple_from_a_call() {
    let (v, g) = d_uses_two(0.5, 1.0);
    let want = 2.0 * 0.5 * 0.5f64.sin() + 0.25 * 0.5f64.cos();
    assert!((g - want).abs() < 1e-12, "{g} vs {want}");
    assert_eq!(v, uses_two(0.5));
    let (_, t) = t_uses_two(0.5, 1.0);
    assert!((t - want).abs() < 1e-12);
}

slice_case!(
    array_patterns_in_closure_parameters,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let norm = |[a, b]: [f64; 2]| (a * a + b * b).sqrt();
        let cross = |[a, b, _]: [f64; 3], [c, d, _]: [f64; 3]| a * d - b * c;
        norm([x[0], x[1]]) + cross([x[0], x[1], x[2]], [x[2], x[0], x[1]])
    }
);

// Helpers returning tuples the way model code does: the tail an `if`/`else if` chain whose
// branches end in tuples or in calls returning them, an early `return (..)`, a `match`.

fn decay(s0: f64, s1: f64, k: f64, dt: f64) -> (f64, f64) {
    let e = (-k * dt).exp();
    (s0 * e, s1 + s0 * (1.0 - e))
}

fn propagate(model: i32, s0: f64, s1: f64, s2: f64, k: f64, dt: f64) -> (f64, f64, f64) {
    if model == 0 {
        let (a, b) = decay(s0, s1, k, dt);
        (a, b, s2)
    } else if model == 1 || model == 3 {
        if k * dt > 5.0 {
            return (0.0, s1 + s0, s2);
        }
        let (a, b) = decay(s0, s1, k, dt);
        let (c, d) = decay(b, s2, 0.5 * k, dt);
        (a, c, d)
    } else {
        match model {
            2 => (s0 * k, s1, s2 * dt),
            _ => (s0, s1, s2),
        }
    }
}

#[cotan::autodiff_reverse(d_chain_of_models, Duplicated, Active)]
#[cotan::autodiff_forward(t_chain_of_models, Dual, Dual)]
fn chain_of_models(x: &[f64]) -> f64 {
    let (mut s0, mut s1, mut s2) = (x[0], 0.0, 0.0);
    for step in 0..8 {
        let model = (step % 5) as i32;
        (s0, s1, s2) = propagate(model, s0, s1, s2, x[1] * (1.0 + 0.1 * step as f64), x[2]);
    }
    s0 + 2.0 * s1 + 3.0 * s2
}

#[test]
fn helpers_ending_in_if_chains_of_tuples() {
    // x[1] * x[2] crosses 5 at the larger point: both sides of the early `return`.
    for x in [[1.3, 0.4, 0.7], [0.8, 2.5, 2.2]] {
        common::check_slice_fn("chain_of_models", chain_of_models, d_chain_of_models, t_chain_of_models, &x);
    }
}

/// A struct whose methods return tuples.
pub struct Scaler {
    pub a: f64,
}

impl Scaler {
    pub fn pair(&self, x: f64) -> (f64, f64) {
        (x * self.a, x)
    }
    pub fn scaled(&self, x: f64, k: usize) -> (f64, f64) {
        (x * self.a * k as f64, x.sin())
    }
}

/// Tuples returned by methods of a struct parameter: destructured, kept whole and read by
/// `.0`, and read directly from the call.
#[cotan::autodiff_reverse(d_method_tuples, Const, Active, Active)]
#[cotan::autodiff_forward(t_method_tuples, Const, Dual, Dual)]
fn method_tuples(c: &Scaler, k: f64) -> f64 {
    let (u, w) = c.pair(k);
    let t = c.scaled(u, 2);
    let z = c.pair(w).1 * c.pair(t.1).0;
    u * w + t.0 * t.1 + z
}

#[test]
fn tuples_returned_by_methods() {
    let c = Scaler { a: 1.3 };
    for k in [0.7, -0.4] {
        let (value, dk) = d_method_tuples(&c, k, 1.0);
        assert_eq!(value, method_tuples(&c, k));
        let fd = (method_tuples(&c, k + 1e-6) - method_tuples(&c, k - 1e-6)) / 2e-6;
        assert!((fd - dk).abs() <= 1e-6 * fd.abs().max(1.0), "at {k}: {dk} vs {fd}");
        let (v, jvp) = t_method_tuples(&c, k, 1.0);
        assert_eq!(v, value);
        assert!((jvp - dk).abs() <= 1e-12 * dk.abs().max(1.0), "forward at {k}: {jvp} vs {dk}");
    }
}
