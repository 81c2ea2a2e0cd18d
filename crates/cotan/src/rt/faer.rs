//! The linear algebra of faer values in differentiated functions (feature `faer`).
//!
//! faer's matrices may pad their columns, so cotan passes a `Mat`/`MatRef`/`Col` into a
//! derivative as a column-major copy (`storage`) and writes the shadows back after it
//! (`write_back`); inside, a matrix is a slice with a shape and strides as for nalgebra
//! (`a[i * rs + j * cs]`, column-major `rs = 1`, `cs = m`; a transpose swaps them). Products,
//! dot products and solves are calls of these functions, whose custom derivatives are faer's
//! own routines: the reverse rule of `C += A B` is two `matmul`s, that of `x = A⁻¹ b` one LU
//! factorization and two solves, that of the Cholesky factor Murray's (2016) in triangular
//! solves. Each accumulates into its output (`y += ..`), whose shadow passes through.

use faer::linalg::matmul::matmul;
use faer::linalg::solvers::Solve;
use faer::{Accum, Par, Side};

/// faer's types, for the signatures cotan writes (the user's scope may not name them).
pub use faer::{Col, ColMut, ColRef, Mat, MatMut, MatRef};

/// A faer vector or matrix of `f64` that a derivative reads: its shape and a column-major
/// copy of its entries.
pub trait Dense {
    /// `(rows, columns)`; a vector is a column.
    fn dims(&self) -> (usize, usize);
    /// The entries, column by column.
    fn storage(&self) -> Vec<f64>;
}

/// A faer vector or matrix a derivative writes (a shadow, a `&mut` argument).
pub trait DenseMut: Dense {
    /// Sets the entries from a column-major slice of the same shape.
    fn write(&mut self, v: &[f64]);
}

fn mat_storage(m: MatRef<'_, f64>) -> Vec<f64> {
    let mut v = Vec::with_capacity(m.nrows() * m.ncols());
    for j in 0..m.ncols() {
        v.extend(m.col(j).iter().copied());
    }
    v
}

fn mat_write(mut m: MatMut<'_, f64>, v: &[f64]) {
    let r = m.nrows();
    if r > 0 {
        m.copy_from(MatRef::from_column_major_slice(v, r, m.ncols()));
    }
}

macro_rules! dense_mat {
    ($($t:ty),*) => {$(
        impl Dense for $t {
            fn dims(&self) -> (usize, usize) {
                (self.nrows(), self.ncols())
            }
            fn storage(&self) -> Vec<f64> {
                mat_storage(self.as_ref())
            }
        }
    )*};
}
dense_mat!(Mat<f64>, MatRef<'_, f64>, MatMut<'_, f64>);

impl DenseMut for Mat<f64> {
    fn write(&mut self, v: &[f64]) {
        mat_write(self.as_mut(), v);
    }
}

impl DenseMut for MatMut<'_, f64> {
    fn write(&mut self, v: &[f64]) {
        mat_write(self.as_mut(), v);
    }
}

macro_rules! dense_col {
    ($($t:ty),*) => {$(
        impl Dense for $t {
            fn dims(&self) -> (usize, usize) {
                (self.nrows(), 1)
            }
            fn storage(&self) -> Vec<f64> {
                self.as_ref().iter().copied().collect()
            }
        }
    )*};
}
dense_col!(Col<f64>, ColRef<'_, f64>, ColMut<'_, f64>);

impl DenseMut for Col<f64> {
    fn write(&mut self, v: &[f64]) {
        self.as_mut().copy_from(ColRef::from_slice(v));
    }
}

impl DenseMut for ColMut<'_, f64> {
    fn write(&mut self, v: &[f64]) {
        self.as_mut().copy_from(ColRef::from_slice(v));
    }
}

/// The entries of `x`, column by column (what the derivative reads).
pub fn storage<T: Dense + ?Sized>(x: &T) -> Vec<f64> {
    x.storage()
}

/// Writes what the derivative left in `v` back into `x`.
pub fn write_back<T: DenseMut + ?Sized>(x: &mut T, v: &[f64]) {
    x.write(v);
}

/// Panics unless a shadow or tangent has the shape of its argument.
pub fn same_shape<A: Dense + ?Sized, B: Dense + ?Sized>(name: &str, x: &A, shadow: &B) {
    let (s, t) = (x.dims(), shadow.dims());
    assert!(
        s == t,
        "cotan: the shadow of `{name}` is {}×{}, the argument {}×{}; give it the argument's shape",
        t.0,
        t.1,
        s.0,
        s.1
    );
}

