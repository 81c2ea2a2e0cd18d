//! The language subset of the engine issue, construct by construct, each checked by the
//! harness: finite differences in both modes, the dot-product test, and the interpreter.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

const X4: [f64; 4] = [0.3, -1.2, 2.5, 0.8];

// ---- expressions ----

scalar_case!(
    literals_and_arithmetic,
    2,
    [[1.5, -0.4], [0.2, 3.0]],
    fn f(x: f64, y: f64) -> f64 {
        let a = 2.0 * x - y / 4.0 + 1e-3;
        let b = -a * a + x % 0.7;
        a * b - (x + y) * (x - y)
    }
);

scalar_case!(
    compound_assignment,
    2,
    [[1.5, -0.4], [0.2, 3.0]],
    fn f(x: f64, y: f64) -> f64 {
        let mut s = x;
        s += y * 2.0;
        s -= x * x;
        s *= y + 3.0;
        s /= x + 5.0;
        s %= 10.0;
        s
    }
);

scalar_case!(
    shadowing_and_reassignment,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        let y = x * 2.0;
        let y = y.sin() + x;
        let mut z = y;
        z = z * y;
        {
            let y = z + 1.0;
            z = y * x;
        }
        z + y
    }
);

scalar_case!(
    block_expression,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        let y = {
            let t = x * x;
            t.exp() - 1.0
        };
        y * { x + 2.0 }
    }
);

scalar_case!(
    consts,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        x * std::f64::consts::PI + std::f64::consts::E * x.sin() + core::f64::consts::FRAC_PI_2
            - std::f64::consts::LN_2 * x
    }
);

scalar_case!(
    casts,
    1,
    [[0.7], [2.3]],
    fn f(x: f64) -> f64 {
        let k = (x * 3.0) as i32;
        let n = 4usize;
        let z = (x * 2.0) as f64;
        x * k as f64 + n as f64 * x + z * x + (x as i64) as f64
    }
);

scalar_case!(
    comparisons_and_logic,
    2,
    [[0.7, 0.2], [-1.3, 2.0], [0.5, -0.5]],
    fn f(x: f64, y: f64) -> f64 {
        let a = x > y && y > 0.0;
        let b = x <= y || !(x >= 0.0);
        let c = x != y && (x == x);
        let mut s = x * y;
        if a {
            s += x;
        }
        if b {
            s *= y;
        }
        if c {
            s -= 1.0;
        }
        s
    }
);

slice_case!(
    short_circuit_guards_index,
    [[0.3, -1.2, 2.5], [1.0, 2.5, -3.0], [0.3, -1.2, 1.5]],
    fn f(x: &[f64]) -> f64 {
        let mut i = 0;
        let mut s = 0.0;
        while i < x.len() && x[i] < 2.0 {
            s += x[i] * x[i];
            i += 1;
        }
        if i < x.len() || x[0] > 100.0 {
            s += x[x.len() - 1];
        }
        s
    }
);

scalar_case!(
    if_expressions,
    1,
    [[0.7], [-1.3], [2.5]],
    fn f(x: f64) -> f64 {
        let y = if x > 1.0 {
            x * x
        } else if x > 0.0 {
            x.sin()
        } else {
            -x
        };
        let z = if y < 0.5 { 1.0 } else { y };
        if x > 0.0 {
            y * z
        } else {
            y + z
        }
    }
);

scalar_case!(
    if_statements,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        let mut s = x;
        if x > 0.0 {
            s = s * 3.0;
        } else if x < -1.0 {
            s = s.exp();
        } else {
            s += 1.0;
        }
        if s > 100.0 {
            s = 0.0;
        }
        s
    }
);

scalar_case!(
    integers_and_bools_ride_along,
    1,
    [[0.7], [-1.3]],
    fn f(x: f64) -> f64 {
        let mut n = 0;
        let mut flag = false;
        let mut k: u32 = 7;
        k = k * 3 + 1;
        n += (k % 5) as i32;
        flag = !flag && n > 1;
        let m = if flag { n - 1 } else { n + 1 };
        x * m as f64
    }
);

// ---- parameter types ----

mod reference_params {
    use super::common;
    #[cotan::autodiff_reverse(rev, Duplicated, Active, Const, Active)]
    #[cotan::autodiff_forward(fwd, Dual, Dual, Const, Dual)]
    fn f(a: &f64, b: f64, n: usize) -> f64 {
        *a * b * n as f64 + a.sin()
    }

