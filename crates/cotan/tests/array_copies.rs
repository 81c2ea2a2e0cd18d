//! Arrays are values in Rust: `let b = a;`, `(a, x)`, `let p = s.pos;`, `let q = *r;` and a
//! closure's `mut v: [f64; 2]` parameter each give an array of their own, which later writes
//! to the original (or to the copy) do not reach; `let mut` structs and tuples own their
//! arrays (field writes, whole-field and whole-value assignments); a struct read out of
//! memory (`let old = *p;`, `let b = bodies[i];`) is a copy too. Until cotan copied them,
//! the derivative and even the value it returned were silently wrong in most of these.
//! Every function is checked for its value, against finite differences, forward mode
//! against reverse mode (dot-product test), and one time-stepping loop for second order.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

mod common;

use common::{check_hvp_against_gradient, check_slice_fn as check};
use cotan::{autodiff_forward, autodiff_reverse, hvp};

#[autodiff_reverse(d_copy_then_write_copy, Duplicated, Active)]
#[autodiff_forward(t_copy_then_write_copy, Dual, Dual)]
fn copy_then_write_copy(p: &[f64]) -> f64 {
    let a = [p[0], 2.0 * p[1]];
    let mut b = a;
    b[0] = 5.0 * p[0] * p[1];
    a[0] + b[0] + b[1]
}

#[autodiff_reverse(d_copy_then_write_original, Duplicated, Active)]
#[autodiff_forward(t_copy_then_write_original, Dual, Dual)]
fn copy_then_write_original(p: &[f64]) -> f64 {
    let mut a = [p[0], 2.0 * p[1]];
    let b = a;
    let c: [f64; 2] = a;
    a[0] = 7.0 * p[0] * p[0];
    a[1] *= p[1];
    a[0] + a[1] * b[0] + b[1] * c[0]
}

/// Explicit time stepping that keeps the previous state (`let old = s;`).
#[autodiff_reverse(d_previous_state, Duplicated, Active)]
#[autodiff_forward(t_previous_state, Dual, Dual)]
fn previous_state(p: &[f64]) -> f64 {
    let mut s = [p[0], p[1], p[2]];
    let (sigma, rho, dt) = (p[3], 2.5, 0.01);
    let mut energy = 0.0;
    for _ in 0..30 {
        let old = s;
        s[0] += dt * sigma * (old[1] - old[0]);
        s[1] += dt * (old[0] * (rho - old[2]) - old[1]);
        s[2] += dt * (old[0] * old[1] - 0.5 * old[2]);
        energy += old[0] * s[0];
    }
    energy + s[2]
}

/// The same loop rebuilding the state from the copy (`s = [..old..]`).
#[hvp(hvp_rotate)]
#[autodiff_reverse(d_rotate, Duplicated, Active)]
#[autodiff_forward(t_rotate, Dual, Dual)]
fn rotate(p: &[f64]) -> f64 {
    let mut s = [p[0], p[1]];
    let mut acc = 0.0;
    for k in 0..6 {
        let prev = s;
        s = [prev[1] * p[2], (prev[0] + k as f64).sin()];
        acc += prev[0] * s[0];
    }
    acc
}

#[autodiff_reverse(d_tuples_of_arrays, Duplicated, Active)]
#[autodiff_forward(t_tuples_of_arrays, Dual, Dual)]
fn tuples_of_arrays(p: &[f64]) -> f64 {
    let mut a = [p[0], 3.0 * p[1]];
    let t = (a, p[2]);
    let (b, y) = (a, 2.0 * p[0]);
    a[1] = 0.0;
    let mut u = t;
    u.0[0] = 7.0 * p[1];
    u.1 *= p[0];
    t.0[1] + t.1 + a[1] + b[1] * y + u.0[0] * u.1 + t.0[0]
}

