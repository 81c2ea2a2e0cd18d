use cotan::autodiff_reverse;

#[derive(Clone, Copy)]
struct Inner {
    a: f64,
}

#[derive(Clone, Copy)]
struct Outer {
    inner: Inner,
    b: f64,
}

fn bump(o: &mut Outer, t: f64) {
    o.b += t * o.inner.a;
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let mut o = Outer { inner: Inner { a: x }, b: 1.0 };
    bump(&mut o, x);
    o.b
}

fn main() {}
