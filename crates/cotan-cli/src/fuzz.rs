//! `cotan fuzz`: random well-typed programs in the subset cotan supports, each checked as
//! `cotan check` does (reverse, forward and second order against finite differences).
//! Failures are minimized and written out; a program that the lowering rejects is a bug of
//! this generator, counted apart.
//!
//! A program has module constants (numbers, an array, a count), helpers that the checked
//! function `f` calls unmarked, chained at least two deep (`gK(x: &[T], a: T) -> T`,
//! `gK(x: &[T], a: T, m: usize) -> T`, `hK(y: &mut [T], a: T)`, `pK(x: &[T], a: T) -> (T, T)`,
//! `rK(q: &[[T; 2]], a: T) -> T`, `sK(s: [T; 2], a: T) -> [T; 2]`),
//! and `f(x: &[T], y: &mut [T], a: T, n: usize)`, sometimes with an array by value
//! `w: [T; 3]` and nested memory `q` (`&[[T; 2]]`, `&mut [[T; 2]]`, `[[T; 2]; 2]`,
//! `&[Vec<T>]`), returning `T`, `(T, T)` or `[T; 2]`; `T` is `f64`, or `f32` for one
//! program in six. Their bodies mix loops with dynamic trip counts, `while`, branches,
//! early `break`/`continue`/`return`, in-place updates, guarded math functions, tuples
//! (locals, fields, destructuring, helpers returning them, kept whole), `chain` and
//! `Option::map` in chains, arrays by value
//! (`let mut st: [T; 2]`, assigned whole from a helper, its old value kept in a copy
//! `let old = st;`), sub-slices (`&x[a..b]` passed to
//! helpers, `split_at`, `split_at_mut`, `split_first`, `chunks`, `chunks_exact`,
//! `windows`, `chunks_mut`), local matrices (`[[0.0; 2]; 3]`, `vec![vec![0.0; 3]; 2]`)
//! and rows (read, written, iterated, passed to helpers), closures (called, and in
//! `map`/`fold`/`zip` chains), `match` on integers, `if let Some(..)` on
//! `first()`/`last()`, `iter_mut` and `enumerate` loops, local vectors assigned anew with
//! another length (`v = v.iter().map(..).collect(); v.push(..)`), extended, truncated and
//! emptied (`while let Some(u) = v.pop()`), and integer literals typed by the helper they
//! are passed to.
//!
//! Every index is in bounds by construction: each slice in scope has the lengths it may
//! have, and each loop index the largest value it takes and the slice whose length bounds
//! it. Borrows are valid Rust too: nothing reads `y` while a part of it is borrowed
//! mutably, and closures capture only what nothing writes.
//!
//! Values stay bounded (inputs in [-1.5, 1.5], accumulators squashed by `tanh`, logarithms
//! and roots of `1 + e * e`) so finite differences stay well conditioned.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Instant;

use crate::checker::{self, Points};
use crate::oracle::Oracle;
use crate::source::Source;
use crate::CliError;

/// Length of the random slices: indices below it are in bounds.
const LEN: usize = 5;
/// The shortest slice a helper may be given (a sub-slice, a chunk): helpers index below it.
const MIN_SUB: usize = 2;
/// Failures minimized per run (the rest are written as generated).
const MAX_MINIMIZED: usize = 20;

pub struct Summary {
    pub programs: usize,
    pub failures: usize,
    pub generator_bugs: usize,
}

/// A helper's shape.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// `gK(x: &[T], a: T) -> T`.
    Value,
    /// `gK(x: &[T], a: T, m: usize) -> T`, with `m` at most `MIN_SUB`: callers pass a literal
    /// or a local whose type only this parameter fixes.
    Counted,
    /// `hK(y: &mut [T], a: T)`.
    InPlace,
    /// `rK(q: &[[T; 2]], a: T) -> T`: rows.
    Rows,
    /// `sK(s: [T; 2], a: T) -> [T; 2]`: an array by value in, an array out (`st = s0(st, e)`).
    Step,
    /// `pK(x: &[T], a: T) -> (T, T)`.
    Pair,
}

/// What a function returns.
#[derive(Clone, Copy, PartialEq)]
enum Ret {
    Unit,
    Scalar,
    Pair,
    Array,
}

/// A slice in scope: the lengths it may have, and whether it may be written.
#[derive(Clone)]
struct Buf {
    name: String,
    min: usize,
    max: usize,
    writable: bool,
    /// An array (`c`, `w`, a local `[T; 2]`): passed to a helper as `&name`.
    array: bool,
    /// A `Vec` (a row of `Vec<Vec<T>>`): written with indices that do not borrow it again.
    vec: bool,
}

/// Nested memory in scope (`[[T; 2]; 3]`, `&[[T; 2]]`, `&[Vec<T>]`): the rows it may have,
/// the length of its rows, whether it may be written, whether its rows are arrays (so that
/// it can be passed as `&[[T; 2]]`), and whether it is passed by reference as `&name`.
#[derive(Clone)]
struct Mat {
    name: String,
    rows: usize,
    max_rows: usize,
    cols: usize,
    writable: bool,
    array_rows: bool,
    owned: bool,
}

/// A loop index in scope: its largest value, and the slice whose length bounds it.
#[derive(Clone)]
struct Index {
    name: String,
    max: usize,
    over: Option<String>,
}

#[derive(Default, Clone)]
struct Scope {
    /// Floats readable here: (name, mutable). Names may be places (`t3.0`, `*e4`).
    floats: Vec<(String, bool)>,
    /// Local closures of one float.
    closures: Vec<String>,
    /// Integer locals (`usize` or typed by a call), for `match` and helper counts.
    ints: Vec<String>,
}

struct Gen {
    rng: fastrand::Rng,
    out: String,
    indent: usize,
    /// The float type: `f64` or `f32`.
    t: &'static str,
    scopes: Vec<Scope>,
    bufs: Vec<Buf>,
    mats: Vec<Mat>,
    indices: Vec<Index>,
    ret: Ret,
    helpers: Vec<(String, Shape)>,
    consts: Vec<String>,
    const_arrays: Vec<(String, usize)>,
    /// `usize` constants and their values.
    const_counts: Vec<(String, usize)>,
    fresh: usize,
    in_for: bool,
    /// In a closure's body: only what nothing writes may be captured.
    in_closure: bool,
    /// In the checked function (not a helper).
    root: bool,
    budget: usize,
}