#[autodiff_reverse(d_places_copied, Duplicated, Active)]
#[autodiff_forward(t_places_copied, Dual, Dual)]
fn places_copied(p: &[f64]) -> f64 {
    let mut a = [p[0], 3.0 * p[1]];
    let r = &a;
    let b = *r;
    let c = { a };
    a[0] = p[1] * p[1];
    let mut grid = [[0.0; 2]; 3];
    grid[1] = [p[0], p[1]];
    let row = grid[1];
    grid[1][0] = 10.0 * p[1];
    b[0] * p[0] + a[0] + c[0] * c[1] + row[0] * grid[1][0]
}

#[autodiff_reverse(d_closure_owns_its_array, Duplicated, Active)]
#[autodiff_forward(t_closure_owns_its_array, Dual, Dual)]
fn closure_owns_its_array(p: &[f64]) -> f64 {
    let a = [p[0], 3.0 * p[1]];
    let bump = |mut v: [f64; 2]| {
        v[0] += p[0] * p[1];
        v[0] * v[1]
    };
    // (Not `bump(a) + .. + bump(a)`: rustc 1.88 to 1.95 at opt-level 1, the test profile,
    // miscompiles that primal, its GVN pass sharing the two copies of `a`.)
    let first = bump(a);
    let b = [a[1], p[2]];
    first + a[0] + bump(b) * a[1]
}

/// `Some(a)` and `for row in grid` (by value) hold copies too.
#[autodiff_reverse(d_option_and_loop_copies, Duplicated, Active)]
#[autodiff_forward(t_option_and_loop_copies, Dual, Dual)]
fn option_and_loop_copies(p: &[f64]) -> f64 {
    let mut a = [p[0], 3.0 * p[1]];
    let o = Some(a);
    a[0] = 0.0;
    let first = match o {
        Some(v) => v[0] * p[2] + a[0],
        None => 0.0,
    };
    let mut grid = [[0.0; 2]; 2];
    grid[0] = [p[0], 1.0];
    grid[1] = [2.0, p[1]];
    let mut s = 0.0;
    for row in grid {
        grid[1][0] = row[0] * p[2];
        s += row[0] + grid[1][0];
    }
    for x in a {
        a[1] += x * p[0];
    }
    first + s + a[1]
}

/// `std::mem::swap` of two arrays, `swap` and `reverse` in place, and copies taken around
/// them.
#[autodiff_reverse(d_swapped_arrays, Duplicated, Active)]
#[autodiff_forward(t_swapped_arrays, Dual, Dual)]
fn swapped_arrays(p: &[f64]) -> f64 {
    let mut a = [p[0], 1.0, p[2]];
    let mut b = [2.0, p[1] * p[1], p[0]];
    let before = a;
    std::mem::swap(&mut a, &mut b);
    a.swap(0, 2);
    b.reverse();
    a[1] *= p[2];
    a[0] * 3.0 + b[1] * a[1] + before[0] * b[2]
}

fn set_first(v: &mut [f64; 2], x: f64) {
    v[0] = x;
}

/// A reference is not a copy: writes through it reach the array.
#[autodiff_reverse(d_references_stay, Duplicated, Active)]
#[autodiff_forward(t_references_stay, Dual, Dual)]
fn references_stay(p: &[f64]) -> f64 {
    let mut a = [p[0], 3.0 * p[1]];
    let b = a;
    set_first(&mut a, p[1] * p[0]);
    {
        let r = &mut a;
        let s = r;
        s[1] *= p[2];
    }
    let r = &a;
    r[0] + a[1] * b[0]
}

#[derive(Clone, Copy)]
struct Body {
    pos: [f64; 2],
    m: f64,
}

#[autodiff_reverse(d_mutable_struct_fields, Duplicated, Active)]
#[autodiff_forward(t_mutable_struct_fields, Dual, Dual)]
fn mutable_struct_fields(p: &[f64]) -> f64 {
    let mut b = Body { pos: [p[0], 0.0], m: 2.0 };
    b.pos[0] += p[1] * p[1] / b.m;
    b.m = p[2];
    b.pos[1] = b.pos[0] * b.m;
    let before = b;
    b.pos = [b.pos[1] * p[0], p[1]];
    b.pos[0] + b.pos[1] * b.m + before.pos[1]
}

