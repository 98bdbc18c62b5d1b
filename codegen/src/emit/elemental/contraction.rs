//! Dot and convolution in the elemental emitter: the contraction's range variables become
//! loops around one accumulator.

use super::*;

impl Builder<'_> {
    pub(super) fn dot(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        out: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        let module = self.module;
        let instr = module.computation(comp).instr(id);
        let ty = self.elem_type(comp, id)?;
        let acc_ty = match ty {
            ScalarType::F16 | ScalarType::BF16 | ScalarType::F8E4M3FN | ScalarType::F8E5M2 => {
                ScalarType::F32
            }
            t => t,
        };
        let g = self.maps(comp, id)?;
        let zero = Value::Const(
            acc_ty,
            if acc_ty.is_float() {
                Const::Float(0.0)
            } else if acc_ty == ScalarType::Pred {
                Const::Bool(false)
            } else {
                Const::Int(0)
            },
        );
        let acc = self.new_var(acc_ty);
        out.push(Stmt::Decl {
            var: acc,
            value: zero,
        });
        let (ml, mr) = (
            self.single(instr.opcode(), &g, 0)?.cloned(),
            self.single(instr.opcode(), &g, 1)?.cloned(),
        );
        // A convolution's taps over its whole window (constraint propagation narrows a
        // tap's range to the taps that read the input somewhere; the others still add
        // `0 · w`).
        let taps = match (&ml, &mr) {
            (Some(ml), Some(mr)) if instr.opcode() == Opcode::Convolution && acc_ty.is_float() => {
                self.window_taps(comp, id, index, (ml, mr))
            }
            _ => None,
        };
        let l = match &ml {
            Some(ml) => {
                let reuse = taps.as_ref().map(|t| t.reuse.as_slice());
                self.apply(ml, index, reuse, false, out)?
            }
            None => None,
        };
        let (Some(l), Some(mr)) = (l, mr) else {
            // An input no output element reads (a convolution whose every tap lands in
            // padding or a dilation hole): every tap still adds `0 · w`.
            self.all_padding_taps(comp, id, index, (acc, acc_ty), out)?;
            return Ok(Value::Convert(Box::new(Value::Var(acc, acc_ty)), ty));
        };
        let Some(r) = self.apply(&mr, index, Some(&l.ranges), false, out)? else {
            return Ok(Value::Convert(Box::new(Value::Var(acc, acc_ty)), ty));
        };
        // A convolution's padding and dilations are constraints of the input map: the
        // product takes part only where they hold (and within the taps the maps keep).
        let mut guard = Guard::default();
        if let Some(t) = &taps {
            guard.conds.extend(t.inside.iter().copied());
        }
        guard.conds.extend(l.guard.conds.iter().copied());
        for c in &r.guard.conds {
            if !guard.conds.contains(c) {
                guard.conds.push(*c);
            }
        }
        let mut body = Vec::new();
        self.memo.push(Default::default());
        self.guards.push(guard.clone());
        let res = (|| {
            let a = self.value(comp, instr.operands()[0], &l.index, false, &mut body)?;
            let b = self.value(comp, instr.operands()[1], &r.index, false, &mut body)?;
            let cv = |v: Value| {
                if v.ty() == acc_ty {
                    v
                } else {
                    Value::Convert(Box::new(v), acc_ty)
                }
            };
            body.push(multiply_add((acc, acc_ty), cv(a), cv(b)));
            Ok::<(), CodegenError>(())
        })();
        self.guards.pop();
        self.memo.pop();
        res?;
        if !guard.is_true() {
            let weights = taps.as_ref().map_or(r.index, |t| t.weights.clone());
            let rhs = instr.operands()[1];
            let else_body = self.padding_products(comp, rhs, (acc, acc_ty), &weights)?;
            body = vec![Stmt::If {
                guard,
                body,
                else_body,
            }];
        }
        let loops = taps.as_ref().map_or(&l.ranges, |t| &t.ranges);
        out.extend(self.wrap_loops(loops, body));
        let v = Value::Var(acc, acc_ty);
        Ok(if acc_ty == ty {
            v
        } else {
            Value::Convert(Box::new(v), ty)
        })
    }

    /// A convolution none of whose taps reads the input: the sum over every tap of `0 · w`.
    /// The indexing maps are empty here (the weights share the input's constraints), so the
    /// taps are the weights' own: every element of the kernel's column of the output's
    /// feature (with feature or batch groups too, a column is one output feature's).
    fn all_padding_taps(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        (acc, acc_ty): (crate::kir::VarId, ScalarType),
        out: &mut Vec<Stmt>,
    ) -> Result<(), CodegenError> {
        let instr = self.module.computation(comp).instr(id);
        if !acc_ty.is_float() || instr.opcode() != Opcode::Convolution {
            return Ok(());
        }
        let rhs = instr.operands()[1];
        let dn = instr.conv_dimension_numbers().ok_or_else(|| {
            CodegenError::Internal("a convolution without dimension numbers".into())
        })?;
        let (k_out, o_feat) = (
            dn.kernel_output_feature_dimension as usize,
            dn.output_feature_dimension as usize,
        );
        let dims = self
            .module
            .computation(comp)
            .instr(rhs)
            .shape()
            .dims()
            .to_vec();
        if dims.contains(&0) || o_feat >= index.len() {
            return Ok(());
        }
        let mut ranges = Vec::new();
        let mut rhs_index = Vec::with_capacity(dims.len());
        for (k, &n) in dims.iter().enumerate() {
            if k == k_out {
                rhs_index.push(index[o_feat]);
            } else {
                let r = self.new_range(Interval::new(0, n - 1));
                ranges.push(r);
                rhs_index.push(Expr::var(r));
            }
        }
        let body = self.padding_products(comp, rhs, (acc, acc_ty), &rhs_index)?;
        out.extend(self.wrap_loops(&ranges, body));
        Ok(())
    }

    /// Loop variables over every tap of convolution `id`'s window (and every input
    /// feature), for its input and kernel maps `ml` and `mr`: constraint propagation
    /// narrows a tap's range in the maps to the taps that read the input for some output
    /// (a tap landing in padding or a dilation hole for every output is dropped), and
    /// drops a range narrowed to one tap (the kernel map then reads that tap as a
    /// constant). Here every window position and input feature keeps a variable over its
    /// whole extent; `reuse` stands for the maps' range variables (the kernel map reads
    /// each as one of them) and `inside` says where the maps' ranges hold. `None` when
    /// the maps keep the whole window already, or read the kernel otherwise (a reversed
    /// window).
    fn window_taps(
        &mut self,
        comp: CompId,
        id: InstrId,
        index: &[Expr],
        (ml, mr): (&IndexedMap, &IndexedMap),
    ) -> Option<WindowTaps> {
        let c = self.module.computation(comp);
        let instr = c.instr(id);
        let dn = instr.conv_dimension_numbers()?;
        let window = instr.window().map(|w| w.dims.clone()).unwrap_or_default();
        let rhs_dims = c.instr(*instr.operands().get(1)?).shape().dims().to_vec();
        let n = dn.kernel_spatial_dimensions.len();
        let narrowed = ml.map.ranges();
        if window.len() != n || mr.map.ranges() != narrowed {
            return None;
        }
        // The kernel dimension each tap variable indexes: the window's, then the input
        // feature's.
        let dims: Vec<usize> = dn
            .kernel_spatial_dimensions
            .iter()
            .chain([&dn.kernel_input_feature_dimension])
            .map(|&d| d as usize)
            .collect();
        // Per tap variable: its extent, and the map's range variable it is (`Ok`) or the
        // one tap the map reads (`Err`).
        let results = mr.map.results();
        let mut taken = vec![false; narrowed.len()];
        let mut plan: Vec<(i64, Result<usize, i64>)> = Vec::with_capacity(dims.len());
        let mut narrows = false;
        for &d in &dims {
            let size = *rhs_dims.get(d)?;
            let full = Interval::new(0, size - 1);
            let e = *results.get(d)?;
            if let Some(k) = e.as_const() {
                narrows |= size > 1;
                plan.push((size, Err(k)));
                continue;
            }
            let r = e.as_var().filter(|r| r.kind == VarKind::Range)?.index as usize;
            let m = *narrowed.get(r)?;
            if std::mem::replace(taken.get_mut(r)?, true)
                || m.is_empty()
                || !full.contains_interval(m)
            {
                return None;
            }
            narrows |= m != full;
            plan.push((size, Ok(r)));
        }
        if !narrows || taken.contains(&false) {
            return None;
        }
        let mut reuse = vec![None; narrowed.len()];
        let mut inside = Vec::new();
        let mut ranges = Vec::with_capacity(dims.len());
        for (size, at) in plan {
            let v = self.new_range(Interval::new(0, size - 1));
            ranges.push(v);
            let (lo, hi) = match at {
                Ok(r) => {
                    reuse[r] = Some(v);
                    (narrowed[r].lo, narrowed[r].hi)
                }
                Err(k) => (k, k),
            };
            if (lo, hi) != (0, size - 1) {
                inside.push((Expr::var(v), lo, hi));
            }
        }
        let reuse: Vec<Var> = reuse.into_iter().collect::<Option<_>>()?;
        let mut weights = vec![Expr::constant(0); rhs_dims.len()];
        for (&d, &v) in dims.iter().zip(&ranges) {
            weights[d] = Expr::var(v);
        }
        *weights.get_mut(dn.kernel_output_feature_dimension as usize)? =
            *index.get(dn.output_feature_dimension as usize)?;
        Some(WindowTaps {
            ranges,
            reuse,
            inside,
            weights,
        })
    }

    /// The statements of a convolution tap that falls in padding or a dilation hole of the
    /// input: HLO's padding is zero-valued elements, so the tap still adds `0 · w` (NaN for
    /// an infinite or NaN weight `w`), in the same order as every other tap — the reference
    /// evaluator's rule and the GEMM path's (its patches hold the zeros). Nothing for
    /// integer and boolean accumulators, where the product is always 0. The weight's index
    /// lies in its bounds at every tap (the map's constraints are the input's: padding and
    /// holes), so it is read unguarded; the kernel verifier checks every offset's range.
    fn padding_products(
        &mut self,
        comp: CompId,
        rhs: InstrId,
        (acc, acc_ty): (crate::kir::VarId, ScalarType),
        weights: &[Expr],
    ) -> Result<Vec<Stmt>, CodegenError> {
        if !acc_ty.is_float() {
            return Ok(Vec::new());
        }
        let mut body = Vec::new();
        self.memo.push(Default::default());
        self.guards.push(Guard::default());
        let w = self.value(comp, rhs, weights, false, &mut body);
        self.guards.pop();
        self.memo.pop();
        let w = w?;
        let w = if w.ty() == acc_ty {
            w
        } else {
            Value::Convert(Box::new(w), acc_ty)
        };
        let zero = Value::Const(acc_ty, Const::Float(0.0));
        body.push(multiply_add((acc, acc_ty), zero, w));
        Ok(body)
    }
}

/// A convolution's taps over its whole window ([`Builder::window_taps`]).
struct WindowTaps {
    /// One loop variable per window dimension, then the input feature: every tap.
    ranges: Vec<Var>,
    /// The variables of `ranges` standing for the maps' range variables, in order.
    reuse: Vec<Var>,
    /// Where the maps' (narrowed) ranges hold.
    inside: Vec<(Expr, i64, i64)>,
    /// The weight each tap multiplies.
    weights: Vec<Expr>,
}

/// `acc = acc + a * b`, in the accumulator's type.
fn multiply_add((acc, acc_ty): (crate::kir::VarId, ScalarType), a: Value, b: Value) -> Stmt {
    let prod = Value::Binary(BinOp::Mul, Box::new(a), Box::new(b), acc_ty);
    Stmt::Assign {
        var: acc,
        value: Value::Binary(
            BinOp::Add,
            Box::new(Value::Var(acc, acc_ty)),
            Box::new(prod),
            acc_ty,
        ),
    }
}
