//! Output: the markdown tables, the targets, the JSON figures and the SVG chart.

use crate::bench::{Cell, Column, RowResult};
#[cfg(feature = "plot")]
use plotters::prelude::*;
#[cfg(feature = "plot")]
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Serialize;
use std::fmt::Write;

pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

pub fn format_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

/// Footnotes shared by the tables: each distinct reason gets one number.
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    fn mark(&mut self, why: &str) -> String {
        let k = match self.0.iter().position(|w| w == why) {
            Some(k) => k,
            None => {
                self.0.push(why.to_string());
                self.0.len() - 1
            }
        };
        format!("[^{}]", k + 1)
    }
}

fn table(out: &mut String, results: &[&RowResult], cols: &[Column], second: bool, notes: &mut Notes) {
    let mut head = "| row | inputs | primal |".to_string();
    let mut rule = "|---|--:|--:|".to_string();
    for c in cols {
        write!(head, " {} |", c.title(second)).unwrap();
        rule.push_str("--:|");
    }
    head.push_str(" allocs |");
    rule.push_str("--:|");
    writeln!(out, "{head}\n{rule}").unwrap();
    for r in results {
        let mut line = format!("| {} | {} | {} |", r.name, r.n, format_ns(r.primal_ns));
        for c in cols {
            let cell = match r.cells.iter().find(|(k, _)| k == c).map(|(_, v)| v) {
                Some(Cell::Time(t)) => format_ratio(t / r.primal_ns),
                Some(Cell::NotApplicable(why)) => format!("n/a{}", notes.mark(why)),
                Some(Cell::Failed(why)) => format!("**FAILED**{}", notes.mark(why)),
                None => "—".to_string(),
            };
            write!(line, " {cell} |").unwrap();
        }
        let allocs = match r.extra_allocs {
            Some(a) => format!("{:.0} / {:.0}", a + r.primal_allocs, r.primal_allocs),
            None => "—".to_string(),
        };
        write!(line, " {allocs} |").unwrap();
        writeln!(out, "{line}").unwrap();
    }
}

/// The two tables (first order, second order) with footnotes; figures are ratios to the
/// primal's median time.
pub fn markdown(results: &[RowResult]) -> String {
    let mut out = String::new();
    let mut notes = Notes::default();
    let first: Vec<&RowResult> = results.iter().filter(|r| !r.second_order).collect();
    let second: Vec<&RowResult> = results.iter().filter(|r| r.second_order).collect();
    if !first.is_empty() {
        out.push_str("Ratios: median time of the derivative call / median time of the primal call.\n\n");
        table(&mut out, &first, &Column::FIRST_ORDER, false, &mut notes);
    }
    if !second.is_empty() {
        out.push_str("\nSecond order: time(HVP) / time(primal).\n\n");
        table(&mut out, &second, &Column::SECOND_ORDER, true, &mut notes);
    }
    out.push_str(
        "\n`allocs`: heap allocations per steady-state call, cotan reverse (or hvp) / primal. cotan's generated code takes \
         its scratch buffers (the primal's `vec!`s included) from a per-thread pool, so it can allocate less than the primal.\n",
    );
    if !notes.0.is_empty() {
        out.push('\n');
        for (k, why) in notes.0.iter().enumerate() {
            writeln!(out, "[^{}]: {why}", k + 1).unwrap();
        }
    }
    out
}

/// Enzyme's published figures (BENCHMARKS.md): gradient-only C versions, and Mooncake's
/// table (primal included).
const ENZYME_GRADIENT_ONLY: &[(&str, f64, f64)] = &[
    ("_sum_1000", 0.20, 0.36),
    ("_sum_sin_1000", 0.99, 1.01),
    ("naive_map_sin_cos_exp", 2.13, 2.34),
    ("kron_sum", 1.43, 1.60),
    ("large_single_block", 3.47, 4.11),
    ("sin_cos_sq", 0.98, 1.02),
    ("control_flow", 1.49, 1.53),
];
const ENZYME_WITH_PRIMAL: &[(&str, f64, f64)] =
    &[("_sum_1000", 1.15, 1.25), ("sum_sin_1000", 2.0, 2.3), ("_sum_sin_1000", 2.4, 3.2), ("kron_sum", 9.7, 12.4)];

/// The targets, row by row: what is met and what is missed.
pub fn targets(results: &[RowResult]) -> String {
    let mut out = String::from(
        "| row | rev ≤ 3 | vs Enzyme (ActiveOnly / C) | vs Enzyme (Active / Mooncake table) | rev / hand ≤ 1.25 | allocs beyond the primal's = 0 |\n|---|---|---|---|---|---|\n",
    );
    let ok = |b: bool| if b { "✓" } else { "✗" };
    let mut hvp = String::new();
    for r in results {
        if r.second_order {
            if let Some(h) = r.ratio(Column::Hvp) {
                writeln!(hvp, "| {} | {} {} |", r.name, format_ratio(h), ok(h <= 10.0)).unwrap();
            }
            continue;
        }
        let rev = r.ratio(Column::Rev);
        let cell_rev = rev.map_or("—".into(), |v| format!("{} {}", format_ratio(v), ok(v <= 3.0)));
        let enzyme = |table: &[(&str, f64, f64)], col: Column| {
            table.iter().find(|e| e.0 == r.name).map_or("—".to_string(), |&(_, lo, hi)| match r.ratio(col) {
                Some(v) => format!("{} vs {lo}–{hi} {}", format_ratio(v), ok(v <= hi)),
                None => "—".into(),
            })
        };
        let hand = match (rev, r.ratio(Column::Hand)) {
            (Some(a), Some(h)) => format!("{} {}", format_ratio(a / h), ok(a / h <= 1.25)),
            _ => "—".into(),
        };
        let allocs = r.extra_allocs.map_or("—".into(), |a| format!("{:+.0} {}", a, ok(a < 0.05)));
        writeln!(
            out,
            "| {} | {cell_rev} | {} | {} | {hand} | {allocs} |",
            r.name,
            enzyme(ENZYME_GRADIENT_ONLY, Column::RevOnly),
            enzyme(ENZYME_WITH_PRIMAL, Column::Rev)
        )
        .unwrap();
    }
    if !hvp.is_empty() {
        out.push_str("\n| row | hvp / primal ≤ 10 |\n|---|---|\n");
        out.push_str(&hvp);
    }
    out
}