impl Gen {
    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.rng.usize(0..items.len())].clone())
    }

    fn scope(&mut self) -> &mut Scope {
        self.scopes.last_mut().expect("a scope")
    }

    /// Floats readable here (in a closure, only those nothing writes).
    fn floats(&self) -> Vec<(String, bool)> {
        self.scopes.iter().flat_map(|s| s.floats.iter().cloned()).filter(|v| !(self.in_closure && v.1)).collect()
    }

    fn ints(&self) -> Vec<String> {
        self.scopes.iter().flat_map(|s| s.ints.iter().cloned()).collect()
    }

    fn closures(&self) -> Vec<String> {
        self.scopes.iter().flat_map(|s| s.closures.iter().cloned()).collect()
    }

    /// Slices readable here (in a closure, only those nothing writes).
    fn readable(&self) -> Vec<Buf> {
        self.bufs.iter().filter(|b| !(self.in_closure && b.writable)).cloned().collect()
    }

    fn writable(&self) -> Vec<Buf> {
        if self.in_closure {
            return vec![];
        }
        self.bufs.iter().filter(|b| b.writable).cloned().collect()
    }

    fn readable_mats(&self) -> Vec<Mat> {
        self.mats.iter().filter(|m| !(self.in_closure && m.writable)).cloned().collect()
    }

    fn writable_mats(&self) -> Vec<Mat> {
        if self.in_closure {
            return vec![];
        }
        self.mats.iter().filter(|m| m.writable).cloned().collect()
    }

    /// Runs `f` with slice or nested memory `name` out of scope (borrowed mutably elsewhere
    /// meanwhile).
    fn without<R>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        let (bufs, mats, scopes) = (self.bufs.clone(), self.mats.clone(), self.scopes.clone());
        self.bufs.retain(|b| b.name != name);
        self.mats.retain(|m| m.name != name);
        // (A number too, and the fields of a tuple of that name.)
        let field = format!("{name}.");
        for s in self.scopes.iter_mut() {
            s.floats.retain(|v| v.0 != name && !v.0.starts_with(&field));
        }
        let r = f(self);
        (self.bufs, self.mats, self.scopes) = (bufs, mats, scopes);
        r
    }

    /// A row index of `m` in bounds (for a write, one that does not borrow a `Vec` again).
    fn row_index(&mut self, m: &Mat, write: bool) -> String {
        let b =
            Buf { name: m.name.clone(), min: m.rows, max: m.max_rows, writable: m.writable, array: false, vec: false };
        self.index_into_with(&b, !write || m.array_rows)
    }

    /// `m[i][j]`, in bounds.
    fn mat_element(&mut self, m: &Mat, write: bool) -> String {
        let i = self.row_index(m, write);
        let row = format!("{}[{i}]", m.name);
        let b = Buf { name: row.clone(), min: m.cols, max: m.cols, writable: m.writable, array: false, vec: false };
        let j = self.index_into_with(&b, !write || m.array_rows);
        format!("{row}[{j}]")
    }

    /// An index that is in bounds for `b`.
    fn index_into(&mut self, b: &Buf) -> String {
        self.index_into_with(b, true)
    }

    /// An index in bounds for `b`; `b.len() - 1` only where `len` (not where a `Vec` is
    /// borrowed mutably by the indexing itself: `v[v.len() - 1] += 1.0` is a borrow error).
    fn index_into_with(&mut self, b: &Buf, len: bool) -> String {
        let ok: Vec<String> = self
            .indices
            .iter()
            .filter(|i| i.over.as_deref() == Some(b.name.as_str()) || i.max < b.min)
            .map(|i| i.name.clone())
            .collect();
        match self.rng.u8(0..7) {
            0..=3 if !ok.is_empty() => self.pick(&ok).expect("not empty"),
            4 if len => format!("{}.len() - 1", b.name),
            _ => self.rng.usize(0..b.min).to_string(),
        }
    }

    fn element(&mut self, b: &Buf) -> String {
        let i = self.index_into(b);
        format!("{}[{i}]", b.name)
    }

    fn literal(&mut self) -> String {
        ["0.5", "1.3", "-0.7", "2.0", "0.25"][self.rng.usize(0..5)].to_string()
    }

    /// A leaf, and whether its type is known (a literal's is not).
    fn leaf(&mut self) -> (String, bool) {
        let vars = self.floats();
        let typed = |s: String| (s, true);
        match self.rng.u8(0..10) {
            0..=2 if !vars.is_empty() => typed(self.pick(&vars).expect("not empty").0),
            8 if !self.readable_mats().is_empty() => {
                let m = self.pick(&self.readable_mats()).expect("not empty");
                typed(self.mat_element(&m, false))
            }
            3 | 4 => match self.pick(&self.readable()) {
                Some(b) => typed(self.element(&b)),
                None => typed("a".to_string()),
            },
            5 if !self.consts.is_empty() => typed(self.pick(&self.consts.clone()).expect("not empty")),
            6 if !self.const_arrays.is_empty() => {
                let (c, len) = self.pick(&self.const_arrays.clone()).expect("not empty");
                let b = Buf { name: c, min: len, max: len, writable: false, array: false, vec: false };
                typed(self.element(&b))
            }
            7 => (self.literal(), false),
            _ => typed("a".to_string()),
        }
    }

    /// An expression whose type is known: one of literals only is scaled by `a` (rustc
    /// cannot call a method on `{float}`, nor type a local from it in an `f32` program).
    fn expr(&mut self, depth: usize) -> String {
        match self.expr_any(depth) {
            (e, true) => e,
            (e, false) if e.parse::<f64>().is_ok() => format!("{e} * a"),
            (e, false) => format!("({e}) * a"),
        }
    }

    /// An expression, and whether its type is known.
    fn expr_any(&mut self, depth: usize) -> (String, bool) {
        if depth == 0 || self.rng.u8(0..4) == 0 {
            return self.leaf();
        }
        let d = depth - 1;
        let typed = |s: String| (s, true);
        match self.rng.u8(0..24) {
            0 => {
                let ((l, tl), (r, tr)) = (self.expr_any(d), self.expr_any(d));
                (format!("{l} + {r}"), tl || tr)
            }
            1 => {
                // Not `e - e`: an exact zero whose adjoint cancels loses all precision.
                let ((l, tl), (r, tr)) = (self.expr_any(d), self.expr_any(d));
                if l == r {
                    (l, tl)
                } else {
                    (format!("{l} - {r}"), tl || tr)
                }
            }
            2 | 3 => typed(format!("{} * {}", self.paren(d), self.paren(d))),
            4 => {
                let e = self.paren(d);
                typed(format!("{} / (1.0 + {e} * {e})", self.paren(d)))
            }
            5 => typed(format!("-{}", self.paren(d))),
            6 => typed(format!("{}.sin()", self.paren(d))),
            7 => typed(format!("{}.cos()", self.paren(d))),
            8 => typed(format!("{}.tanh()", self.paren(d))),
            9 => typed(format!("{}.tanh().exp()", self.paren(d))),
            10 => {
                let e = self.paren(d);
                typed(format!("(1.0 + {e} * {e}).ln()"))
            }
            11 => {
                let e = self.paren(d);
                typed(format!("(1.0 + {e} * {e}).sqrt()"))
            }
            12 => typed(format!("{}.max({})", self.paren(d), self.expr(d))),
            13 => {
                // `abs`, or a helper that is one `clamp` (its reverse ends in the partial's
                // `if`), chosen without a draw so that the programs stay those of before.
                let e = self.paren(d);
                match e.len() % 2 {
                    0 => typed(format!("{e}.abs()")),
                    _ => typed(format!("clip_ho({e})")),
                }
            }
            14 => typed(format!("{}.powi(2)", self.paren(d).replace(".powi(2)", ""))),
            15 => {
                let c = self.expr(d);
                let ((t, tt), (e, te)) = (self.expr_any(d), self.expr_any(d));
                (format!("(if {c} > 0.3 {{ {t} }} else {{ {e} }})"), tt || te)
            }
            16 => match self.pick(&self.closures()) {
                Some(c) => typed(format!("{c}({})", self.expr(d))),
                None => typed(self.call_expr(d)),
            },
            17 => match self.scrutinee() {
                Some(s) => {
                    let arms = [self.expr_any(d), self.expr_any(d), self.expr_any(d)];
                    let known = arms.iter().any(|a| a.1);
                    let [a0, a1, a2] = arms.map(|a| a.0);
                    (format!("(match {s} {{ 0 => {a0}, 1 | 2 => {a1}, _ => {a2} }})"), known)
                }
                None => self.leaf(),
            },
            18 => match self.pick(&self.readable()) {
                Some(b) => {
                    let end = if self.rng.bool() { "first" } else { "last" };
                    let v = self.name("v");
                    self.scopes.push(Scope::default());
                    self.scope().floats.push((v.clone(), false));
                    let (then, tt) = self.expr_any(d);
                    self.scopes.pop();
                    let (other, to) = self.expr_any(d);
                    (format!("(if let Some(&{v}) = {}.{end}() {{ {then} }} else {{ {other} }})", b.name), tt || to)
                }
                None => self.leaf(),
            },
            19 | 20 => {
                // A closure passed to a helper that takes one (`F: Fn(T) -> T`, `&F`).
                let closure = self.closure_literal(d);
                match self.pick(&self.readable()).filter(|_| self.rng.bool()) {
                    Some(b) => typed(format!("sum_ho({}, &{closure})", Self::as_slice_ref(&b))),
                    None => typed(format!("twice_ho({closure}, {})", self.expr(d))),
                }
            }
            21 => match self.pick(&self.readable()).filter(|b| b.min >= 1) {
                // A helper returning a new vector, indexed.
                Some(b) => typed(format!("scaled_ho({}, {})[0]", Self::as_slice_ref(&b), self.expr(d))),
                None => typed(self.call_expr(d)),
            },
            _ => typed(self.call_expr(d)),
        }
    }

    /// `|v: T| body`, capturing only what nothing writes.
    fn closure_literal(&mut self, depth: usize) -> String {
        let v = self.name("v");
        let was = self.in_closure;
        self.in_closure = true;
        self.scopes.push(Scope::default());
        self.scope().floats.push((v.clone(), false));
        let body = self.expr(depth);
        self.scopes.pop();
        self.in_closure = was;
        format!("|{v}: {}| {body}", self.t)
    }

    /// Helpers that take closures or return vectors, which cotan lowers where they are
    /// called.
    fn higher_order_helpers(&mut self) {
        let t = self.t;
        let _ = write!(
            self.out,
            "fn twice_ho<F: Fn({t}) -> {t}>(f: F, x: {t}) -> {t} {{\n    f(f(x)) * 0.5 + f(x * 0.5)\n}}\n\n\
             fn sum_ho<F>(x: &[{t}], f: &F) -> {t}\nwhere\n    F: Fn({t}) -> {t},\n{{\n    let mut s = 0.0;\n    for v in x {{\n        s += f(*v);\n    }}\n    s\n}}\n\n\
             fn scaled_ho(x: &[{t}], s: {t}) -> Vec<{t}> {{\n    x.iter().map(|v| v * s).collect()\n}}\n\n\
             fn acc_into(acc: &mut {t}, x: {t}, w: &{t}) {{\n    *acc = 0.5 * *acc + (x * *w).sin();\n}}\n\n\
             fn acc_ho<F: Fn({t}) -> {t}>(acc: &mut {t}, f: F, x: {t}) {{\n    *acc = 0.5 * *acc + f(x);\n}}\n\n\
             fn clip_ho(v: {t}) -> {t} {{\n    v.clamp(-1.0, 1.0)\n}}\n\n"
        );
    }

    /// `acc_into(&mut m, e, &w)`: a local number, a field of a local tuple or an element of a
    /// buffer lent `&mut`, and a number lent `&`; or `acc_ho(&mut m, |v| .., e)`, to a helper
    /// that takes a closure (which cotan lowers at the call). False if there is nothing to
    /// lend.
    fn lend_stmt(&mut self) -> bool {
        let names: Vec<(String, bool)> = self.floats().into_iter().filter(|v| !v.0.contains('*')).collect();
        let targets: Vec<String> = names.iter().filter(|v| v.1).map(|v| v.0.clone()).collect();
        let place = match (self.pick(&targets), self.pick(&self.writable())) {
            (Some(m), _) if self.rng.bool() => m,
            (_, Some(b)) => {
                let i = self.index_into_with(&b, !b.vec);
                format!("{}[{i}]", b.name)
            }
            (Some(m), None) => m,
            (None, None) => return false,
        };
        // The other arguments may not read what is lent `&mut` (the whole buffer for an
        // element: its index is read before the borrow).
        let root = place.split(['[', '.']).next().unwrap_or_default().to_string();
        let whole = if place.contains('[') { root.clone() } else { place.clone() };
        let shared: Vec<String> = names
            .iter()
            .map(|v| v.0.clone())
            .filter(|n| n != &place && n.split('.').next() != Some(root.as_str()))
            .collect();
        let Some(w) = self.pick(&shared) else { return false };
        if self.rng.bool() {
            // (The closure captures only what nothing writes: not what is lent.)
            let (f, e) = self.without(&whole, |g| (g.closure_literal(1), g.expr(2)));
            self.line(&format!("acc_ho(&mut {place}, {f}, {e} + {w});"));
            return true;
        }
        let e = self.without(&whole, |g| g.expr(2));
        self.line(&format!("acc_into(&mut {place}, {e}, &{w});"));
        true
    }

    /// An expression of known type, in parentheses unless it is a name or an element.
    fn paren(&mut self, depth: usize) -> String {
        let e = self.expr(depth);
        let simple = e.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '[' || c == ']');
        if simple && !e.starts_with('-') {
            e
        } else {
            format!("({e})")
        }
    }

    /// An integer to `match` on: `n`, a helper's count, an integer local, `i % 3` of a loop
    /// index.
    fn scrutinee(&mut self) -> Option<String> {
        let mut all = self.ints();
        for i in &self.indices {
            all.push(format!("{} % 3", i.name));
        }
        self.pick(&all)
    }

    /// `b` where a `&[T]` is expected: arrays (`c`, `w`, a local `[T; 2]`) by reference,
    /// slices and rows (already references) as they are (`&row` of a `&[T; 2]` is not one).
    fn as_slice_ref(b: &Buf) -> String {
        if b.array {
            format!("&{}", b.name)
        } else {
            b.name.clone()
        }
    }

    /// A slice to pass to a helper as `&[T]`: a slice in scope (at least `MIN_SUB` long), a
    /// sub-slice of one, the constant `c`, or a constant array.
    fn slice_arg(&mut self) -> String {
        let bufs: Vec<Buf> = self.readable().into_iter().filter(|b| b.min >= MIN_SUB).collect();
        let mats: Vec<Mat> = self.readable_mats().into_iter().filter(|m| m.cols >= MIN_SUB).collect();
        match self.rng.u8(0..9) {
            0 => "&c".to_string(),
            1 if !self.const_arrays.is_empty() => format!("&{}", self.pick(&self.const_arrays.clone()).unwrap().0),
            // A row of nested memory.
            8 if !mats.is_empty() => {
                let m = self.pick(&mats).expect("not empty");
                let i = self.row_index(&m, false);
                format!("&{}[{i}]", m.name)
            }
            2 | 3 => match self.pick(&bufs) {
                Some(b) => self.sub_slice(&b, false),
                None => "&c".to_string(),
            },
            _ => match self.pick(&bufs) {
                Some(b) => Self::as_slice_ref(&b),
                None => "&c".to_string(),
            },
        }
    }

    /// `&b[lo..hi]` (or `&mut`) of at least `MIN_SUB` elements, in bounds.
    fn sub_slice(&mut self, b: &Buf, mutable: bool) -> String {
        let amp = if mutable { "&mut " } else { "&" };
        let n = b.min;
        let lo = self.rng.usize(0..=n - MIN_SUB);
        let hi = self.rng.usize(lo + MIN_SUB..=n);
        let range = match self.rng.u8(0..4) {
            0 if lo == 0 && hi == b.max => "..".to_string(),
            1 if hi == b.max => format!("{lo}.."),
            2 if lo == 0 => format!("..={}", hi - 1),
            _ if lo == 0 && self.rng.bool() => format!("..{hi}"),
            _ => format!("{lo}..{hi}"),
        };
        format!("{amp}{}[{range}]", b.name)
    }

    fn call_expr(&mut self, d: usize) -> String {
        let rows = self.rows_arg().is_some();
        let values: Vec<(String, Shape)> = self
            .helpers
            .iter()
            .filter(|h| matches!(h.1, Shape::Value | Shape::Counted) || (h.1 == Shape::Rows && rows))
            .cloned()
            .collect();
        match self.pick(&values) {
            Some((g, shape)) => self.call_of(&g, shape, d),
            None => self.expr(0),
        }
    }

    /// Nested memory to pass as `&[[T; 2]]` (at least two rows), if any is in scope.
    fn rows_arg(&mut self) -> Option<String> {
        let mats: Vec<Mat> =
            self.readable_mats().into_iter().filter(|m| m.array_rows && m.cols == 2 && m.rows >= 2).collect();
        let m = self.pick(&mats)?;
        Some(if m.owned { format!("&{}", m.name) } else { m.name })
    }

    /// A call of value helper `g`.
    fn call_of(&mut self, g: &str, shape: Shape, d: usize) -> String {
        if shape == Shape::Rows {
            let q = self.rows_arg().unwrap_or_else(|| "&[[0.5, 1.0], [-1.0, 0.25]]".to_string());
            let e = self.expr(d);
            return format!("(1.0 * {g}({q}, {e}))");
        }
        let mem = self.slice_arg();
        let e = self.expr(d);
        // `1.0 * g(..)`: the lowering does not know a callee's result type, so a method on
        // a call's result (`g(x).cos()`) is rejected; the product gives it a float type.
        match shape {
            Shape::Counted => {
                let m = self.count_arg();
                format!("(1.0 * {g}({mem}, {e}, {m}))")
            }
            _ => format!("(1.0 * {g}({mem}, {e}))"),
        }
    }

    /// A count for a `Counted` helper: a literal, or an integer local (typed by the call).
    fn count_arg(&mut self) -> String {
        let locals: Vec<String> =
            self.scopes.iter().flat_map(|s| s.ints.iter().filter(|i| i.starts_with('d'))).cloned().collect();
        match self.rng.u8(0..3) {
            0 if !locals.is_empty() => self.pick(&locals).expect("not empty"),
            1 => "1".to_string(),
            _ => "2".to_string(),
        }
    }

    /// A mutable float in scope, if any.
    fn mutable(&mut self) -> Option<String> {
        if self.in_closure {
            return None;
        }
        let m: Vec<String> = self.floats().into_iter().filter(|v| v.1).map(|v| v.0).collect();
        self.pick(&m)
    }

    fn block(&mut self, n: usize, depth: usize) {
        self.scopes.push(Scope::default());
        let bufs = self.bufs.len();
        self.indent += 1;
        for _ in 0..n {
            self.stmt(depth);
        }
        self.indent -= 1;
        self.bufs.truncate(bufs);
        self.scopes.pop();
    }

    /// A loop body: statements, sometimes an early `break`.
    fn loop_body(&mut self, depth: usize) {
        let was = self.in_for;
        self.in_for = true;
        let k = self.rng.usize(1..4);
        self.block(k, depth);
        if self.rng.u8(0..4) == 0 {
            let c = self.expr(2);
            self.indent += 1;
            self.line(&format!("if {c} > 0.9 {{"));
            self.indent += 1;
            self.line("break;");
            self.indent -= 1;
            self.line("}");
            self.indent -= 1;
        }
        self.in_for = was;
    }

    /// An update of a mutable float that keeps it bounded.
    fn update(&mut self, m: &str, e: &str) {
        // Bounded increments and damped updates: an accumulator grows at most linearly, and
        // derivatives are not amplified exponentially by loops (which rounding in reverse
        // mode would show as false findings).
        match self.rng.u8(0..3) {
            0 => self.line(&format!("{m} += 0.25 * ({e}).sin();")),
            1 => self.line(&format!("{m} = 0.5 * ({m} + {e}).tanh();")),
            _ => self.line(&format!("{m} = 0.5 * {m} + 0.25 * ({e}).tanh();")),
        }
    }

    fn stmt(&mut self, depth: usize) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        let nested = depth > 0;
        match self.rng.u8(0..40) {
            0 | 1 => {
                let v = self.name("v");
                let e = self.expr(3);
                self.line(&format!("let {v} = {e};"));
                self.scope().floats.push((v, false));
            }
            2 => {
                let v = self.name("s");
                let e = self.expr(2);
                self.line(&format!("let mut {v} = {e};"));
                self.scope().floats.push((v, true));
            }
            3 | 4 => match self.mutable() {
                Some(m) => {
                    let e = self.expr(3);
                    self.update(&m, &e);
                }
                None => self.stmt(depth),
            },
            5 | 6 => match self.pick(&self.writable()) {
                Some(b) => {
                    let i = self.index_into_with(&b, !b.vec);
                    let e = self.expr(3);
                    if self.rng.bool() {
                        self.line(&format!("{}[{i}] += ({e}).tanh();", b.name));
                    } else {
                        self.line(&format!("{}[{i}] = ({e}).sin();", b.name));
                    }
                }
                None => self.stmt(depth),
            },
            7 | 8 if nested => {
                let i = self.name("i");
                let over = self.pick(&self.readable().into_iter().filter(|b| b.name != "c").collect::<Vec<_>>());
                let n_max = self.ints().contains(&"n".to_string()).then_some(LEN - 2);
                let (range, index) = match (self.rng.u8(0..5), over, n_max) {
                    (0, _, Some(max)) => ("0..n".to_string(), Index { name: i.clone(), max, over: None }),
                    (1, _, _) if !self.const_counts.is_empty() => {
                        let (c, v) = self.pick(&self.const_counts.clone()).expect("not empty");
                        (format!("0..{c}"), Index { name: i.clone(), max: v - 1, over: None })
                    }
                    (2, Some(b), _) => {
                        (format!("1..{}.len()", b.name), Index { name: i.clone(), max: b.max - 1, over: Some(b.name) })
                    }
                    (3, Some(b), _) => (
                        format!("(0..{}.len()).rev()", b.name),
                        Index { name: i.clone(), max: b.max - 1, over: Some(b.name) },
                    ),
                    (_, Some(b), _) => {
                        (format!("0..{}.len()", b.name), Index { name: i.clone(), max: b.max - 1, over: Some(b.name) })
                    }
                    _ => ("0..c.len()".to_string(), Index { name: i.clone(), max: LEN - 1, over: Some("c".into()) }),
                };
                self.line(&format!("for {i} in {range} {{"));
                self.indices.push(index);
                self.loop_body(depth - 1);
                self.indices.pop();
                self.line("}");
            }
            9 if nested => {
                let k = self.name("k");
                let bound = if self.ints().contains(&"n".to_string()) { "n" } else { "2" };
                self.line(&format!("let mut {k} = 0;"));
                self.line(&format!("while {k} < {bound} {{"));
                let was = self.in_for;
                // `break` inside a `while` body is fine, but `continue` would skip the step.
                self.in_for = false;
                let m = self.rng.usize(1..3);
                self.block(m, depth - 1);
                self.in_for = was;
                self.indent += 1;
                self.line(&format!("{k} += 1;"));
                self.indent -= 1;
                self.line("}");
            }
            10 | 11 if nested => {
                let c = self.expr(2);
                let t = ["0.0", "0.5", "-0.3"][self.rng.usize(0..3)];
                let mut ints = self.ints();
                ints.extend(self.indices.iter().map(|i| i.name.clone()));
                match self.pick(&ints) {
                    // An integer cast on the left of `<` (written with parentheses, as Rust
                    // wants; the generated code must keep them).
                    Some(k) if self.rng.u8(0..3) == 0 => self.line(&format!("if ({k} as {}) < {c} {{", self.t)),
                    _ => self.line(&format!("if {c} > {t} {{")),
                }
                let k = self.rng.usize(1..3);
                self.block(k, depth - 1);
                if self.rng.bool() {
                    self.line("} else {");
                    let k = self.rng.usize(1..3);
                    self.block(k, depth - 1);
                }
                self.line("}");
            }
            // cotan lowers `return [..]` only as the last statement, and a helper returning a
            // tuple likewise (the checked function may return a tuple anywhere).
            12 if (self.ret == Ret::Scalar || (self.ret == Ret::Pair && self.root)) && self.rng.u8(0..3) == 0 => {
                let c = self.expr(2);
                let e = self.result_expr(2);
                self.line(&format!("if {c} > 1.2 {{"));
                self.indent += 1;
                self.line(&format!("return {e};"));
                self.indent -= 1;
                self.line("}");
            }
            13 => {
                let inplace: Vec<String> =
                    self.helpers.iter().filter(|h| h.1 == Shape::InPlace).map(|h| h.0.clone()).collect();
                let targets: Vec<Buf> = self.writable().into_iter().filter(|b| b.min >= MIN_SUB).collect();
                let (Some(h), Some(b)) = (self.pick(&inplace), self.pick(&targets)) else { return };
                if b.array {
                    // `h(&mut st, e)`: a local array is borrowed explicitly, so the argument
                    // may not read it.
                    let e = self.without(&b.name, |g| g.expr(2));
                    self.line(&format!("{h}(&mut {}, {e});", b.name));
                } else if self.rng.bool() {
                    // `h(y, e)`: the argument may read `y` (a two-phase borrow).
                    let e = self.expr(2);
                    self.line(&format!("{h}({}, {e});", b.name));
                } else {
                    // `h(&mut y[a..b], e)`: it may not.
                    let s = self.sub_slice(&b, true);
                    let e = self.without(&b.name, |g| g.expr(2));
                    self.line(&format!("{h}({s}, {e});"));
                }
            }
            14 => {
                // A tuple local: its fields are floats.
                let t = self.name("t");
                let (e1, e2) = (self.expr(2), self.expr(2));
                let mutable = self.rng.bool();
                self.line(&format!("let {}{t} = ({e1}, {e2});", if mutable { "mut " } else { "" }));
                self.scope().floats.push((format!("{t}.0"), mutable));
                self.scope().floats.push((format!("{t}.1"), mutable));
            }
            15 => {
                // Destructuring: of a tuple expression, or of a helper's tuple result.
                let (u, v) = (self.name("v"), self.name("v"));
                let pairs: Vec<String> =
                    self.helpers.iter().filter(|h| h.1 == Shape::Pair).map(|h| h.0.clone()).collect();
                let init = match self.pick(&pairs) {
                    Some(p) if self.rng.u8(0..3) > 0 => {
                        let (m, e) = (self.slice_arg(), self.expr(2));
                        format!("{p}({m}, {e})")
                    }
                    _ => format!("({}, {})", self.expr(2), self.expr(2)),
                };
                self.line(&format!("let ({u}, {v}) = {init};"));
                self.scope().floats.push((u, false));
                self.scope().floats.push((v, false));
            }
            16 => {
                // Two mutable locals updated at once: `(s, t) = (.., ..)`.
                let m: Vec<String> =
                    self.floats().into_iter().filter(|v| v.1 && !v.0.contains(['.', '*'])).map(|v| v.0).collect();
                let (Some(p), Some(q)) = (self.pick(&m), self.pick(&m)) else { return self.stmt(depth) };
                if p == q {
                    return self.stmt(depth);
                }
                let e = self.expr(2);
                self.line(&format!("({p}, {q}) = (0.5 * {q} + 0.25 * ({e}).tanh(), 0.5 * {p});"));
            }
            17 => {
                // A local closure of one float, capturing what nothing writes.
                let f = self.name("f");
                let v = self.name("v");
                let was = self.in_closure;
                self.in_closure = true;
                self.scopes.push(Scope::default());
                self.scope().floats.push((v.clone(), false));
                let body = self.expr(3);
                self.scopes.pop();
                self.in_closure = was;
                self.line(&format!("let {f} = |{v}: {}| {body};", self.t));
                self.scope().closures.push(f);
            }
            18 | 19 => self.chain(),
            20 if nested => self.match_stmt(depth - 1),
            21 if nested => {
                let Some(b) = self.pick(&self.readable()) else { return self.stmt(depth) };
                let end = if self.rng.bool() { "first" } else { "last" };
                let v = self.name("v");
                self.line(&format!("if let Some(&{v}) = {}.{end}() {{", b.name));
                self.scopes.push(Scope::default());
                self.scope().floats.push((v, false));
                let k = self.rng.usize(1..3);
                self.block(k, depth - 1);
                self.scopes.pop();
                if self.rng.bool() {
                    self.line("} else {");
                    self.block(1, depth - 1);
                }
                self.line("}");
            }
            22 if nested => self.split_mut(depth - 1),
            23 => {
                // `let (p, q) = x.split_at(k);`: two shared sub-slices.
                // Of a slice nothing writes: the halves borrow it for the rest of the block.
                let shared: Vec<Buf> = self.readable().into_iter().filter(|b| b.min >= 3 && !b.writable).collect();
                let Some(b) = self.pick(&shared) else { return self.stmt(depth) };
                let k = self.rng.usize(1..b.min);
                let (p, q) = (self.name("xa"), self.name("xb"));
                self.line(&format!("let ({p}, {q}) = {}.split_at({k});", b.name));
                self.bufs.push(Buf { name: p, min: k, max: k, writable: false, array: false, vec: false });
                self.bufs.push(Buf {
                    name: q,
                    min: b.min - k,
                    max: b.max - k,
                    writable: false,
                    array: false,
                    vec: false,
                });
            }
            24 | 25 if nested => self.chunk_loop(depth - 1),
            26 if nested => {
                // `for (i, &v) in x.iter().enumerate()`.
                let Some(b) = self.pick(&self.readable().into_iter().filter(|b| !b.writable).collect::<Vec<_>>())
                else {
                    return self.stmt(depth);
                };
                let (i, v) = (self.name("i"), self.name("v"));
                self.line(&format!("for ({i}, &{v}) in {}.iter().enumerate() {{", b.name));
                self.indices.push(Index { name: i, max: b.max - 1, over: Some(b.name) });
                self.scopes.push(Scope::default());
                self.scope().floats.push((v, false));
                self.loop_body(depth - 1);
                self.scopes.pop();
                self.indices.pop();
                self.line("}");
            }
            27 if nested => {
                // `for e in y.iter_mut()`: writes through the elements; `y` is borrowed.
                let Some(b) = self.pick(&self.writable()) else { return self.stmt(depth) };
                let e = self.name("e");
                self.line(&format!("for {e} in {}.iter_mut() {{", b.name));
                self.without(&b.name, |g| {
                    g.scopes.push(Scope::default());
                    g.scope().floats.push((format!("*{e}"), true));
                    g.indent += 1;
                    let x = g.expr(2);
                    g.update(&format!("*{e}"), &x);
                    g.indent -= 1;
                    g.loop_body(depth - 1);
                    g.scopes.pop();
                });
                self.line("}");
            }
            28 => {
                // An integer local whose type only a helper's parameter fixes, or a local
                // constant.
                if self.rng.bool() {
                    let d = self.name("d");
                    let v = self.rng.usize(1..=MIN_SUB);
                    self.line(&format!("let {d} = {v};"));
                    self.scope().ints.push(d);
                } else {
                    let k = self.name("K");
                    let e = self.literal();
                    self.line(&format!("const {k}: {} = {e} * 0.5;", self.t));
                    // Only this scope sees it; as a leaf it is a float name.
                    self.scope().floats.push((k, false));
                }
            }
            29 | 30 => match self.pick(&self.writable_mats()) {
                Some(m) => {
                    let at = self.mat_element(&m, true);
                    let e = self.expr(3);
                    if self.rng.bool() {
                        self.line(&format!("{at} += ({e}).tanh();"));
                    } else {
                        self.line(&format!("{at} = 0.5 * {at} + 0.25 * ({e}).tanh();"));
                    }
                }
                None => self.stmt(depth),
            },
            31 if nested => {
                // The rows of nested memory, read (`iter`) or written (`iter_mut`).
                let Some(m) = self.pick(&self.readable_mats()) else { return self.stmt(depth) };
                let write = m.writable && self.rng.bool();
                let row = self.name("row");
                let method = if write { "iter_mut" } else { "iter" };
                self.line(&format!("for {row} in {}.{method}() {{", m.name));
                self.without(&m.name, |g| {
                    let vec = !m.array_rows;
                    g.bufs.push(Buf {
                        name: row.clone(),
                        min: m.cols,
                        max: m.cols,
                        writable: write,
                        array: false,
                        vec,
                    });
                    if write {
                        g.indent += 1;
                        let j = g.rng.usize(0..m.cols);
                        let e = g.expr(2);
                        g.line(&format!("{row}[{j}] = 0.5 * {row}[{j}] + 0.25 * ({e}).tanh();"));
                        g.indent -= 1;
                    }
                    g.loop_body(depth - 1);
                });
                self.line("}");
            }
            32 => {
                // A row written by a helper: `h(&mut m[i], e)`.
                let inplace: Vec<String> =
                    self.helpers.iter().filter(|h| h.1 == Shape::InPlace).map(|h| h.0.clone()).collect();
                let mats: Vec<Mat> = self.writable_mats().into_iter().filter(|m| m.cols >= MIN_SUB).collect();
                let (Some(h), Some(m)) = (self.pick(&inplace), self.pick(&mats)) else { return self.stmt(depth) };
                let i = self.row_index(&m, true);
                let e = self.without(&m.name, |g| g.expr(2));
                self.line(&format!("{h}(&mut {}[{i}], {e});", m.name));
            }
            33 => {
                // A chain over rows.
                let Some(m) = self.pick(&self.readable_mats()) else { return self.stmt(depth) };
                let (s, row) = (self.name("s"), self.name("row"));
                let was = self.in_closure;
                self.in_closure = true;
                self.bufs.push(Buf {
                    name: row.clone(),
                    min: m.cols,
                    max: m.cols,
                    writable: false,
                    array: false,
                    vec: false,
                });
                let e = self.expr(2);
                self.bufs.pop();
                self.in_closure = was;
                self.line(&format!("let {s}: {} = {}.iter().map(|{row}| {e}).sum();", self.t, m.name));
                self.scope().floats.push((s, false));
            }
            34 => {
                // A local array of two, later assigned whole (also from a helper).
                let st = self.name("st");
                let (e1, e2) = (self.expr(2), self.expr(2));
                self.line(&format!("let mut {st}: [{}; 2] = [{e1}, {e2}];", self.t));
                self.bufs.push(Buf { name: st, min: 2, max: 2, writable: true, array: true, vec: false });
            }
            35 | 36 => {
                let arrays: Vec<Buf> =
                    self.writable().into_iter().filter(|b| b.name.starts_with("st") && b.min == 2).collect();
                let Some(b) = self.pick(&arrays) else { return self.stmt(depth) };
                let steps: Vec<String> =
                    self.helpers.iter().filter(|h| h.1 == Shape::Step).map(|h| h.0.clone()).collect();
                let e = self.expr(2);
                // The value before: a copy, which the assignment must not change.
                let old = self.name("old");
                self.line(&format!("let {old} = {};", b.name));
                self.bufs.push(Buf { name: old.clone(), min: 2, max: 2, writable: false, array: true, vec: false });
                match self.pick(&steps) {
                    Some(h) => self.line(&format!("{} = {h}({}, {e});", b.name, b.name)),
                    None => {
                        let e2 = self.expr(2);
                        // (`T::sin(e)`: a literal alone has no type to call `sin` on.)
                        let t = self.t;
                        self.line(&format!("{} = [0.5 * {}[1] + 0.25 * ({e}).tanh(), {t}::sin({e2})];", b.name, b.name))
                    }
                }
                // Old and new values meet (`self.mutable()` draws no number when none is in scope).
                if let Some(m) = self.mutable() {
                    self.update(&m, &format!("{old}[0] * {}[1] - {old}[1]", b.name));
                }
            }
            37 => {
                // A helper's tuple kept whole: `let p = p0(x, e); p.0`.
                let pairs: Vec<String> =
                    self.helpers.iter().filter(|h| h.1 == Shape::Pair).map(|h| h.0.clone()).collect();
                let Some(p) = self.pick(&pairs) else { return self.stmt(depth) };
                let (m, e) = (self.slice_arg(), self.expr(2));
                let t = self.name("t");
                self.line(&format!("let {t} = {p}({m}, {e});"));
                self.scope().floats.push((format!("{t}.0"), false));
                self.scope().floats.push((format!("{t}.1"), false));
            }
            38 => {
                // `split_first`: the first element and the rest.
                let shared: Vec<Buf> = self.readable().into_iter().filter(|b| b.min >= 3 && !b.writable).collect();
                let Some(b) = self.pick(&shared) else { return self.stmt(depth) };
                let (hd, tl) = (self.name("hd"), self.name("tl"));
                self.line(&format!("let ({hd}, {tl}) = {}.split_first().unwrap();", b.name));
                self.scope().floats.push((format!("*{hd}"), false));
                self.bufs.push(Buf {
                    name: tl,
                    min: b.min - 1,
                    max: b.max - 1,
                    writable: false,
                    array: false,
                    vec: false,
                });
            }
            39 if !self.in_closure => {
                // A local vector assigned anew, longer (a map of it, then a push) or shorter.
                let (v, t) = (self.name("v"), self.t);
                let (e1, e2, e3) = (self.expr(2), self.expr(2), self.expr(2));
                self.line(&format!("let mut {v}: Vec<{t}> = vec![{e1}, {e2}];"));
                match self.rng.u8(0..4) {
                    0 => {
                        self.line(&format!("{v} = {v}.iter().map(|u| (u * 0.5 + 0.25).tanh()).collect();"));
                        self.line(&format!("{v}.push({t}::sin({e3}));"));
                    }
                    1 => self.line(&format!("{v} = vec![0.5 * {v}[1] + 0.25 * ({e3}).tanh()];")),
                    2 => {
                        self.line(&format!("{v}.extend_from_slice(&[{e3}, 0.5]);"));
                        self.line(&format!("{v}.truncate(3);"));
                    }
                    _ => {
                        // Emptied by `pop`, then one element again.
                        let (s, u) = (self.name("s"), self.name("u"));
                        self.line(&format!("let mut {s}: {t} = {e3};"));
                        self.line(&format!("while let Some({u}) = {v}.pop() {{"));
                        self.line(&format!("    {s} = 0.5 * {s} + {u};"));
                        self.line("}");
                        self.line(&format!("{v}.push({s});"));
                    }
                }
                if self.rng.u8(0..2) == 0 {
                    // Its elements through references: `&mut v[0]`, `last_mut`, `get_mut`.
                    let (r, l, g, e4) = (self.name("r"), self.name("l"), self.name("g"), self.expr(2));
                    self.line(&format!("let {r} = &mut {v}[0];"));
                    self.line(&format!("*{r} = 0.5 * *{r} + ({e4}).tanh();"));
                    self.line(&format!("if let Some({l}) = {v}.last_mut() {{"));
                    self.line(&format!("    *{l} *= 0.75;"));
                    self.line("}");
                    self.line(&format!("if let Some({g}) = {v}.get_mut(1) {{"));
                    self.line(&format!("    *{g} += 0.125 * *{g};"));
                    self.line("} else {");
                    self.line(&format!("    {v}[0] -= 0.125;"));
                    self.line("}");
                }
                if let Some(m) = self.mutable() {
                    self.update(&m, &format!("{v}[0] * {v}[{v}.len() - 1]"));
                }
            }
            _ if !self.in_closure && self.rng.u8(0..4) == 0 && self.lend_stmt() => {}
            _ => {
                if self.in_for && self.rng.u8(0..6) == 0 {
                    let c = self.expr(2);
                    self.line(&format!("if {c} > 1.0 {{"));
                    self.indent += 1;
                    self.line("continue;");
                    self.indent -= 1;
                    self.line("}");
                } else if let Some(m) = self.mutable() {
                    let e = self.expr(2);
                    self.line(&format!("{m} += 0.25 * ({e}).cos();"));
                }
            }
        }
    }

    /// An iterator chain with a closure: `map` and `sum`, `fold`, `zip`.
    fn chain(&mut self) {
        let bufs: Vec<Buf> = self.readable();
        let Some(b) = self.pick(&bufs) else { return };
        let s = self.name("s");
        let v = self.name("v");
        let was = self.in_closure;
        self.in_closure = true;
        self.scopes.push(Scope::default());
        self.scope().floats.push((v.clone(), false));
        let other = if b.name == "c" { "x" } else { "c" };
        let other = if self.readable().iter().any(|o| o.name == other) { other } else { "c" };
        let line = match self.rng.u8(0..5) {
            0 => {
                let e = self.expr(2);
                format!("let {s}: {} = {}.iter().map(|&{v}| {e}).sum();", self.t, b.name)
            }
            3 => {
                let e = self.expr(2);
                format!("let {s}: {} = {}.iter().chain({other}.iter()).map(|&{v}| {e}).sum();", self.t, b.name)
            }
            4 => {
                // `Option::map`: the closure runs only on a value.
                let (e, d) = (self.expr(2), self.literal());
                format!("let {s}: {} = {}.first().map(|&{v}| {e}).unwrap_or({d});", self.t, b.name)
            }
            1 => {
                let acc = self.name("acc");
                self.scope().floats.push((acc.clone(), false));
                let e = self.expr(2);
                let init = self.literal();
                format!(
                    "let {s} = {}.iter().fold({init}, |{acc}: {}, &{v}| 0.5 * {acc} + 0.25 * ({e}).tanh());",
                    b.name, self.t
                )
            }
            _ => {
                let w = self.name("v");
                self.scope().floats.push((w.clone(), false));
                let e = self.expr(2);
                format!("let {s}: {} = {}.iter().zip({other}.iter()).map(|(&{v}, &{w})| {e}).sum();", self.t, b.name)
            }
        };
        self.scopes.pop();
        self.in_closure = was;
        self.line(&line);
        self.scope().floats.push((s, false));
    }

    /// `match` on an integer, with arms that are statements.
    fn match_stmt(&mut self, depth: usize) {
        let Some(s) = self.scrutinee() else { return self.stmt(depth + 1) };
        self.line(&format!("match {s} {{"));
        self.indent += 1;
        for pat in ["0", "1 | 2", "_"] {
            if pat == "_" && self.rng.bool() {
                self.line("_ => {}");
                continue;
            }
            match self.mutable() {
                Some(m) if self.rng.bool() => {
                    let e = self.expr(2);
                    self.line(&format!("{pat} => {m} += 0.25 * ({e}).sin(),"));
                }
                _ => {
                    self.line(&format!("{pat} => {{"));
                    self.block(1, depth);
                    self.line("}");
                }
            }
        }
        self.indent -= 1;
        self.line("}");
    }

    /// `{ let (lo, hi) = y.split_at_mut(k); .. }`: two `&mut` halves, and `y` untouched meanwhile.
    fn split_mut(&mut self, depth: usize) {
        let Some(b) = self.pick(&self.writable().into_iter().filter(|b| b.min >= 2 * MIN_SUB).collect::<Vec<_>>())
        else {
            return self.stmt(depth + 1);
        };
        let k = self.rng.usize(MIN_SUB..=b.min - MIN_SUB);
        let (lo, hi) = (self.name("lo"), self.name("hi"));
        self.line("{");
        self.indent += 1;
        self.line(&format!("let ({lo}, {hi}) = {}.split_at_mut({k});", b.name));
        self.without(&b.name, |g| {
            g.bufs.push(Buf { name: lo.clone(), min: k, max: k, writable: true, array: false, vec: false });
            g.bufs.push(Buf {
                name: hi.clone(),
                min: b.min - k,
                max: b.max - k,
                writable: true,
                array: false,
                vec: false,
            });
            // One statement on a half for sure, then any.
            let i = g.rng.usize(0..k);
            let e = g.expr(2);
            g.line(&format!("{lo}[{i}] = 0.5 * {lo}[{i}] + 0.25 * ({e}).tanh();"));
            g.indent -= 1;
            let k = g.rng.usize(1..3);
            g.block(k, depth);
            g.indent += 1;
        });
        self.indent -= 1;
        self.line("}");
    }

    /// A loop over the chunks or windows of a slice, or the `chunks_mut` of a writable one.
    fn chunk_loop(&mut self, depth: usize) {
        let ch = self.name("ch");
        let k = self.rng.usize(2..4);
        let shared: Vec<Buf> = self.readable().into_iter().filter(|b| !b.writable && b.min >= 3).collect();
        let writable: Vec<Buf> = self.writable().into_iter().filter(|b| b.min >= 3).collect();
        if let (Some(b), true) = (self.pick(&writable), self.rng.u8(0..3) == 0) {
            let exact = self.rng.bool();
            let method = if exact { "chunks_exact_mut" } else { "chunks_mut" };
            self.line(&format!("for {ch} in {}.{method}({k}) {{", b.name));
            self.without(&b.name, |g| {
                g.bufs.push(Buf {
                    name: ch.clone(),
                    min: if exact { k } else { 1 },
                    max: k,
                    writable: true,
                    array: false,
                    vec: false,
                });
                g.loop_body(depth);
                g.bufs.pop();
            });
            self.line("}");
            return;
        }
        let Some(b) = self.pick(&shared) else { return self.stmt(depth + 1) };
        let (method, min) = match self.rng.u8(0..3) {
            0 => ("chunks", 1),
            1 => ("chunks_exact", k),
            _ => ("windows", k),
        };
        self.line(&format!("for {ch} in {}.{method}({k}) {{", b.name));
        self.bufs.push(Buf { name: ch.clone(), min, max: k, writable: false, array: false, vec: false });
        self.loop_body(depth);
        self.bufs.retain(|x| x.name != ch);
        self.line("}");
    }

    /// A value of the function's result type.
    fn result_expr(&mut self, depth: usize) -> String {
        match self.ret {
            Ret::Pair => format!("({}, {})", self.expr(depth), self.expr(depth)),
            Ret::Array => format!("[{}, {}]", self.expr(depth), self.expr(depth)),
            _ => self.expr(depth),
        }
    }

    /// A function: its signature, a few statements, and a result made of what is in scope.
    fn function(&mut self, name: &str, shape: Option<Shape>) {
        let t = self.t;
        let with_w = shape.is_none() && self.rng.u8(0..5) == 0;
        let (params, ret) = match shape {
            Some(Shape::Value) => (format!("x: &[{t}], a: {t}"), Ret::Scalar),
            Some(Shape::Counted) => (format!("x: &[{t}], a: {t}, m: usize"), Ret::Scalar),
            Some(Shape::InPlace) => (format!("y: &mut [{t}], a: {t}"), Ret::Unit),
            Some(Shape::Pair) => (format!("x: &[{t}], a: {t}"), Ret::Pair),
            Some(Shape::Rows) => (format!("q: &[[{t}; 2]], a: {t}"), Ret::Scalar),
            Some(Shape::Step) => (format!("s: [{t}; 2], a: {t}"), Ret::Array),
            None => {
                let mut w = if with_w { format!(", w: [{t}; 3]") } else { String::new() };
                // Sometimes nested memory: rows of two, a matrix by value, vectors.
                let nested = match self.rng.u8(0..12) {
                    0 => Some((format!("q: &[[{t}; 2]]"), LEN, 2, false, true, false)),
                    1 => Some((format!("q: &mut [[{t}; 2]]"), LEN, 2, true, true, false)),
                    2 => Some((format!("q: [[{t}; 2]; 2]"), 2, 2, false, true, true)),
                    3 => Some((format!("q: &[Vec<{t}>]"), LEN, LEN, false, false, false)),
                    _ => None,
                };
                self.mats.clear();
                if let Some((p, rows, cols, writable, array_rows, owned)) = nested {
                    w += &format!(", {p}");
                    let name = "q".to_string();
                    self.mats.push(Mat { name, rows, max_rows: rows, cols, writable, array_rows, owned });
                }
                let ret = match self.rng.u8(0..12) {
                    0 | 1 => Ret::Pair,
                    2 => Ret::Array,
                    _ => Ret::Scalar,
                };
                (format!("x: &[{t}], y: &mut [{t}], a: {t}, n: usize{w}"), ret)
            }
        };
        self.ret = ret;
        self.root = shape.is_none();
        match shape {
            Some(Shape::Rows) => {
                let q = Mat {
                    name: "q".into(),
                    rows: 2,
                    max_rows: LEN,
                    cols: 2,
                    writable: false,
                    array_rows: true,
                    owned: false,
                };
                self.mats = vec![q];
            }
            Some(_) => self.mats.clear(),
            None => {}
        }
        self.scopes = vec![Scope::default()];
        self.indices.clear();
        self.in_for = false;
        self.in_closure = false;
        // Helpers may be given sub-slices and chunks: they index below `MIN_SUB`.
        let len = if shape.is_some() { MIN_SUB } else { LEN };
        self.bufs = vec![Buf { name: "c".into(), min: LEN, max: LEN, writable: false, array: true, vec: false }];
        if params.starts_with("x") {
            self.bufs.push(Buf { name: "x".into(), min: len, max: LEN, writable: false, array: false, vec: false });
        }
        if params.contains("y: &mut") {
            self.bufs.push(Buf { name: "y".into(), min: len, max: LEN, writable: true, array: false, vec: false });
        }
        if with_w {
            self.bufs.push(Buf { name: "w".into(), min: 3, max: 3, writable: false, array: true, vec: false });
        }
        if shape == Some(Shape::Step) {
            self.bufs.push(Buf { name: "s".into(), min: 2, max: 2, writable: false, array: true, vec: false });
        }
        self.budget = if shape.is_some() { 6 } else { 14 };
        let ret_ty = match ret {
            Ret::Unit => String::new(),
            Ret::Scalar => format!(" -> {t}"),
            Ret::Pair => format!(" -> ({t}, {t})"),
            Ret::Array => format!(" -> [{t}; 2]"),
        };
        let _ = writeln!(self.out, "fn {name}({params}){ret_ty} {{");
        self.indent = 1;
        match shape {
            // `n` exists only in the checked function; helpers loop over their slice, or
            // up to their count.
            None => self.scope().ints.push("n".into()),
            Some(Shape::Counted) => self.scope().ints.push("m".into()),
            _ => {}
        }
        // A constant slice, for calls with constant memory arguments.
        self.line(&format!("let c: [{t}; {LEN}] = [0.5, -0.25, 1.0, 0.75, -1.5];"));
        if shape.is_none() && self.rng.u8(0..3) == 0 {
            self.local_matrix();
        }
        let acc = self.name("s");
        // The last value helper is called first: helpers call each other, so calls chain.
        let last = self.helpers.iter().rev().find(|h| matches!(h.1, Shape::Value | Shape::Counted)).cloned();
        let init = match last {
            Some((g, shape)) => self.call_of(&g, shape, 1),
            None => self.expr(1),
        };
        self.line(&format!("let mut {acc} = {init};"));
        self.scopes[0].floats.push((acc.clone(), true));
        if shape == Some(Shape::Step) {
            // The state, destructured.
            let (u, v) = (self.name("u"), self.name("v"));
            self.line(&format!("let [{u}, {v}] = s;"));
            self.scopes[0].floats.push((u, false));
            self.scopes[0].floats.push((v, false));
        }
        if shape == Some(Shape::Counted) {
            // The count bounds a loop and is matched on.
            self.indices.push(Index { name: "i0".into(), max: MIN_SUB - 1, over: None });
            let e = self.expr(2);
            self.line("for i0 in 0..m {");
            self.indent += 1;
            let x = self.element(&Buf {
                name: "x".into(),
                min: MIN_SUB,
                max: LEN,
                writable: false,
                array: false,
                vec: false,
            });
            self.update(&acc, &format!("{x} * {e}"));
            self.indent -= 1;
            self.line("}");
            self.indices.clear();
        }
        let n = self.rng.usize(2..6);
        // Helpers nest loops less deep: a call inside the checked function's loops
        // multiplies their cost, and every check runs the program a hundred times.
        let depth = if shape.is_some() { 2 } else { 3 };
        for _ in 0..n {
            self.stmt(depth);
        }
        match ret {
            Ret::Unit => {}
            Ret::Scalar => {
                let e = self.expr(1);
                self.line(&format!("{acc} + {e}"));
            }
            Ret::Pair => {
                let (e1, e2) = (self.expr(1), self.expr(2));
                self.line(&format!("({acc} + {e1}, {e2})"));
            }
            Ret::Array => {
                let (e1, e2) = (self.expr(1), self.expr(2));
                self.line(&format!("[{acc} + {e1}, {e2}]"));
            }
        }
        self.indent = 0;
        self.out.push_str("}\n\n");
    }

    /// A local matrix, `[[T; 2]; 3]` or `Vec<Vec<T>>`, filled row by row.
    fn local_matrix(&mut self) {
        let t = self.t;
        let m = self.name("m");
        let (rows, cols, array_rows) = if self.rng.bool() { (3, 2, true) } else { (2, 3, false) };
        if array_rows {
            self.line(&format!("let mut {m}: [[{t}; {cols}]; {rows}] = [[0.0; {cols}]; {rows}];"));
        } else {
            self.line(&format!("let mut {m}: Vec<Vec<{t}>> = vec![vec![0.0; {cols}]; {rows}];"));
        }
        let i = self.name("i");
        self.line(&format!("for {i} in 0..{rows} {{"));
        self.indices.push(Index { name: i.clone(), max: rows - 1, over: Some(m.clone()) });
        self.indent += 1;
        for j in 0..cols {
            let e = self.expr(2);
            self.line(&format!("{m}[{i}][{j}] = ({e}).sin();"));
        }
        self.indent -= 1;
        self.indices.pop();
        self.line("}");
        self.mats.push(Mat { name: m, rows, max_rows: rows, cols, writable: true, array_rows, owned: true });
    }

    /// Module constants: numbers (one defined from another), an array, a count.
    fn constants(&mut self) {
        let t = self.t;
        if self.rng.bool() {
            return;
        }
        let k = self.rng.usize(1..3);
        for _ in 0..k {
            let name = self.name("K");
            let e = match self.consts.last().cloned() {
                Some(prev) if self.rng.bool() => format!("{prev} * 0.5 - {}", self.literal()),
                _ => self.literal(),
            };
            let _ = writeln!(self.out, "const {name}: {t} = {e};");
            self.consts.push(name);
        }
        if self.rng.bool() {
            let name = self.name("W");
            let (a, b, c) = (self.literal(), self.literal(), self.consts[0].clone());
            let _ = writeln!(self.out, "const {name}: [{t}; 3] = [{a}, {b}, {c}];");
            self.const_arrays.push((name, 3));
        }
        if self.rng.bool() {
            let name = self.name("M");
            let v = self.rng.usize(1..=MIN_SUB);
            let _ = writeln!(self.out, "const {name}: usize = {v};");
            self.const_counts.push((name, v));
        }
        self.out.push('\n');
    }
}

