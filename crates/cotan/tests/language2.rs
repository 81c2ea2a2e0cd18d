//! The small constructs of issue 11 (§8): `std::mem::swap` (of numbers, elements and
//! vectors), `?` on `Option`s in helpers, `black_box`, deferred `let`,
//! writing through `for` elements, bodies that panic, each checked by the harness (finite
//! differences in both modes, the dot-product test, the interpreter) or by hand.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut, unused_variables)]

mod common;

scalar_case!(
    mem_swap_locals,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let mut a = x;
        let mut b = y * y;
        std::mem::swap(&mut a, &mut b);
        a * 2.0 + b.sin()
    }
);

slice_case!(
    mem_swap_double_buffers,
    [[0.3, 1.7, -0.4, 0.9, 2.2, 0.1], [1.1, -0.5, 2.0, 0.7, 0.4, -1.3]],
    fn f(x: &[f64]) -> f64 {
        // The double buffer of a time step: `cur` and `prev` trade places each step.
        let n = x.len() / 2;
        let mut cur = vec![0.0; n];
        let mut prev = x[..n].to_vec();
        for step in 0..3 {
            for i in 0..n {
                cur[i] = (prev[i] * x[n + i]).sin() + prev[(i + 1) % n] * step as f64;
            }
            std::mem::swap(&mut cur, &mut prev);
        }
        prev.iter().sum::<f64>() + cur[0] * cur[n - 1]
    }
);

inplace_case!(
    mem_swap_elements_and_write_through_for,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &mut [f64]) {
        let mut tmp = [x[0] * 2.0, x[1]];
        std::mem::swap(&mut x[2], &mut tmp[0]);
        x[1] = tmp[0] * tmp[1];
        let s = x[0] + 1.0;
        for e in x.iter_mut() {
            *e *= s;
        }
        for e in &mut *x {
            *e = e.sin() + *e;
        }
    }
);

inplace_case!(
    write_through_plain_for,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &mut [f64]) {
        let s = x[1];
        for e in x {
            *e = *e * s + 1.0;
        }
    }
);

scalar_case!(
    black_box_is_identity,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        let y = std::hint::black_box(x * x);
        std::hint::black_box(y.sin()) * x
    }
);

scalar_case!(
    deferred_let,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let z;
        let w: f64;
        if x > y {
            z = x * y;
            w = 1.0;
        } else {
            z = x - y;
            w = y;
        }
        let flag;
        flag = z > 0.0;
        if flag {
            z * w
        } else {
            z + w
        }
    }
);

/// A body of `unimplemented!()`: the derivatives have std's signature and panic the same way.
#[cotan::autodiff_reverse(d_later, Duplicated, Active, Active)]
#[cotan::autodiff_forward(t_later, Dual, Dual, Dual)]
fn later(x: &[f64], y: f64) -> f64 {
    unimplemented!()
}

#[test]
#[should_panic(expected = "not implemented")]
fn unimplemented_body_panics_in_reverse() {
    let mut g = [0.0; 2];
    let _: (f64, f64) = d_later(&[1.0, 2.0], &mut g, 0.5, 1.0);
}

#[test]
#[should_panic(expected = "not yet implemented: soon")]
fn todo_body_panics_in_forward() {
    #[cotan::autodiff_forward(t_soon, Dual, Dual)]
    fn soon(x: f64) -> f64 {
        todo!("soon")
    }
    let _: (f64, f64) = t_soon(1.0, 1.0);
}

scalar_case!(
    panic_in_a_branch,
    1,
    [[0.7], [1.3]],
    fn f(x: f64) -> f64 {
        let y = if x > 0.0 { x.ln() } else { panic!("x must be positive") };
        match y > 100.0 {
            true => unreachable!(),
            false => y * x,
        }
    }
);