/// A strided matrix as a faer view (cotan's matrices have a unit row or column stride).
fn view(a: &[f64], m: usize, n: usize, rs: usize, cs: usize) -> MatRef<'_, f64> {
    if rs == 1 || n <= 1 {
        MatRef::from_column_major_slice_with_stride(a, m, n, cs.max(m))
    } else {
        MatRef::from_row_major_slice_with_stride(a, m, n, rs)
    }
}

fn view_mut(a: &mut [f64], m: usize, n: usize, rs: usize, cs: usize) -> MatMut<'_, f64> {
    if rs == 1 || n <= 1 {
        MatMut::from_column_major_slice_with_stride_mut(a, m, n, cs.max(m))
    } else {
        // (Not faer 0.24's `from_row_major_slice_with_stride_mut`, which swaps the strides
        // and writes past the slice: the transpose of a column-major view.)
        MatMut::from_column_major_slice_with_stride_mut(a, n, m, rs).transpose_mut()
    }
}

fn col(x: &[f64]) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(x, x.len(), 1)
}

fn col_mut(x: &mut [f64]) -> MatMut<'_, f64> {
    let n = x.len();
    MatMut::from_column_major_slice_mut(x, n, 1)
}

/// `C += alpha A B` by faer's `matmul`.
fn mul_add(c: MatMut<'_, f64>, a: MatRef<'_, f64>, b: MatRef<'_, f64>, alpha: f64) {
    if c.nrows() > 0 && c.ncols() > 0 {
        matmul(c, Accum::Add, a, b, alpha, Par::Seq);
    }
}

fn axpy(y: &mut [f64], alpha: f64, x: &[f64]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

/// `x · y`.
#[crate::custom_derivative(forward = dot_fwd, reverse = dot_rev)]
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    ColRef::from_slice(x).transpose() * ColRef::from_slice(y)
}

fn dot_fwd(x: &[f64], dx: &[f64], y: &[f64], dy: &[f64]) -> (f64, f64) {
    (dot(x, y), dot(dx, y) + dot(x, dy))
}

fn dot_rev(x: &[f64], dx: &mut [f64], y: &[f64], dy: &mut [f64], dret: f64) -> f64 {
    axpy(dx, dret, y);
    axpy(dy, dret, x);
    dot(x, y)
}

/// `x · x` (its own function: the reverse rule of `dot(x, x)` would need two `&mut` to
/// one shadow).
#[crate::custom_derivative(forward = norm_squared_fwd, reverse = norm_squared_rev)]
pub fn norm_squared(x: &[f64]) -> f64 {
    ColRef::from_slice(x).squared_norm_l2()
}

fn norm_squared_fwd(x: &[f64], dx: &[f64]) -> (f64, f64) {
    (norm_squared(x), 2.0 * dot(x, dx))
}

fn norm_squared_rev(x: &[f64], dx: &mut [f64], dret: f64) -> f64 {
    axpy(dx, 2.0 * dret, x);
    norm_squared(x)
}

