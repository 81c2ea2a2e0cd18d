//! `cotan fuzz`: random well-typed programs in the subset cotan supports (loops with
//! dynamic trip counts, `while`, branches, early `break`/`return`, in-place updates of a
//! `&mut [f64]`, guarded math functions, and calls of other generated functions, unmarked,
//! chained at least two deep, with active and constant arguments), each checked as
//! `cotan check` does (reverse, forward and second order against finite differences).
//! Failures are minimized and written out; a program that the lowering rejects is a bug of
//! this generator, counted apart.
//!
//! Values stay bounded (inputs in [-1.5, 1.5], accumulators squashed by `tanh`, logarithms
//! and roots of `1 + e * e`) so finite differences stay well conditioned.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Instant;

use crate::checker::{self, Points};
use crate::source::Source;
use crate::CliError;

/// Length of the random slices: indices below it are in bounds.
const LEN: usize = 5;
/// Failures minimized per run (the rest are written as generated).
const MAX_MINIMIZED: usize = 20;

pub struct Summary {
    pub programs: usize,
    pub failures: usize,
    pub generator_bugs: usize,
}

/// A helper's shape: `gK(x: &[f64], a: f64) -> f64` or `hK(y: &mut [f64], a: f64)`.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Value,
    InPlace,
}

struct Gen {
    rng: fastrand::Rng,
    out: String,
    indent: usize,
    /// Float names readable here, innermost scope last: (name, mutable).
    scopes: Vec<Vec<(String, bool)>>,
    /// Loop indices in scope that are below `LEN`.
    indices: Vec<String>,
    has_x: bool,
    has_y: bool,
    returns: bool,
    helpers: Vec<(String, Shape)>,
    fresh: usize,
    in_for: bool,
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

    fn floats(&self) -> Vec<(String, bool)> {
        self.scopes.iter().flatten().cloned().collect()
    }

    fn index(&mut self) -> String {
        if !self.indices.is_empty() && self.rng.u8(0..3) > 0 {
            return self.indices[self.rng.usize(0..self.indices.len())].clone();
        }
        self.rng.usize(0..LEN).to_string()
    }

    fn leaf(&mut self) -> String {
        let vars = self.floats();
        match self.rng.u8(0..6) {
            0 | 1 if !vars.is_empty() => vars[self.rng.usize(0..vars.len())].0.clone(),
            2 if self.has_x => format!("x[{}]", self.index()),
            3 if self.has_y => format!("y[{}]", self.index()),
            4 => ["0.5", "1.3", "-0.7", "2.0", "0.25"][self.rng.usize(0..5)].to_string(),
            _ => "a".to_string(),
        }
    }

    fn expr(&mut self, depth: usize) -> String {
        if depth == 0 || self.rng.u8(0..4) == 0 {
            return self.leaf();
        }
        let d = depth - 1;
        match self.rng.u8(0..17) {
            0 => format!("{} + {}", self.expr(d), self.expr(d)),
            1 => {
                // Not `e - e`: an exact zero whose adjoint cancels loses all precision.
                let (l, r) = (self.expr(d), self.expr(d));
                if l == r {
                    l
                } else {
                    format!("{l} - {r}")
                }
            }
            2 | 3 => format!("{} * {}", self.paren(d), self.paren(d)),
            4 => {
                let e = self.paren(d);
                format!("{} / (1.0 + {e} * {e})", self.paren(d))
            }
            5 => format!("-{}", self.paren(d)),
            6 => format!("{}.sin()", self.paren(d)),
            7 => format!("{}.cos()", self.paren(d)),
            8 => format!("{}.tanh()", self.paren(d)),
            9 => format!("{}.tanh().exp()", self.paren(d)),
            10 => {
                let e = self.paren(d);
                format!("(1.0 + {e} * {e}).ln()")
            }
            11 => {
                let e = self.paren(d);
                format!("(1.0 + {e} * {e}).sqrt()")
            }
            12 => format!("{}.max({})", self.paren(d), self.expr(d)),
            13 => format!("{}.abs()", self.paren(d)),
            14 => format!("{}.powi(2)", self.paren(d).replace(".powi(2)", "")),
            15 => format!("(if {} > 0.3 {{ {} }} else {{ {} }})", self.expr(d), self.expr(d), self.expr(d)),
            _ => self.call_expr(d),
        }
    }

