//! A small helper for building the derivative function region by region.

use cotan_ir::{Builder, Function, Op, OpKind, Region, SpanId, Ty, Value};

pub(crate) struct Emitter {
    pub out: Function,
    stack: Vec<Vec<Op>>,
    pub span: SpanId,
}

impl Emitter {
    pub fn new(out: Function) -> Emitter {
        Emitter { out, stack: vec![vec![]], span: SpanId::NONE }
    }

    pub fn emit(&mut self, kind: OpKind, ty: Ty) -> Value {
        let v = self.out.new_value(ty, None, self.span);
        self.stack.last_mut().unwrap().push(Op { kind, result: Some(v), span: self.span });
        v
    }

    pub fn effect(&mut self, kind: OpKind) {
        self.stack.last_mut().unwrap().push(Op { kind, result: None, span: self.span });
    }

    /// Appends an op whose result value already exists.
    pub fn push_op(&mut self, op: Op) {
        self.stack.last_mut().unwrap().push(op);
    }

    /// Number of open regions: 1 at the top level.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    pub fn push_region(&mut self) {
        self.stack.push(vec![]);
    }

    pub fn pop_region(&mut self) -> Region {
        Region { ops: self.stack.pop().unwrap() }
    }

    /// Runs `f` with a builder whose ops are appended to the current region.
    pub fn build<R>(&mut self, f: impl FnOnce(&mut Builder) -> R) -> R {
        let mut b = Builder::new(&mut self.out);
        b.span = self.span;
        let r = f(&mut b);
        let ops = b.finish().ops;
        self.stack.last_mut().unwrap().extend(ops);
        r
    }

    /// Takes the top-level region.
    pub fn finish(mut self) -> Function {
        let ops = self.stack.pop().unwrap();
        self.out.body = Region { ops };
        self.out
    }
}

/// A copy of a non-region op kind with every operand mapped.
pub(crate) fn remap(kind: &OpKind, mut f: impl FnMut(Value) -> Value) -> OpKind {
    let mut k = kind.clone();
    for v in k.operands_mut() {
        *v = f(*v);
    }
    k
}