/// The source of program `index` of a run with `seed`.
pub fn program(seed: u64, index: usize) -> String {
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(seed.wrapping_mul(1_000_003).wrapping_add(index as u64)),
        out: String::from("// Generated by `cotan fuzz`; check with `cotan check FILE --fn f`.\n\n"),
        indent: 0,
        t: "f64",
        scopes: vec![],
        bufs: vec![],
        mats: vec![],
        indices: vec![],
        ret: Ret::Scalar,
        helpers: vec![],
        consts: vec![],
        const_arrays: vec![],
        const_counts: vec![],
        fresh: 0,
        in_for: false,
        in_closure: false,
        root: false,
        budget: 0,
    };
    if g.rng.u8(0..6) == 0 {
        g.t = "f32";
    }
    g.constants();
    g.higher_order_helpers();
    // Two value helpers at least, the second calling the first: calls two deep or more.
    let n_helpers = g.rng.usize(2..5);
    for k in 0..n_helpers {
        let shape = match (k, g.rng.u8(0..7)) {
            (0, 0..=1) | (1.., 0) => Shape::Counted,
            (0 | 1, _) | (_, 1 | 2) => Shape::Value,
            (_, 3) => Shape::Pair,
            (_, 4) => Shape::Rows,
            (_, 5) if g.rng.bool() => Shape::Step,
            _ => Shape::InPlace,
        };
        let name = format!(
            "{}{k}",
            match shape {
                Shape::Value | Shape::Counted => "g",
                Shape::InPlace => "h",
                Shape::Pair => "p",
                Shape::Rows => "r",
                Shape::Step => "s",
            }
        );
        g.function(&name, Some(shape));
        g.helpers.push((name, shape));
    }
    g.function("f", None);
    g.out
}

