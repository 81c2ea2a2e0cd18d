//! The linear algebra of ndarray values in differentiated functions (feature `ndarray`).
//!
//! cotan passes an `Array1`/`Array2` (or a view) into a derivative as its storage, a
//! slice, which exists for arrays in standard (row-major, contiguous) layout; a matrix goes
//! with its shape and strides: element `(i, j)` of an `m`×`n` matrix is `a[i * rs + j * cs]`
//! (standard layout: `rs = n`, `cs = 1`; a transpose swaps the dimensions and the strides).
//! Products and dot products become calls of these functions, whose custom derivatives
//! are ndarray's own `general_mat_vec_mul`/`general_mat_mul`: the reverse rule of
//! `y += A x` is `dA += dy xᵀ` and `dx += Aᵀ dy`, that of `C += A B` two matrix products.
//! Each accumulates into its output (`y += ..`), so that the output's shadow passes
//! through unchanged.

/// The views a derivative's signature names for the shadows of views.
pub use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use ndarray::linalg::{general_mat_mul, general_mat_vec_mul};
use ndarray::{Axis, ShapeBuilder};

fn view(a: &[f64], m: usize, n: usize, rs: usize, cs: usize) -> ArrayView2<'_, f64> {
    ArrayView2::from_shape((m, n).strides((rs, cs)), a).expect("cotan: a matrix's storage is too short for its shape")
}

fn view_mut(a: &mut [f64], m: usize, n: usize, rs: usize, cs: usize) -> ArrayViewMut2<'_, f64> {
    ArrayViewMut2::from_shape((m, n).strides((rs, cs)), a)
        .expect("cotan: a matrix's storage is too short for its shape")
}

fn vector(x: &[f64]) -> ArrayView1<'_, f64> {
    ArrayView1::from(x)
}

fn vector_mut(x: &mut [f64]) -> ArrayViewMut1<'_, f64> {
    ArrayViewMut1::from(x)
}

/// `x · y`.
#[crate::custom_derivative(forward = dot_fwd, reverse = dot_rev)]
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    vector(x).dot(&vector(y))
}

fn dot_fwd(x: &[f64], dx: &[f64], y: &[f64], dy: &[f64]) -> (f64, f64) {
    (dot(x, y), vector(dx).dot(&vector(y)) + vector(x).dot(&vector(dy)))
}

fn dot_rev(x: &[f64], dx: &mut [f64], y: &[f64], dy: &mut [f64], dret: f64) -> f64 {
    vector_mut(dx).scaled_add(dret, &vector(y));
    vector_mut(dy).scaled_add(dret, &vector(x));
    dot(x, y)
}

/// `x · x` (its own function: the reverse rule of `dot(x, x)` would need two `&mut` to
/// one shadow).
#[crate::custom_derivative(forward = norm_squared_fwd, reverse = norm_squared_rev)]
pub fn norm_squared(x: &[f64]) -> f64 {
    dot(x, x)
}

fn norm_squared_fwd(x: &[f64], dx: &[f64]) -> (f64, f64) {
    (dot(x, x), 2.0 * dot(x, dx))
}

fn norm_squared_rev(x: &[f64], dx: &mut [f64], dret: f64) -> f64 {
    vector_mut(dx).scaled_add(2.0 * dret, &vector(x));
    dot(x, x)
}

/// `y += A x`, `A` `m`×`n` with strides `rs`, `cs`.
#[allow(clippy::too_many_arguments)]
#[crate::custom_derivative(forward = gemv_fwd, reverse = gemv_rev)]
pub fn gemv(a: &[f64], m: usize, n: usize, rs: usize, cs: usize, x: &[f64], y: &mut [f64]) {
    if m > 0 && n > 0 {
        general_mat_vec_mul(1.0, &view(a, m, n, rs, cs), &vector(x), 1.0, &mut vector_mut(y));
    }
}

#[allow(clippy::too_many_arguments)]
fn gemv_fwd(
    a: &[f64],
    da: &[f64],
    m: usize,
    n: usize,
    rs: usize,
    cs: usize,
    x: &[f64],
    dx: &[f64],
    y: &mut [f64],
    dy: &mut [f64],
) {
    gemv(a, m, n, rs, cs, x, y);
    gemv(da, m, n, rs, cs, x, dy);
    gemv(a, m, n, rs, cs, dx, dy);
}

