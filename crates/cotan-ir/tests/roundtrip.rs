//! The text form: printing, and parsing back to the identical function.

mod common;

use common::*;
use cotan_ir::*;

fn samples() -> Vec<Function> {
    vec![
        rosenbrock(),
        branch(),
        sum_sin(),
        find_first(),
        halve(),
        reverse_copy(),
        visit(true, true),
        add(Scalar::U8),
        index(),
        kitchen_sink(),
    ]
}

fn assert_round_trip(f: &Function) {
    let text = print(f);
    match parse(&text) {
        Ok(g) => {
            assert_eq!(&g, f, "round trip changed the function:\n{text}");
            assert_eq!(print(&g), text);
        }
        Err(e) => panic!("cannot parse the printed function: {e}\n{text}"),
    }
}

#[test]
fn samples_round_trip() {
    for f in samples() {
        assert_round_trip(&f);
    }
}

#[test]
fn display_is_print() {
    let f = branch();
    assert_eq!(f.to_string(), print(&f));
}

#[test]
fn prints_readable_text() {
    let text = print(&branch());
    let expected = r#"fn branch(%0 "x": f64) -> (f64) {
  var $0 "r": f64 = %0
  %1: f64 = const 0.0
  %2: bool = lt %0, %1
  if %2 {
    %3: f64 = neg %0
    set $0, %3
  } else {
    %4: f64 = const 2.0
    %5: f64 = mul %0, %4
    set $0, %5
  }
  %6: f64 = get $0
  return %6
}
"#;
    assert_eq!(text, expected);
}

#[test]
fn prints_loops_memory_spans_and_declarations() {
    let text = print(&kitchen_sink());
    for line in [
        r#"fn kitchen_sink(%0 "x \"quoted\"\n\tünï\u{200b}": f64 @3, %1 "xs": &[f64], %2 "ys": &mut [f32; 3] @4,"#,
        r#"%4 "cell": &mut f64, %5 "shared": &i64, %6 "bytes": &Vec<u8>, %7 "k": i32) -> (f64, f32, bool) {"#,
        "  local $0 \"never declared\": i16\n  undef %8 \"dead\": f32 @2\n",
        "= const -0.0\n",
        "= const inf\n",
        "= const -inf\n",
        "= const 1e300\n",
        "= const 5e-324\n",
        "= const -9223372036854775808\n",
        ": f64 = neg %0 @11\n",
        ": i32 = shl %7, ",
        ": f64 @12 = select ",
        ": f64 = load %1[",
        ": f64 = load %4\n",
        "  store %4, ",
        ": Vec<f64> = alloc [%0; ",
        ": [f32; 3] = alloc [",
        "  for %", // the index is named "i"
        r#" "i": usize in "#,
        " rev exit $2 @20 {\n",
        "  while exit $2 {\n",
        "  } cond %",
        "  assert %",
        ", \"t must \\\"hold\\\"\"\n",
        "    push %",
        ": f64 = pop @20\n",
        "  return %",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}

#[test]
fn every_type_round_trips() {
    let mut f = Function::new("types");
    for s in Scalar::ALL {
        f.add_param(Ty::Scalar(s), s.name(), SpanId::NONE);
    }
    for kind in [MemKind::Slice, MemKind::Array(0), MemKind::Array(7), MemKind::Vec, MemKind::Cell] {
        for access in [Access::Shared, Access::Mut, Access::Owned] {
            for elem in [Scalar::F64, Scalar::F32, Scalar::Usize, Scalar::Bool] {
                f.add_param(mem(elem, kind, access), "m", SpanId::NONE);
            }
        }
    }
    f.returns = f.params.iter().map(|&p| f.ty(p)).collect();
    assert_round_trip(&f);
    let text = print(&f);
    for ty in
        ["&[f64]", "&mut [f32; 7]", "[usize; 0]", "Vec<bool>", "&mut Vec<f64>", "&f32", "&mut f64", "Box<f64>", "[f64]"]
    {
        assert!(text.contains(&format!(": {ty},")), "missing {ty}");
    }
}

#[test]
fn odd_names_and_nan_round_trip() {
    let mut f = Function::new("not an identifier");
    let x = f.add_param(Ty::F64, "", SpanId(1));
    let odd_nan = f64::from_bits(0xfff8_0000_0000_0001);
    build(&mut f, |b| {
        b.float(f64::NAN, Scalar::F64);
        b.float(odd_nan, Scalar::F64);
        b.effect(OpKind::Return(vec![x]));
        vec![Ty::F64]
    });
    let g = parse(&print(&f)).unwrap();
    assert_eq!(g.name, "not an identifier");
    assert_eq!(g.values, f.values);
    // NaN != NaN, so compare the literals' bits.
    let bits = |f: &Function| {
        f.body
            .ops
            .iter()
            .filter_map(|op| match op.kind {
                OpKind::Const(Const::Float(x)) => Some(x.to_bits()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&g), vec![f64::NAN.to_bits(), odd_nan.to_bits()]);
    assert_eq!(print(&g), print(&f));
}

#[test]
fn out_of_order_ids_and_gaps() {
    // A hand-written function: %4 is defined before %2, %3 is never defined (a gap), and
    // comments and blank lines are allowed.
    let text = r#"
// sum of 0..n
fn count(%0 "n": usize) -> (usize) {
  %4: usize = const 0   // the lower bound

  var $1 "s": usize = %4
  for %2 "i": usize in %4..%0 {
    %5: usize = get $1
    %6: usize = add %5, %2
    set $1, %6
  }
  %1: usize = get $1
  return %1
}
"#;
    let f = parse(text).unwrap();
    assert_eq!(f.values.len(), 7);
    assert_eq!(f.values[3], ValueData { ty: Ty::F64, name: None, span: SpanId::NONE });
    assert_eq!(f.value(Value(2)).name.as_deref(), Some("i"));
    assert_eq!(f.vars.len(), 2);
    assert_eq!(f.var(Var(1)).name, "s");
    verify(&f).unwrap();
    let r = run(&f, &mut [Arg::Scalar(Val::Int(5, Scalar::Usize))]).unwrap();
    assert_eq!(r, vec![Val::Int(10, Scalar::Usize)]);
    // Printing shows the gap as `undef` and the missing var as `local`, so the text is stable.
    let printed = print(&f);
    assert!(printed.contains("local $0 \"\": f64\n  undef %3: f64\n"), "{printed}");
    assert_eq!(parse(&printed).unwrap(), f);
}

#[test]
fn math_names_do_not_collide_with_keywords() {
    let keywords = [
        "const", "neg", "not", "add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "eq", "ne", "lt",
        "le", "gt", "ge", "cast", "select", "load", "store", "len", "alloc", "fill", "var", "get", "set", "if", "for",
        "while", "assert", "push", "pop", "return",
    ];
    for m in MathFn::ALL {
        assert!(!keywords.contains(&m.name()), "{} is also an op keyword", m.name());
    }
}

#[test]
fn mangled_text_is_an_error_not_a_panic() {
    let text = print(&kitchen_sink());
    for (i, _) in text.char_indices() {
        // Every prefix that lacks the final `}` is incomplete.
        assert!(i == text.len() - 1 || parse(&text[..i]).is_err());
        // Dropping one character must not panic (it may still parse, e.g. a shorter number).
        let mut mangled = text.clone();
        mangled.remove(i);
        if let Ok(f) = parse(&mangled) {
            let _ = verify(&f);
        }
    }
}
