//! A deliberately small, slow interpreter for checking the kernels against whole corpus
//! programs before the real evaluator exists: structural ops, broadcast/reshape/
//! transpose/slice/concatenate/reverse/iota, elementwise ops computed per element in
//! `f64` and rounded to the result type, a plain `reduce`; every kernel op goes to
//! `hlo_eval::numeric::evaluate`. Anything else panics naming the opcode (tests only).
#![allow(dead_code)]

use hlo::attrs::{ComparisonDirection, ComparisonType};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{CompId, ElementType, Literal, Module, Opcode, Shape};
use hlo_eval::numeric::{evaluate, handles, CallComputation, KernelError};

/// The interpreter; also the [`CallComputation`] the kernels use.
pub struct Interp<'m> {
    /// The module.
    pub module: &'m Module,
}

fn vals(l: &Literal) -> Vec<f64> {
    let a = l.as_array().expect("array");
    (0..a.data().len())
        .map(|i| a.get_f64(i).expect("value"))
        .collect()
}

/// An array literal of `shape` from `f64` values (integers wrap to their width, floats
/// round to nearest).
pub fn build(shape: &Shape, v: &[f64]) -> Literal {
    let ty = shape.element_type().expect("array");
    let mut d = ArrayData::new(ty).expect("type");
    for &x in v {
        if ty == ElementType::Pred {
            d.push_bool(ty, x != 0.0).unwrap();
        } else if ty.is_integral() {
            let bits = ty.bit_width().unwrap();
            let w = (x as i128) & ((1i128 << bits) - 1);
            let w = if ty.is_signed_integral() && w >= 1i128 << (bits - 1) {
                w - (1i128 << bits)
            } else {
                w
            };
            d.push_int(ty, w).unwrap();
        } else if ty == ElementType::F32 {
            // Direct rounding keeps overflow (inf) and NaN signs.
            match &mut d {
                ArrayData::F32(v) => v.push(x as f32),
                _ => unreachable!(),
            }
        } else {
            d.push_float(ty, x, None, "").unwrap();
        }
    }
    let mut s = shape.clone();
    s.set_layout(None);
    Literal::Array(ArrayLiteral::new(s, d).expect("fits"))
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

fn gather_idx(l: &Literal, shape: &Shape, idx: &[usize]) -> Literal {
    let a = l.as_array().unwrap();
    let data = each_take(a.data(), idx);
    let mut s = shape.clone();
    s.set_layout(None);
    Literal::Array(ArrayLiteral::new(s, data).expect("fits"))
}

fn each_take(d: &ArrayData, idx: &[usize]) -> ArrayData {
    macro_rules! t {
        ($($v:ident),*) => {
            match d {
                $(ArrayData::$v(x) => ArrayData::$v(idx.iter().map(|&i| x[i]).collect()),)*
            }
        };
    }
    t!(Pred, S8, S16, S32, S64, U8, U16, U32, U64, Bits16, Bits8, F32, F64, C64, C128)
}

fn dims(s: &Shape) -> Vec<usize> {
    s.dims().iter().map(|&d| d as usize).collect()
}

fn strides(d: &[usize]) -> Vec<usize> {
    let mut s = vec![1; d.len()];
    for k in (0..d.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * d[k + 1];
    }
    s
}

/// Row-major multi-indices of `d`.
fn indices(d: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &n in d {
        all = all
            .into_iter()
            .flat_map(|p| {
                (0..n).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    all
}

impl<'m> Interp<'m> {
    /// Evaluates computation `comp` on `args`.
    pub fn run(&mut self, comp: CompId, args: &[Literal]) -> Literal {
        let c = self.module.computation(comp);
        let n = c
            .instruction_ids()
            .iter()
            .map(|i| i.index() + 1)
            .max()
            .unwrap_or(0);
        let mut env: Vec<Option<Literal>> = vec![None; n];
        for &id in c.def_before_use_order().iter() {
            let ins = c.instr(id);
            let ops: Vec<Literal> = ins
                .operands()
                .iter()
                .map(|o| env[o.index()].clone().expect("defined"))
                .collect();
            let v = if handles(ins.opcode(), ins) {
                let refs: Vec<&Literal> = ops.iter().collect();
                let module = self.module;
                evaluate(module, ins, &refs, self).unwrap_or_else(|e| panic!("{}: {e}", ins.name()))
            } else {
                self.op(ins, &ops, args)
            };
            env[id.index()] = Some(v);
        }
        env[c.root().index()].clone().unwrap()
    }

    fn op(&mut self, ins: &hlo::Instruction, ops: &[Literal], args: &[Literal]) -> Literal {
        let shape = ins.shape();
        let un = |f: &dyn Fn(f64) -> f64| {
            build(
                shape,
                &vals(&ops[0]).iter().map(|&x| f(x)).collect::<Vec<_>>(),
            )
        };
        let bin = |f: &dyn Fn(f64, f64) -> f64| {
            let (a, b) = (vals(&ops[0]), vals(&ops[1]));
            build(
                shape,
                &a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>(),
            )
        };
        let int = shape.element_type().is_some_and(|t| t.is_integral());
        match ins.opcode() {
            Opcode::Parameter => args[ins.parameter_number().unwrap() as usize].clone(),
            Opcode::Constant => ins.literal().unwrap().clone(),
            Opcode::Tuple => Literal::Tuple(ops.to_vec()),
            Opcode::GetTupleElement => match &ops[0] {
                Literal::Tuple(t) => t[ins.tuple_index().unwrap() as usize].clone(),
                _ => panic!("gte of array"),
            },
            Opcode::Call => self.run(ins.to_apply().unwrap(), ops),
            Opcode::Fusion => self.run(ins.calls().unwrap(), ops),
            Opcode::Add => bin(&|a, b| a + b),
            Opcode::Subtract => bin(&|a, b| a - b),
            Opcode::Multiply => bin(&|a, b| a * b),
            Opcode::Divide => bin(&|a, b| if int { (a / b).trunc() } else { a / b }),
            Opcode::Remainder => bin(&|a, b| a % b),
            Opcode::Maximum => bin(&|a, b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else {
                    a.max(b)
                }
            }),
            Opcode::Minimum => bin(&|a, b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else {
                    a.min(b)
                }
            }),
            Opcode::And => bin(&|a, b| {
                if int {
                    ((a as i64) & (b as i64)) as f64
                } else {
                    f64::from(a != 0.0 && b != 0.0)
                }
            }),
            Opcode::Or => bin(&|a, b| {
                if int {
                    ((a as i64) | (b as i64)) as f64
                } else {
                    f64::from(a != 0.0 || b != 0.0)
                }
            }),
            Opcode::Negate => un(&|a| -a),
            Opcode::Exp => un(&f64::exp),
            Opcode::Log => un(&f64::ln),
            Opcode::Log1p => un(&f64::ln_1p),
            Opcode::Abs => un(&f64::abs),
            Opcode::Tanh => un(&f64::tanh),
            Opcode::While => {
                let (cond, body) = (ins.while_condition().unwrap(), ins.while_body().unwrap());
                let mut state = ops[0].clone();
                while vals(&self.run(cond, std::slice::from_ref(&state)))[0] != 0.0 {
                    state = self.run(body, &[state]);
                }
                state
            }
            Opcode::DynamicSlice | Opcode::DynamicUpdateSlice => {
                let id = dims(&ops[0].shape());
                let update = ins.opcode() == Opcode::DynamicUpdateSlice;
                let win = if update {
                    dims(&ops[1].shape())
                } else {
                    dims(shape)
                };
                let first = if update { 2 } else { 1 };
                let start: Vec<usize> = (0..id.len())
                    .map(|k| (vals(&ops[first + k])[0].max(0.0) as usize).min(id[k] - win[k]))
                    .collect();
                let st = strides(&id);
                let pos: Vec<usize> = indices(&win)
                    .iter()
                    .map(|w| (0..id.len()).map(|k| (start[k] + w[k]) * st[k]).sum())
                    .collect();
                if update {
                    let mut v = vals(&ops[0]);
                    let u = vals(&ops[1]);
                    for (i, &p) in pos.iter().enumerate() {
                        v[p] = u[i];
                    }
                    build(shape, &v)
                } else {
                    gather_idx(&ops[0], shape, &pos)
                }
            }
            Opcode::Sqrt => un(&f64::sqrt),
            Opcode::Rsqrt => un(&|a| 1.0 / a.sqrt()),
            Opcode::Convert => un(&|a| a),
            Opcode::Select => {
                let (p, a, b) = (vals(&ops[0]), &ops[1], &ops[2]);
                let (av, bv) = (vals(a), vals(b));
                build(
                    shape,
                    &p.iter()
                        .enumerate()
                        .map(|(i, &c)| if c != 0.0 { av[i] } else { bv[i] })
                        .collect::<Vec<_>>(),
                )
            }
            Opcode::Compare => {
                // JAX prints total-order compares as `order=TOTAL` as well as `type=TOTALORDER`.
                let order_total = matches!(
                    ins.attr(&hlo::AttrName::Order),
                    Some(hlo::AttrValue::Ident(s) | hlo::AttrValue::String(s) | hlo::AttrValue::Raw(s)) if s == "TOTAL"
                );
                let total =
                    order_total || ins.comparison_type() == Some(ComparisonType::TotalOrder);
                let dir = ins.comparison_direction().unwrap();
                let (a, b) = (vals(&ops[0]), vals(&ops[1]));
                let r: Vec<f64> = a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| {
                        let c = if total {
                            let (x, y) = (total_key(x), total_key(y));
                            cmp(dir, x.partial_cmp(&y))
                        } else {
                            cmp(dir, x.partial_cmp(&y))
                        };
                        f64::from(u8::from(c))
                    })
                    .collect();
                build(shape, &r)
            }
            Opcode::Reshape | Opcode::Bitcast | Opcode::Copy => {
                let a = ops[0].as_array().unwrap();
                let mut s = shape.clone();
                s.set_layout(None);
                Literal::Array(ArrayLiteral::new(s, a.data().clone()).unwrap())
            }
            Opcode::Broadcast => {
                let map = ins.dimensions().unwrap();
                let od = dims(shape);
                let id = dims(&ops[0].shape());
                let st = strides(&id);
                let idx: Vec<usize> = indices(&od)
                    .iter()
                    .map(|o| {
                        map.iter()
                            .enumerate()
                            .map(|(k, &d)| o[d as usize] * st[k])
                            .sum()
                    })
                    .collect();
                gather_idx(&ops[0], shape, &idx)
            }
            Opcode::Transpose => {
                let perm = ins.dimensions().unwrap();
                let id = dims(&ops[0].shape());
                let st = strides(&id);
                let od = dims(shape);
                let idx: Vec<usize> = indices(&od)
                    .iter()
                    .map(|o| {
                        perm.iter()
                            .enumerate()
                            .map(|(k, &p)| o[k] * st[p as usize])
                            .sum()
                    })
                    .collect();
                gather_idx(&ops[0], shape, &idx)
            }
            Opcode::Reverse => {
                let rd = ins.dimensions().unwrap();
                let id = dims(&ops[0].shape());
                let st = strides(&id);
                let idx: Vec<usize> = indices(&id)
                    .iter()
                    .map(|o| {
                        (0..id.len())
                            .map(|k| {
                                if rd.contains(&(k as i64)) {
                                    (id[k] - 1 - o[k]) * st[k]
                                } else {
                                    o[k] * st[k]
                                }
                            })
                            .sum()
                    })
                    .collect();
                gather_idx(&ops[0], shape, &idx)
            }
            Opcode::Slice => {
                let sl = ins.slice().unwrap();
                let id = dims(&ops[0].shape());
                let st = strides(&id);
                let idx: Vec<usize> = indices(&dims(shape))
                    .iter()
                    .map(|o| {
                        (0..id.len())
                            .map(|k| (sl[k].start as usize + o[k] * sl[k].stride as usize) * st[k])
                            .sum()
                    })
                    .collect();
                gather_idx(&ops[0], shape, &idx)
            }
            Opcode::Concatenate => {
                let d = ins.dimensions().unwrap()[0] as usize;
                let od = dims(shape);
                let mut out = Vec::new();
                for o in indices(&od) {
                    let mut pos = o[d];
                    for op in ops {
                        let id = dims(&op.shape());
                        if pos < id[d] {
                            let mut i = o.clone();
                            i[d] = pos;
                            let f: usize = i.iter().zip(strides(&id)).map(|(a, b)| a * b).sum();
                            out.push(vals(op)[f]);
                            break;
                        }
                        pos -= id[d];
                    }
                }
                build(shape, &out)
            }
            Opcode::Iota => {
                let d = ins.iota_dimension().unwrap() as usize;
                build(
                    shape,
                    &indices(&dims(shape))
                        .iter()
                        .map(|o| o[d] as f64)
                        .collect::<Vec<_>>(),
                )
            }
            Opcode::Reduce => {
                let n = ops.len() / 2;
                assert_eq!(n, 1, "test interpreter: variadic reduce");
                let rd: Vec<usize> = ins
                    .dimensions()
                    .unwrap()
                    .iter()
                    .map(|&d| d as usize)
                    .collect();
                let id = dims(&ops[0].shape());
                let keep: Vec<usize> = (0..id.len()).filter(|d| !rd.contains(d)).collect();
                let od: Vec<usize> = keep.iter().map(|&d| id[d]).collect();
                let ost = strides(&od);
                let comp = ins.to_apply().unwrap();
                let scalar_shape = Shape::scalar(shape.element_type().unwrap());
                let init = vals(&ops[1])[0];
                let x = vals(&ops[0]);
                let mut acc = vec![build(&scalar_shape, &[init]); od.iter().product()];
                for (f, i) in indices(&id).iter().enumerate() {
                    let o: usize = keep.iter().zip(&ost).map(|(&d, &s)| i[d] * s).sum();
                    let e = build(&scalar_shape, &[x[f]]);
                    acc[o] = self.run(comp, &[acc[o].clone(), e]);
                }
                build(shape, &acc.iter().map(|l| vals(l)[0]).collect::<Vec<_>>())
            }
            op => panic!("test interpreter: {op} not supported"),
        }
    }
}

fn cmp(dir: ComparisonDirection, o: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::*;
    match (dir, o) {
        (ComparisonDirection::Ne, None) => true,
        (_, None) => false,
        (ComparisonDirection::Eq, Some(o)) => o == Equal,
        (ComparisonDirection::Ne, Some(o)) => o != Equal,
        (ComparisonDirection::Lt, Some(o)) => o == Less,
        (ComparisonDirection::Le, Some(o)) => o != Greater,
        (ComparisonDirection::Gt, Some(o)) => o == Greater,
        (ComparisonDirection::Ge, Some(o)) => o != Less,
    }
}

impl CallComputation for Interp<'_> {
    fn call(&mut self, comp: CompId, args: &[Literal]) -> Result<Literal, KernelError> {
        Ok(self.run(comp, args))
    }
}