    #[test]
    fn derivatives() {
        let case = common::Case {
            src: "",
            shape: common::Shape::Scalars,
            primal: &|x| vec![f(&x[0], x[1], 3)],
            jvp: &|x, u| {
                let (y, t) = fwd(&x[0], &u[0], x[1], u[1], 3);
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let mut da = 0.0;
                let (y, db) = rev(&x[0], &mut da, x[1], 3, w[0]);
                (vec![y], vec![da, db])
            },
        };
        common::check_compiled(&case, &[0.4, 1.7]);
    }
}

mod array_and_vec_params {
    use super::common;
    #[cotan::autodiff_reverse(rev, Duplicated, Duplicated, Active)]
    #[cotan::autodiff_forward(fwd, Dual, Dual, Dual)]
    fn f(a: &[f64; 3], v: &Vec<f64>) -> f64 {
        let mut s = 0.0;
        for i in 0..3 {
            s += a[i] * v[i] + v[v.len() - 1 - i].cos();
        }
        s * a.len() as f64
    }

    #[test]
    fn derivatives() {
        let case = common::Case {
            src: "",
            shape: common::Shape::Scalars,
            primal: &|x| vec![f(&[x[0], x[1], x[2]], &x[3..].to_vec())],
            jvp: &|x, u| {
                let (y, t) = fwd(&[x[0], x[1], x[2]], &[u[0], u[1], u[2]], &x[3..].to_vec(), &u[3..].to_vec());
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let mut da = [0.0; 3];
                let mut dv = vec![0.0; 3];
                let y = rev(&[x[0], x[1], x[2]], &mut da, &x[3..].to_vec(), &mut dv, w[0]);
                (vec![y], da.iter().chain(&dv).copied().collect())
            },
        };
        common::check_compiled(&case, &[0.4, 1.7, -0.3, 0.9, 2.0, -1.1]);
    }
}

mod mutable_outputs {
    use super::common;
    // Results through `&mut f64` and `&mut [f64; 2]`, an input through `&mut [f64]`.
    #[cotan::autodiff_reverse(rev, Duplicated, Duplicated, Duplicated)]
    #[cotan::autodiff_forward(fwd, Dual, Dual, Dual)]
    fn f(x: &mut [f64], out: &mut f64, pair: &mut [f64; 2]) {
        *out = x[0] * x[1];
        pair[0] = out.sin() + x[2];
        pair[1] = *out * pair[0];
        x[0] = x[0] * 2.0;
    }

    fn pack(x: &[f64], out: f64, pair: [f64; 2]) -> Vec<f64> {
        let mut v = x.to_vec();
        v.push(out);
        v.extend(pair);
        v
    }

    #[test]
    fn derivatives() {
        let case = common::Case {
            src: "",
            shape: common::Shape::InPlace,
            primal: &|z| {
                let mut x = z[..3].to_vec();
                let (mut out, mut pair) = (z[3], [z[4], z[5]]);
                f(&mut x, &mut out, &mut pair);
                pack(&x, out, pair)
            },
            jvp: &|z, u| {
                let mut x = z[..3].to_vec();
                let (mut out, mut pair) = (z[3], [z[4], z[5]]);
                let mut dx = u[..3].to_vec();
                let (mut dout, mut dpair) = (u[3], [u[4], u[5]]);
                fwd(&mut x, &mut dx, &mut out, &mut dout, &mut pair, &mut dpair);
                (pack(&x, out, pair), pack(&dx, dout, dpair))
            },
            vjp: &|z, w| {
                let mut x = z[..3].to_vec();
                let (mut out, mut pair) = (z[3], [z[4], z[5]]);
                let mut dx = w[..3].to_vec();
                let (mut dout, mut dpair) = (w[3], [w[4], w[5]]);
                rev(&mut x, &mut dx, &mut out, &mut dout, &mut pair, &mut dpair);
                (pack(&x, out, pair), pack(&dx, dout, dpair))
            },
        };
        common::check_compiled(&case, &[0.4, 1.7, -0.3, 9.0, 9.0, 9.0]);
    }
}

// ---- loops ----

slice_case!(
    for_range,
    [X4],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += x[i] * x[i];
        }
        s
    }
);

slice_case!(
    for_inclusive_rev_step,
    [X4, [1.0, 2.0, 3.0, 4.0, 5.0]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut s = 0.0;
        for i in 1..=n - 1 {
            s += x[i] * x[i - 1];
        }
        for i in (0..n).rev() {
            s = s * 0.5 + x[i].sin();
        }
        for i in (0..n).step_by(2) {
            s += x[i].exp();
        }
        for i in (1..n).step_by(2).rev() {
            s = s * x[i];
        }
        for i in (0..=n - 1).rev() {
            s -= x[i] * 0.1;
        }
        s
    }
);