#[derive(Serialize)]
pub struct Record {
    pub row: String,
    pub column: String,
    pub status: String,
    pub ratio: Option<f64>,
    pub ns: Option<f64>,
    pub primal_ns: f64,
    pub allocations: Option<f64>,
    pub note: Option<String>,
}

#[derive(Serialize)]
pub struct Figures {
    pub command: String,
    pub date: String,
    pub quick: bool,
    pub results: Vec<Record>,
}

pub fn records(results: &[RowResult]) -> Vec<Record> {
    let mut out = vec![];
    for r in results {
        for (c, cell) in &r.cells {
            let allocs = if matches!(c, Column::Rev | Column::Hvp) { r.extra_allocs } else { None };
            let (status, ns, note) = match cell {
                Cell::Time(t) => ("ok", Some(*t), None),
                Cell::NotApplicable(why) => ("n/a", None, Some(why.clone())),
                Cell::Failed(why) => ("failed", None, Some(why.clone())),
            };
            out.push(Record {
                row: r.name.to_string(),
                column: c.id().to_string(),
                status: status.to_string(),
                ratio: ns.map(|t| t / r.primal_ns),
                ns,
                primal_ns: r.primal_ns,
                allocations: allocs,
                note,
            });
        }
    }
    out
}

#[cfg(feature = "plot")]
const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(174, 199, 232),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(197, 176, 213),
    RGBColor(214, 39, 40),
    RGBColor(127, 127, 127),
    RGBColor(23, 190, 207),
];

#[cfg(feature = "plot")]
/// A horizontal bar chart of the ratios on a log scale, one group of bars per row.
pub fn svg(results: &[RowResult], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let cols: Vec<Column> = {
        let mut v: Vec<Column> = vec![Column::Hvp];
        v.extend(Column::FIRST_ORDER);
        v.into_iter().filter(|c| results.iter().any(|r| r.ratio(*c).is_some())).collect()
    };
    let n = results.len();
    let group = 22 + 9 * cols.len() as u32;
    let height = 90 + group * n as u32;
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (lo, hi) = (0.05f64, 1e5f64);
    let mut chart = ChartBuilder::on(&root)
        .caption("cotan benchmark suite: derivative time / primal time (log scale)", ("sans-serif", 18))
        .margin(10)
        .margin_left(190)
        .x_label_area_size(30)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..n as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("ratio to the primal")
        .x_label_formatter(&|v| format!("{v}"))
        .draw()?;
    let bar = 0.8 / cols.len() as f64;
    for (i, r) in results.iter().enumerate() {
        let top = n as f64 - i as f64 - 0.1;
        for (j, c) in cols.iter().enumerate() {
            if let Some(ratio) = r.ratio(*c) {
                let y0 = top - (j + 1) as f64 * bar;
                let color = PALETTE[Column::FIRST_ORDER.iter().position(|k| k == c).map_or(8, |p| p)];
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(lo, y0), (ratio.clamp(lo, hi), y0 + bar * 0.9)],
                    color.filled(),
                )))?;
            }
        }
        let (px, py) = chart.backend_coord(&(lo, n as f64 - i as f64 - 0.5));
        root.draw(&Text::new(
            r.name.to_string(),
            (px - 8, py),
            ("sans-serif", 13).into_font().into_text_style(&root).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    for (x, label) in [(1.0, "primal"), (3.0, "target 3")] {
        chart.draw_series(std::iter::once(PathElement::new(vec![(x, 0.0), (x, n as f64)], BLACK.stroke_width(1))))?;
        chart.draw_series(std::iter::once(Text::new(label, (x, n as f64 - 0.05), ("sans-serif", 11))))?;
    }
    for (j, c) in cols.iter().enumerate() {
        let color = PALETTE[Column::FIRST_ORDER.iter().position(|k| k == c).map_or(8, |p| p)];
        chart
            .draw_series(std::iter::once(Rectangle::new([(lo, 0.0), (lo, 0.0)], color.filled())))?
            .label(format!("{} ({})", c.title(false), c.id()))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        let _ = j;
    }
    chart.configure_series_labels().position(SeriesLabelPosition::LowerRight).background_style(WHITE).draw()?;
    root.present()?;
    Ok(())
}

/// Today's date, UTC, as YYYY-MM-DD (from the system clock; days-to-civil conversion).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}
