//! `large_single_block`: x₁·x₂⁴⁰⁰ as 400 sequential multiplications, straight-line code
//! (no loop), like Mooncake's generated block. The body is written out (40 lines of 10).

#[cfg_attr(feature = "ad", cotan::autodiff_reverse(large_block_rev, Active, Active, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(large_block_rev_only, Active, Active, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(large_block_fwd, Dual, Dual, Dual))]
#[rustfmt::skip]
pub fn large_block(x1: f64, x2: f64) -> f64 {
    let mut p = x1;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2; p *= x2;
    p
}
