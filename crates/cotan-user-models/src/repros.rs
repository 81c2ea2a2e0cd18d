//! Minimal reproducers of every cause for which a model of this crate fails, one module
//! each, in the order of FINDINGS.md. Built only with `--features repros`; each module
//! fails on its own (the expected message is in its doc comment).
#![allow(dead_code)]

use cotan::autodiff_reverse;

/// A1. "cotan supports parameters of the types f64, ... and structs and tuples of these"
/// on `&[Vec<f64>]` (the data matrix), even `Const`.
pub mod slice_of_vecs {
    use super::*;
    #[autodiff_reverse(d_f, Duplicated, Const, Active)]
    pub fn f(w: &[f64], rows: &[Vec<f64>]) -> f64 {
        rows.iter().map(|r| r[0] * w[0]).sum()
    }
}

/// A2. Same message on a slice of structs.
pub mod slice_of_structs {
    use super::*;
    #[derive(Clone, Copy)]
    pub struct Spring {
        pub a: usize,
        pub k: f64,
    }
    #[autodiff_reverse(d_f, Duplicated, Active)]
    pub fn f(springs: &[Spring]) -> f64 {
        springs.iter().map(|s| s.k * s.k).sum()
    }
}

/// A3. Same message on a slice (or array) of arrays.
pub mod slice_of_arrays {
    use super::*;
    #[autodiff_reverse(d_f, Duplicated, Active)]
    pub fn f(points: &[[f64; 2]]) -> f64 {
        points.iter().map(|p| p[0] * p[1]).sum()
    }
}

/// B1. A `Vec<Vec<f64>>` field is taken for a `Vec<f64>`: "expected a slice, array or
/// Vec here" on `row`.
pub mod vec_vec_field_index {
    use super::*;
    pub struct Data {
        pub x: Vec<Vec<f64>>,
    }
    #[autodiff_reverse(d_f, Duplicated, Const, Active)]
    pub fn f(w: &[f64], data: &Data) -> f64 {
        let mut s = 0.0;
        for row in &data.x {
            s += row[0] * w[0];
        }
        s
    }
}

/// B2. Same cause, no cotan diagnostic: the generated code does not type-check
/// (E0308 "expected `&[f64]`, found `Vec<f64>`" and E0061 "this function takes 5
/// arguments but 4 arguments were supplied", spans on the attribute and on `dot`).
pub mod vec_vec_field_call {
    use super::*;
    pub struct Data {
        pub x: Vec<Vec<f64>>,
    }
    pub fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }
    #[autodiff_reverse(d_f, Duplicated, Const, Active)]
    pub fn f(w: &[f64], data: &Data) -> f64 {
        data.x.iter().map(|row| dot(row, w)).sum()
    }
}

/// C1. "cotan passes arrays and vectors to calls by reference; let the callee take
/// `&[f64; N]` ..." on a small array passed by value.
pub mod array_by_value_arg {
    use super::*;
    fn norm(v: [f64; 2]) -> f64 {
        (v[0] * v[0] + v[1] * v[1]).sqrt()
    }
    #[autodiff_reverse(d_f, Duplicated, Active)]
    pub fn f(x: &[f64]) -> f64 {
        norm([x[0], x[1]])
    }
}

/// C2. "cotan passes slices and arrays into calls, not out of them: `sub` returns one;
/// take the sub-slice here (`&x[a..b]`) instead of in `sub`" (the remedy does not fit:
/// `sub` computes, it does not slice). Same for a returned `Vec<f64>`.
pub mod array_returned {
    use super::*;
    fn sub(a: &[f64], b: &[f64]) -> [f64; 2] {
        [a[0] - b[0], a[1] - b[1]]
    }
    #[autodiff_reverse(d_f, Duplicated, Active)]
    pub fn f(x: &[f64]) -> f64 {
        let d = sub(&x[..2], &x[2..]);
        d[0] * d[1]
    }
}

/// C3. "cotan does not support assigning a whole array; assign its elements".
pub mod whole_array_assignment {
    use super::*;
    #[autodiff_reverse(d_f, Active, Active)]
    pub fn f(x: f64) -> f64 {
        let mut s = [x, 0.0];
        for _ in 0..3 {
            s = [s[1], s[0] * 2.0];
        }
        s[0] + s[1]
    }
}

/// C4. "expected a number or a bool here, found an array or reference" on a local 2-D
/// array (also `vec![vec![..]]`).
pub mod local_2d_array {
    use super::*;
    #[autodiff_reverse(d_f, Active, Active)]
    pub fn f(a: f64) -> f64 {
        let mut m = [[0.0; 2]; 2];
        m[1][0] = a;
        m[1][0] * a
    }
}

/// D1. "cotan inlines closures where they are called: bind the closure with `let f =
/// |x| ..;` and call it (`f(a)`), or pass it to an iterator method" on a closure passed to
/// a generic function of the crate.
pub mod closure_argument {
    use super::*;
    fn apply<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
        f(x)
    }
    #[autodiff_reverse(d_g, Active, Active, Active)]
    pub fn g(x: f64, a: f64) -> f64 {
        apply(|t| a * t * t, x)
    }
}

