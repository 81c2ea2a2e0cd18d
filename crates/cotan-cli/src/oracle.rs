//! rustc as the oracle of lowering. The gradient check runs the primal and its derivatives
//! through the IR interpreter, so a lowering that changes what the function computes (an
//! array copy Rust makes and the lowering did not) moves the primal and its derivatives
//! together and passes it. Here the program is also compiled by rustc with a `main` that
//! calls the function on the same arguments and prints what it returns and what its `&mut`
//! arguments hold after the call; the interpreter's run of the lowered function must agree.

use std::path::PathBuf;
use std::process::Command;

use cotan_ir::{Arg, Val};

use crate::checker::Prepared;

/// Where the programs are compiled, and the compiler.
pub struct Oracle {
    dir: PathBuf,
    rustc: String,
}

impl Oracle {
    /// `None` when no rustc runs here (`RUSTC`, or `rustc` on the path).
    pub fn find() -> Option<Oracle> {
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let ok = Command::new(&rustc).arg("--version").output().is_ok_and(|o| o.status.success());
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cotan-oracle-{}-{run}", std::process::id()));
        (ok && std::fs::create_dir_all(&dir).is_ok()).then_some(Oracle { dir, rustc })
    }

    /// Compares the interpreter's run of `f` (prepared from `text`) with rustc's at `args`:
    /// `Ok(None)` when they agree, `Ok(Some(why))` when they differ, `Err` when the
    /// comparison could not be made (a signature the harness does not write).
    pub fn compare(
        &self,
        text: &str,
        p: &Prepared,
        f: &syn::ItemFn,
        args: &[Arg],
        tag: &str,
    ) -> Result<Option<String>, String> {
        let main = harness(f, args)?;
        let compiled = self.run(&format!("{text}\n{main}"), tag)?;
        let lowered = match p.run_lowered(args) {
            Ok((outs, after)) => {
                let mut v: Vec<f64> = outs.iter().flat_map(numbers).collect();
                for (k, a) in after.iter().enumerate() {
                    if is_mut(f, k) {
                        v.extend(numbers(a));
                    }
                }
                v
            }
            Err(e) => return Ok(Some(format!("the lowered function fails where rustc's runs: {e}"))),
        };
        if compiled.len() != lowered.len() {
            return Err(format!(
                "rustc's program printed {} numbers, the interpreter gave {}",
                compiled.len(),
                lowered.len()
            ));
        }
        let f32 = text.contains("f32");
        for (k, (c, l)) in compiled.iter().zip(&lowered).enumerate() {
            if !agree(*c, *l, f32) {
                return Ok(Some(format!(
                    "the primal as lowered (run by the interpreter) gives {l:e} for output {k}, the primal compiled by rustc {c:e}: the lowering changed what the function computes"
                )));
            }
        }
        Ok(None)
    }

