//! `dead_stores` removes the writes of variables no read can see, and nothing else: the
//! functions compute what they computed before, on every input tried.

mod common;

use common::*;
use cotan_ir::dead_stores::dead_stores;
use cotan_ir::*;

fn f64s(xs: &[f64]) -> Arg {
    Arg::Mem(xs.iter().map(|&x| Val::F64(x)).collect())
}

fn scalar(x: f64) -> Arg {
    Arg::Scalar(Val::F64(x))
}

/// Runs `f` before and after the pass on each argument list; the results (and what the
/// function leaves in its arguments) must be the same. Returns the function after the pass.
fn same_results(f: &Function, inputs: &[Vec<Arg>]) -> Function {
    let mut g = f.clone();
    dead_stores(&mut g);
    verify(&g).unwrap_or_else(|e| panic!("{e:?}\n{g}"));
    for args in inputs {
        let (mut a, mut b) = (args.clone(), args.clone());
        let before = exec(f, &mut a, DEFAULT_STEP_LIMIT).unwrap_or_else(|e| panic!("{e}\n{f}"));
        let after = exec(&g, &mut b, DEFAULT_STEP_LIMIT).unwrap_or_else(|e| panic!("{e}\n{g}"));
        assert_eq!(before, after, "before:\n{f}\nafter:\n{g}");
        assert_eq!(a, b, "arguments differ; before:\n{f}\nafter:\n{g}");
    }
    g
}

fn count(f: &Function, pred: impl Fn(&OpKind) -> bool) -> usize {
    let mut n = 0;
    f.walk(&mut |op| n += usize::from(pred(&op.kind)));
    n
}

fn sets(f: &Function) -> usize {
    count(f, |k| matches!(k, OpKind::SetVar(..)))
}

fn decls(f: &Function) -> usize {
    count(f, |k| matches!(k, OpKind::DeclVar { .. }))
}

#[test]
fn the_shared_functions_compute_the_same() {
    let xs = [0.5, 1.0, 4.0, 2.0, 5.0, -3.0];
    same_results(&rosenbrock(), &[vec![scalar(0.3), scalar(-1.7)]]);
    same_results(&branch(), &[vec![scalar(-3.0)], vec![scalar(2.5)]]);
    same_results(&sum_sin(), &[vec![f64s(&xs)], vec![f64s(&[])]]);
    for t in [0.0, 1.5, 9.0] {
        same_results(&find_first(), &[vec![f64s(&xs), scalar(t)]]);
    }
    same_results(&halve(), &[vec![scalar(37.0)], vec![scalar(0.2)]]);
    let g = same_results(&kitchen_sink(), &[]);
    assert!(sets(&g) <= sets(&kitchen_sink()));
}

#[test]
fn a_write_overwritten_before_any_read_goes_and_the_last_write_stays() {
    let f = parse(
        r#"fn f(%0 "x": f64) -> (f64) {
  var $0 "p": f64 = %0
  %1: f64 = mul %0, %0
  set $0, %1
  %2: f64 = mul %1, %0
  set $0, %2
  %3: f64 = get $0
  %4: f64 = mul %3, %0
  set $0, %4
  %5: f64 = get $0
  return %5
}
"#,
    )
    .unwrap();
    let g = same_results(&f, &[vec![scalar(1.5)], vec![scalar(-2.0)]]);
    // `set $0, %1` is dead; `%2` is read through `%3`; `%4` is read through `%5`.
    assert_eq!(sets(&g), 2, "{g}");
}

#[test]
fn a_variable_nothing_reads_goes_entirely() {
    let f = parse(
        r#"fn f(%0 "x": f64) -> (f64) {
  var $0 "p": f64 = %0
  %1: f64 = mul %0, %0
  set $0, %1
  %2: f64 = mul %1, %0
  set $0, %2
  return %2
}
"#,
    )
    .unwrap();
    let g = same_results(&f, &[vec![scalar(1.5)]]);
    assert_eq!((sets(&g), decls(&g)), (0, 0), "{g}");
    assert_eq!(count(&g, |k| matches!(k, OpKind::Binary(..))), 2, "{g}");
}