    fn paren(&mut self, depth: usize) -> String {
        let mut e = self.expr(depth);
        if e.parse::<f64>().is_ok() {
            // A bare float literal has no type for a method call (`0.5.sin()`): scale `a`.
            e = format!("{e} * a");
        }
        if e.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '[' || c == ']') && !e.starts_with('-')
        {
            e
        } else {
            format!("({e})")
        }
    }

    fn call_expr(&mut self, d: usize) -> String {
        let values: Vec<String> = self.helpers.iter().filter(|h| h.1 == Shape::Value).map(|h| h.0.clone()).collect();
        if values.is_empty() {
            return self.leaf();
        }
        let g = values[self.rng.usize(0..values.len())].clone();
        self.call_of(&g, d)
    }

    /// A call of value helper `g`, with an active slice or the constant one.
    fn call_of(&mut self, g: &str, d: usize) -> String {
        let mem = match self.rng.u8(0..5) {
            0 => "&c",
            1 if self.has_y => "y",
            _ if self.has_x => "x",
            _ => "y",
        };
        // `1.0 * g(..)`: the lowering does not know a callee's result type, so a method on
        // a call's result (`g(x).cos()`) is rejected; the product gives it a float type.
        format!("(1.0 * {g}({mem}, {}))", self.expr(d))
    }

    /// A mutable float in scope, if any.
    fn mutable(&mut self) -> Option<String> {
        let m: Vec<String> = self.floats().into_iter().filter(|v| v.1).map(|v| v.0).collect();
        (!m.is_empty()).then(|| m[self.rng.usize(0..m.len())].clone())
    }

    fn block(&mut self, n: usize, depth: usize) {
        self.scopes.push(vec![]);
        self.indent += 1;
        for _ in 0..n {
            self.stmt(depth);
        }
        self.indent -= 1;
        self.scopes.pop();
    }

    fn stmt(&mut self, depth: usize) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        let nested = depth > 0;
        match self.rng.u8(0..14) {
            0 | 1 => {
                let v = self.name("v");
                let e = self.expr(3);
                self.line(&format!("let {v} = {e};"));
                self.scopes.last_mut().unwrap().push((v, false));
            }
            2 => {
                let v = self.name("s");
                let e = self.expr(2);
                self.line(&format!("let mut {v} = {e};"));
                self.scopes.last_mut().unwrap().push((v, true));
            }
            3 | 4 => match self.mutable() {
                Some(m) => {
                    let e = self.expr(3);
                    match self.rng.u8(0..3) {
                        // Bounded increments and damped updates: an accumulator grows at most
                        // linearly, and derivatives are not amplified exponentially by loops
                        // (which rounding in reverse mode would show as false findings).
                        0 => self.line(&format!("{m} += 0.25 * ({e}).sin();")),
                        1 => self.line(&format!("{m} = 0.5 * ({m} + {e}).tanh();")),
                        _ => self.line(&format!("{m} = 0.5 * {m} + 0.25 * ({e}).tanh();")),
                    }
                }
                None => self.stmt(depth),
            },
            5 | 6 if self.has_y => {
                let i = self.index();
                let e = self.expr(3);
                if self.rng.bool() {
                    self.line(&format!("y[{i}] += ({e}).tanh();"));
                } else {
                    self.line(&format!("y[{i}] = ({e}).sin();"));
                }
            }
            7 | 8 if nested => {
                let i = self.name("i");
                let s = if self.has_x { "x" } else { "y" };
                let (range, idx_ok) = match self.rng.u8(0..4) {
                    0 => ("0..n".to_string(), true),
                    1 => (format!("1..{s}.len()"), true),
                    2 => (format!("(0..{s}.len()).rev()"), true),
                    _ => (format!("0..{s}.len()"), true),
                };
                self.line(&format!("for {i} in {range} {{"));
                if idx_ok {
                    self.indices.push(i.clone());
                }
                let was = self.in_for;
                self.in_for = true;
                let k = self.rng.usize(1..4);
                self.block(k, depth - 1);
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
                if idx_ok {
                    self.indices.pop();
                }
                self.line("}");
            }
            9 if nested => {
                let k = self.name("k");
                self.line(&format!("let mut {k} = 0;"));
                self.line(&format!("while {k} < n {{"));
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
                self.line(&format!("if {c} > {t} {{"));
                let k = self.rng.usize(1..3);
                self.block(k, depth - 1);
                if self.rng.bool() {
                    self.line("} else {");
                    let k = self.rng.usize(1..3);
                    self.block(k, depth - 1);
                }
                self.line("}");
            }
            12 if self.returns && self.rng.u8(0..3) == 0 => {
                let c = self.expr(2);
                let e = self.expr(2);
                self.line(&format!("if {c} > 1.2 {{"));
                self.indent += 1;
                self.line(&format!("return {e};"));
                self.indent -= 1;
                self.line("}");
            }
            13 if self.has_y => {
                let inplace: Vec<String> =
                    self.helpers.iter().filter(|h| h.1 == Shape::InPlace).map(|h| h.0.clone()).collect();
                if inplace.is_empty() {
                    return;
                }
                let h = inplace[self.rng.usize(0..inplace.len())].clone();
                let e = self.expr(2);
                self.line(&format!("{h}(y, {e});"));
            }
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

    /// A function: its signature, a few statements, and a result made of what is in scope.
    fn function(&mut self, name: &str, shape: Option<Shape>) {
        let (params, returns, has_x, has_y) = match shape {
            Some(Shape::Value) => ("x: &[f64], a: f64", true, true, false),
            Some(Shape::InPlace) => ("y: &mut [f64], a: f64", false, false, true),
            None => ("x: &[f64], y: &mut [f64], a: f64, n: usize", true, true, true),
        };
        self.has_x = has_x;
        self.has_y = has_y;
        self.returns = returns;
        self.scopes = vec![vec![]];
        self.indices.clear();
        self.in_for = false;
        self.budget = if shape.is_some() { 6 } else { 14 };
        let ret = if returns { " -> f64" } else { "" };
        // `n` exists only in the checked function; helpers loop over their slice.
        let _ = writeln!(self.out, "fn {name}({params}){ret} {{");
        if shape.is_some() {
            self.line_n("let n = 3;");
        }
        self.indent = 1;
        // A constant slice, for calls with constant memory arguments.
        self.line("let c = [0.5, -0.25, 1.0, 0.75, -1.5];");
        let acc = self.name("s");
        // The last value helper is called first: helpers call each other, so calls chain.
        let last = self.helpers.iter().rev().find(|h| h.1 == Shape::Value).map(|h| h.0.clone());
        let init = match last {
            Some(g) => self.call_of(&g, 1),
            None => self.expr(1),
        };
        self.line(&format!("let mut {acc} = {init};"));
        self.scopes[0].push((acc.clone(), true));
        let n = self.rng.usize(2..6);
        // Helpers nest loops less deep: a call inside the checked function's loops
        // multiplies their cost, and every check runs the program a hundred times.
        let depth = if shape.is_some() { 2 } else { 3 };
        for _ in 0..n {
            self.stmt(depth);
        }
        if returns {
            let e = self.expr(1);
            self.line(&format!("{acc} + {e}"));
        }
        self.indent = 0;
        self.out.push_str("}\n\n");
    }

    fn line_n(&mut self, s: &str) {
        self.out.push_str("    ");
        self.out.push_str(s);
        self.out.push('\n');
    }
}

