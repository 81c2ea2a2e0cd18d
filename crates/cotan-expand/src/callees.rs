//! Callees that cannot be differentiated, found before rustc does. A proc macro sees one
//! function; for a call of `g` from differentiated code, rustc would only say that
//! `__cotan_rev_g_m1` does not exist. So the macro reads the source file it expands in
//! (`Span::local_file`) and, when `g` is defined there without any cotan attribute that
//! gives the needed mode, reports the call with the two remedies.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use cotan_ad::Mode;

thread_local! {
    static FILE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    static PARSED: RefCell<HashMap<PathBuf, Rc<Vec<Defined>>>> = RefCell::new(HashMap::new());
}

/// The file the attribute being expanded is in (from the compiler, `None` for tools).
pub fn set_source_file(path: Option<PathBuf>) {
    FILE.with(|f| *f.borrow_mut() = path);
}

/// A function of the file and the modes its attributes make callable.
struct Defined {
    name: String,
    forward: bool,
    reverse: bool,
}

fn attr_modes(attrs: &[syn::Attribute]) -> (bool, bool) {
    let (mut fwd, mut rev) = (false, false);
    for a in attrs {
        let name = crate::attr_name(a);
        match name.as_str() {
            "differentiable" | "zero_derivative" => (fwd, rev) = (true, true),
            "autodiff_forward" => fwd = true,
            "autodiff_reverse" | "hvp" | "hessian" => rev = true,
            "custom_derivative" => {
                let text = quote::ToTokens::to_token_stream(&a.meta).to_string();
                fwd |= text.contains("forward");
                rev |= text.contains("reverse");
            }
            _ => {}
        }
    }
    (fwd, rev)
}

fn collect(items: &[syn::Item], out: &mut Vec<Defined>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => {
                let (forward, reverse) = attr_modes(&f.attrs);
                out.push(Defined { name: f.sig.ident.to_string(), forward, reverse });
            }
            syn::Item::Impl(i) => {
                for it in &i.items {
                    if let syn::ImplItem::Fn(f) = it {
                        let (forward, reverse) = attr_modes(&f.attrs);
                        out.push(Defined { name: f.sig.ident.to_string(), forward, reverse });
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect(items, out);
                }
            }
            // A name brought in from elsewhere may be the one called: no claim about it.
            syn::Item::Use(u) => {
                let text = quote::ToTokens::to_token_stream(&u.tree).to_string();
                for word in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
                    out.push(Defined { name: word.to_string(), forward: true, reverse: true });
                }
            }
            _ => {}
        }
    }
}

fn defined_in_file() -> Option<Rc<Vec<Defined>>> {
    let path = FILE.with(|f| f.borrow().clone())?;
    PARSED.with(|p| {
        if let Some(d) = p.borrow().get(&path) {
            return Some(d.clone());
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let file = syn::parse_file(&text).ok()?;
        let mut defs = vec![];
        collect(&file.items, &mut defs);
        let defs = Rc::new(defs);
        p.borrow_mut().insert(path, defs.clone());
        Some(defs)
    })
}

/// An error at the first call, in `f`, of a function of this file that has no derivative
/// in `mode`.
pub(crate) fn check(lowered: &cotan_syntax::Lowered, mode: Mode) -> syn::Result<()> {
    let Some(defs) = defined_in_file() else { return Ok(()) };
    let mut found = Ok(());
    lowered.func.walk(&mut |op| {
        let cotan_ir::OpKind::Call { callee, .. } = &op.kind else { return };
        let name = callee.rsplit("::").next().unwrap_or(callee);
        if found.is_err() || name.starts_with("__cotan_") {
            return;
        }
        let same: Vec<&Defined> = defs.iter().filter(|d| d.name == name).collect();
        let callable = |d: &&Defined| if mode == Mode::Forward { d.forward } else { d.reverse };
        if same.is_empty() || same.iter().any(callable) {
            return;
        }
        let marked = same.iter().any(|d| d.forward || d.reverse);
        let message = if marked {
            format!(
                "`{name}` has no {} derivative, which this call needs: mark it `#[cotan::differentiable]` (both modes), or give it a custom derivative for this mode",
                if mode == Mode::Forward { "forward-mode" } else { "reverse-mode" }
            )
        } else {
            format!("cotan cannot differentiate through `{name}`: mark it `#[cotan::differentiable]`, or give it `#[cotan::custom_derivative(forward = .., reverse = ..)]` (or `#[cotan::zero_derivative]` for a constant)")
        };
        found = Err(syn::Error::new(lowered.span(op.span), message));
    });
    found
}