/// `y += A x`, `A` `m`×`n` with strides `rs`, `cs`.
#[allow(clippy::too_many_arguments)]
#[crate::custom_derivative(forward = gemv_fwd, reverse = gemv_rev)]
pub fn gemv(a: &[f64], m: usize, n: usize, rs: usize, cs: usize, x: &[f64], y: &mut [f64]) {
    mul_add(col_mut(y), view(a, m, n, rs, cs), col(x), 1.0);
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

/// `dA += dy xᵀ`, `dx += Aᵀ dy` (the caller restored `y`).
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
        mul_add(view_mut(da, m, n, rs, cs), col(dy), col(x).transpose(), 1.0);
        mul_add(col_mut(dx), view(a, m, n, rs, cs).transpose(), col(dy), 1.0);
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
    if m > 0 && n > 0 {
        mul_add(view_mut(c, m, n, crs, ccs), view(a, m, k, ars, acs), view(b, k, n, brs, bcs), 1.0);
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

/// `dA += dC Bᵀ`, `dB += Aᵀ dC`: two matrix products.
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
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let dcv = view(dc, m, n, crs, ccs);
    mul_add(view_mut(da, m, k, ars, acs), dcv, view(b, k, n, brs, bcs).transpose(), 1.0);
    mul_add(view_mut(db, k, n, brs, bcs), view(a, m, k, ars, acs).transpose(), dcv, 1.0);
}

/// `x += A⁻¹ b` (faer's `a.partial_piv_lu().solve(&b)`), `A` `n`×`n` with strides.
#[crate::custom_derivative(forward = solve_fwd, reverse = solve_rev)]
pub fn solve(a: &[f64], n: usize, rs: usize, cs: usize, b: &[f64], x: &mut [f64]) {
    let s = view(a, n, n, rs, cs).partial_piv_lu().solve(col(b));
    axpy(x, 1.0, s.col_as_slice(0));
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
    let lu = view(a, n, n, rs, cs).partial_piv_lu();
    let s = lu.solve(col(b));
    axpy(x, 1.0, s.col_as_slice(0));
    let mut r = col(db).to_owned();
    mul_add(r.as_mut(), view(da, n, n, rs, cs), s.as_ref(), -1.0);
    lu.solve_in_place(r.as_mut());
    axpy(dx, 1.0, r.col_as_slice(0));
}

/// `λ = A⁻ᵀ x̄`, `db += λ`, `dA -= λ sᵀ` with `s = A⁻¹ b`: one factorization.
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
    let lu = view(a, n, n, rs, cs).partial_piv_lu();
    let s = lu.solve(col(b));
    let mut lambda = col(dx).to_owned();
    lu.solve_transpose_in_place(lambda.as_mut());
    axpy(db, 1.0, lambda.col_as_slice(0));
    mul_add(view_mut(da, n, n, rs, cs), lambda.as_ref(), s.as_ref().transpose(), -1.0);
}

/// faer's `L` of `A = L Lᵀ` from `A`'s lower triangle, or NaN in every entry where faer's
/// `llt` returns an error: the caller panics on it as the user's `unwrap` would.
fn factor(a: &[f64], n: usize, rs: usize, cs: usize) -> Mat<f64> {
    match view(a, n, n, rs, cs).llt(Side::Lower) {
        Ok(c) => c.L().to_owned(),
        Err(_) => Mat::from_fn(n, n, |_, _| f64::NAN),
    }
}

/// Whether a factor that `cholesky` wrote is faer's error (not positive definite).
pub fn not_positive_definite(l: &[f64]) -> bool {
    l.first().is_some_and(|x| x.is_nan())
}

/// `X ↦ L⁻¹ X L⁻ᵀ` for symmetric `X`, by two triangular solves.
fn congruence_inv(l: MatRef<'_, f64>, mut x: Mat<f64>) -> Mat<f64> {
    l.solve_lower_triangular_in_place(x.as_mut());
    let mut y = x.transpose().to_owned();
    l.solve_lower_triangular_in_place(y.as_mut());
    y
}

/// `X ↦ L⁻ᵀ X L⁻¹`, the adjoint of `congruence_inv`, by two triangular solves.
fn congruence_inv_tr(l: MatRef<'_, f64>, mut x: Mat<f64>) -> Mat<f64> {
    l.transpose().solve_upper_triangular_in_place(x.as_mut());
    let mut y = x.transpose().to_owned();
    l.transpose().solve_upper_triangular_in_place(y.as_mut());
    y.transpose().to_owned()
}

/// The lower triangle of `x` with its diagonal halved (Murray's Φ).
fn phi(mut x: Mat<f64>) -> Mat<f64> {
    for j in 0..x.ncols() {
        x[(j, j)] *= 0.5;
        for i in 0..j {
            x[(i, j)] = 0.0;
        }
    }
    x
}

/// The symmetric matrix whose lower triangle is that of `da` (the part the factor reads).
fn symmetric_from_lower(da: &[f64], n: usize, rs: usize, cs: usize) -> Mat<f64> {
    Mat::from_fn(n, n, |i, j| if i >= j { da[i * rs + j * cs] } else { da[j * rs + i * cs] })
}

/// The lower triangle of a column-major `n`×`n` matrix.
fn lower(x: &[f64], n: usize) -> Mat<f64> {
    Mat::from_fn(n, n, |i, j| if i >= j { x[i + j * n] } else { 0.0 })
}