slice_case!(
    for_over_elements,
    [X4],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for v in x.iter() {
            s += v * v;
        }
        for &v in x {
            s += v.sin();
        }
        for v in x {
            s += *v * 0.5;
        }
        for (i, v) in x.iter().enumerate() {
            s += (i as f64) * v;
        }
        for v in x.iter().rev() {
            s = s * 0.9 + v;
        }
        for (i, &v) in x.iter().enumerate().rev() {
            s = s * 0.9 + v * i as f64;
        }
        s
    }
);

slice_case!(
    nested_triangular_loops,
    [X4],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut s = 0.0;
        for i in 0..n {
            for j in 0..i {
                s += x[i] * x[j];
            }
            for j in i..n {
                s += (x[i] - x[j]).cos();
            }
        }
        s
    }
);

slice_case!(
    nonlinear_carried_value,
    [X4, [0.9, 0.1, -0.2, 0.4, 1.5]],
    fn f(x: &[f64]) -> f64 {
        let mut v = 1.0;
        for i in 0..x.len() {
            v = (v * x[i]).sin() + 0.5 * v;
        }
        v * v
    }
);

slice_case!(
    branches_inside_loops,
    [X4],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        let mut p = 1.0;
        for i in 0..x.len() {
            if x[i] > 0.0 {
                s += x[i].sin();
            } else if x[i] < -1.0 {
                p = p * x[i];
            } else {
                s += x[i].cos() * p;
            }
            if s > 1.0 {
                p = p * s;
            }
        }
        s + p
    }
);

slice_case!(
    carried_value_in_branch_condition,
    [X4, [0.2, 0.3, 0.4, 0.5]],
    fn f(x: &[f64]) -> f64 {
        let mut v = 0.0;
        for i in 0..x.len() {
            if v < 1.0 {
                v = v + x[i] * x[i];
            } else {
                v = v.sqrt() * x[i];
            }
        }
        v
    }
);

slice_case!(
    local_arrays,
    [X4],
    fn f(x: &[f64]) -> f64 {
        let mut buf = [0.0; 4];
        let mut w = vec![0.0; x.len()];
        for i in 0..x.len() {
            buf[i % 4] += x[i] * 2.0;
            w[i] = x[i].exp();
        }
        let c = [1.0, 2.0, 3.0];
        let mut s = 0.0;
        for i in 0..w.len() {
            s += w[i] * buf[i % 4] * c[i % 3];
        }
        s
    }
);

slice_case!(
    assertions_keep_their_meaning,
    [X4],
    fn f(x: &[f64]) -> f64 {
        assert!(x.len() >= 2, "need two values");
        debug_assert!(x.len() < 100);
        assert_eq!(x.len() % 2, 0);
        x[0] * x[1]
    }
);

// ---- early exits and while loops (structured by flags) ----

slice_case!(
    while_and_loop,
    [X4, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]],
    fn f(x: &[f64]) -> f64 {
        let mut i = 0;
        let mut s = 0.0;
        while i < x.len() {
            s = s * 0.5 + x[i];
            i += 1;
        }
        let mut k = 0;
        let t = loop {
            k += 1;
            s = s.sin() + 1.0;
            if k >= 3 {
                break s * 2.0;
            }
        };
        t + s
    }
);

slice_case!(
    break_continue_return,
    [X4, [0.5, 0.5, 0.5, 0.5], [3.0, 1.0, 2.0, 0.1]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            if x[i] < -1.0 {
                continue;
            }
            s += x[i] * x[i];
            if s > 5.0 {
                break;
            }
        }
        for i in 0..x.len() {
            if x[i] > 2.9 {
                return s * x[i];
            }
        }
        'outer: for i in 0..x.len() {
            for j in 0..x.len() {
                if i + j == 3 {
                    continue 'outer;
                }
                if x[i] * x[j] > 6.0 {
                    break 'outer;
                }
                s += x[i] * x[j] * 0.1;
            }
        }
        s
    }
);

// ---- f32 ----