/// The reverse sweep reads only the shadows this writes (the caller restored `y`).
#[allow(clippy::too_many_arguments)]
fn gemv_rev(
    a: &[f64],
    da: &mut [f64],
    m: usize,
    n: usize,
    rs: usize,
    cs: usize,
    x: &[f64],
    dx: &mut [f64],
    _y: &mut [f64],
    dy: &mut [f64],
) {
    if m > 0 && n > 0 {
        let dy = vector(dy);
        // dA += dy xᵀ, as the product of an m×1 and a 1×n matrix.
        general_mat_mul(
            1.0,
            &dy.insert_axis(Axis(1)),
            &vector(x).insert_axis(Axis(0)),
            1.0,
            &mut view_mut(da, m, n, rs, cs),
        );
        general_mat_vec_mul(1.0, &view(a, m, n, rs, cs).t(), &dy, 1.0, &mut vector_mut(dx));
    }
}

/// `C += A B`: `A` `m`×`k`, `B` `k`×`n`, `C` `m`×`n`, each with its strides.
#[allow(clippy::too_many_arguments)]
#[crate::custom_derivative(forward = gemm_fwd, reverse = gemm_rev)]
pub fn gemm(
    a: &[f64],
    m: usize,
    k: usize,
    ars: usize,
    acs: usize,
    b: &[f64],
    n: usize,
    brs: usize,
    bcs: usize,
    c: &mut [f64],
    crs: usize,
    ccs: usize,
) {
    if m > 0 && n > 0 && k > 0 {
        general_mat_mul(1.0, &view(a, m, k, ars, acs), &view(b, k, n, brs, bcs), 1.0, &mut view_mut(c, m, n, crs, ccs));
    }
}

#[allow(clippy::too_many_arguments)]
fn gemm_fwd(
    a: &[f64],
    da: &[f64],
    m: usize,
    k: usize,
    ars: usize,
    acs: usize,
    b: &[f64],
    db: &[f64],
    n: usize,
    brs: usize,
    bcs: usize,
    c: &mut [f64],
    dc: &mut [f64],
    crs: usize,
    ccs: usize,
) {
    gemm(a, m, k, ars, acs, b, n, brs, bcs, c, crs, ccs);
    gemm(da, m, k, ars, acs, b, n, brs, bcs, dc, crs, ccs);
    gemm(a, m, k, ars, acs, db, n, brs, bcs, dc, crs, ccs);
}

/// `dA += dC Bᵀ`, `dB += Aᵀ dC`.
#[allow(clippy::too_many_arguments)]
fn gemm_rev(
    a: &[f64],
    da: &mut [f64],
    m: usize,
    k: usize,
    ars: usize,
    acs: usize,
    b: &[f64],
    db: &mut [f64],
    n: usize,
    brs: usize,
    bcs: usize,
    _c: &mut [f64],
    dc: &mut [f64],
    crs: usize,
    ccs: usize,
) {
    if m > 0 && n > 0 && k > 0 {
        let dc = view(dc, m, n, crs, ccs);
        general_mat_mul(1.0, &dc, &view(b, k, n, brs, bcs).t(), 1.0, &mut view_mut(da, m, k, ars, acs));
        general_mat_mul(1.0, &view(a, m, k, ars, acs).t(), &dc, 1.0, &mut view_mut(db, k, n, brs, bcs));
    }
}

/// The storage of an array argument in standard layout; panics with the argument's name
/// otherwise.
pub fn storage<'a, S: ndarray::Data<Elem = f64>, D: ndarray::Dimension>(
    x: &'a ndarray::ArrayBase<S, D>,
    name: &str,
) -> &'a [f64] {
    x.as_slice().unwrap_or_else(|| {
        panic!("cotan: `{name}` is not in standard (row-major, contiguous) layout; pass `{name}.as_standard_layout()`")
    })
}

/// [`storage`], writable.
pub fn storage_mut<'a, S: ndarray::DataMut<Elem = f64>, D: ndarray::Dimension>(
    x: &'a mut ndarray::ArrayBase<S, D>,
    name: &str,
) -> &'a mut [f64] {
    x.as_slice_mut().unwrap_or_else(|| {
        panic!("cotan: `{name}` is not in standard (row-major, contiguous) layout; give it a copy in standard layout")
    })
}

/// Panics unless a shadow or tangent has the shape of its argument.
pub fn same_shape(name: &str, shape: &[usize], shadow: &[usize]) {
    assert!(
        shape == shadow,
        "cotan: the shadow of `{name}` has shape {shadow:?}, the argument {shape:?}; give it the argument's shape"
    );
}