/// An adjoint read, reset and written back with the value read: both writes go, and the
/// loop still carries the adjoint from one iteration to the next.
#[test]
fn a_reset_and_its_write_back_go_inside_a_loop() {
    let f = parse(
        r#"fn f(%0 "x": &[f64], %1 "d": f64) -> (f64) {
  %2: f64 = const 0.0
  %3: usize = const 0
  %4: usize = len %0
  var $0 "ds": f64 = %2
  set $0, %1
  var $1 "acc": f64 = %2
  for %5 "i": usize in %3..%4 rev {
    %6: f64 = get $0
    set $0, %2
    set $0, %6
    %7: f64 = load %0[%5]
    %8: f64 = mul %7, %6
    %9: f64 = get $1
    %10: f64 = add %9, %8
    set $1, %10
    %11: f64 = mul %6, %7
    set $0, %11
  }
  %12: f64 = get $0
  set $0, %2
  %13: f64 = get $1
  %14: f64 = add %13, %12
  return %14
}
"#,
    )
    .unwrap();
    let inputs = [vec![f64s(&[0.5, 2.0, -1.5]), scalar(0.7)], vec![f64s(&[]), scalar(2.0)]];
    let g = same_results(&f, &inputs);
    // Left: `ds = ds * x[i]` and `acc += ..` in the loop; `ds = d` merged into its declaration.
    assert_eq!(sets(&g), 2, "{g}");
    assert_eq!(decls(&g), 2, "{g}");
}

#[test]
fn a_write_in_a_branch_stays_when_read_after_the_branch_and_goes_when_overwritten() {
    let f = parse(
        r#"fn f(%0 "x": f64) -> (f64) {
  %1: f64 = const 0.0
  %2: f64 = const 1.0
  var $0 "a": f64 = %1
  var $1 "b": f64 = %1
  %3: bool = lt %0, %1
  if %3 {
    set $0, %0
    set $1, %0
  } else {
    set $1, %2
  }
  set $1, %2
  %4: f64 = get $0
  %5: f64 = get $1
  %6: f64 = add %4, %5
  return %6
}
"#,
    )
    .unwrap();
    let g = same_results(&f, &[vec![scalar(-2.0)], vec![scalar(3.0)]]);
    // `a` keeps its write in the branch; both writes of `b` in the branches go, and its
    // write after the branch becomes its declaration's value.
    assert_eq!(sets(&g), 1, "{g}");
}

#[test]
fn loop_exit_flags_and_call_results_are_reads_and_writes() {
    let f = find_first();
    let before = sets(&f);
    let g = same_results(&f, &[vec![f64s(&[0.5, 3.0]), scalar(1.0)]]);
    assert_eq!(sets(&g), before, "the exit flag's write is read by the loop:\n{g}");
    let callee = parse(
        r#"fn two(%0 "x": f64) -> (f64) {
  %1: f64 = add %0, %0
  return %1
}
"#,
    )
    .unwrap();
    let f = parse(
        r#"fn f(%0 "x": f64) -> (f64) {
  %1: f64 = const 0.0
  var $0 "r": f64 = %1
  set $0, %0
  call "two"(%0) -> $0
  %2: f64 = get $0
  return %2
}
"#,
    )
    .unwrap();
    let mut g = f.clone();
    dead_stores(&mut g);
    verify(&g).unwrap();
    // The write before the call is dead; the declaration and the call stay.
    assert_eq!((sets(&g), decls(&g)), (0, 1), "{g}");
    struct One(std::rc::Rc<Function>);
    impl Callees for One {
        fn function(&self, _: &str) -> Result<std::rc::Rc<Function>, String> {
            Ok(self.0.clone())
        }
    }
    let callees = One(std::rc::Rc::new(callee));
    let run = |f: &Function| exec_with(f, &mut [scalar(1.25)], DEFAULT_STEP_LIMIT, &callees).unwrap();
    assert_eq!(run(&f), run(&g));
    assert_eq!(run(&g), vec![Arg::Scalar(Val::F64(2.5))]);
}

/// A variable written in a loop and read only in the loop's next iteration keeps the write.
#[test]
fn a_write_read_by_the_next_iteration_stays() {
    let f = parse(
        r#"fn f(%0 "x": &mut [f64]) {
  %1: f64 = const 0.0
  %2: usize = const 0
  %3: usize = len %0
  var $0 "prev": f64 = %1
  for %4 "i": usize in %2..%3 {
    %5: f64 = get $0
    %6: f64 = load %0[%4]
    %7: f64 = add %6, %5
    store %0[%4], %7
    set $0, %6
  }
}
"#,
    )
    .unwrap();
    let g = same_results(&f, &[vec![f64s(&[1.0, 2.0, 4.0])]]);
    assert_eq!(sets(&g), 1, "{g}");
}
