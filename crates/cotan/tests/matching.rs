//! `match`, `if let`, `let ... else`, `matches!` and `Option`s (issue 11, item 2), each
//! checked by the harness: finite differences in both modes, the dot-product test, and the
//! interpreter.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

mod common;

macro_rules! int_match {
    ($name:ident, $n:expr) => {
        slice_ints_case!(
            $name,
            [$n],
            [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
            fn f(x: &[f64], n: &[usize]) -> f64 {
                let k = n[0];
                let a = match k {
                    0 => x[0],
                    1 | 2 => x[1] * x[0],
                    3..=5 => x[0].sin(),
                    m if m > 10 => x[1] * m as f64,
                    8 => {
                        let t = x[2] * 2.0;
                        t * t
                    }
                    _ => x[0] * x[1],
                };
                let b = match k % 3 {
                    0 => 1.0,
                    _ => x[2],
                };
                a * b
            }
        );
    };
}

int_match!(match_integers_0, 0);
int_match!(match_integers_2, 2);
int_match!(match_integers_4, 4);
int_match!(match_integers_8, 8);
int_match!(match_integers_9, 9);
int_match!(match_integers_12, 12);

scalar_case!(
    match_on_bool,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        match x > 0.0 {
            true => x * x,
            false => -x,
        }
    }
);

scalar_case!(
    match_on_tuples_with_guards,
    2,
    [[0.7, 0.4], [-1.3, 2.0], [0.5, -3.0], [-0.5, -0.2]],
    fn f(x: f64, y: f64) -> f64 {
        let r = match (x > 0.0, y > 0.0) {
            (true, true) => x * y,
            (true, false) if x > 0.6 => x - y,
            (true, false) => x + y,
            (false, b) => {
                if b {
                    y.exp()
                } else {
                    x.exp() * y
                }
            }
        };
        let s = match (x, y) {
            (a, b) if a > b => a,
            (_, b) => b,
        };
        r + s
    }
);

slice_case!(
    match_with_early_exits,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0], [-1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            match i {
                0 if x[0] < 0.0 => return x[1] * x[2],
                1 => continue,
                _ => s += x[i] * x[0],
            }
        }
        s
    }
);

slice_case!(
    option_of_max_by_and_min_by,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0, 1.9]],
    fn f(x: &[f64]) -> f64 {
        let hi = match x.iter().copied().max_by(|a, b| a.total_cmp(b)) {
            Some(m) => m,
            None => 0.0,
        };
        let lo = x.iter().copied().min_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
        let Some(&last) = x.last() else {
            return 0.0;
        };
        let first = if let Some(v) = x.first() { *v } else { 1.0 };
        hi * 2.0 + lo * last + first * x.get(1).copied().unwrap_or(3.0) + x.get(7).copied().unwrap_or(0.5)
    }
);

slice_case!(
    option_of_reduce,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0, 1.9]],
    fn f(x: &[f64]) -> f64 {
        // Horner's rule, and the largest by `f64::max`; `None` on an empty slice.
        let h = x.iter().copied().reduce(|acc, c| acc * 0.5 + c).unwrap();
        let m = match x.iter().map(|v| v * v).reduce(f64::max) {
            Some(m) => m,
            None => 0.0,
        };
        let (i, p) = x.iter().copied().enumerate().reduce(|a, b| if b.1 > a.1 { b } else { a }).unwrap();
        let none = x[..0].iter().copied().reduce(|a, b| a + b).unwrap_or(0.25);
        h * m + p * (i as f64 + 1.0) + none
    }
);

slice_case!(
    argmax_with_enumerate,
    [[2.0, -1.2, 2.1, 0.5], [1.0, 3.0, -3.5, -3.0]],
    fn f(x: &[f64]) -> f64 {
        let (i, m) = x.iter().enumerate().max_by(|a, b| a.1.partial_cmp(b.1).unwrap()).unwrap();
        let (j, n) = x.iter().enumerate().min_by(|a, b| b.1.total_cmp(a.1)).unwrap();
        m * (i as f64 + 1.0) + n * (j as f64 + 2.0)
    }
);

/// On ties `max_by` returns the last of the equal items and `min_by` the first (std's
/// `cmp::max_by`/`min_by`), so the derivative flows to that item; `total_cmp` orders
/// -0.0 below +0.0.
#[cotan::autodiff_reverse(d_ties, Duplicated, Active)]
fn ties(x: &[f64]) -> f64 {
    let hi = x.iter().copied().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
    let lo = x.iter().copied().min_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
    let z = x.iter().map(|v| v * 0.0).max_by(f64::total_cmp).unwrap();
    hi + 2.0 * lo + z
}

