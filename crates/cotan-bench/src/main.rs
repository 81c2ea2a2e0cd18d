//! The benchmark runner: `cargo run --release -p cotan-bench --features peers,plot -- [--quick] [--json FILE] [--svg FILE]`.

use clap::Parser;
use cotan_bench::bench::{self, Budget, CountingAlloc, Rng};
use cotan_bench::{report, rows};
use std::time::Instant;

/// A scaling table's key (for `--rows`) and its function.
type ScalingTable = (&'static str, fn(Budget) -> String);

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Derivative cost against the primal and against peers, measured side by side.
#[derive(Parser)]
#[command(name = "cotan-bench")]
struct Args {
    /// Fewer samples per cell (the same rows and sizes); under a minute.
    #[arg(long)]
    quick: bool,
    /// Write the figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Draw the ratios as an SVG chart to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<String>,
    /// Only rows whose name contains one of these (comma-separated); the scaling tables
    /// are named scaling_fft, scaling_gmm and scaling_lstm (`--rows scaling` for the three),
    /// the checkpointing table `checkpointing`.
    #[arg(long, value_delimiter = ',')]
    rows: Vec<String>,
    /// Also measure compile time: clean release builds of the models with and without
    /// the attributes, and the macro expansion time per function.
    #[arg(long)]
    compile_time: bool,
    /// Only the compile-time measurement (no timing of the rows).
    #[arg(long)]
    compile_time_only: bool,
    /// Print the code cotan generates for the named function (e.g. `gmm_rev`) and exit.
    #[arg(long, value_name = "NAME")]
    show: Option<String>,
    /// Print the code cotan generates for every attribute in a Rust source file and exit.
    #[arg(long, value_name = "FILE")]
    expand_file: Option<String>,
}

fn main() {
    let args = Args::parse();
    if let Some(name) = &args.show {
        match cotan_bench::expand::show(name) {
            Some(code) => println!("{code}"),
            None => {
                eprintln!("no generated function named `{name}` in the models");
                std::process::exit(1);
            }
        }
        return;
    }
    if let Some(path) = &args.expand_file {
        match cotan_bench::expand::show_file(path) {
            Ok(code) => println!("{code}"),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let command =
        format!("cargo run --release -p cotan-bench --features peers,plot -- {command}").trim_end().to_string();
    let mut out = String::new();
    let mut failed = false;
    let mut results = vec![];
    if !args.compile_time_only {
        let budget = if args.quick { Budget::quick() } else { Budget::full() };
        let t0 = Instant::now();
        for (k, (name, make)) in rows::all().into_iter().enumerate() {
            if !args.rows.is_empty() && !args.rows.iter().any(|f| name.contains(f.as_str())) {
                continue;
            }
            let seed = 0xC07A_u64 + k as u64;
            let row = make(&mut Rng::new(seed));
            let t = Instant::now();
            let r = bench::run_row(&row, budget, seed);
            let worst = r.check_errors.iter().map(|e| e.1).fold(0.0, f64::max);
            eprintln!(
                "{name:<24} primal {:>10}  checked (worst relative error {worst:.1e})  {:.1} s",
                report::format_ns(r.primal_ns),
                t.elapsed().as_secs_f64()
            );
            failed |= r.cells.iter().any(|c| matches!(c.1, bench::Cell::Failed(_)));
            results.push(r);
        }
        eprintln!("measured in {:.0} s", t0.elapsed().as_secs_f64());
        out.push_str(&report::markdown(&results));
        out.push_str("\nTargets (goals, not assertions):\n\n");
        out.push_str(&report::targets(&results));
        // The scaling tables: all of them, or those whose key a row filter is part of
        // (`--rows fft`, `--rows scaling` for the three).
        let tables: [ScalingTable; 3] = [
            ("scaling_fft", cotan_bench::scaling::fft_table),
            ("scaling_gmm", cotan_bench::scaling::gmm_table),
            ("scaling_lstm", cotan_bench::scaling::lstm_table),
        ];
        let mut first = true;
        for (key, table) in tables {
            if !args.rows.is_empty() && !args.rows.iter().any(|r| key.contains(r.as_str())) {
                continue;
            }
            if first {
                out.push_str("\nScaling (ratios to the primal, one run per size):\n");
                first = false;
            }
            let t = Instant::now();
            let table = table(budget);
            eprintln!("{key:<24} {:.1} s", t.elapsed().as_secs_f64());
            failed |= table.contains("FAILED");
            out.push('\n');
            out.push_str(&table);
        }
    }
    // The checkpointing table: in a full run, or asked for by `--rows` (it takes about 80 s
    // and 2 GB at its peak, so `--quick` leaves it out unless asked).
    let asked = args.rows.iter().any(|r| "checkpointing".contains(r.as_str()));
    if !args.compile_time_only && (asked || (args.rows.is_empty() && !args.quick)) {
        let t = Instant::now();
        let table = cotan_bench::checkpointing::table(args.quick);
        eprintln!("{:<24} {:.1} s", "checkpointing", t.elapsed().as_secs_f64());
        failed |= table.contains("FAILED");
        out.push_str(
            "\nCheckpointing (one loop of 10⁵ steps; whole record against `cotan::checkpoint` schedules):\n\n",
        );
        out.push_str(&table);
    }
    // The kernels table (CPU threads): in a full or quick run, or asked for by `--rows kernels`.
    let asked = args.rows.iter().any(|r| "kernels".contains(r.as_str()));
    if !args.compile_time_only && (asked || args.rows.is_empty()) {
        let t = Instant::now();
        let budget = if args.quick { Budget::quick() } else { Budget::full() };
        let table = cotan_bench::kernels::table(budget, args.quick);
        eprintln!("{:<24} {:.1} s", "kernels", t.elapsed().as_secs_f64());
        failed |= table.contains("FAILED");
        out.push_str("\nKernels on CPU threads (`#[cotan::kernel]` against the same function without it):\n\n");
        out.push_str(&table);
    }
    if args.compile_time || args.compile_time_only {
        out.push_str("\nCompile time:\n\n");
        out.push_str(&cotan_bench::expand::expansion_table());
        match cotan_bench::compile_time::measure() {
            Ok(t) => out.push_str(&t),
            Err(e) => out.push_str(&format!("\nclean-build comparison failed: {e}\n")),
        }
    }
    println!("{out}");
    if let Some(path) = &args.json {
        let figures = report::Figures {
            command: command.clone(),
            date: report::today_utc(),
            quick: args.quick,
            results: report::records(&results),
        };
        std::fs::write(path, serde_json::to_string_pretty(&figures).unwrap()).expect("cannot write the JSON file");
    }
    if let Some(path) = &args.svg {
        if let Err(e) = report::svg(&results, path) {
            eprintln!("cannot draw the SVG: {e}");
            std::process::exit(2);
        }
    }
    if failed {
        eprintln!("some derivatives did not match finite differences (FAILED in the table)");
    }
}
