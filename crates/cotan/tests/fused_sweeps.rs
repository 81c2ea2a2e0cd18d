//! Reverse mode's two sweeps of a loop run as one loop where they do not depend on each
//! other (`cotan_ir::fuse`): the forward sweep's body, then the reverse sweep's, in one
//! iteration, with the values the first pushed for the second passed directly. Each case
//! is checked by the harness (finite differences in both modes, dot-product test,
//! interpreter against compiled code, allocations), and how many loops the derivative has
//! is read off its IR: fused where the sweeps are independent, apart where they are not.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan_ad::{Activity, Mode, Spec};

/// The reverse derivative of `src` (one slice in, `Active` result), simplified as the macros
/// do before fusing its loops.
fn unfused(src: &str) -> cotan_ir::Function {
    let item: syn::ItemFn = syn::parse_str(src).unwrap();
    let mut f = cotan_syntax::lower_fn(&item.sig, &item.block).unwrap().func;
    cotan_ir::simplify::cse(&mut f);
    let spec = Spec { mode: Mode::Reverse, inputs: vec![Activity::Duplicated], ret: Some(Activity::Active), width: 1 };
    let mut g = cotan_ad::reverse(&f, &spec, "rev", &mut cotan_ad::NoCalls).unwrap();
    cotan_ir::simplify::cse(&mut g);
    cotan_ir::dead_stores::dead_stores(&mut g);
    g
}

/// The number of loops at the top level of the reverse derivative of `src`, fused.
fn top_loops(src: &str) -> usize {
    let mut g = unfused(src);
    cotan_ir::fuse::fuse_sweeps(&mut g);
    cotan_ir::verify(&g).unwrap();
    g.body.ops.iter().filter(|o| matches!(o.kind, cotan_ir::OpKind::For { .. })).count()
}

const POINTS: [[f64; 6]; 2] = [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]];

slice_case!(
    sum_of_sines,
    [POINTS[0], POINTS[1]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += x[i].sin() + (x[i] * x[i]).cos();
        }
        s
    }
);

slice_case!(
    branches_and_saved_values,
    [POINTS[0], POINTS[1]],
    fn f(x: &[f64]) -> f64 {
        // The forward sweep pushes `exp(xᵢ)` for the reverse: passed directly once fused.
        let mut s = 0.0;
        for i in 0..x.len() {
            let e = x[i].exp();
            if x[i] > 0.0 {
                s += e.sin();
            } else {
                s += 2.0 * e;
            }
        }
        3.0 * s
    }
);

slice_case!(
    a_buffer_filled_then_summed,
    [POINTS[0], POINTS[1]],
    fn f(x: &[f64]) -> f64 {
        // The sum and its reverse fuse; then the fill with them (the sum reads `y[i]` where
        // the fill writes it, at the same index, and writes `dy[i]`, which the fill's reverse
        // reads at that index); then the fill's reverse: one loop.
        let n = x.len();
        let mut y = vec![0.0; n];
        for i in 0..n {
            y[i] = (x[i] * x[(i + 1) % n]).sin();
        }
        let mut s = 0.0;
        for i in 0..n {
            s += y[i];
        }
        s
    }
);

slice_case!(
    seed_that_needs_the_sum,
    [POINTS[0], POINTS[1]],
    fn f(x: &[f64]) -> f64 {
        // The reverse sweep needs `s` (the adjoint of `s * s`): apart.
        let mut s = 0.0;
        for i in 0..x.len() {
            s += x[i].sin();
        }
        s * s
    }
);

slice_case!(
    carried_adjoint,
    [POINTS[0], POINTS[1]],
    fn f(x: &[f64]) -> f64 {
        // The recurrence's adjoint is carried from one iteration to the one before: the
        // reverse sweep's iterations do not commute, apart.
        let mut v = 0.0;
        for i in 0..x.len() {
            v = 0.9 * v + x[i].cos();
        }
        v
    }
);

slice_case!(
    neighbours_scattered,
    [POINTS[0], POINTS[1]],
    fn f(x: &[f64]) -> f64 {
        // The reverse adds to `dx[i]` and `dx[i + 1]`: additions, which commute.
        let mut s = 0.0;
        for i in 0..x.len() - 1 {
            s += (x[i] * x[i + 1]).sin();
        }
        s
    }
);

