//! The code the attributes would generate for a program's `f`, all active, in reverse and
//! forward mode, must be Rust that parses as written. The checker runs derivatives as IR,
//! so it cannot see code generation write tokens that Rust reads another way (`i as f64 <
//! x`, which opens generic arguments, was one).

use std::path::Path;

use cotan_expand::tools::all_active;
use cotan_expand::Mode;

/// Why `f`'s generated derivatives are not Rust, if they are not. `text` is written to
/// `file` first: the expansion reads the functions `f` calls from it.
pub fn problem(text: &str, primal: &cotan_ir::Function, file: &Path) -> Option<String> {
    std::fs::write(file, text).ok()?;
    let path = std::fs::canonicalize(file).ok()?;
    cotan_expand::set_source_file(Some(path));
    let parsed: syn::File = syn::parse_str(text).ok()?;
    let f = parsed.items.into_iter().find_map(|i| match i {
        syn::Item::Fn(f) if f.sig.ident == "f" => Some(f),
        _ => None,
    })?;
    let mut why = None;
    for mode in [Mode::Reverse, Mode::Forward] {
        let spec = all_active(primal, mode);
        let acts: Vec<&str> = spec.inputs.iter().chain(&spec.ret).map(|a| a.name()).collect();
        let Ok(attr) = format!("d_f, {}", acts.join(", ")).parse() else { continue };
        if let Err(e) = cotan_expand::derivative_source(mode, attr, &f) {
            why = Some(format!("the {} derivative cotan generates for `f` is not Rust: {e}", mode_name(mode)));
            break;
        }
    }
    cotan_expand::set_source_file(None);
    let _ = std::fs::remove_file(file);
    why
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
