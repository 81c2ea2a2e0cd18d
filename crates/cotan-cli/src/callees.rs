//! The interpreter's view of the other functions of the file: a call of `NAME` runs the
//! lowered `fn NAME`, and a call of a hidden variant `__cotan_{fwd,rev}_NAME_m{mask}` runs
//! what the macros would generate for it: the derivative from `cotan_expand` with
//! `variant_spec`, or, for custom and zero derivatives, the wrappers that
//! `cotan_expand::custom_derivative`/`zero_derivative` write, lowered like user code.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use cotan_expand::Mode;
use cotan_ir::Function;
use quote::ToTokens;

use crate::source::{attr_args, attr_name};

pub struct FileCallees {
    fns: HashMap<String, syn::ItemFn>,
    cache: RefCell<HashMap<String, Result<Rc<Function>, String>>>,
}

impl FileCallees {
    pub fn new(fns: &[syn::ItemFn]) -> FileCallees {
        let fns = fns.iter().map(|f| (f.sig.ident.to_string(), f.clone())).collect();
        FileCallees { fns, cache: RefCell::new(HashMap::new()) }
    }

    fn build(&self, name: &str) -> Result<Function, String> {
        if let Some(rest) = name.strip_prefix("__cotan_fwd_") {
            return self.variant(rest, Mode::Forward, name);
        }
        if let Some(rest) = name.strip_prefix("__cotan_rev_") {
            return self.variant(rest, Mode::Reverse, name);
        }
        let f = self.fns.get(name).ok_or_else(|| format!("the file has no function `{name}`"))?;
        let lowered = cotan_syntax::lower_fn_with_tuples(&f.sig, &f.block).map_err(|e| format!("`{name}`: {e}"))?;
        Ok(lowered.func)
    }

    /// `rest` is `NAME_m{mask}`.
    fn variant(&self, rest: &str, mode: Mode, full: &str) -> Result<Function, String> {
        let (base, mask) = rest.rsplit_once("_m").ok_or_else(|| format!("`{full}` is not a variant name"))?;
        let f = self.fns.get(base).ok_or_else(|| format!("the file has no function `{base}` (called as `{full}`)"))?;
        if let Some(wrapper) = custom_wrapper(f, full)? {
            let lowered = cotan_syntax::lower_fn_with_tuples(&wrapper.sig, &wrapper.block)
                .map_err(|e| format!("the custom-derivative wrapper `{full}`: {e}"))?;
            return Ok(lowered.func);
        }
        let mut lowered = cotan_syntax::lower_fn(&f.sig, &f.block).map_err(|e| format!("`{base}`: {e}"))?;
        // As `cotan_expand` does before generating the callable variants.
        cotan_ir::simplify::cse(&mut lowered.func);
        let spec = cotan_expand::variant_spec(&lowered.func, mode, mask);
        cotan_expand::differentiate(&lowered, &spec, full).map_err(|e| format!("`{full}`: {e}"))
    }
}

/// The wrapper a custom or zero derivative generates under the name `variant`, if `f` has one.
fn custom_wrapper(f: &syn::ItemFn, variant: &str) -> Result<Option<syn::ItemFn>, String> {
    let tokens = if let Some(args) = attr_args(f, "custom_derivative") {
        cotan_expand::custom_derivative(args, strip_cotan(f).into_token_stream())
    } else if f.attrs.iter().any(|a| attr_name(a) == "zero_derivative") {
        cotan_expand::zero_derivative(proc_macro2::TokenStream::new(), strip_cotan(f).into_token_stream())
    } else {
        return Ok(None);
    };
    let file: syn::File = syn::parse2(tokens).map_err(|e| format!("`{}`: {e}", f.sig.ident))?;
    for item in file.items {
        match item {
            syn::Item::Fn(w) if w.sig.ident == variant => return Ok(Some(w)),
            syn::Item::Macro(m) => {
                // `compile_error!(...)`: the attribute itself was rejected.
                return Err(format!("`{}`: {}", f.sig.ident, m.mac.tokens));
            }
            _ => {}
        }
    }
    Err(format!("`{}` has a custom derivative without a rule for `{variant}`", f.sig.ident))
}

fn strip_cotan(f: &syn::ItemFn) -> syn::ItemFn {
    let mut f = f.clone();
    f.attrs.retain(|a| !matches!(attr_name(a).as_str(), "custom_derivative" | "zero_derivative"));
    f
}

impl cotan_ir::Callees for FileCallees {
    fn function(&self, path: &str) -> Result<Rc<Function>, String> {
        let name = path.rsplit("::").next().unwrap_or(path).to_string();
        if let Some(r) = self.cache.borrow().get(&name) {
            return r.clone();
        }
        let r = self.build(&name).map(Rc::new);
        self.cache.borrow_mut().insert(name, r.clone());
        r
    }
}