mod single_precision {
    #[cotan::autodiff_reverse(rev32, Duplicated, Active, Active)]
    #[cotan::autodiff_forward(fwd32, Dual, Dual, Dual)]
    fn f32_version(x: &[f32], a: f32) -> f32 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += (a * x[i]).sin() + x[i].powi(2) * 0.5;
        }
        s
    }

    #[cotan::autodiff_reverse(rev64, Duplicated, Active, Active)]
    fn f64_version(x: &[f64], a: f64) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += (a * x[i]).sin() + x[i].powi(2) * 0.5;
        }
        s
    }

    #[test]
    fn f32_agrees_with_f64() {
        let x32 = [0.3f32, -1.2, 2.5];
        let x64 = [0.3f32 as f64, -1.2f32 as f64, 2.5f32 as f64];
        let mut g32 = [0.0f32; 3];
        let mut g64 = [0.0f64; 3];
        let (y32, a32) = rev32(&x32, &mut g32, 0.7, 1.0);
        let (y64, a64) = rev64(&x64, &mut g64, 0.7f32 as f64, 1.0);
        assert!((y32 as f64 - y64).abs() < 1e-5);
        assert!((a32 as f64 - a64).abs() < 1e-4 * a64.abs().max(1.0));
        for i in 0..3 {
            assert!((g32[i] as f64 - g64[i]).abs() < 1e-4 * g64[i].abs().max(1.0));
        }
        let (_, t32) = fwd32(&x32, &[1.0, 0.0, 0.0], 0.7, 0.0);
        assert!((t32 - g32[0]).abs() < 1e-4);
        assert_eq!(f32_version(&x32, 0.7), y32);
    }
}

// ---- nested definition ----

#[test]
fn attributes_work_on_nested_functions() {
    #[cotan::autodiff_reverse(d_inner, Active, Active)]
    fn inner(x: f64) -> f64 {
        x * x * x
    }
    assert_eq!(d_inner(2.0, 1.0), (8.0, 12.0));
    assert_eq!(inner(2.0), 8.0);
}

pub mod visibility {
    #[cotan::autodiff_reverse(pub_d, Active, Active)]
    pub fn public(x: f64) -> f64 {
        x.exp()
    }
}

#[test]
fn generated_function_keeps_visibility() {
    assert_eq!(visibility::pub_d(0.0, 1.0), (1.0, 1.0));
    assert_eq!(visibility::public(0.0), 1.0);
}

// ---- reported by a new user ----

scalar_case!(
    buffer_after_an_early_return,
    1,
    [[0.7], [-0.3]],
    fn f(x: f64) -> f64 {
        if x < 0.0 {
            return 0.0;
        }
        let a = [x, 2.0 * x];
        let mut s = 0.0;
        for v in a.iter() {
            s += v * v;
        }
        s
    }
);

slice_case!(
    inclusive_and_wide_stepped_ranges,
    [[0.3, -1.2, 2.5, 0.8, 0.1]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in (0..=x.len() - 1).step_by(2) {
            s = s * 0.5 + x[i].sin();
        }
        let n = x.len() as i64;
        for k in (0..n).step_by(3) {
            s += x[k as usize] * (k as f64 + 1.0);
        }
        s
    }
);

slice_case!(
    predicates_and_conversions,
    [[0.3, -1.2, 2.5]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            if x[i].is_finite() && !x[i].is_infinite() && x[i].is_sign_positive() && !x.is_empty() {
                s += x[i] * f64::from(i as u32);
            }
            if x[i].is_sign_negative() {
                s -= x[i];
            }
        }
        s
    }
);

pub struct Model;

impl Model {
    /// Associated functions (without `self`) can carry the attributes; siblings are called
    /// through `Self::`.
    #[cotan::autodiff_reverse(d_energy, Duplicated, Active)]
    pub fn energy(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += Self::cube(x[i]);
        }
        s
    }

    #[cotan::differentiable]
    fn cube(v: f64) -> f64 {
        v * v * v
    }
}

#[test]
fn associated_functions_and_calls_through_self() {
    let x = [0.5, -2.0];
    let mut g = [0.0; 2];
    let e = Model::d_energy(&x, &mut g, 1.0);
    assert_eq!(e, Model::energy(&x));
    assert_eq!(g, [0.75, 12.0]);
}

slice_case!(
    casts_on_the_left_of_less_than,
    [[0.5, 1.7, 2.2, 0.1], [3.5, -0.2, 1.4, 2.9]],
    fn f(x: &[f64]) -> f64 {
        // `(i as f64) < x` written back as `i as f64 < x` would open generic arguments.
        let mut s = 0.0;
        for i in 0..x.len() {
            if (i as f64) < x[i] {
                s += x[i] * x[i];
            }
            let k = x[i].abs() as usize;
            if (k as u32) <= 1 {
                s += x[i].sin();
            }
            if (i as i64) < (k as i64) {
                s += 0.5 * x[i];
            }
            s += ((k as u32) << 1) as f64 * x[i];
        }
        s
    }
);
