//! Shared helpers of the kernel tests: literal builders, a scalar interpreter for called
//! computations (comparators, reducers), and evaluation of one instruction of a module
//! parsed from text.
#![allow(dead_code)]

use hlo::attrs::{ComparisonDirection, ComparisonType};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{parse_module, parse_shape, CompId, ElementType, Literal, Module, Opcode, Shape};
use hlo_eval::numeric::{evaluate, CallComputation, KernelError};

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

/// One array of an `.npz` file: NumPy dtype string (`<f4`, `<u8`, ...), shape, raw
/// little-endian bytes.
pub struct NpyArray {
    /// The dtype (`descr`).
    pub descr: String,
    /// The shape.
    pub shape: Vec<usize>,
    /// The data bytes, C order.
    pub bytes: Vec<u8>,
}

/// Reads an `.npz` with the `zip` crate: name (without `.npy`) and array, in file order.
/// The corpus' recorded inputs and outputs are read this way; the `.npy` header is parsed
/// here, independently of `hlo_eval::npy`, so the two check each other.
pub fn read_npz(path: &std::path::Path) -> Vec<(String, NpyArray)> {
    use std::io::Read;
    let file = std::fs::File::open(path).expect("open npz");
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).expect("zip");
    let mut out = Vec::new();
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).expect("member");
        let name = member.name().trim_end_matches(".npy").to_string();
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).expect("member data");
        assert_eq!(&bytes[..6], b"\x93NUMPY");
        let (hlen, hstart) = if bytes[6] == 1 {
            (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
        } else {
            (
                u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
                12,
            )
        };
        let header = std::str::from_utf8(&bytes[hstart..hstart + hlen]).expect("header");
        let descr = header
            .split("'descr': '")
            .nth(1)
            .expect("descr")
            .split('\'')
            .next()
            .unwrap()
            .to_string();
        assert!(header.contains("'fortran_order': False"));
        let shape_txt = header
            .split("'shape': (")
            .nth(1)
            .expect("shape")
            .split(')')
            .next()
            .unwrap();
        let shape: Vec<usize> = shape_txt
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        let item: usize = descr[2..].parse().expect("item size");
        let n: usize = shape.iter().product::<usize>() * item;
        let start = hstart + hlen;
        assert_eq!(bytes.len(), start + n, "{name}: data length");
        out.push((
            name,
            NpyArray {
                descr,
                shape,
                bytes: bytes[start..].to_vec(),
            },
        ));
    }
    out
}

/// The corpus directory.
pub fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

/// Array `key` of a corpus program's `inputs.npz` or `outputs.npz`.
pub fn corpus_array(program: &str, file: &str, key: &str) -> NpyArray {
    read_npz(&corpus_dir().join(program).join(file))
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, a)| a)
        .unwrap_or_else(|| panic!("{program}/{file} has no {key}"))
}

impl NpyArray {
    /// Values as `u32`.
    pub fn u32s(&self) -> Vec<u32> {
        assert_eq!(self.descr, "<u4");
        self.bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    /// Values as `f32`.
    pub fn f32s(&self) -> Vec<f32> {
        assert_eq!(self.descr, "<f4");
        self.bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    /// Values as `f64`.
    pub fn f64s(&self) -> Vec<f64> {
        assert_eq!(self.descr, "<f8");
        self.bytes
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    /// Values as `s32`.
    pub fn i32s(&self) -> Vec<i32> {
        assert_eq!(self.descr, "<i4");
        self.bytes
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    /// Complex64 values.
    pub fn c64s(&self) -> Vec<[f32; 2]> {
        assert_eq!(self.descr, "<c8");
        self.bytes
            .chunks(8)
            .map(|c| {
                [
                    f32::from_le_bytes(c[..4].try_into().unwrap()),
                    f32::from_le_bytes(c[4..].try_into().unwrap()),
                ]
            })
            .collect()
    }
}
