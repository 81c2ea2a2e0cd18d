mod gauge {
    pub struct Hidden {
        k: f64,
    }

    impl Hidden {
        pub fn outer(&self, x: f64) -> f64 {
            self.k * x * 2.0
        }
    }
}

#[cotan::autodiff_reverse(d_e, Const, Active, Active)]
fn e(h: &gauge::Hidden, x: f64) -> f64 {
    h.outer(x)
}

fn main() {}
