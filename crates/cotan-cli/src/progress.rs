//! Progress bars for long work (`check` with many trials, `minimize`, `fuzz`): drawn on
//! standard error when it is a terminal, never otherwise (a pipe, a file, CI logs), and
//! without colour.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::RefCell;
use std::io::IsTerminal;

/// Whether progress bars are drawn: standard error is a terminal.
pub fn enabled() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar of `len` steps with a plain (colourless) template, or a hidden one off a terminal.
pub fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(len),
        if enabled() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() },
    );
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

thread_local! {
    /// The bar of the running `cotan check`, advanced once per point checked.
    static CHECK: RefCell<Option<ProgressBar>> = const { RefCell::new(None) };
}

/// Shows a bar for the random points of `cotan check` (set by the command, not by the
/// checks that `minimize` and `fuzz` run).
pub fn start_check(trials: usize) {
    if enabled() && trials > 1 {
        let b = bar(trials as u64, "{bar:40} {pos}/{len} points checked [{elapsed}]");
        CHECK.with(|c| *c.borrow_mut() = Some(b));
    }
}

/// One more point checked.
pub fn check_tick() {
    CHECK.with(|c| {
        if let Some(b) = c.borrow().as_ref() {
            b.inc(1);
        }
    });
}

/// Removes the bar of `cotan check`.
pub fn finish_check() {
    CHECK.with(|c| {
        if let Some(b) = c.borrow_mut().take() {
            b.finish_and_clear();
        }
    });
}
