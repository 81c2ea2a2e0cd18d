use cotan::autodiff_reverse;

struct Model {
    w: f64,
}

impl Model {
    #[autodiff_reverse(d_eval, Const, Active, Active)]
    fn eval(&self, x: f64) -> f64 {
        self.w * x
    }
}

fn main() {
    let _ = Model { w: 1.0 }.eval(2.0);
}
