//! Parse errors point at the right line and column and say what is wrong.

use cotan_ir::*;

fn error(text: &str) -> ParseError {
    match parse(text) {
        Ok(f) => panic!("parsed:\n{f}"),
        Err(e) => e,
    }
}

#[test]
fn unknown_operation() {
    let e = error("fn f(%0: f64) {\n  %1: f64 = frobnicate %0\n}\n");
    assert_eq!((e.line, e.col), (2, 13));
    assert_eq!(e.message, "unknown operation `frobnicate`");
    assert_eq!(e.to_string(), "2:13: unknown operation `frobnicate`");
}

#[test]
fn undefined_value() {
    let e = error("fn f(%0: f64) -> (f64) {\n  %1: f64 = add %0, %7\n  return %1\n}\n");
    assert_eq!((e.line, e.col), (2, 21));
    assert!(e.message.contains("%7 is used but never defined"), "{e}");
}

#[test]
fn undeclared_var() {
    let e = error("fn f() {\n  %0: f64 = get $3\n}\n");
    assert_eq!((e.line, e.col), (2, 17));
    assert!(e.message.contains("$3"), "{e}");
}

#[test]
fn value_defined_twice() {
    let e = error("fn f(%0: f64) {\n  %1: f64 = neg %0\n  %1: f64 = neg %0\n}\n");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("%1 is defined twice"), "{e}");
}

#[test]
fn bad_type() {
    let e = error("fn f(%0: f65) {\n}\n");
    assert_eq!((e.line, e.col), (1, 10));
    assert!(e.message.starts_with("expected a type"), "{e}");
    assert!(e.message.contains("found `f65`"), "{e}");
}

#[test]
fn missing_operand() {
    let e = error("fn f(%0: f64) {\n  %1: f64 = add %0\n}\n");
    assert_eq!(e.line, 2);
    assert_eq!(e.message, "expected `,`, found end of line");
}

#[test]
fn unclosed_region() {
    let e = error("fn f(%0: bool) {\n  if %0 {\n    %1: f64 = const 1.0\n}\n");
    assert_eq!((e.line, e.col), (1, 16));
    assert!(e.message.contains("never closed"), "{e}");
}

#[test]
fn two_ops_on_one_line() {
    let e = error("fn f(%0: f64) {\n  %1: f64 = neg %0 %2: f64 = neg %0\n}\n");
    assert_eq!((e.line, e.col), (2, 20));
    assert_eq!(e.message, "expected end of line, found `%2`");
}

#[test]
fn bad_literal_and_string() {
    let e = error("fn f() {\n  %0: i32 = const 99999999999999999999999999999999999999999999\n}\n");
    assert_eq!((e.line, e.col), (2, 19));
    assert!(e.message.starts_with("bad literal"), "{e}");
    let e = error("fn f(%0: bool) {\n  assert %0, \"unterminated\n}\n");
    assert_eq!((e.line, e.col), (2, 14));
    assert_eq!(e.message, "unterminated string");
}

#[test]
fn inconsistent_var_declarations() {
    let e = error("fn f(%0: f64, %1: i32) {\n  var $0 \"a\": f64 = %0\n  var $0 \"a\": i32 = %1\n}\n");
    assert_eq!((e.line, e.col), (3, 7));
    assert!(e.message.contains("declared earlier"), "{e}");
}

#[test]
fn trailing_garbage() {
    let e = error("fn f() {\n}\nfn g() {\n}\n");
    assert_eq!((e.line, e.col), (3, 1));
    assert!(e.message.starts_with("expected end of input"), "{e}");
}
