use cotan::autodiff_reverse;

struct Body {
    pos: [f64; 2],
    m: f64,
}

// Marked: its derivatives are exported, and they take a `Body` in memory, which a local
// struct with arrays is not.
#[cotan::differentiable]
impl Body {
    fn push(&mut self, f: f64) {
        self.pos[0] += f / self.m;
    }
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let mut b = Body { pos: [x, 0.0], m: 2.0 };
    b.push(x);
    b.pos[0]
}

fn main() {}
