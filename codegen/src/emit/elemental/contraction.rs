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
        let l = match &ml {
            Some(ml) => self.apply(ml, index, None, false, out)?,
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
        // product takes part only where they hold.
        let mut guard = l.guard.clone();
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
            let else_body = self.padding_products(comp, instr.operands()[1], (acc, acc_ty), &r)?;
            body = vec![Stmt::If {
                guard,
                body,
                else_body,
            }];
        }
        out.extend(self.wrap_loops(&l.ranges, body));
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
        let taps = Applied {
            index: rhs_index,
            guard: Guard::default(),
            ranges,
        };
        let body = self.padding_products(comp, rhs, (acc, acc_ty), &taps)?;
        out.extend(self.wrap_loops(&taps.ranges, body));
        Ok(())
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
        r: &Applied,
    ) -> Result<Vec<Stmt>, CodegenError> {
        if !acc_ty.is_float() {
            return Ok(Vec::new());
        }
        let mut body = Vec::new();
        self.memo.push(Default::default());
        self.guards.push(Guard::default());
        let w = self.value(comp, rhs, &r.index, false, &mut body);
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
