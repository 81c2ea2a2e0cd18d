//! Off a terminal (here: standard error is a pipe), long work prints its results and no
//! progress bar, and nothing uses colour.

use std::process::Command;

fn cotan(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_cotan")).args(args).output().expect("the cotan binary runs");
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn long_work_is_quiet_off_a_terminal() {
    let simple = format!("{}/tests/fixtures/simple.rs", env!("CARGO_MANIFEST_DIR"));
    let (code, out, err) = cotan(&["check", &simple, "--fn", "loss", "--trials", "20", "--seed", "3"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("agree at 20 point(s)"), "{out}");
    assert_eq!(err, "", "nothing on standard error off a terminal");
    let dir = std::env::temp_dir().join(format!("cotan-quiet-{}", std::process::id()));
    let (code, out, err) = cotan(&["fuzz", "--count", "5", "--seed", "2", "--out", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(err, "", "nothing on standard error off a terminal");
    assert!(!out.contains('\u{1b}') && !err.contains('\u{1b}'), "no escape sequences (colour, cursor moves)");
}

#[test]
fn every_command_has_help() {
    for sub in ["emit", "ir", "check", "minimize", "fuzz"] {
        let (code, out, _) = cotan(&["help", sub]);
        assert_eq!(code, Some(0));
        assert!(out.contains("Usage: cotan"), "{out}");
        assert!(!out.contains('\u{1b}'), "no colour in help off a terminal");
    }
}