/// The source of program `index` of a run with `seed`.
pub fn program(seed: u64, index: usize) -> String {
    let mut g = Gen {
        rng: fastrand::Rng::with_seed(seed.wrapping_mul(1_000_003).wrapping_add(index as u64)),
        out: String::from("// Generated by `cotan fuzz`; check with `cotan check FILE --fn f`.\n\n"),
        indent: 0,
        scopes: vec![],
        indices: vec![],
        has_x: false,
        has_y: false,
        returns: false,
        helpers: vec![],
        fresh: 0,
        in_for: false,
        budget: 0,
    };
    // Two value helpers at least, the second calling the first: calls two deep or more.
    let n_helpers = g.rng.usize(2..5);
    for k in 0..n_helpers {
        let shape = if k < 2 || g.rng.bool() { Shape::Value } else { Shape::InPlace };
        let name = format!("{}{k}", if shape == Shape::Value { "g" } else { "h" });
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

fn check_program(text: &str, seed: u64) -> Outcome {
    let run = || -> Result<Outcome, CliError> {
        let src = Source::parse(text)?;
        let p = checker::prepare(&src, "f")?;
        let r = checker::check(&p, &Points { at: None, trials: 3, seed, len: LEN })?;
        Ok(if r.passed() { Outcome::Pass } else { Outcome::Fail(checker::render(&r)) })
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => Outcome::GeneratorBug(e.0),
        Err(_) => Outcome::Fail("the engine panicked".into()),
    }
}

pub fn fuzz(count: usize, seed: u64, out: &str) -> Result<Summary, CliError> {
    let start = Instant::now();
    let bar = indicatif::ProgressBar::new(count as u64);
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} programs, {msg} [{elapsed}]") {
        bar.set_style(style);
    }
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut summary = Summary { programs: 0, failures: 0, generator_bugs: 0 };
    let mut minimized = 0;
    let mut saved = vec![];
    for index in 0..count {
        let text = program(seed, index);
        summary.programs += 1;
        match check_program(&text, seed) {
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
        "fuzz: {} programs in {:.1} s (seed {seed}): {} passed, {} failed, {} generator bugs",
        summary.programs,
        start.elapsed().as_secs_f64(),
        summary.programs - summary.failures - summary.generator_bugs,
        summary.failures,
        summary.generator_bugs
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
