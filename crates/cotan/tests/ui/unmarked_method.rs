use cotan::autodiff_reverse;

struct Model {
    w: f64,
}

impl Model {
    fn helper(&self, v: f64) -> f64 {
        self.w * v
    }

    #[autodiff_reverse(d_eval, Duplicated, Active, Active)]
    fn eval(&self, x: f64) -> f64 {
        self.helper(x) * x
    }
}

fn main() {}