enum Outcome {
    Pass,
    Fail(String),
    GeneratorBug(String),
}

/// Checks one program: its derivatives (the gradient check), and, with an oracle, that its
/// lowering computes what rustc's build of it computes (at one random point).
fn check_program(text: &str, seed: u64, index: usize, oracle: Option<&Oracle>) -> Outcome {
    let run = || -> Result<Outcome, CliError> {
        let src = Source::parse(text)?;
        let p = checker::prepare(&src, "f")?;
        let r = checker::check(&p, &Points { at: None, trials: 3, seed, len: LEN })?;
        if !r.passed() {
            return Ok(Outcome::Fail(checker::render(&r)));
        }
        let file = std::env::temp_dir().join(format!("cotan-fuzz-{}-{seed}-{index}.rs", std::process::id()));
        if let Some(why) = crate::generated::problem(text, &p.primal, &file) {
            return Ok(Outcome::Fail(why));
        }
        let Some(oracle) = oracle else { return Ok(Outcome::Pass) };
        let mut rng = fastrand::Rng::with_seed(seed ^ (index as u64).rotate_left(32));
        let args = crate::inputs::random(&p.primal, &mut rng, LEN);
        let f = src.function("f")?;
        match oracle.compare(text, &p, &f, &args, &format!("p{seed}_{index}")) {
            Ok(None) => Ok(Outcome::Pass),
            Ok(Some(why)) => Ok(Outcome::Fail(why)),
            Err(why) => Ok(Outcome::GeneratorBug(format!("the comparison with rustc could not be made: {why}"))),
        }
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => Outcome::GeneratorBug(e.0),
        Err(_) => Outcome::Fail("the engine panicked".into()),
    }
}

