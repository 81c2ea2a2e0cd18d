//! `cotan emit` (the derivative's Rust, as `cargo expand` shows it) and `cotan ir` (the IR
//! text at one stage of the pipeline).

use cotan_ad::{Activity, Spec};
use cotan_expand::Mode;
use proc_macro2::TokenStream;

use crate::source::{attr_args, Source};
use crate::CliError;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Stage {
    /// Right after lowering.
    Lowered,
    /// The forward transform, before simplification.
    Forward,
    /// The reverse transform, before simplification.
    Reverse,
    /// The derivative as code generation receives it (after CSE and dead-code removal).
    Optimized,
}

/// Activity names from `Duplicated,Active` or `Duplicated Active`.
fn split(acts: &str) -> Vec<String> {
    acts.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn mode_attr(mode: Mode) -> &'static str {
    match mode {
        Mode::Forward => "autodiff_forward",
        Mode::Reverse => "autodiff_reverse",
    }
}

/// The mode and activities asked for on the command line, if any.
fn requested(forward: Option<&str>, reverse: Option<&str>) -> Option<(Mode, Vec<String>)> {
    match (forward, reverse) {
        (Some(a), _) => Some((Mode::Forward, split(a))),
        (_, Some(a)) => Some((Mode::Reverse, split(a))),
        _ => None,
    }
}

fn check_names(acts: &[String]) -> Result<(), CliError> {
    for a in acts {
        if Activity::from_name(a).is_none() && a.parse::<usize>().is_err() {
            let all: Vec<&str> = Activity::ALL.iter().map(|a| a.name()).collect();
            return Err(CliError::new(format!("unknown activity `{a}`; the activities are {}", all.join(", "))));
        }
    }
    Ok(())
}

/// The attribute's arguments (`NAME, ACTS...`): from the command line (named `d_NAME`, or as
/// the file's attribute of that mode names it), else from the file's attribute.
fn attribute(f: &syn::ItemFn, forward: Option<&str>, reverse: Option<&str>) -> Result<(Mode, TokenStream), CliError> {
    if let Some((mode, acts)) = requested(forward, reverse) {
        check_names(&acts)?;
        let name = attr_args(f, mode_attr(mode))
            .and_then(|t| t.into_iter().next().map(|tt| tt.to_string()))
            .unwrap_or_else(|| format!("d_{}", f.sig.ident));
        let text = std::iter::once(name).chain(acts).collect::<Vec<_>>().join(", ");
        let tokens = text.parse().map_err(|e| CliError::new(format!("bad activities `{text}`: {e}")))?;
        return Ok((mode, tokens));
    }
    for mode in [Mode::Reverse, Mode::Forward] {
        if let Some(t) = attr_args(f, mode_attr(mode)) {
            return Ok((mode, t));
        }
    }
    Err(CliError::new(format!(
        "`{}` has no autodiff attribute; give --forward ACTIVITIES or --reverse ACTIVITIES",
        f.sig.ident
    )))
}

pub fn emit(src: &Source, name: &str, forward: Option<&str>, reverse: Option<&str>) -> Result<String, CliError> {
    let f = src.function(name)?;
    let (mode, attr) = attribute(&f, forward, reverse)?;
    cotan_expand::derivative_source(mode, attr, &f).map_err(|e| CliError::lowering(name, &e))
}

/// The spec for the forward/reverse stages: the command line's, the attribute's, or all active.
fn spec(
    f: &syn::ItemFn,
    ir: &cotan_ir::Function,
    mode: Option<Mode>,
    forward: Option<&str>,
    reverse: Option<&str>,
) -> Result<Spec, CliError> {
    let from_attr = || {
        let m = mode?;
        let t = attr_args(f, mode_attr(m))?;
        Some((m, t.to_string().split(',').skip(1).map(|s| s.trim().to_string()).collect::<Vec<_>>()))
    };
    let Some((mode, mut acts)) = requested(forward, reverse).or_else(from_attr) else {
        let mode = mode.unwrap_or(Mode::Reverse);
        return Ok(cotan_expand::tools::all_active(ir, mode));
    };
    check_names(&acts)?;
    let mut width = 1;
    if let Some(w) = acts.first().and_then(|a| a.parse::<usize>().ok()) {
        width = w;
        acts.remove(0);
    }
    let parsed: Vec<Activity> = acts.iter().filter_map(|a| Activity::from_name(a)).collect();
    let n = ir.params.len();
    let (inputs, ret) = if parsed.len() > n { (parsed[..n].to_vec(), Some(parsed[n])) } else { (parsed, None) };
    let spec = Spec { mode, inputs, ret, width };
    cotan_ad::check(ir, &spec)
        .map_err(|e| CliError::new(format!("activities do not fit `{}`: {}", ir.name, e.message)))?;
    Ok(spec)
}

pub fn ir(
    src: &Source,
    name: &str,
    stage: Stage,
    forward: Option<&str>,
    reverse: Option<&str>,
) -> Result<String, CliError> {
    let f = src.function(name)?;
    let mut lowered = cotan_expand::tools::lower(&src.set, &f).map_err(|e| CliError::lowering(name, &e))?;
    if stage == Stage::Lowered {
        return Ok(cotan_ir::print(&lowered.func));
    }
    cotan_ir::simplify::cse(&mut lowered.func);
    let mode = match stage {
        Stage::Forward => Some(Mode::Forward),
        Stage::Reverse => Some(Mode::Reverse),
        _ if forward.is_some() => Some(Mode::Forward),
        _ if reverse.is_some() => Some(Mode::Reverse),
        _ => None,
    };
    let spec = spec(&f, &lowered.func, mode, forward, reverse)?;
    let dname = format!("d_{}", f.sig.ident);
    let simplify = stage == Stage::Optimized;
    let derived = cotan_expand::tools::transform(&src.set, &f, &spec, &dname, simplify)
        .map_err(|e| CliError::new(format!("cotan cannot differentiate `{name}`: {e}")))?;
    Ok(cotan_ir::print(&derived.function))
}
