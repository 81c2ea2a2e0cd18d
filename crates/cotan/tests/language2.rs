//! The small constructs of issue 11 (§8): `std::mem::swap`, `black_box`, deferred `let`,
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