/// Generates and checks `count` programs of `seed`; with `rustc`, each is also compiled by
/// rustc and its lowering's results compared with the compiled program's (see `oracle.rs`).
pub fn fuzz(count: usize, seed: u64, out: &str, rustc: bool) -> Result<Summary, CliError> {
    let oracle = if rustc { Oracle::find() } else { None };
    if rustc && oracle.is_none() {
        eprintln!("fuzz: no rustc runs here (`RUSTC` or `rustc`): lowering is not compared with it");
    }
    let start = Instant::now();
    let bar = crate::progress::bar(count as u64, "{bar:40} {pos}/{len} programs, {msg} [{elapsed}]");
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut summary = Summary { programs: 0, failures: 0, generator_bugs: 0 };
    let mut minimized = 0;
    let mut saved = vec![];
    for index in 0..count {
        let text = program(seed, index);
        summary.programs += 1;
        match check_program(&text, seed, index, oracle.as_ref()) {
            Outcome::Pass => {}
            Outcome::GeneratorBug(msg) => {
                summary.generator_bugs += 1;
                let path = write(out, &format!("generator_bug_{seed}_{index}.rs"), &format!("// {msg}\n{text}"))?;
                saved.push(path);
            }
            Outcome::Fail(report) => {
                summary.failures += 1;
                let mut body = format!("{}\n", comment(&report));
                if minimized < MAX_MINIMIZED {
                    minimized += 1;
                    let src = Source::parse(&text)?;
                    let points = Points { at: None, trials: 3, seed, len: LEN };
                    let m = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        crate::minimize::minimize(&src, "f", &points, false)
                    }));
                    match m {
                        Ok(Ok(m)) => body += &crate::minimize::render(&m),
                        _ => body += &text,
                    }
                } else {
                    body += &text;
                }
                let _ = write!(
                    body,
                    "\n// The program as generated (`cotan fuzz --seed {seed} --show {index}`):\n{}",
                    comment(&text)
                );
                saved.push(write(out, &format!("failure_{seed}_{index}.rs"), &body)?);
            }
        }
        bar.set_message(format!("{} failures, {} generator bugs", summary.failures, summary.generator_bugs));
        bar.inc(1);
        // A log (CI) has no progress bar: a line every 1000 programs instead.
        if !std::io::stderr().is_terminal() && (index + 1) % 1000 == 0 {
            eprintln!(
                "fuzz: {} of {count} programs, {} failures, {} generator bugs, {:.0} s",
                index + 1,
                summary.failures,
                summary.generator_bugs,
                start.elapsed().as_secs_f64()
            );
        }
    }
    std::panic::set_hook(previous_hook);
    bar.finish_and_clear();
    println!(
        "fuzz: {} programs in {:.1} s (seed {seed}): {} passed, {} failed, {} generator bugs{}",
        summary.programs,
        start.elapsed().as_secs_f64(),
        summary.programs - summary.failures - summary.generator_bugs,
        summary.failures,
        summary.generator_bugs,
        if oracle.is_some() { " (each also compiled by rustc, its results compared)" } else { "" }
    );
    for p in saved.iter().take(20) {
        println!("  wrote {p}");
    }
    if saved.len() > 20 {
        println!("  ... and {} more in {out}", saved.len() - 20);
    }
    Ok(summary)
}

fn comment(text: &str) -> String {
    text.lines().map(|l| format!("// {l}")).collect::<Vec<_>>().join("\n")
}

fn write(dir: &str, name: &str, text: &str) -> Result<String, CliError> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::new(format!("cannot create `{dir}`: {e}")))?;
    let path = format!("{dir}/{name}");
    std::fs::write(&path, text).map_err(|e| CliError::new(format!("cannot write `{path}`: {e}")))?;
    Ok(path)
}
