//! Shared helpers of the kernel tests: literal builders, a scalar interpreter for called
//! computations (comparators, reducers), and evaluation of one instruction of a module
//! parsed from text.
#![allow(dead_code)]

use hlo::attrs::{ComparisonDirection, ComparisonType};
use hlo::kernels::{evaluate, CallComputation, KernelError};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{parse_module, parse_shape, CompId, ElementType, Literal, Module, Opcode, Shape};

/// An array literal of the shape written in HLO text (`f32[2,3]`) holding `data`.
pub fn arr(shape: &str, data: ArrayData) -> Literal {
    let shape = parse_shape(shape).expect("shape");
    Literal::Array(ArrayLiteral::new(shape, data).expect("data fits shape"))
}

/// `f32` array.
pub fn f32s(shape: &str, v: &[f32]) -> Literal {
    arr(shape, ArrayData::F32(v.to_vec()))
}

/// `s32` array.
pub fn s32s(shape: &str, v: &[i32]) -> Literal {
    arr(shape, ArrayData::S32(v.to_vec()))
}

/// The `f32` values of an array literal.
pub fn get_f32(l: &Literal) -> Vec<f32> {
    match l.as_array().expect("array").data() {
        ArrayData::F32(v) => v.clone(),
        d => panic!("not f32: {d:?}"),
    }
}

/// The `s32` values of an array literal.
pub fn get_s32(l: &Literal) -> Vec<i32> {
    match l.as_array().expect("array").data() {
        ArrayData::S32(v) => v.clone(),
        d => panic!("not s32: {d:?}"),
    }
}

/// Element `i` of a tuple literal.
pub fn part(l: &Literal, i: usize) -> &Literal {
    match l {
        Literal::Tuple(t) => &t[i],
        _ => panic!("not a tuple"),
    }
}

/// A scalar interpreter for the small computations kernels call: parameter, constant,
/// tuple, the arithmetic reducers, compare (incl. total order), select, negate.
pub struct ScalarCalls<'m> {
    /// The module whose computations are called.
    pub module: &'m Module,
    /// Number of calls made.
    pub count: usize,
}

impl<'m> ScalarCalls<'m> {
    /// An interpreter over `module`.
    pub fn new(module: &'m Module) -> Self {
        ScalarCalls { module, count: 0 }
    }
}

fn total_key(x: f64) -> i128 {
    let b = x.to_bits();
    let mag = (b & !(1 << 63)) as i128;
    if b >> 63 == 1 {
        -mag - 1
    } else {
        mag
    }
}

fn scalar(ty: ElementType, x: f64) -> Literal {
    let mut d = ArrayData::new(ty).expect("type");
    if ty == ElementType::Pred {
        d.push_bool(ty, x != 0.0).expect("pred");
    } else if ty.is_integral() {
        d.push_int(ty, x as i128).expect("int");
    } else {
        d.push_float(ty, x, None, "").expect("float");
    }
    Literal::Array(ArrayLiteral::new(Shape::scalar(ty), d).expect("scalar"))
}

fn value(l: &Literal) -> f64 {
    l.as_array()
        .and_then(|a| a.get_f64(0))
        .expect("scalar value")
}

impl CallComputation for ScalarCalls<'_> {
    fn call(&mut self, comp: CompId, args: &[Literal]) -> Result<Literal, KernelError> {
        self.count += 1;
        let c = self.module.computation(comp);
        let mut vals: Vec<Option<Literal>> = vec![None; c.instruction_count() + 64];
        let get = |vals: &Vec<Option<Literal>>, id: hlo::InstrId| {
            vals[id.index()].clone().expect("defined")
        };
        for &id in c.instruction_ids() {
            let ins = c.instr(id);
            let ty = ins.shape().element_type();
            let ops: Vec<Literal> = ins.operands().iter().map(|&o| get(&vals, o)).collect();
            let bin =
                |f: fn(f64, f64) -> f64| scalar(ty.expect("ty"), f(value(&ops[0]), value(&ops[1])));
            let v = match ins.opcode() {
                Opcode::Parameter => args[ins.parameter_number().expect("n") as usize].clone(),
                Opcode::Constant => ins.literal().expect("literal").clone(),
                Opcode::Tuple => Literal::Tuple(ops.clone()),
                Opcode::Add => bin(|a, b| a + b),
                Opcode::Subtract => bin(|a, b| a - b),
                Opcode::Multiply => bin(|a, b| a * b),
                Opcode::Maximum => bin(|a, b| {
                    if a.is_nan() || b.is_nan() {
                        f64::NAN
                    } else {
                        a.max(b)
                    }
                }),
                Opcode::Minimum => bin(|a, b| {
                    if a.is_nan() || b.is_nan() {
                        f64::NAN
                    } else {
                        a.min(b)
                    }
                }),
                Opcode::And => bin(|a, b| f64::from(a != 0.0 && b != 0.0)),
                Opcode::Or => bin(|a, b| f64::from(a != 0.0 || b != 0.0)),
                Opcode::Negate => scalar(ty.expect("ty"), -value(&ops[0])),
                Opcode::Select => {
                    if value(&ops[0]) != 0.0 {
                        ops[1].clone()
                    } else {
                        ops[2].clone()
                    }
                }
                Opcode::Compare => {
                    let (a, b) = (value(&ops[0]), value(&ops[1]));
                    let total = ins.comparison_type() == Some(ComparisonType::TotalOrder);
                    let r = if total {
                        let (x, y) = (total_key(a), total_key(b));
                        match ins.comparison_direction().expect("dir") {
                            ComparisonDirection::Eq => x == y,
                            ComparisonDirection::Ne => x != y,
                            ComparisonDirection::Lt => x < y,
                            ComparisonDirection::Le => x <= y,
                            ComparisonDirection::Gt => x > y,
                            ComparisonDirection::Ge => x >= y,
                        }
                    } else {
                        match ins.comparison_direction().expect("dir") {
                            ComparisonDirection::Eq => a == b,
                            ComparisonDirection::Ne => a != b,
                            ComparisonDirection::Lt => a < b,
                            ComparisonDirection::Le => a <= b,
                            ComparisonDirection::Gt => a > b,
                            ComparisonDirection::Ge => a >= b,
                        }
                    };
                    scalar(ElementType::Pred, f64::from(u8::from(r)))
                }
                op => panic!("test interpreter: {op} not supported"),
            };
            vals[id.index()] = Some(v);
        }
        Ok(get(&vals, c.root()))
    }
}

/// Parses `text` and evaluates its entry root, whose operands must be parameters, on
/// `args` (parameter `i` gets `args[i]`).
pub fn eval_root(text: &str, args: &[Literal]) -> Result<Literal, KernelError> {
    let module = parse_module(text).expect("parse");
    eval_root_of(&module, args).0
}

/// [`eval_root`] on a parsed module, also returning the number of computation calls.
pub fn eval_root_of(module: &Module, args: &[Literal]) -> (Result<Literal, KernelError>, usize) {
    let entry = module.entry();
    let root = entry.root_instr();
    let ops: Vec<&Literal> = root
        .operands()
        .iter()
        .map(|&o| {
            let n = entry
                .instr(o)
                .parameter_number()
                .expect("root operands must be parameters");
            &args[n as usize]
        })
        .collect();
    let mut calls = ScalarCalls::new(module);
    let r = evaluate(module, root, &ops, &mut calls);
    (r, calls.count)
}