    /// Compiles and runs `program`; the numbers it prints.
    fn run(&self, program: &str, tag: &str) -> Result<Vec<f64>, String> {
        let src = self.dir.join(format!("{tag}.rs"));
        let bin = self.dir.join(tag);
        std::fs::write(&src, program).map_err(|e| e.to_string())?;
        let o = Command::new(&self.rustc)
            .args(["--edition", "2021", "-A", "warnings", "-C", "opt-level=0", "-C", "debuginfo=0", "-o"])
            .arg(&bin)
            .arg(&src)
            .output()
            .map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(format!("rustc rejects the program: {}", String::from_utf8_lossy(&o.stderr)));
        }
        let run = Command::new(&bin).output().map_err(|e| e.to_string());
        let _ = (std::fs::remove_file(&src), std::fs::remove_file(&bin));
        let run = run?;
        if !run.status.success() {
            return Err(format!("the compiled program fails: {}", String::from_utf8_lossy(&run.stderr)));
        }
        String::from_utf8_lossy(&run.stdout)
            .lines()
            .map(|l| l.trim().parse::<f64>().map_err(|e| format!("`{l}`: {e}")))
            .collect()
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Equal within rounding that the two evaluations may order differently (a math function
/// of the host's library against rustc's), far below what a wrong lowering changes.
fn agree(c: f64, l: f64, f32: bool) -> bool {
    let tol = if f32 { 1e-4 } else { 1e-9 };
    c == l || (c.is_nan() && l.is_nan()) || (c - l).abs() <= tol * c.abs().max(l.abs()).max(1.0)
}

/// The numbers of an argument or result, in order (bools as 0 and 1).
fn numbers(a: &Arg) -> Vec<f64> {
    let val = |v: &Val| match v {
        Val::F32(x) => *x as f64,
        Val::F64(x) => *x,
        Val::Int(i, _) => *i as f64,
        Val::Bool(b) => *b as u8 as f64,
    };
    match a {
        Arg::Scalar(v) => vec![val(v)],
        Arg::Mem(m) => m.iter().map(val).collect(),
        Arg::Rows(rs) => rs.iter().flat_map(numbers).collect(),
        Arg::Record(fs) => fs.iter().flat_map(|(_, a)| numbers(a)).collect(),
    }
}

/// Whether parameter `k` of `f` is a `&mut`.
fn is_mut(f: &syn::ItemFn, k: usize) -> bool {
    matches!(f.sig.inputs.iter().nth(k), Some(syn::FnArg::Typed(pt)) if matches!(&*pt.ty, syn::Type::Reference(r) if r.mutability.is_some()))
}

/// `fn main` calling `f` on `args` and printing its result's numbers, then those of its
/// `&mut` arguments, one per line.
fn harness(f: &syn::ItemFn, args: &[Arg]) -> Result<String, String> {
    let name = &f.sig.ident;
    let mut lets = String::new();
    let mut passed = vec![];
    let mut after = String::new();
    for (k, (input, a)) in f.sig.inputs.iter().zip(args).enumerate() {
        let syn::FnArg::Typed(pt) = input else { return Err("a method".into()) };
        let (inner, reference) = match &*pt.ty {
            syn::Type::Reference(r) => (&*r.elem, Some(r.mutability.is_some())),
            t => (t, None),
        };
        let value = literal(inner, a)?;
        lets += &format!("    let mut a{k} = {value};\n");
        passed.push(match reference {
            Some(true) => {
                after += &format!("    for x in flat(&a{k}) {{ println!(\"{{x:?}}\"); }}\n");
                format!("&mut a{k}")
            }
            Some(false) => format!("&a{k}"),
            None => format!("a{k}"),
        });
    }
    let result = match &f.sig.output {
        syn::ReturnType::Default => String::new(),
        syn::ReturnType::Type(_, t) => match &**t {
            syn::Type::Tuple(tt) => {
                (0..tt.elems.len()).map(|i| format!("    println!(\"{{:?}}\", r.{i} as f64);\n")).collect()
            }
            syn::Type::Array(_) => "    for x in r { println!(\"{:?}\", x as f64); }\n".into(),
            _ => "    println!(\"{:?}\", r as f64);\n".into(),
        },
    };
    Ok(format!(
        "#[allow(unused_mut)]\nfn main() {{\n{lets}    let r = {name}({});\n{result}{after}}}\n\n{FLAT}",
        passed.join(", ")
    ))
}

/// Flattens what the harness prints after the call: numbers, rows of numbers.
const FLAT: &str = "trait Flat { fn flat_into(&self, out: &mut Vec<f64>); }
impl Flat for f64 { fn flat_into(&self, out: &mut Vec<f64>) { out.push(*self); } }
impl Flat for f32 { fn flat_into(&self, out: &mut Vec<f64>) { out.push(*self as f64); } }
impl<T: Flat> Flat for [T] { fn flat_into(&self, out: &mut Vec<f64>) { for x in self { x.flat_into(out); } } }
impl<T: Flat, const N: usize> Flat for [T; N] { fn flat_into(&self, out: &mut Vec<f64>) { self[..].flat_into(out); } }
impl<T: Flat> Flat for Vec<T> { fn flat_into(&self, out: &mut Vec<f64>) { self[..].flat_into(out); } }
fn flat<T: Flat + ?Sized>(x: &T) -> Vec<f64> { let mut v = vec![]; x.flat_into(&mut v); v }
";

/// A Rust expression of type `ty` (owned: a slice's is a `Vec`) holding `a`.
fn literal(ty: &syn::Type, a: &Arg) -> Result<String, String> {
    match (ty, a) {
        (syn::Type::Slice(s), Arg::Mem(_) | Arg::Rows(_)) => Ok(format!("vec!{}", literal_list(&s.elem, a)?)),
        (syn::Type::Array(t), Arg::Mem(_) | Arg::Rows(_)) => literal_list(&t.elem, a),
        (syn::Type::Path(p), Arg::Mem(_) | Arg::Rows(_)) if vec_elem(p).is_some() => {
            Ok(format!("vec!{}", literal_list(vec_elem(p).unwrap(), a)?))
        }
        (_, Arg::Scalar(v)) => Ok(scalar(v)),
        (t, _) => Err(format!("the harness does not write `{}`", quote::ToTokens::to_token_stream(t))),
    }
}

/// `[e0, e1, ..]` of elements of type `elem`.
fn literal_list(elem: &syn::Type, a: &Arg) -> Result<String, String> {
    let items: Vec<String> = match a {
        Arg::Mem(m) => m.iter().map(scalar).collect(),
        Arg::Rows(rs) => rs.iter().map(|r| literal(elem, r)).collect::<Result<_, _>>()?,
        _ => return Err("not memory".into()),
    };
    Ok(format!("[{}]", items.join(", ")))
}

fn vec_elem(p: &syn::TypePath) -> Option<&syn::Type> {
    let seg = p.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else { return None };
    match (seg.ident == "Vec", args.args.first()) {
        (true, Some(syn::GenericArgument::Type(t))) => Some(t),
        _ => None,
    }
}

/// A literal of the exact value.
fn scalar(v: &Val) -> String {
    match v {
        Val::F64(x) => format!("f64::from_bits({:#x})", x.to_bits()),
        Val::F32(x) => format!("f32::from_bits({:#x})", x.to_bits()),
        Val::Int(i, s) => format!("{i}{}", s.name()),
        Val::Bool(b) => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;

    /// Copies of an array, a tuple result, `&mut` memory and an integer parameter.
    const PROGRAM: &str = "fn f(x: &[f64], y: &mut [f64], q: &[[f64; 2]], a: f64, n: usize) -> (f64, f64) {
    let s = [x[0], a];
    let mut t = s;
    t[0] = 2.0 * a + q[1][0];
    y[1] = t[0] * s[0];
    (s[0] + n as f64, y[0].sin())
}";

    fn run(compiled: &str, lowered: &str) -> Result<Option<String>, String> {
        let oracle = Oracle::find().expect("rustc runs where the tests run");
        let src = Source::parse(lowered).unwrap();
        let p = crate::checker::prepare(&src, "f").unwrap();
        let f = Source::parse(compiled).unwrap().function("f").unwrap();
        let args = crate::inputs::random(&p.primal, &mut fastrand::Rng::with_seed(3), 4);
        oracle.compare(compiled, &p, &f, &args, "test")
    }

    #[test]
    fn a_faithful_lowering_agrees_with_rustc() {
        assert_eq!(run(PROGRAM, PROGRAM), Ok(None));
    }

    #[test]
    fn a_lowering_that_computes_something_else_is_reported() {
        // As if lowering had given `t` the memory of `s`.
        let aliased = PROGRAM.replace(
            "let mut t = s;\n    t[0] = 2.0 * a + q[1][0];",
            "let mut s = s;\n    s[0] = 2.0 * a + q[1][0];\n    let t = s;",
        );
        assert_ne!(aliased, PROGRAM);
        let why = run(PROGRAM, &aliased).unwrap().expect("a difference");
        assert!(why.contains("the primal as lowered (run by the interpreter) gives"), "{why}");
        assert!(why.contains("the primal compiled by rustc"), "{why}");
    }

    #[test]
    fn agreement_allows_rounding_only() {
        assert!(agree(1.0, 1.0 + 1e-12, false));
        assert!(!agree(1.0, 1.0 + 1e-6, false));
        assert!(agree(1.0, 1.0 + 1e-6, true));
        assert!(agree(f64::NAN, f64::NAN, false));
    }
}