#[autodiff_reverse(d_mutable_struct_reassigned, Duplicated, Active)]
#[autodiff_forward(t_mutable_struct_reassigned, Dual, Dual)]
fn mutable_struct_reassigned(p: &[f64]) -> f64 {
    let mut b = Body { pos: [p[0], 2.0 * p[1]], m: 2.0 };
    let c = b;
    b = Body { pos: [p[0] * p[1], 1.0], m: p[2] };
    b.pos[0] * b.m + c.pos[1] * c.m
}

/// Particles stepped with the previous state kept (`let old = b;`).
#[autodiff_reverse(d_particle_steps, Duplicated, Active)]
#[autodiff_forward(t_particle_steps, Dual, Dual)]
fn particle_steps(p: &[f64]) -> f64 {
    let mut b = Body { pos: [p[0], 0.0], m: p[1] };
    for _ in 0..10 {
        let old = b;
        b.pos[0] += 0.1 * old.pos[1] / old.m;
        b.pos[1] -= 0.1 * old.pos[0] * p[2];
    }
    b.pos[0] * b.pos[0] + b.pos[1]
}

#[autodiff_reverse(d_mutable_tuple_with_array, Duplicated, Active)]
#[autodiff_forward(t_mutable_tuple_with_array, Dual, Dual)]
fn mutable_tuple_with_array(p: &[f64]) -> f64 {
    let mut t = ([p[0], 1.0], p[1]);
    for k in 0..3 {
        t.0[k % 2] += t.1 * t.0[1];
        t.1 *= 0.5 * p[2];
    }
    t.0[0] + t.0[1] + t.1
}

/// `let old = *q;` of a `&mut` struct parameter.
#[autodiff_reverse(d_struct_param_copied, Duplicated, Active)]
#[autodiff_forward(t_struct_param_copied, Dual, Dual)]
fn struct_param_copied(q: &mut Body) -> f64 {
    let old = *q;
    q.pos[0] = 5.0 * q.m * q.pos[1];
    q.m = 2.0;
    old.pos[0] * q.pos[0] + old.m
}

#[derive(Clone, Copy)]
struct Particle {
    x: f64,
    v: f64,
}

/// `let old = ps[i];` of a slice of structs, stepped in place.
#[autodiff_reverse(d_elements_copied, Duplicated, Active)]
#[autodiff_forward(t_elements_copied, Dual, Dual)]
fn elements_copied(ps: &mut [Particle]) -> f64 {
    let mut e = 0.0;
    for i in 0..ps.len() {
        let old = ps[i];
        ps[i].x += 0.1 * old.v;
        ps[i].v -= 0.1 * old.x * ps[i].x;
        e += old.x * ps[i].v;
    }
    let first = ps[0];
    ps[0].v = 0.0;
    e + first.v
}

fn struct_param_flat(p: &[f64]) -> f64 {
    struct_param_copied(&mut Body { pos: [p[0], p[1]], m: p[2] })
}

fn d_struct_param_flat(p: &[f64], g: &mut [f64], dret: f64) -> f64 {
    let mut d = Body { pos: [0.0; 2], m: 0.0 };
    let v = d_struct_param_copied(&mut Body { pos: [p[0], p[1]], m: p[2] }, &mut d, dret);
    for (g, d) in g.iter_mut().zip([d.pos[0], d.pos[1], d.m]) {
        *g += d;
    }
    v
}

fn t_struct_param_flat(p: &[f64], u: &[f64]) -> (f64, f64) {
    t_struct_param_copied(&mut Body { pos: [p[0], p[1]], m: p[2] }, &mut Body { pos: [u[0], u[1]], m: u[2] })
}

fn particles(p: &[f64]) -> Vec<Particle> {
    p.chunks(2).map(|c| Particle { x: c[0], v: c[1] }).collect()
}

fn elements_flat(p: &[f64]) -> f64 {
    elements_copied(&mut particles(p))
}

