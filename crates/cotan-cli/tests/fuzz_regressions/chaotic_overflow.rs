// Found by `cotan fuzz --count 2000 --seed 7` (program 815), minimized. Not an engine bug:
// s += cos(g0(g0(4 s))) with g0(a) = 2 a^2, repeated 80 times, has a derivative too large
// for a float (reverse and forward both overflow to NaN) and finite differences that do not
// converge; the checker now judges a non-finite derivative only against differences that do.
// cotan check chaotic_overflow.rs --fn f --at '[[1.4407865217053637,1.146352464417971,-1.4825901527906622,-0.792490723087807],[-0.9459690991974748],1.127678653654946]'
fn g0(a: f64) -> f64 {
    2.0 * a * a
}
fn f(x: &[f64], y: &mut [f64], a: f64) -> f64 {
    let mut s31 = a;
    let mut k32 = 0;
    while k32 < 4 {
        for i33 in 0..4 {
            for (i34, &v35) in x.iter().enumerate() {
                s31 += g0(g0(2.0 * (2.0 * s31))).cos();
            }
        }
        k32 += 1;
    }
    s31
}
