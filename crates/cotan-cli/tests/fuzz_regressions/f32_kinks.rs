// Found by `cotan fuzz --count 2000 --seed 7` (program 827), an f32 program. Not an engine bug:
// the large f32 steps of finite differences cross the kinks of max() and of early breaks,
// and differences at two steps agreed loosely enough to count as converged; f32 differences
// now take smaller steps too and must agree closely to judge.
// cotan check f32_kinks.rs --fn f --at '[[-0.029189396649599075,-0.0211461391299963,0.8852380514144897,-0.21306844055652618,0.057213421911001205],[-0.2327076643705368,1.3008259534835815,0.9969589710235596,-0.656596839427948,-0.5513148307800293],-1.1904839277267456,3]'

fn g0(x: &[f32], a: f32) -> f32 {
    let c: [f32; 5] = [0.5, -0.25, 1.0, 0.75, -1.5];
    let mut s1 = x[0].powi(2);
    for (i2, &v3) in x.iter().enumerate() {
        for i4 in (0..x.len()).rev() {
            s1 += 0.25 * ((a + v3).max(a.sin())).cos();
            if s1 > 0.9 {
                break;
            }
        }
    }
    let v5 = (1.0 + s1 * s1).sqrt();
    let (xa6, xb7) = c.split_at(2);
    s1 + s1
}

fn g1(x: &[f32], a: f32) -> f32 {
    let c: [f32; 5] = [0.5, -0.25, 1.0, 0.75, -1.5];
    let mut s8 = (1.0 * g0(x, a));
    let s9 = x.iter().fold(-0.7, |acc11: f32, &v10| 0.5 * acc11 + 0.25 * (acc11).tanh());
    for i12 in 0..x.len() {
        let (v13, v14) = (-0.7 * a, x[i12]);
        let v15 = v13;
        for (i16, &v17) in c.iter().enumerate() {
        }
    }
    s8 + c[4].powi(2)
}

fn g2(x: &[f32], a: f32) -> f32 {
    let c: [f32; 5] = [0.5, -0.25, 1.0, 0.75, -1.5];
    let mut s18 = (1.0 * g1(&c[..=1], (1.0 * g0(x, a))));
    for i19 in 1..x.len() {
        let (v20, v21) = (a, ((if x[i19] > 0.3 { a } else { 0.5 })).powi(2));
        for i22 in (0..x.len()).rev() {
            s18 += 0.25 * (a.abs()).cos();
            s18 = 0.5 * (s18 + ((v21.abs()) / (1.0 + (-v20) * (-v20))) * a).tanh();
        }
        if (1.0 * g0(&c, (1.0 + s18 * s18).ln())) > 0.9 {
            break;
        }
    }
    s18 + x[0]
}

fn f(x: &[f32], y: &mut [f32], a: f32, n: usize) -> f32 {
    let c: [f32; 5] = [0.5, -0.25, 1.0, 0.75, -1.5];
    let mut s23 = (1.0 * g2(x, a));
    {
        let (lo24, hi25) = y.split_at_mut(3);
        lo24[1] = 0.5 * lo24[1] + 0.25 * (a * s23 + (if let Some(&v26) = lo24.last() { s23 } else { a })).tanh();
        let mut s27 = a;
        for ch28 in lo24.chunks_exact_mut(2) {
            for (i29, &v30) in c.iter().enumerate() {
                let d31 = 2;
            }
        }
    }
    let mut k32 = 0;
    while k32 < n {
        const K33: f32 = 0.25 * 0.5;
        k32 += 1;
    }
    y[y.len() - 1] = (((1.0 * g0(y, a.tanh().exp()))).cos()).sin();
    s23 + (1.0 * g2(&c, c[4]))
}

