// Found by `cotan fuzz --count 300 --seed 7` (program 26) once the first-order check of an
// f32 function differenced its f64 version: the second-order check had the same trouble.
// s is about 1033 under cos(sin(s)), so the f32 differences of the gradient (13694) miss
// H·v (2486003) at every step; the f64 version's differences agree with it.
// cotan check f32_oscillatory_second_order.rs --fn f --at '[[-0.029189396649599075,-0.0211461391299963,0.8852380514144897,-0.21306844055652616,0.057213421911001205],[-0.2327076643705368,1.3008259534835815,0.9969589710235596,-0.656596839427948,-0.5513148307800293],-1.1904839277267456]'

const K1: f32 = 0.25;
const W2: [f32; 3] = [-0.7, 0.7, K1];

fn g1(a: f32) -> f32 {
    a * a + W2[0] + (1.0 + K1 * K1).sqrt()
}

fn f(x: &[f32], y: &mut [f32], a: f32) -> f32 {
    let c: [f32; 5] = [0.5, 1.0, 1.0, 1.0, 1.5];
    let mut s = g1(g1(2.0 * a).powi(2));
    let v: Vec<f32> = c.iter().map(|v| v * s.sin()).collect();
    s += v[0].cos();
    s + x[0] * y[0]
}