#[test]
fn ties_follow_std() {
    let x = [1.0, 3.0, 1.0, 3.0];
    let mut g = [0.0; 4];
    assert_eq!(d_ties(&x, &mut g, 1.0), 5.0);
    assert_eq!(g, [2.0, 0.0, 0.0, 1.0]);
    let x = [-1.0, 2.0];
    let mut g = [0.0; 2];
    // -1.0 * 0.0 = -0.0 < 2.0 * 0.0 = +0.0 under total_cmp: the max is the second zero.
    let v = d_ties(&x, &mut g, 1.0);
    assert!(v == 0.0 && v.is_sign_positive() == ties(&x).is_sign_positive());
}

#[cotan::autodiff_reverse(d_nan_max, Duplicated, Active)]
fn nan_max(x: &[f64]) -> f64 {
    x.iter().copied().max_by(|a, b| a.partial_cmp(b).expect("no NaN please")).unwrap()
}

#[test]
#[should_panic(expected = "no NaN please")]
fn partial_cmp_unwrap_panics_on_nan_as_std() {
    let mut g = [0.0; 2];
    d_nan_max(&[1.0, f64::NAN], &mut g, 1.0);
}

slice_case!(
    option_locals,
    [[0.3, -1.2, 2.5], [-1.0, -0.5, -2.0]],
    fn f(x: &[f64]) -> f64 {
        let mut best: Option<f64> = None;
        for &v in x {
            if v > 0.0 {
                best = match best {
                    Some(b) if b > v => Some(b),
                    _ => Some(v),
                };
            }
        }
        let none: Option<f64> = None;
        let w = if best.is_some() { best.unwrap() } else { x[0] };
        w * x[1] + best.unwrap_or(1.0) + none.unwrap_or_default() + if none.is_none() { x[2] } else { 0.0 }
    }
);

slice_ints_case!(
    matches_macro,
    [2, 7],
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64], n: &[usize]) -> f64 {
        let mut s = 0.0;
        if matches!(n[0], 1..=3) {
            s += x[0] * x[1];
        }
        if matches!(n[1], 0 | 5) {
            s += x[2];
        }
        if matches!(x.first(), Some(v) if *v > 0.5) {
            s += x[0].exp();
        }
        s + x[2] * x[1]
    }
);

scalar_case!(
    if_let_and_let_else_on_integers,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let k = if x > 0.0 { 2 } else { 0 };
        let a = if let 0 = k { x } else { x * y };
        let (2 | 0) = k else {
            return 0.0;
        };
        a + y
    }
);

slice_case!(
    options_of_tuples,
    [[0.3, -1.2, 2.5], [-1.0, -0.5, -2.0]],
    fn f(x: &[f64]) -> f64 {
        let mut best: Option<(usize, f64)> = None;
        for (i, &v) in x.iter().enumerate() {
            if v > 0.0 {
                best = Some((i, v * v));
            }
        }
        let pair = if x[0] > 0.0 { Some((x[0], x[1])) } else { None };
        let a = match best {
            Some((i, v)) => v * (i as f64 + 1.0),
            None => x[2],
        };
        let b = if let Some((p, q)) = pair { p * q } else { x[1].exp() };
        a + b
    }
);

// `Option`'s `map`, `and_then`, `map_or` and `unwrap_or_else` (each closure runs only on a
// value), and the argmax idiom `max_by(..).map(|(i, _)| i)`.
slice_case!(
    option_combinators,
    // (The second point's last element takes `and_then`'s `None`.)
    [[0.3, -1.2, 2.5, 0.7], [1.0, 0.5, -2.0, -0.25]],
    fn f(x: &[f64]) -> f64 {
        let best = x.iter().enumerate().max_by(|a, b| a.1.partial_cmp(b.1).unwrap()).map(|(i, _)| i).unwrap();
        let first = x.first().map(|v| v.sin()).unwrap_or(0.0);
        // `x[9]` is out of bounds: the closure must not run.
        let missing = x.get(9).map(|v| v.ln()).unwrap_or_else(|| x[0] * 2.0);
        let pos = x.iter().find(|v| **v > 0.6).map_or(x[1], |v| v * v);
        let root = x.last().copied().and_then(|v| if v > 0.0 { Some(v.sqrt()) } else { None }).unwrap_or(-1.0);
        x[best] * first + missing + pos * root + x.last().copied().map(f64::exp).unwrap()
    }
);
