//! The code the attributes would generate for a program's `f`, all active, in reverse and
//! forward mode, must be Rust as it was meant: it parses, and no value `if` is read as a
//! statement. The checker runs derivatives as IR, so it cannot see code generation write
//! tokens that Rust reads another way (`i as f64 < x`, which opens generic arguments, and
//! `if c { 1.0 } else { 0.0 } * d`, two statements, were two).

use std::path::Path;

use cotan_expand::tools::all_active;
use cotan_expand::Mode;

/// Why `f`'s generated derivatives are not Rust, if they are not. `text` is written to
/// `file` first: the expansion reads the functions `f` calls from it.
pub fn problem(text: &str, primal: &cotan_ir::Function, file: &Path) -> Option<String> {
    let parsed: syn::File = syn::parse_str(text).ok()?;
    let f = parsed.items.into_iter().find_map(|i| match i {
        syn::Item::Fn(f) if f.sig.ident == "f" => Some(f),
        _ => None,
    })?;
    std::fs::write(file, text).ok()?;
    cotan_expand::set_source_file(std::fs::canonicalize(file).ok());
    let mut why = None;
    for mode in [Mode::Reverse, Mode::Forward] {
        let spec = all_active(primal, mode);
        let acts: Vec<&str> = spec.inputs.iter().chain(&spec.ret).map(|a| a.name()).collect();
        let Ok(attr) = format!("d_f, {}", acts.join(", ")).parse() else { continue };
        let problem = match cotan_expand::derivative_source(mode, attr, &f) {
            Err(e) => Some(format!("is not Rust: {e}")),
            Ok(code) => swallowed_value(&code),
        };
        if let Some(p) = problem {
            why = Some(format!("the {} derivative cotan generates for `f` {p}", mode_name(mode)));
            break;
        }
    }
    cotan_expand::set_source_file(None);
    let _ = std::fs::remove_file(file);
    why
}

/// An `if .. { value } else { value }` that Rust reads as a statement because more
/// follows it in its block (`if c { 1.0 } else { 0.0 } * d` is two statements): code
/// generation meant it as an operand.
fn swallowed_value(code: &str) -> Option<String> {
    use syn::visit::Visit;
    struct Find(Option<String>);
    impl<'ast> Visit<'ast> for Find {
        fn visit_block(&mut self, b: &'ast syn::Block) {
            let n = b.stmts.len();
            for s in b.stmts.iter().take(n.saturating_sub(1)) {
                if let syn::Stmt::Expr(syn::Expr::If(e), None) = s {
                    // A branch that ends in a plain value (a literal, a name, arithmetic;
                    // not a loop, a block or a call, which may be `()`).
                    let gives = |blk: &syn::Block| {
                        matches!(
                            blk.stmts.last(),
                            Some(syn::Stmt::Expr(
                                syn::Expr::Lit(_)
                                    | syn::Expr::Path(_)
                                    | syn::Expr::Binary(_)
                                    | syn::Expr::Unary(_)
                                    | syn::Expr::Paren(_)
                                    | syn::Expr::Cast(_)
                                    | syn::Expr::Field(_)
                                    | syn::Expr::Index(_),
                                None
                            ))
                        )
                    };
                    let else_gives = match e.else_branch.as_ref().map(|(_, x)| &**x) {
                        Some(syn::Expr::Block(x)) => gives(&x.block),
                        _ => false,
                    };
                    if gives(&e.then_branch) && else_gives && self.0.is_none() {
                        self.0 = Some(quote::ToTokens::to_token_stream(e).to_string());
                    }
                }
            }
            syn::visit::visit_block(self, b);
        }
    }
    let file: syn::File = syn::parse_str(code).ok()?;
    let mut find = Find(None);
    find.visit_file(&file);
    find.0.map(|e| format!("uses a value `{e}` as a statement (it was meant as an operand)"))
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Forward => "forward",
        Mode::Reverse => "reverse",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn primal(text: &str) -> cotan_ir::Function {
        let src = crate::source::Source::parse(text).unwrap();
        crate::checker::prepare(&src, "f").unwrap().primal
    }

    #[test]
    fn a_value_if_read_as_a_statement_is_found() {
        let bad = "fn r(v: f64, dret: f64) -> f64 { if v >= 0.0 { 1.0 } else { 0.0 } * dret }";
        assert!(swallowed_value(bad).is_some_and(|w| w.contains("as a statement")));
        let good = "fn r(v: f64, dret: f64) -> f64 { let mut s = 0.0; if v > 0.0 { s += v; } else { s -= v; } (if v >= 0.0 { 1.0 } else { 0.0 }) * dret + s }";
        assert_eq!(swallowed_value(good), None);
    }

    #[test]
    fn generated_code_with_casts_and_helpers_parses() {
        let text = "fn h(v: f64) -> f64 { v.clamp(0.0, 1.0) }\n\
                    fn f(x: &[f64], a: f64) -> f64 {\n\
                        let mut s = 0.0;\n\
                        for i in 0..x.len() { if (i as f64) < x[i] * a { s += h(x[i]); } }\n\
                        s\n\
                    }\n";
        let file = std::env::temp_dir().join(format!("cotan-generated-test-{}.rs", std::process::id()));
        assert_eq!(problem(text, &primal(text), &file), None);
        assert!(!file.exists(), "the program's file is removed");
    }
}
