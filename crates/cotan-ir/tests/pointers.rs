//! Raw pointers in the IR: their types and `offset` print and parse back, the verifier
//! checks them, and the interpreter runs pointer programs with Rust's rules (a pointer
//! reaches the rest of its buffer; going past it is an error, as Miri reports it).

use cotan_ir::*;

fn f64s(xs: &[f64]) -> Arg {
    Arg::Mem(xs.iter().map(|&x| Val::F64(x)).collect())
}

fn floats(a: &Arg) -> Vec<f64> {
    match a {
        Arg::Mem(vs) => vs.iter().map(|v| v.as_f64().unwrap()).collect(),
        _ => panic!("{a:?}"),
    }
}

/// `*y.add(i) = *x.add(i + 1) * (*p)[1]` for `i` in `0..n`, then `y[0] = *q` with
/// `q = x.add(k) - 1`; returns `*x.add(2)`.
const PROGRAM: &str = r#"fn f(%0 "x": *const f64, %1 "y": *mut f64, %2 "p": *const [f64; 2], %3 "n": usize, %4 "k": isize) -> (f64) {
  unsafe
  %5: usize = const 0
  %6: usize = const 1
  %7 "a": &[f64; 2] = offset %2, %5
  %8: f64 = load %7[%6]
  for %9 "i": usize in %5..%3 {
    %10: usize = add %9, %6
    %11: f64 = load %0[%10]
    %12: f64 = mul %11, %8
    store %1[%9], %12
  }
  %13 "q": *const f64 = offset %0, %4
  %14: isize = const -1
  %15: *const f64 = offset %13, %14
  %16: f64 = load %15[%5]
  store %1[%5], %16
  %17: &mut f64 = offset %1, %6
  %18: f64 = load %17
  %19: f64 = add %18, %18
  store %17, %19
  %20: usize = const 2
  %21: f64 = load %0[%20]
  return %21
}
"#;

fn args(n: usize, k: i128) -> Vec<Arg> {
    vec![
        f64s(&[1.0, 2.0, 3.0, 4.0]),
        f64s(&[0.0; 3]),
        f64s(&[10.0, 0.5]),
        Arg::Scalar(Val::Int(n as i128, Scalar::Usize)),
        Arg::Scalar(Val::Int(k, Scalar::Isize)),
    ]
}

#[test]
fn pointer_types_and_offsets_round_trip() {
    let f = parse(PROGRAM).unwrap();
    assert!(f.unsafe_code);
    assert_eq!(print(&f), PROGRAM);
    assert_eq!(print_ty(f.ty(f.params[2])), "*const [f64; 2]");
    assert_eq!(f.ty(f.params[1]).to_string(), "*mut f64");
    verify(&f).unwrap();
}

#[test]
fn the_interpreter_runs_pointer_programs() {
    let f = parse(PROGRAM).unwrap();
    let mut a = args(3, 3);
    let out = run(&f, &mut a).unwrap();
    assert_eq!(out, vec![Val::F64(3.0)]);
    // y = [x[2] (through q - 1), x[2] * 0.5 doubled, x[3] * 0.5]
    assert_eq!(floats(&a[1]), [3.0, 3.0, 2.0]);
}

#[test]
fn out_of_range_pointer_use_is_an_error() {
    let f = parse(PROGRAM).unwrap();
    // Reading x[4] of 4 elements.
    let e = run(&f, &mut args(4, 3)).unwrap_err();
    assert!(e.to_string().contains("memory access out of bounds: element 4 through a pointer to 4 element(s)"), "{e}");
    // x.add(5) of 4 elements: pointer arithmetic past the end of the buffer.
    let e = run(&f, &mut args(3, 5)).unwrap_err();
    assert!(e.to_string().contains("out-of-bounds pointer arithmetic"), "{e}");
    // x.offset(-1): before the start of the buffer.
    let e = run(&f, &mut args(3, 0)).unwrap_err();
    assert!(e.to_string().contains("out-of-bounds pointer arithmetic: offset -1"), "{e}");
    // A pointer to an array of 2 needs 2 elements.
    let mut a = args(3, 3);
    a[2] = f64s(&[1.0]);
    assert!(run(&f, &mut a).unwrap_err().to_string().contains("needs 2 elements"));
}

#[test]
fn the_verifier_checks_pointers() {
    let bad = |from: &str, to: &str, what: &str| {
        let text = PROGRAM.replace(from, to);
        let f = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let errors = verify(&f).unwrap_err();
        let shown: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert!(shown.iter().any(|e| e.contains(what)), "{shown:?}");
    };
    // No length, no writes through `*const`, no direct access to an array pointer.
    bad("%20: usize = const 2\n", "%20: usize = len %0\n", "raw pointer, whose memory has no known length");
    bad("store %1[%5], %16", "store %0[%5], %16", "shared memory");
    bad("%8: f64 = load %7[%6]", "%8: f64 = load %2[%6]", "accessed through the array it points at");
    // A `&mut` view of `*const` memory, and an array view of the wrong length.
    bad("%17: &mut f64 = offset %1, %6", "%17: &mut f64 = offset %0, %6", "shared memory");
    bad("%7 \"a\": &[f64; 2] = offset %2, %5", "%7 \"a\": &[f64; 3] = offset %2, %5", "cannot be &[f64; 3]");
}
