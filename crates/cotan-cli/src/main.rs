//! `cotan`: works on Rust source files without compiling them, through cotan's own
//! libraries and the IR interpreter. It differentiates exactly as the macros do: the
//! derivatives come from `cotan_expand`, never from logic of its own.

mod checker;
mod fuzz;
mod generated;
mod inputs;
mod ir;
mod minimize;
mod oracle;
mod progress;
mod source;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Bad input or an unsupported function: exit code 2.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl CliError {
    pub fn new(msg: impl Into<String>) -> CliError {
        CliError(msg.into())
    }
    pub fn lowering(name: &str, e: &syn::Error) -> CliError {
        let at = e.span().start();
        CliError(format!("cotan cannot lower `{name}` (line {}, column {}): {e}", at.line, at.column + 1))
    }
}

#[derive(Parser)]
#[command(
    name = "cotan",
    version,
    about = "Derivatives, IR, gradient checks, minimization and fuzzing of Rust source files",
    long_about = "Derivatives, IR, gradient checks, minimization and fuzzing of Rust source files.\n\n\
        cotan reads a Rust file without compiling it, lowers and differentiates its functions exactly \
        as cotan's attributes do, and runs them in cotan's IR interpreter. Calls to other functions \
        of the file's crate are followed.",
    after_help = "Exit status: 0 when the derivatives agree (or the command succeeded), 1 when a check \
        or a fuzzed program fails, 2 on bad input (a file that does not parse, a missing function, \
        JSON that does not fit, a construct cotan does not support).\n\n\
        Long work (check with several random points, minimize, fuzz) shows a progress bar on \
        standard error when it is a terminal, and nothing otherwise. Output has no colour."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Target {
    /// A Rust source file (the other files of its crate are read for the functions it calls).
    #[arg(value_name = "FILE")]
    file: String,
    /// The function: its name (`loss`), or a path that ends with it, for a method or an
    /// associated function of an `impl` block (`Layer::out`) or a function in a module
    /// (`model::energy`, `model::Layer::out`). A name several functions have must be a path.
    /// A method's receiver is the argument `self` (`--at '{"self": {..}, "x": [..]}'`).
    #[arg(long = "fn", value_name = "NAME|PATH")]
    name: String,
}

#[derive(Args)]
#[group(multiple = false)]
struct Activities {
    /// Forward mode with these activities, one per parameter then the result's, as in
    /// `#[autodiff_forward]` (`Dual,Dual`, or space-separated).
    #[arg(long, value_name = "ACTIVITIES")]
    forward: Option<String>,
    /// Reverse mode with these activities, one per parameter then the result's, as in
    /// `#[autodiff_reverse]` (`Duplicated,Active`, or space-separated).
    #[arg(long, value_name = "ACTIVITIES")]
    reverse: Option<String>,
}

#[derive(Args)]
struct PointArgs {
    /// The point, as JSON: an array with one entry per parameter, or an object by name
    /// (`'[[0.5, 1.0], 2.0]'`, `'{"x": [0.5, 1.0], "k": 2.0}'`; a struct is an object of its
    /// fields, a tuple's fields are "0", "1", ...). Without it, random points are drawn.
    #[arg(long, value_name = "JSON")]
    at: Option<String>,
    /// How many random points to check when --at is not given (stops at the first failure).
    #[arg(long, default_value_t = 3, value_name = "N")]
    trials: usize,
    /// Seed of the random points (and of the random directions of the tests).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Length of the random slices and vectors passed to slice parameters.
    #[arg(long, default_value_t = 5, value_name = "N")]
    len: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Print the derivative an attribute would generate, formatted.
    Emit {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        acts: Activities,
    },
    /// Print the IR of a function at a stage.
    Ir {
        #[command(flatten)]
        target: Target,
        /// Which IR: as lowered from Rust, the forward or reverse derivative, or the
        /// derivative after optimization (the forward and reverse stages need activities).
        #[arg(long, value_enum, default_value_t = ir::Stage::Lowered)]
        stage: ir::Stage,
        #[command(flatten)]
        acts: Activities,
    },
    /// Compare reverse mode, forward mode and finite differences; exit 1 when they disagree.
    Check {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        point: PointArgs,
    },
    /// Reduce a program whose check fails to a small one that fails the same way.
    Minimize {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        point: PointArgs,
        /// Also write the minimized program to this file (it is always printed).
        #[arg(short, long, value_name = "FILE")]
        out: Option<String>,
    },
    /// Check random programs; minimize and save those that fail; exit 1 if any fails.
    Fuzz {
        /// How many random programs to generate and check.
        #[arg(long, default_value_t = 100, value_name = "N")]
        count: usize,
        /// Seed of the run: the same seed gives the same programs.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The directory where failing programs (minimized) are written.
        #[arg(long, default_value = "fuzz-failures", value_name = "DIR")]
        out: String,
        /// Print program number INDEX of this seed instead of checking.
        #[arg(long, value_name = "INDEX")]
        show: Option<usize>,
        /// Do not compile each program with rustc to compare its results with the lowered
        /// function's (faster; the gradient check alone cannot see a lowering that changes
        /// what the function computes).
        #[arg(long)]
        no_rustc: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", e.0);
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Emit { target, acts } => {
            let src = source::Source::load(&target.file)?;
            print!("{}", ir::emit(&src, &target.name, acts.forward.as_deref(), acts.reverse.as_deref())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Ir { target, stage, acts } => {
            let src = source::Source::load(&target.file)?;
            print!("{}", ir::ir(&src, &target.name, stage, acts.forward.as_deref(), acts.reverse.as_deref())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { target, point } => {
            let src = source::Source::load(&target.file)?;
            let prepared = checker::prepare(&src, &target.name)?;
            let points =
                checker::Points { at: point.at.as_deref(), trials: point.trials, seed: point.seed, len: point.len };
            if point.at.is_none() {
                progress::start_check(point.trials);
            }
            let report = checker::check(&prepared, &points);
            progress::finish_check();
            let report = report?;
            print!("{}", checker::render(&report));
            Ok(if report.passed() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Minimize { target, point, out } => {
            let src = source::Source::load(&target.file)?;
            let points =
                checker::Points { at: point.at.as_deref(), trials: point.trials, seed: point.seed, len: point.len };
            let result = minimize::minimize(&src, &target.name, &points, progress::enabled())?;
            print!("{}", minimize::render(&result));
            if let Some(path) = out {
                std::fs::write(&path, &result.program)
                    .map_err(|e| CliError::new(format!("cannot write `{path}`: {e}")))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Fuzz { show: Some(index), seed, .. } => {
            print!("{}", fuzz::program(seed, index));
            Ok(ExitCode::SUCCESS)
        }
        Command::Fuzz { count, seed, out, show: None, no_rustc } => {
            let summary = fuzz::fuzz(count, seed, &out, !no_rustc)?;
            Ok(if summary.failures == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn every_command_and_option_has_help_text() {
        let cli = super::Cli::command();
        cli.clone().debug_assert();
        let mut missing = vec![];
        for sub in cli.get_subcommands() {
            if sub.get_about().is_none() {
                missing.push(format!("cotan {}", sub.get_name()));
            }
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str();
                if id != "help" && id != "version" && arg.get_help().is_none() {
                    missing.push(format!("cotan {} {id}", sub.get_name()));
                }
            }
        }
        assert!(missing.is_empty(), "without help text: {missing:?}");
    }
}