scalar_case!(
    printing_keeps_the_primal_output,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let z = x * y;
        println!("z = {z:.3}, x = {}, {name}", x, name = y);
        eprint!("{{literal}} {0} {0:?}\n", z);
        let w = dbg!(z.sin()) * x;
        print!("");
        println!();
        w
    }
);

/// In reverse mode the output is printed once, in the forward sweep; forward over reverse
/// (second order) keeps that single print.
#[test]
fn prints_once_in_each_derivative() {
    use cotan_ad::{Activity, Mode, Spec};
    let item: syn::ItemFn = syn::parse_str(
        "fn f(x: &[f64]) -> f64 { let mut s = 0.0; for i in 0..x.len() { s += x[i] * x[i]; println!(\"{i}: {s}\"); } s }",
    )
    .unwrap();
    let f = cotan_syntax::lower_fn(&item.sig, &item.block).unwrap().func;
    let count = |g: &cotan_ir::Function| {
        let mut n = 0;
        g.walk(&mut |op| n += usize::from(matches!(op.kind, cotan_ir::OpKind::Print { .. })));
        n
    };
    let spec = Spec { mode: Mode::Reverse, inputs: vec![Activity::Duplicated], ret: Some(Activity::Active), width: 1 };
    let rev = cotan_ad::reverse(&f, &spec, "rev", &mut cotan_ad::NoCalls).unwrap();
    assert_eq!(count(&rev), 1);
    let spec = Spec { mode: Mode::Forward, inputs: vec![Activity::Dual], ret: Some(Activity::Dual), width: 3 };
    let fwd = cotan_ad::forward(&f, &spec, "fwd", &mut cotan_ad::NoCalls).unwrap();
    assert_eq!(count(&fwd), 1);
    let spec2 = Spec {
        mode: Mode::Forward,
        inputs: vec![Activity::Dual, Activity::Dual, Activity::Const],
        ret: Some(Activity::Const),
        width: 1,
    };
    let second = cotan_ad::forward(&rev, &spec2, "hvp", &mut cotan_ad::NoCalls).unwrap();
    assert_eq!(count(&second), 1);
    // The text form round-trips.
    let text = cotan_ir::print(&rev);
    assert_eq!(cotan_ir::print(&cotan_ir::parse(&text).unwrap()), text);
}

/// A method called on a number read through a reference (`*x` in the derivative).
#[cotan::autodiff_forward(t_exp_ref, Dual, Dual)]
#[cotan::autodiff_reverse(d_exp_ref, Duplicated, Active)]
fn exp_ref(x: &f64) -> f64 {
    x.exp()
}

#[test]
fn methods_on_numbers_behind_references() {
    assert_eq!(t_exp_ref(&0.5, &2.0), (0.5f64.exp(), 2.0 * 0.5f64.exp()));
    let mut dx = 0.0;
    assert_eq!(d_exp_ref(&0.5, &mut dx, 1.0), 0.5f64.exp());
    assert_eq!(dx, 0.5f64.exp());
}

// `std::array::from_fn` with the length in the `let`'s type.
slice_case!(
    array_from_fn,
    [[0.3, 1.2, 0.8, 1.5], [1.1, -0.5, 2.0, 0.7]],
    fn f(x: &[f64]) -> f64 {
        let w: [f64; 4] = std::array::from_fn(|i| x[i] * (i as f64 + 0.5));
        let sq: [f64; 3] = core::array::from_fn(|k| w[k] * w[k + 1]);
        w.iter().sum::<f64>() + sq[2] * sq[0]
    }
);

/// Vectors of different lengths are swapped in Rust, not by cotan's derivative, which says
/// so as it runs (its buffers keep their lengths).
#[cotan::autodiff_reverse(d_uneven_swap, Duplicated, Active)]
fn uneven_swap(x: &[f64]) -> f64 {
    let mut a = x.to_vec();
    let mut b = vec![0.0; 1];
    std::mem::swap(&mut a, &mut b);
    a[0] + b[0]
}

