//! Loops whose iterations add to adjoints: a reverse sweep's `dw += x[j] * dy[j]` makes each
//! iteration wait for the previous addition (floating-point addition is not associative,
//! so the compiler keeps the order). The order of an adjoint's additions does not matter to
//! cotan, so generated code runs such loops through these functions, which keep four
//! partial sums: the additions of consecutive iterations run in parallel.

use core::ops::AddAssign;

/// Calls `f(i)` for `i` in `lo..hi`, in order, and returns the sums of what the calls
/// return, component by component (`sums(0, 3, f)` is `f(0) + f(1) + f(2)`, added as
/// `(f(0) + f(2)) + f(1)`).
#[inline(always)]
pub fn sums<T: Copy + Default + AddAssign, const N: usize>(
    lo: usize,
    hi: usize,
    mut f: impl FnMut(usize) -> [T; N],
) -> [T; N] {
    let mut acc = [[T::default(); N]; 4];
    let mut i = lo;
    while hi > i && hi - i >= 4 {
        for (lane, a) in acc.iter_mut().enumerate() {
            add(a, f(i + lane));
        }
        i += 4;
    }
    while i < hi {
        add(&mut acc[0], f(i));
        i += 1;
    }
    combine(acc)
}

/// [`sums`] over `(lo..hi).rev()`: `f(hi - 1)` first. (A loop of its own rather than
/// `sums` over a mapped index: written that way, kron_sum's reverse ran 5% slower.)
#[inline(always)]
pub fn sums_rev<T: Copy + Default + AddAssign, const N: usize>(
    lo: usize,
    hi: usize,
    mut f: impl FnMut(usize) -> [T; N],
) -> [T; N] {
    let mut acc = [[T::default(); N]; 4];
    let mut j = hi;
    while j > lo && j - lo >= 4 {
        for (lane, a) in acc.iter_mut().enumerate() {
            add(a, f(j - 1 - lane));
        }
        j -= 4;
    }
    while j > lo {
        add(&mut acc[0], f(j - 1));
        j -= 1;
    }
    combine(acc)
}

#[inline(always)]
fn add<T: Copy + AddAssign, const N: usize>(acc: &mut [T; N], x: [T; N]) {
    for (a, x) in acc.iter_mut().zip(x) {
        *a += x;
    }
}

#[inline(always)]
fn combine<T: Copy + AddAssign, const N: usize>(acc: [[T; N]; 4]) -> [T; N] {
    let [mut a, mut b, c, d] = acc;
    add(&mut a, c);
    add(&mut b, d);
    add(&mut a, b);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_in_order_and_sums_every_iteration() {
        for (lo, hi) in [(0, 0), (3, 2), (0, 1), (0, 3), (0, 4), (2, 11), (5, 25)] {
            let mut seen = vec![];
            let s = sums(lo, hi, |i| {
                seen.push(i);
                [i as f64, 1.0]
            });
            assert_eq!(seen, (lo..hi).collect::<Vec<_>>());
            let n = hi.saturating_sub(lo) as f64;
            assert_eq!(s, [(lo..hi).map(|i| i as f64).sum::<f64>(), n]);
            let mut seen = vec![];
            let s = sums_rev(lo, hi, |i| {
                seen.push(i);
                [i as f64, 1.0]
            });
            assert_eq!(seen, (lo..hi).rev().collect::<Vec<_>>());
            assert_eq!(s, [(lo..hi).map(|i| i as f64).sum::<f64>(), n]);
        }
    }
}
