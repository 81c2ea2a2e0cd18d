// Found by `cotan fuzz --count 300 --seed 2` (program 164), an f32 program. Not an engine bug:
// its intermediate values are much larger than its result, so rounding to f32 leaves finite
// differences noisy at every step (2.44, 2.48, 2.54, 2.34 for a derivative of 2.416, which
// both modes give, as the f64 version does); f32 differences must now agree closely to judge.
// cotan check f32_large_intermediates.rs --fn f --at '[[-0.2636209726333618,-0.6794235110282898,1.3415995836257935,-0.783183217048645,0.38216710090637207],[-1.2677114009857178,0.19307076930999756,-0.5655022263526917,0.7051168084144592,-1.1425186395645142],1.2841451168060303,4]'

fn g0(x: &[f32], a: f32, m: usize) -> f32 {
    let c: [f32; 5] = [0.5, -0.25, 1.0, 0.75, -1.5];
    let mut s1 = c[1] * x[1];
    for i0 in 0..m {
        s1 = 0.5 * s1 + 0.25 * (x[i0] * (if a * a > 0.3 { (1.0 + s1 * s1).ln() } else { (match i0 % 3 { 0 => s1, 1 | 2 => s1, _ => c[i0] }) })).tanh();
    }
    s1 += 0.25 * (s1.max(a) - a.powi(2)).cos();
    for i2 in 0..x.len() {
        let s3: f32 = c.iter().map(|&v4| a.powi(2)).sum();
        for (i5, &v6) in c.iter().enumerate() {
            s1 += 0.25 * ((a / (1.0 + c[i5] * c[i5])).tanh().exp()).cos();
            s1 += 0.25 * (s3 * a).sin();
        }
    }
    s1 + a.max(0.5 * a)
}

fn g1(x: &[f32], a: f32) -> f32 {
    let c: [f32; 5] = [0.5, -0.25, 1.0, 0.75, -1.5];
    let mut s7 = (1.0 * g0(x, a, 1));
    let (xa8, xb9) = c.split_at(3);
    for i10 in 0..x.len() {
        let (xa11, xb12) = c.split_at(1);
    }
    for i13 in 0..xb9.len() {
    }
    s7 + c[1]
}

fn f(x: &[f32], y: &mut [f32], a: f32, n: usize) -> (f32, f32) {
    let c: [f32; 5] = [0.5, -0.25, 1.0, 0.75, -1.5];
    let mut s14 = (1.0 * g1(y, (if let Some(&v15) = y.last() { a } else { a })));
    for e16 in y.iter_mut() {
        *e16 = 0.5 * (*e16 + (if (1.0 + (c[c.len() - 1]) * (c[c.len() - 1])).ln() > 0.3 { a.abs() } else { a.abs() })).tanh();
        let mut k17 = 0;
        while k17 < n {
            let mut s18 = (1.0 + (s14.tanh()) * (s14.tanh())).sqrt();
            k17 += 1;
        }
        let t19 = (c[4].powi(2), c[0].tanh().exp());
        let d20 = 1;
    }
    let s21 = x.iter().fold(1.3, |acc23: f32, &v22| 0.5 * acc23 + 0.25 * (c[c.len() - 1] + -acc23).tanh());
    (s14 + (0.5 * a).max(s21), a.tanh() + (1.0 * g1(x, s14)))
}