#[test]
fn independent_sweeps_are_one_loop() {
    let one = |body: &str| top_loops(&format!("fn f(x: &[f64]) -> f64 {{ {body} }}"));
    assert_eq!(one("let mut s = 0.0; for i in 0..x.len() { s += x[i].sin() + (x[i] * x[i]).cos(); } s"), 1);
    assert_eq!(
        one("let mut s = 0.0; for i in 0..x.len() { let e = x[i].exp(); if x[i] > 0.0 { s += e.sin(); } else { s += 2.0 * e; } } 3.0 * s"),
        1
    );
    assert_eq!(one("let mut s = 0.0; for i in 0..x.len() - 1 { s += (x[i] * x[i + 1]).sin(); } s"), 1);
    assert_eq!(
        one("let n = x.len(); let mut y = vec![0.0; n]; for i in 0..n { y[i] = (x[i] * x[(i + 1) % n]).sin(); } let mut s = 0.0; for i in 0..n { s += y[i]; } s"),
        1
    );
    // Three stages of buffers, each read at the index the stage before wrote.
    assert_eq!(
        one("let n = x.len(); let mut a = vec![0.0; n]; let mut b = vec![0.0; n]; for i in 0..n { a[i] = x[i].exp(); } for i in 0..n { b[i] = a[i].cos(); } let mut s = 0.0; for i in 0..n { s += b[i].sin(); } s"),
        1
    );
}

slice_case!(
    a_buffer_read_at_its_neighbour,
    [POINTS[0], POINTS[1]],
    fn f(x: &[f64]) -> f64 {
        // The second loop reads `y[i + 1]`, which the first writes an iteration later: the
        // two forward loops stay apart (each may fuse with its own reverse).
        let n = x.len();
        let mut y = vec![0.0; n + 1];
        for i in 0..n {
            y[i] = (x[i] * x[i]).sin();
        }
        let mut s = 0.0;
        for i in 0..n {
            s += y[i] * y[i + 1] + x[i];
        }
        s
    }
);

#[test]
fn dependent_sweeps_stay_apart() {
    let two = |body: &str| top_loops(&format!("fn f(x: &[f64]) -> f64 {{ {body} }}"));
    assert_eq!(two("let mut s = 0.0; for i in 0..x.len() { s += x[i].sin(); } s * s"), 2);
    assert_eq!(two("let mut v = 0.0; for i in 0..x.len() { v = 0.9 * v + x[i].cos(); } v"), 2);
    assert!(
        two("let n = x.len(); let mut y = vec![0.0; n + 1]; for i in 0..n { y[i] = (x[i] * x[i]).sin(); } let mut s = 0.0; for i in 0..n { s += y[i] * y[i + 1] + x[i]; } s")
            >= 2
    );
}

#[test]
fn copies_of_buffers_to_the_tape_stay_copies() {
    // The body's copy of `xc` at its end (`restored.rs`) is a loop of pushes that code
    // generation writes as one slice copy: not fused with the loop over `j` before it.
    let src = "fn f(x: &[f64]) -> f64 {
        let d = 4;
        let mut xc = vec![0.0; d];
        let mut s = 0.0;
        for c in 0..3 {
            for j in 0..d { xc[j] = (x[j] - x[c + 4]).sin(); }
            for j in 0..d { for jj in j + 1..d { s += x[j + jj] * xc[j] * xc[jj]; } }
            for j in 0..d { s += xc[j] * xc[j]; }
        }
        s
    }";
    let mut g = unfused(src);
    let copies = |g: &cotan_ir::Function| {
        let mut n = 0;
        g.walk(&mut |o| {
            if let cotan_ir::OpKind::For { body, .. } = &o.kind {
                n += usize::from(matches!(
                    body.ops.iter().map(|o| &o.kind).collect::<Vec<_>>()[..],
                    [cotan_ir::OpKind::Load { .. }, cotan_ir::OpKind::Push(_)]
                ));
            }
        });
        n
    };
    let before = copies(&g);
    assert!(before > 0, "{}", cotan_ir::print(&g));
    cotan_ir::fuse::fuse_sweeps(&mut g);
    assert_eq!(copies(&g), before, "{}", cotan_ir::print(&g));
}
