//! The macros' pipeline for tools that run derivatives in cotan's interpreter (the `cotan`
//! command, tests): a derivative with everything it calls, as IR.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use cotan_ad::{Mode, Spec};
use cotan_ir::Function;

use crate::program::{Program, Rule};
use crate::sources::Sources;

/// The sources a function is differentiated in: a file of a crate (whose other files are
/// read too), or one file's text in memory.
#[derive(Clone)]
pub struct SourceSet {
    src: Option<Rc<Sources>>,
    file: Option<PathBuf>,
}

impl SourceSet {
    /// The crate of the file at `path` (the file alone outside a Cargo package).
    pub fn file(path: &Path) -> SourceSet {
        SourceSet { src: Sources::for_file(path), file: Some(path.to_path_buf()) }
    }

    /// One file's text, alone.
    pub fn text(text: &str) -> SourceSet {
        let name = PathBuf::from("<memory>.rs");
        SourceSet { src: Sources::from_text(&name, text).map(Rc::new), file: Some(name) }
    }

    /// No sources: calls of other functions cannot be differentiated or run.
    pub fn none() -> SourceSet {
        SourceSet { src: None, file: None }
    }
}

/// A function (primal or derivative) with what it calls, ready for the interpreter.
pub struct Derivation {
    pub function: Function,
    program: RefCell<Program>,
}

impl cotan_ir::Callees for Derivation {
    fn function(&self, path: &str) -> Result<Rc<Function>, String> {
        self.program.borrow_mut().runnable(path)
    }
}

fn program(set: &SourceSet, func: &syn::ItemFn, lowered: &mut cotan_syntax::Lowered) -> syn::Result<Program> {
    crate::program_at(lowered, Rule::Body, place(set, func))
}

fn place(set: &SourceSet, func: &syn::ItemFn) -> crate::Place {
    crate::place_in(func, set.src.clone(), set.file.clone())
}

/// `func` lowered as the macros lower it, with the crate's constants and structs of `set`.
pub fn lower(set: &SourceSet, func: &syn::ItemFn) -> syn::Result<cotan_syntax::Lowered> {
    crate::lower_root_at(func, &place(set, func))
}

/// `func` as written, with the functions it calls (parsed from `set`, so that its spans
/// give its lines there).
pub fn primal(set: &SourceSet, func: &syn::ItemFn) -> syn::Result<Derivation> {
    let mut lowered = lower(set, func)?;
    let program = program(set, func, &mut lowered)?;
    Ok(Derivation { function: lowered.func, program: RefCell::new(program) })
}

/// `func` differentiated with `spec` into a function named `name`, exactly as the macros do,
/// with the derivatives it calls.
pub fn derivation(set: &SourceSet, func: &syn::ItemFn, spec: &Spec, name: &str) -> syn::Result<Derivation> {
    transform(set, func, spec, name, true)
}

/// [`derivation`], with the derivative as the transform made it (before simplification)
/// unless `simplify`.
pub fn transform(
    set: &SourceSet,
    func: &syn::ItemFn,
    spec: &Spec,
    name: &str,
    simplify: bool,
) -> syn::Result<Derivation> {
    let mut lowered = lower(set, func)?;
    cotan_ad::check(&lowered.func, spec).map_err(|e| syn::Error::new(func.sig.ident.span(), e.message))?;
    let mut program = program(set, func, &mut lowered)?;
    program.reserve(name);
    let function = if simplify {
        crate::differentiate(&lowered, spec, name, &mut program)?
    } else {
        match spec.mode {
            Mode::Forward => cotan_ad::forward(&lowered.func, spec, name, &mut program),
            Mode::Reverse => cotan_ad::reverse(&lowered.func, spec, name, &mut program),
        }
        .map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?
    };
    program.check_visibility().map_err(|e| syn::Error::new(func.sig.ident.span(), e))?;
    Ok(Derivation { function, program: RefCell::new(program) })
}

/// The spec with every float argument and the result active (`Dual`, or `Active` and
/// `Duplicated`), as `cotan check` differentiates.
pub fn all_active(f: &Function, mode: Mode) -> Spec {
    let active = |t: cotan_ir::Ty| match (t, mode) {
        (t, _) if !t.carries_derivative() => cotan_ad::Activity::Const,
        (_, Mode::Forward) => cotan_ad::Activity::Dual,
        (cotan_ir::Ty::Scalar(_), Mode::Reverse) => cotan_ad::Activity::Active,
        (cotan_ir::Ty::Mem(_), Mode::Reverse) => cotan_ad::Activity::Duplicated,
    };
    let inputs = f.params.iter().map(|p| active(f.ty(*p))).collect();
    let ret = f.returns.first().map(|t| if t.is_float() { active(*t) } else { cotan_ad::Activity::Const });
    Spec { mode, inputs, ret, width: 1 }
}

/// Forward mode over the all-active reverse derivative of `func` (second order): every
/// float parameter of the reverse derivative (the function's and their shadows) is `Dual`,
/// the seed of the result constant. Its tangents are Hessian-vector products.
pub fn second_order(set: &SourceSet, func: &syn::ItemFn, name: &str) -> syn::Result<Derivation> {
    let mut lowered = lower(set, func)?;
    let spec = all_active(&lowered.func, Mode::Reverse);
    let mut program = program(set, func, &mut lowered)?;
    program.reserve(name);
    let rev = crate::differentiate(&lowered, &spec, &format!("{name}_gradient"), &mut program)?;
    let seeds = usize::from(lowered.func.returns.first().is_some_and(|t| t.is_float()));
    let mut fwd = all_active(&rev, Mode::Forward);
    let n = fwd.inputs.len();
    for a in &mut fwd.inputs[n - seeds..] {
        *a = cotan_ad::Activity::Const;
    }
    let rev_lowered =
        cotan_syntax::Lowered { func: rev, spans: lowered.spans.clone(), assumed_int: vec![], ret_shape: None };
    let function = crate::differentiate(&rev_lowered, &fwd, name, &mut program)?;
    program.check_visibility().map_err(|e| syn::Error::new(func.sig.ident.span(), e))?;
    Ok(Derivation { function, program: RefCell::new(program) })
}