#[test]
#[should_panic(expected = "swaps vectors of one length only")]
fn swap_of_vectors_of_different_lengths_panics_in_the_derivative() {
    assert_eq!(uneven_swap(&[1.0, 2.0]), 1.0);
    let mut dx = [0.0; 2];
    d_uneven_swap(&[1.0, 2.0], &mut dx, 1.0);
}

// `?` on `Option`s in the helpers a function calls: `let Some(v) = e else { return None };`.
// (Plain items: the helpers of a `slice_case!` are inside a macro, where cotan does not read.)
#[cotan::autodiff_reverse(question_rev, Duplicated, Active)]
#[cotan::autodiff_forward(question_fwd, Dual, Dual)]
fn question(x: &[f64]) -> f64 {
    scaled(x, 1).unwrap_or(0.0) + scaled(x, 9).unwrap_or(x[0]) + ratio(&x[..1]).map_or(x[1], |r| r * 2.0)
}

fn first_positive(x: &[f64]) -> Option<f64> {
    for &v in x {
        if v > 0.0 {
            return Some(v);
        }
    }
    None
}

fn ratio(x: &[f64]) -> Option<f64> {
    let a = first_positive(x)?;
    let b = *x.last()?;
    if b == 0.0 {
        return None;
    }
    Some(a / b)
}

fn scaled(x: &[f64], k: usize) -> Option<f64> {
    Some(ratio(x)? * x.get(k)?.abs())
}

#[test]
fn question_mark_on_options_in_helpers() {
    // (Points where each `?` passes and where some return `None`.)
    for x in [vec![-0.5, 0.7, 1.3, 2.0], vec![-1.0, -2.0, -0.5], vec![0.4, 1.5]] {
        common::check_slice_fn("question", question, question_rev, question_fwd, &x);
    }
}

/// `(lo..hi).contains(&x)` and `(lo..=hi)`, `(..hi)`: the comparisons they are.
#[cotan::autodiff_reverse(d_range_contains, Active, Active)]
#[cotan::autodiff_forward(t_range_contains, Dual, Dual)]
fn range_contains(x: f64) -> f64 {
    if !(0.0..=1.0).contains(&x) {
        return 0.0;
    }
    let k = if (0.25..0.5).contains(&x) { 2.0 } else { 1.0 };
    if (..0.9).contains(&x) {
        k * x * x
    } else {
        x
    }
}

#[test]
fn range_contains_as_comparisons() {
    for (x, d) in [(0.3, 1.2), (0.7, 1.4), (0.95, 1.0), (1.5, 0.0), (-0.1, 0.0)] {
        assert_eq!(d_range_contains(x, 1.0), (range_contains(x), d));
        assert_eq!(t_range_contains(x, 1.0), (range_contains(x), d));
    }
}

/// `std::array::from_fn(..)` as a helper's result: the declared array type gives its length.
fn scaled_from_fn<const N: usize>(a: &[f64; N], k: f64) -> [f64; N] {
    std::array::from_fn(|i| a[i] * k + i as f64)
}

fn cross_from_fn(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|i| a[(i + 1) % 3] * b[(i + 2) % 3] - a[(i + 2) % 3] * b[(i + 1) % 3])
}

#[cotan::autodiff_reverse(d_from_fn_results, Duplicated, Active)]
#[cotan::autodiff_forward(t_from_fn_results, Dual, Dual)]
fn from_fn_results(x: &[f64]) -> f64 {
    let a = [x[0], x[1], x[2]];
    let s = scaled_from_fn(&a, x[1]);
    let c = cross_from_fn(a, s);
    c[0] + 2.0 * c[1] + s[2]
}

#[test]
fn from_fn_as_a_helpers_result() {
    common::check_slice_fn("from_fn_results", from_fn_results, d_from_fn_results, t_from_fn_results, &[0.3, 0.7, -0.2]);
}