/// `L += chol(A)` (faer's `a.llt(Side::Lower)`, `L` `n`×`n` column-major with zeros above the
/// diagonal), `A` `n`×`n` with strides `rs`, `cs`, of which only the lower triangle is read
/// (`Side::Upper` is the lower triangle of the transpose: swapped strides).
#[crate::custom_derivative(forward = cholesky_fwd, reverse = cholesky_rev)]
pub fn cholesky(a: &[f64], n: usize, rs: usize, cs: usize, l: &mut [f64]) {
    axpy(l, 1.0, &mat_storage(factor(a, n, rs, cs).as_ref()));
}

/// `dL = L Φ(L⁻¹ dA L⁻ᵀ)` (Murray 2016, eq. 8), `dA` symmetrized from its lower triangle.
fn cholesky_fwd(a: &[f64], da: &[f64], n: usize, rs: usize, cs: usize, l: &mut [f64], dl: &mut [f64]) {
    let f = factor(a, n, rs, cs);
    axpy(l, 1.0, &mat_storage(f.as_ref()));
    let t = &f * phi(congruence_inv(f.as_ref(), symmetric_from_lower(da, n, rs, cs)));
    axpy(dl, 1.0, &mat_storage(t.as_ref()));
}

/// `S = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹` (Murray 2016, eq. 10; `L̄` its lower triangle), `dA += Φ(S + Sᵀ)`.
fn cholesky_rev(a: &[f64], da: &mut [f64], n: usize, rs: usize, cs: usize, _l: &mut [f64], dl: &mut [f64]) {
    let f = factor(a, n, rs, cs);
    let s = congruence_inv_tr(f.as_ref(), phi(f.transpose() * lower(dl, n)));
    let g = phi(&s + s.transpose());
    for j in 0..n {
        for i in j..n {
            da[i * rs + j * cs] += g[(i, j)];
        }
    }
}

/// `(L Lᵀ)⁻¹ b` by two triangular solves.
fn chol_solved(l: MatRef<'_, f64>, b: &[f64]) -> Mat<f64> {
    let mut s = col(b).to_owned();
    l.solve_lower_triangular_in_place(s.as_mut());
    l.transpose().solve_upper_triangular_in_place(s.as_mut());
    s
}

/// `x += (L Lᵀ)⁻¹ b` (`c.solve(&b)` of a factor `c`), `L` `n`×`n` column-major.
#[crate::custom_derivative(forward = chol_solve_fwd, reverse = chol_solve_rev)]
pub fn chol_solve(l: &[f64], n: usize, b: &[f64], x: &mut [f64]) {
    axpy(x, 1.0, chol_solved(view(l, n, n, 1, n), b).col_as_slice(0));
}

/// `dx = A⁻¹ (db - dA s)` with `A = L Lᵀ`, `dA = dL Lᵀ + L dLᵀ`, `s = A⁻¹ b`.
fn chol_solve_fwd(l: &[f64], dl: &[f64], n: usize, b: &[f64], db: &[f64], x: &mut [f64], dx: &mut [f64]) {
    let (lv, dlv) = (view(l, n, n, 1, n), view(dl, n, n, 1, n));
    let s = chol_solved(lv, b);
    axpy(x, 1.0, s.col_as_slice(0));
    let mut r = col(db).to_owned();
    mul_add(r.as_mut(), dlv, (lv.transpose() * &s).as_ref(), -1.0);
    mul_add(r.as_mut(), lv, (dlv.transpose() * &s).as_ref(), -1.0);
    axpy(dx, 1.0, chol_solved(lv, r.col_as_slice(0)).col_as_slice(0));
}

/// `λ = A⁻¹ x̄`, `db += λ`, and with `Ā = -λ sᵀ`: `dL += (Ā + Āᵀ) L`.
fn chol_solve_rev(l: &[f64], dl: &mut [f64], n: usize, b: &[f64], db: &mut [f64], _x: &mut [f64], dx: &mut [f64]) {
    let lv = view(l, n, n, 1, n);
    let s = chol_solved(lv, b);
    let lambda = chol_solved(lv, dx);
    axpy(db, 1.0, lambda.col_as_slice(0));
    let (ls, llam) = (lv.transpose() * &s, lv.transpose() * &lambda);
    let mut g = view_mut(dl, n, n, 1, n);
    mul_add(g.as_mut(), lambda.as_ref(), ls.transpose(), -1.0);
    mul_add(g.as_mut(), s.as_ref(), llam.transpose(), -1.0);
}
