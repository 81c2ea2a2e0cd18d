//! The linear algebra of nalgebra values in differentiated functions (feature `nalgebra`).
//!
//! cotan passes a `DVector`/`DMatrix` into a derivative as its storage, a slice, and a
//! matrix with its shape and strides: element `(i, j)` of an `m`×`n` matrix is
//! `a[i * rs + j * cs]` (column-major storage: `rs = 1`, `cs = m`; a transpose swaps the
//! dimensions and the strides). Products and dot products become calls of these
//! functions, whose custom derivatives are nalgebra's own BLAS-like routines: the reverse
//! rule of `y += A x` is `dA += dy xᵀ` (`ger`) and `dx += Aᵀ dy` (`gemv_tr`), that of
//! `C += A B` two matrix products. Each accumulates into its output (`y += ..`), so that
//! the output's shadow passes through unchanged.

use std::borrow::Cow;

use nalgebra::{DMatrixView, DMatrixViewMut, DVectorView, DVectorViewMut, Dyn};

type View<'a> = nalgebra::Matrix<f64, Dyn, Dyn, nalgebra::ViewStorage<'a, f64, Dyn, Dyn, Dyn, Dyn>>;
type ViewMut<'a> = nalgebra::Matrix<f64, Dyn, Dyn, nalgebra::ViewStorageMut<'a, f64, Dyn, Dyn, Dyn, Dyn>>;

fn view(a: &[f64], m: usize, n: usize, rs: usize, cs: usize) -> View<'_> {
    DMatrixView::from_slice_with_strides(a, m, n, rs, cs)
}

fn view_mut(a: &mut [f64], m: usize, n: usize, rs: usize, cs: usize) -> ViewMut<'_> {
    DMatrixViewMut::from_slice_with_strides_mut(a, m, n, rs, cs)
}

/// A matrix's storage with unit row stride and its column stride: nalgebra's products read
/// the columns of their operands as contiguous slices (a matrix stored by rows, a
/// transpose, is copied into column-major order first, which costs less than the product).
fn unit_rows(a: &[f64], m: usize, n: usize, rs: usize, cs: usize) -> (Cow<'_, [f64]>, usize) {
    if rs == 1 {
        (Cow::Borrowed(a), cs)
    } else {
        (Cow::Owned(view(a, m, n, rs, cs).clone_owned().as_slice().to_vec()), m)
    }
}

/// `C += A B`, each matrix a storage, a shape and strides.
#[allow(clippy::too_many_arguments)]
fn mul_add(
    c: &mut [f64],
    (crs, ccs): (usize, usize),
    a: &[f64],
    (m, k, ars, acs): (usize, usize, usize, usize),
    b: &[f64],
    (n, brs, bcs): (usize, usize, usize),
) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let (a, acs) = unit_rows(a, m, k, ars, acs);
    let (b, bcs) = unit_rows(b, k, n, brs, bcs);
    let (a, b) = (view(&a, m, k, 1, acs), view(&b, k, n, 1, bcs));
    if crs == 1 {
        view_mut(c, m, n, 1, ccs).gemm(1.0, &a, &b, 1.0);
    } else {
        let mut out = view_mut(c, m, n, crs, ccs);
        out += a * b;
    }
}

fn vector(x: &[f64]) -> DVectorView<'_, f64> {
    DVectorView::from_slice(x, x.len())
}

fn vector_mut(x: &mut [f64]) -> DVectorViewMut<'_, f64> {
    let n = x.len();
    DVectorViewMut::from_slice(x, n)
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
    vector_mut(dx).axpy(dret, &vector(y), 1.0);
    vector_mut(dy).axpy(dret, &vector(x), 1.0);
    dot(x, y)
}

/// `x · x` (its own function: the reverse rule of `dot(x, x)` would need two `&mut` to
/// one shadow).
#[crate::custom_derivative(forward = norm_squared_fwd, reverse = norm_squared_rev)]
pub fn norm_squared(x: &[f64]) -> f64 {
    vector(x).norm_squared()
}