fn d_elements_flat(p: &[f64], g: &mut [f64], dret: f64) -> f64 {
    let mut d = vec![Particle { x: 0.0, v: 0.0 }; p.len() / 2];
    let v = d_elements_copied(&mut particles(p), &mut d, dret);
    for (k, d) in d.iter().enumerate() {
        g[2 * k] += d.x;
        g[2 * k + 1] += d.v;
    }
    v
}

fn t_elements_flat(p: &[f64], u: &[f64]) -> (f64, f64) {
    t_elements_copied(&mut particles(p), &mut particles(u))
}

const X: [f64; 3] = [0.7, -0.4, 1.3];
const X4: [f64; 4] = [0.3, -0.2, 0.6, 1.7];

#[test]
fn a_copy_does_not_see_later_writes() {
    check("copy_then_write_copy", copy_then_write_copy, d_copy_then_write_copy, t_copy_then_write_copy, &X);
    check(
        "copy_then_write_original",
        copy_then_write_original,
        d_copy_then_write_original,
        t_copy_then_write_original,
        &X,
    );
    check("tuples_of_arrays", tuples_of_arrays, d_tuples_of_arrays, t_tuples_of_arrays, &X);
    check("places_copied", places_copied, d_places_copied, t_places_copied, &X);
    check("closure_owns_its_array", closure_owns_its_array, d_closure_owns_its_array, t_closure_owns_its_array, &X);
    check("references_stay", references_stay, d_references_stay, t_references_stay, &X);
    check("swapped_arrays", swapped_arrays, d_swapped_arrays, t_swapped_arrays, &X);
    check("option_and_loop_copies", option_and_loop_copies, d_option_and_loop_copies, t_option_and_loop_copies, &X);
}

#[test]
fn previous_states_in_loops() {
    check("previous_state", previous_state, d_previous_state, t_previous_state, &X4);
    check("rotate", rotate, d_rotate, t_rotate, &X);
    check("particle_steps", particle_steps, d_particle_steps, t_particle_steps, &X);
}

#[test]
fn mutable_structs_and_tuples_own_their_arrays() {
    check("mutable_struct_fields", mutable_struct_fields, d_mutable_struct_fields, t_mutable_struct_fields, &X);
    check(
        "mutable_struct_reassigned",
        mutable_struct_reassigned,
        d_mutable_struct_reassigned,
        t_mutable_struct_reassigned,
        &X,
    );
    check(
        "mutable_tuple_with_array",
        mutable_tuple_with_array,
        d_mutable_tuple_with_array,
        t_mutable_tuple_with_array,
        &X,
    );
}

#[test]
fn structs_read_out_of_memory_are_copies() {
    check("struct_param_copied", struct_param_flat, d_struct_param_flat, t_struct_param_flat, &X);
    check("elements_copied", elements_flat, d_elements_flat, t_elements_flat, &[0.7, -0.4, 1.3, 0.2, -0.9, 0.5]);
}

#[test]
fn second_order_through_copies() {
    check_hvp_against_gradient(
        &|x, g| {
            d_rotate(&x[..3], &mut g[..3], 1.0);
        },
        &|x, v, g, hv| {
            hvp_rotate(&x[..3], &v[..3], &mut g[..3], &mut hv[..3]);
        },
    );
}

/// A helper taking an array by value and binding it `let mut` (the IR passes the caller's
/// array by reference: the binding is a copy, not a write to the caller's array).
fn euler_step(y0: [f64; 2], h: f64) -> [f64; 2] {
    let mut y = y0;
    y[0] += h * y[1];
    y[1] -= h * y0[0];
    y
}

#[autodiff_reverse(d_by_value_then_mut, Duplicated, Active)]
#[autodiff_forward(t_by_value_then_mut, Dual, Dual)]
fn by_value_then_mut(x: &[f64]) -> f64 {
    let s = [x[0], x[1]];
    let r = euler_step(s, 0.1);
    let q = euler_step(r, 0.2);
    r[0] * r[1] + q[0] * s[1] + s[0]
}

#[test]
fn arrays_by_value_bound_mut_in_helpers() {
    check("by_value_then_mut", by_value_then_mut, d_by_value_then_mut, t_by_value_then_mut, &[0.7, -0.4]);
}
