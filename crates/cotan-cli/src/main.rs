//! `cotan`: works on Rust source files without compiling them, through cotan's own
//! libraries and the IR interpreter. It differentiates exactly as the macros do: the
//! derivatives come from `cotan_expand`, never from logic of its own.

mod checker;
mod fuzz;
mod inputs;
mod ir;
mod minimize;
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
    about = "Derivatives, IR, gradient checks, minimization and fuzzing of Rust source files"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Target {
    /// A Rust source file.
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
    /// Forward mode with these activities (`Dual,Dual` or space-separated).
    #[arg(long)]
    forward: Option<String>,
    /// Reverse mode with these activities (`Duplicated,Active` or space-separated).
    #[arg(long)]
    reverse: Option<String>,
}

#[derive(Args)]
struct PointArgs {
    /// The point, as JSON: an array with one entry per parameter, or an object by name.
    #[arg(long)]
    at: Option<String>,
    /// Random points to check when --at is not given.
    #[arg(long, default_value_t = 3)]
    trials: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Length of random slices.
    #[arg(long, default_value_t = 5)]
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
        /// Write the minimized program here.
        #[arg(short, long)]
        out: Option<String>,
    },
    /// Check random programs; minimize and save those that fail; exit 1 if any fails.
    Fuzz {
        #[arg(long, default_value_t = 100)]
        count: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Where failing programs (minimized) are written.
        #[arg(long, default_value = "fuzz-failures")]
        out: String,
        /// Print program number INDEX of this seed instead of checking.
        #[arg(long, value_name = "INDEX")]
        show: Option<usize>,
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
            let report = checker::check(&prepared, &points)?;
            print!("{}", checker::render(&report));
            Ok(if report.passed() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Minimize { target, point, out } => {
            let src = source::Source::load(&target.file)?;
            let points =
                checker::Points { at: point.at.as_deref(), trials: point.trials, seed: point.seed, len: point.len };
            let result = minimize::minimize(&src, &target.name, &points, true)?;
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
        Command::Fuzz { count, seed, out, show: None } => {
            let summary = fuzz::fuzz(count, seed, &out)?;
            Ok(if summary.failures == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}