/// D2. "cotan cannot see the value of `square` from inside the function; pass it as a
/// parameter or write the literal" on a function item passed as an argument (the remedy
/// does not apply to a function).
pub mod fn_item_argument {
    use super::*;
    fn apply<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
        f(x)
    }
    fn square(t: f64) -> f64 {
        t * t
    }
    #[autodiff_reverse(d_g, Active, Active)]
    pub fn g(x: f64) -> f64 {
        apply(square, x)
    }
}

/// E1. "cotan cannot bind this pattern to a number; bind a name (`let t = ..`) and read
/// its parts (`t.0`)" on destructuring a tuple parameter of integers (it is already a
/// name; `shape.0` works). Same on `for &(a, b) in pairs.iter()`.
pub mod destructure_tuple_param {
    use super::*;
    #[autodiff_reverse(d_f, Duplicated, Const, Active)]
    pub fn f(x: &[f64], shape: (usize, usize)) -> f64 {
        let (n, m) = shape;
        x[n] * x[m]
    }
}

/// E2. "cotan reads fields of struct and tuple parameters and of tuple values only (not
/// of array elements like `v[i].x`)" on a field of a tuple returned by a call
/// (`let (a, b) = pair(x);` works).
pub mod tuple_result_field {
    use super::*;
    fn pair(x: f64) -> (f64, f64) {
        (x, 2.0 * x)
    }
    #[autodiff_reverse(d_f, Active, Active)]
    pub fn f(x: f64) -> f64 {
        let p = pair(x);
        p.0 * p.1
    }
}

/// E3. "cotan cannot pass a tuple to a function yet; pass its parts as separate arguments".
pub mod tuple_argument {
    use super::*;
    fn rot(s: (f64, f64), k: f64) -> f64 {
        s.0 * k + s.1
    }
    #[autodiff_reverse(d_f, Active, Active, Active)]
    pub fn f(a: f64, b: f64) -> f64 {
        let s = (a, b);
        rot(s, 0.5)
    }
}

/// F1. No cotan diagnostic: a method taking a `Copy` enum by value (`self`) is called
/// with a reference in the generated code (E0308 "expected `Act`, found `&Act`", span on
/// the attribute and on `apply`).
pub mod self_by_value_enum {
    use super::*;
    #[derive(Clone, Copy)]
    pub enum Act {
        Tanh,
        Relu,
    }
    impl Act {
        pub fn apply(self, z: f64) -> f64 {
            match self {
                Act::Tanh => z.tanh(),
                Act::Relu => z.max(0.0),
            }
        }
    }
    #[autodiff_reverse(d_f, Active, Const, Active)]
    pub fn f(z: f64, act: Act) -> f64 {
        act.apply(z)
    }
}

/// F2. "cotan cannot name the type of `m.act` to call its method `apply`; call it as
/// `Type::apply(&m.act, ..)`" on a method of a struct field (the struct is declared in the
/// crate; its field's type is written there).
pub mod method_of_field {
    use super::*;
    #[derive(Clone, Copy)]
    pub enum Act {
        Tanh,
        Relu,
    }
    impl Act {
        pub fn apply(&self, z: f64) -> f64 {
            match self {
                Act::Tanh => z.tanh(),
                Act::Relu => z.max(0.0),
            }
        }
    }
    pub struct M {
        pub w: Vec<f64>,
        pub act: Act,
    }
    #[autodiff_reverse(d_f, Duplicated, Active, Active)]
    pub fn f(m: &M, x: f64) -> f64 {
        m.act.apply(m.w[0] * x)
    }
}

/// G1. "cotan does not support the method `.split_first()` on slices and vectors" (also
/// seen: `.sort_by()`, `.reverse()`, iterator `.chain()`, `.reduce()`, `.position()`).
pub mod split_first {
    use super::*;
    #[autodiff_reverse(d_f, Duplicated, Active)]
    pub fn f(x: &[f64]) -> f64 {
        let (first, rest) = x.split_first().unwrap();
        first * rest.iter().sum::<f64>()
    }
}

/// H1. Internal error: "internal error in cotan (internal error: entered unreachable
/// code: cotan: value Value(13) is not available in the reverse sweep (a bug in the
/// plan)); please report this with the function" when an element of a chunk of a `Const`
/// slice multiplies an active value in a loop (also `&x[a..b]` with a loop-dependent end;
/// `&x[i..]` works, as does passing the chunk to a function).
pub mod chunks_const_times_active {
    use super::*;
    #[autodiff_reverse(d_f, Active, Const, Active)]
    pub fn f(s: f64, x: &[f64]) -> f64 {
        let mut lp = 0.0;
        for row in x.chunks(2) {
            lp += row[0] * s;
        }
        lp
    }
}

/// H2. "mismatched types: expected `usize`, found `f64`" on the index `i`: zipping with
/// `&data.idx` (a `Vec<usize>` field) gives elements the type of the other side
/// (`.zip(data.idx.iter())` works, as does `.zip(idx)` with a slice parameter).
pub mod zip_ref_usize_field {
    use super::*;
    pub struct D {
        pub v: Vec<f64>,
        pub idx: Vec<usize>,
    }
    #[autodiff_reverse(d_f, Duplicated, Const, Active)]
    pub fn f(x: &[f64], d: &D) -> f64 {
        d.v.iter().zip(&d.idx).map(|(&y, &i)| y * x[i]).sum()
    }
}
