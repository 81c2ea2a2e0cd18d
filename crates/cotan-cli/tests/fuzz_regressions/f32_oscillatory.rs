// Found by `cotan fuzz --count 300 --seed 7` (program 26), an f32 program, minimized. Not an
// engine bug: s is about 1033 and cos(sin(s)) oscillates, so the differences f32 allows
// (steps of 1e-3 and more in `a`, 7 or more in s) are all wrong (-8337 for a derivative of
// -11336). The checker now differences the f64 version of an f32 function whose f32
// differences disagree with a derivative: -11336 there.
// cotan check f32_oscillatory.rs --fn f --at '[[-0.2327076643705368],-1.1904839277267456]'

fn g1(a: f32) -> f32 {
    a * a
}

fn f(y: &mut [f32], a: f32) -> f32 {
    let mut s = g1(g1(2.0 * a).powi(2));
    s += s.sin().cos();
    s + 0.5 * y[0]
}