fn norm_squared_fwd(x: &[f64], dx: &[f64]) -> (f64, f64) {
    (norm_squared(x), 2.0 * vector(x).dot(&vector(dx)))
}

fn norm_squared_rev(x: &[f64], dx: &mut [f64], dret: f64) -> f64 {
    vector_mut(dx).axpy(2.0 * dret, &vector(x), 1.0);
    norm_squared(x)
}

/// `y += A x`, `A` `m`×`n` with strides `rs`, `cs`.
#[allow(clippy::too_many_arguments)]
#[crate::custom_derivative(forward = gemv_fwd, reverse = gemv_rev)]
pub fn gemv(a: &[f64], m: usize, n: usize, rs: usize, cs: usize, x: &[f64], y: &mut [f64]) {
    if m > 0 && n > 0 {
        let (a, cs) = unit_rows(a, m, n, rs, cs);
        vector_mut(y).gemv(1.0, &view(&a, m, n, 1, cs), &vector(x), 1.0);
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
        view_mut(da, m, n, rs, cs).ger(1.0, &vector(dy), &vector(x), 1.0);
        let (a, cs) = unit_rows(a, m, n, rs, cs);
        vector_mut(dx).gemv_tr(1.0, &view(&a, m, n, 1, cs), &vector(dy), 1.0);
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
    mul_add(c, (crs, ccs), a, (m, k, ars, acs), b, (n, brs, bcs));
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

/// `dA += dC Bᵀ`, `dB += Aᵀ dC`: the transposes are views with swapped strides.
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
    // Bᵀ and Aᵀ are B and A with their dimensions and strides swapped.
    mul_add(da, (ars, acs), dc, (m, n, crs, ccs), b, (k, bcs, brs));
    mul_add(db, (brs, bcs), a, (k, m, acs, ars), dc, (n, crs, ccs));
}

/// Panics unless a shadow or tangent has the shape of its argument.
pub fn same_shape(name: &str, shape: (usize, usize), shadow: (usize, usize)) {
    assert!(
        shape == shadow,
        "cotan: the shadow of `{name}` is {}×{}, the argument {}×{}; give it the argument's shape",
        shadow.0,
        shadow.1,
        shape.0,
        shape.1
    );
}

/// The LU factors of a square matrix given by its storage.
fn lu(a: &[f64], n: usize, rs: usize, cs: usize) -> nalgebra::LU<f64, Dyn, Dyn> {
    view(a, n, n, rs, cs).clone_owned().lu()
}

/// `A⁻¹ b`, panicking as `unwrap` would on a singular matrix.
fn solved(lu: &nalgebra::LU<f64, Dyn, Dyn>, b: &[f64]) -> nalgebra::DVector<f64> {
    lu.solve(&vector(b).clone_owned()).expect("cotan: `solve` of a singular matrix")
}

/// `x += A⁻¹ b` (nalgebra's `a.lu().solve(&b)`), `A` `n`×`n` with strides `rs`, `cs`.
#[allow(clippy::too_many_arguments)]
#[crate::custom_derivative(forward = solve_fwd, reverse = solve_rev)]
pub fn solve(a: &[f64], n: usize, rs: usize, cs: usize, b: &[f64], x: &mut [f64]) {
    vector_mut(x).axpy(1.0, &solved(&lu(a, n, rs, cs), b), 1.0);
}

/// `dx += A⁻¹ (db - dA s)` with `s = A⁻¹ b`: one factorization for both solves.
#[allow(clippy::too_many_arguments)]
fn solve_fwd(
    a: &[f64],
    da: &[f64],
    n: usize,
    rs: usize,
    cs: usize,
    b: &[f64],
    db: &[f64],
    x: &mut [f64],
    dx: &mut [f64],
) {
    let f = lu(a, n, rs, cs);
    let s = solved(&f, b);
    vector_mut(x).axpy(1.0, &s, 1.0);
    let mut r = vector(db).clone_owned();
    let (da, cs) = unit_rows(da, n, n, rs, cs);
    r.gemv(-1.0, &view(&da, n, n, 1, cs), &s, 1.0);
    vector_mut(dx).axpy(1.0, &solved(&f, r.as_slice()), 1.0);
}

/// `λ = A⁻ᵀ dx`, `db += λ`, `dA -= λ sᵀ` with `s = A⁻¹ b`.
#[allow(clippy::too_many_arguments)]
fn solve_rev(
    a: &[f64],
    da: &mut [f64],
    n: usize,
    rs: usize,
    cs: usize,
    b: &[f64],
    db: &mut [f64],
    _x: &mut [f64],
    dx: &mut [f64],
) {
    let s = solved(&lu(a, n, rs, cs), b);
    let lambda = solved(&lu(a, n, cs, rs), dx);
    vector_mut(db).axpy(1.0, &lambda, 1.0);
    view_mut(da, n, n, rs, cs).ger(-1.0, &lambda, &s, 1.0);
}

/// The Cholesky factor `L` of `A = L Lᵀ` (nalgebra's, from `A`'s lower triangle), or NaN in
/// every entry where nalgebra's `cholesky()` returns `None`: the caller panics on it as the
/// user's `unwrap`/`expect` would.
fn factor(a: &[f64], n: usize, rs: usize, cs: usize) -> nalgebra::DMatrix<f64> {
    match view(a, n, n, rs, cs).clone_owned().cholesky() {
        Some(c) => c.l(),
        None => nalgebra::DMatrix::from_element(n, n, f64::NAN),
    }
}

/// Whether a factor that `cholesky` wrote is nalgebra's `None` (a matrix that is not positive
/// definite).
pub fn not_positive_definite(l: &[f64]) -> bool {
    l.first().is_some_and(|x| x.is_nan())
}

/// `X ↦ L⁻¹ X L⁻ᵀ` for lower-triangular `L`: two triangular solves, O(n³).
fn congruence_inv(l: &nalgebra::DMatrix<f64>, mut x: nalgebra::DMatrix<f64>) -> nalgebra::DMatrix<f64> {
    l.solve_lower_triangular_mut(&mut x);
    let mut y = x.transpose();
    l.solve_lower_triangular_mut(&mut y);
    y.transpose()
}

/// `X ↦ L⁻ᵀ X L⁻¹`, the adjoint of `congruence_inv`.
fn congruence_inv_tr(l: &nalgebra::DMatrix<f64>, mut x: nalgebra::DMatrix<f64>) -> nalgebra::DMatrix<f64> {
    l.tr_solve_lower_triangular_mut(&mut x);
    let mut y = x.transpose();
    l.tr_solve_lower_triangular_mut(&mut y);
    y.transpose()
}

/// The lower triangle of `x` with its diagonal halved (Murray's Φ).
fn phi(mut x: nalgebra::DMatrix<f64>) -> nalgebra::DMatrix<f64> {
    let n = x.nrows();
    for j in 0..n {
        x[(j, j)] *= 0.5;
        for i in 0..j {
            x[(i, j)] = 0.0;
        }
    }
    x
}

/// `L += chol(A)` (nalgebra's `a.cholesky()`, `L` `n`×`n` column-major with zeros above the
/// diagonal), `A` `n`×`n` with strides `rs`, `cs`, of which only the lower triangle is read.
#[crate::custom_derivative(forward = cholesky_fwd, reverse = cholesky_rev)]
pub fn cholesky(a: &[f64], n: usize, rs: usize, cs: usize, l: &mut [f64]) {
    vector_mut(l).axpy(1.0, &vector(factor(a, n, rs, cs).as_slice()), 1.0);
}

/// The symmetric matrix whose lower triangle is that of `da` (the part the factor reads).
fn symmetric_from_lower(da: &[f64], n: usize, rs: usize, cs: usize) -> nalgebra::DMatrix<f64> {
    nalgebra::DMatrix::from_fn(n, n, |i, j| if i >= j { da[i * rs + j * cs] } else { da[j * rs + i * cs] })
}

/// `dL = L Φ(L⁻¹ dA L⁻ᵀ)` (Murray 2016, eq. 8), `dA` symmetrized from its lower triangle.
fn cholesky_fwd(a: &[f64], da: &[f64], n: usize, rs: usize, cs: usize, l: &mut [f64], dl: &mut [f64]) {
    let f = factor(a, n, rs, cs);
    vector_mut(l).axpy(1.0, &vector(f.as_slice()), 1.0);
    let t = &f * phi(congruence_inv(&f, symmetric_from_lower(da, n, rs, cs)));
    vector_mut(dl).axpy(1.0, &vector(t.as_slice()), 1.0);
}

/// `S = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹` (Murray 2016, eq. 10; `L̄` its lower triangle, the entries of `L`
/// that depend on `A`), and `dA += Φ(S + Sᵀ)`: the factor reads `A`'s lower triangle, where
/// an off-diagonal entry stands for both of the symmetric matrix's.
fn cholesky_rev(a: &[f64], da: &mut [f64], n: usize, rs: usize, cs: usize, _l: &mut [f64], dl: &mut [f64]) {
    let f = factor(a, n, rs, cs);
    let mut lbar = nalgebra::DMatrix::from_column_slice(n, n, dl);
    lbar.fill_upper_triangle(0.0, 1);
    let s = congruence_inv_tr(&f, phi(f.tr_mul(&lbar)));
    let g = phi(&s + s.transpose());
    for j in 0..n {
        for i in j..n {
            da[i * rs + j * cs] += g[(i, j)];
        }
    }
}

/// `x += (L Lᵀ)⁻¹ b` (nalgebra's `c.solve(&b)` of a Cholesky factor `c`), `L` `n`×`n`
/// column-major.
#[crate::custom_derivative(forward = chol_solve_fwd, reverse = chol_solve_rev)]
pub fn chol_solve(l: &[f64], n: usize, b: &[f64], x: &mut [f64]) {
    vector_mut(x).axpy(1.0, &chol_solved(l, n, b), 1.0);
}

/// `(L Lᵀ)⁻¹ b` by two triangular solves.
fn chol_solved(l: &[f64], n: usize, b: &[f64]) -> nalgebra::DVector<f64> {
    let l = view(l, n, n, 1, n);
    let mut s = vector(b).clone_owned();
    l.solve_lower_triangular_mut(&mut s);
    l.tr_solve_lower_triangular_mut(&mut s);
    s
}

/// `dx = A⁻¹ (db - dA s)` with `A = L Lᵀ`, `dA = dL Lᵀ + L dLᵀ`, `s = A⁻¹ b`.
fn chol_solve_fwd(l: &[f64], dl: &[f64], n: usize, b: &[f64], db: &[f64], x: &mut [f64], dx: &mut [f64]) {
    let s = chol_solved(l, n, b);
    vector_mut(x).axpy(1.0, &s, 1.0);
    let (lv, dlv) = (view(l, n, n, 1, n), view(dl, n, n, 1, n));
    let r = vector(db) - dlv * (lv.transpose() * &s) - lv * (dlv.transpose() * &s);
    vector_mut(dx).axpy(1.0, &chol_solved(l, n, r.as_slice()), 1.0);
}

/// `λ = A⁻¹ x̄`, `db += λ`, and with `Ā = -λ sᵀ`: `dL += (Ā + Āᵀ) L`.
fn chol_solve_rev(l: &[f64], dl: &mut [f64], n: usize, b: &[f64], db: &mut [f64], _x: &mut [f64], dx: &mut [f64]) {
    let s = chol_solved(l, n, b);
    let lambda = chol_solved(l, n, dx);
    vector_mut(db).axpy(1.0, &lambda, 1.0);
    let lv = view(l, n, n, 1, n);
    let (ls, llam) = (lv.tr_mul(&s), lv.tr_mul(&lambda));
    let mut g = view_mut(dl, n, n, 1, n);
    g.ger(-1.0, &lambda, &ls, 1.0);
    g.ger(-1.0, &s, &llam, 1.0);
}
