//! The async forms in the instruction parser: the generic `async-start`/`-update`/`-done`
//! chains (late binding: the start binds the first operands of the wrapped computation,
//! each update the next ones; the thread they run on) and the short forms
//! (`custom-call-start`, `add-update`, ...) turned into them with a generated wrapped
//! computation. The previous link of a chain is found through the ops that pass a state
//! on (`crate::ir::async_link`); none found is accepted.

use super::*;
use crate::ir::async_link::{trace_async_link, AsyncLink};

impl<'a> Parser<'a> {
    /// Checks the generic async ops and gives `async-update`/`async-done` the `calls=` of
    /// the chain they continue.
    pub(super) fn check_async(
        &mut self,
        instr: &mut Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<()> {
        match instr.opcode {
            Opcode::AsyncStart => {
                check_start_shape(&instr.shape).map_err(|m| self.error_at(at, m))?;
                if instr.calls().is_none() {
                    return Err(self.error_at(at, "async-start needs calls="));
                }
            }
            Opcode::AsyncUpdate | Opcode::AsyncDone => {
                self.check_async_thread(instr, scope, at)?;
                let chain = self.async_chain(instr, scope, at)?;
                match (instr.calls(), chain) {
                    (Some(c), Some(comp)) if c != comp => {
                        return Err(self.error_at(
                            at,
                            "calls= differs from the computation of the async-start",
                        ))
                    }
                    (Some(_), _) => {}
                    (None, Some(comp)) => insert_calls(&mut instr.attrs, comp),
                    (None, None) => {
                        return Err(self.error_at(
                            at,
                            format!(
                                "the chain of this {} cannot be followed back to its async-start: write calls=",
                                instr.opcode
                            ),
                        ))
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// An `async-update`/`async-done` runs on the thread of the chain (the nearest step
    /// back that names one, else `main`).
    pub(super) fn check_async_thread(
        &self,
        instr: &Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<()> {
        let written = |i: &Instruction| match i.attr(&AttrName::AsyncExecutionThread) {
            Some(AttrValue::String(s)) => Some(s.clone()),
            _ => None,
        };
        let Some(mine) = written(instr) else {
            return Ok(());
        };
        let mut chain = None;
        let mut prev = self.previous_step(instr, scope, at)?;
        // Each step back is earlier in the arena, so the walk ends.
        while let Some(p) = prev {
            if let Some(t) = written(p) {
                chain = Some(t);
                break;
            }
            if p.opcode != Opcode::AsyncUpdate {
                break;
            }
            prev = self.previous_step(p, scope, at)?;
        }
        match chain {
            Some(chain) if chain != mine => Err(self.error_at(
                at,
                format!("Expect async_execution_thread to be {chain}, but got {mine}"),
            )),
            // A chain that names none runs on `main`, unless its start is out of sight.
            None if mine != "main" && prev.is_some() => Err(self.error_at(
                at,
                format!("Expect async_execution_thread to be main, but got {mine}"),
            )),
            _ => Ok(()),
        }
    }

    /// The async-start or async-update whose state operand 0 of `instr` carries, when
    /// the parser can follow it; an async-done there is an error.
    fn previous_step<'s>(
        &self,
        instr: &Instruction,
        scope: &'s Scope<'a>,
        at: usize,
    ) -> PResult<Option<&'s Instruction>> {
        let Some(&op0) = instr.operands.first() else {
            return Err(self.error_at(
                at,
                format!("{} needs the state of its chain as operand 0", instr.opcode),
            ));
        };
        match trace_async_link(
            |i| scope.builder.get(i),
            op0,
            &[],
            scope.builder.len() + 1,
            true,
        ) {
            AsyncLink::Found(p) => Ok(scope.builder.get(p)),
            AsyncLink::Done(d) => {
                let name = scope.builder.get(d).map_or("", |d| d.name.as_str());
                Err(self.error_at(
                    at,
                    format!(
                        "{}'s operand 0 `{name}` is an async-done, not the state of an async chain",
                        instr.opcode
                    ),
                ))
            }
            _ => Ok(None),
        }
    }

    /// The computation of the async chain `instr` continues, when its previous step is
    /// found. An async-done takes exactly one operand.
    pub(super) fn async_chain(
        &self,
        instr: &Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<Option<crate::ir::CompId>> {
        if instr.opcode == Opcode::AsyncDone && instr.operands.len() != 1 {
            return Err(self.error_at(
                at,
                format!(
                    "async-done takes one operand (the state of its chain), not {}",
                    instr.operands.len()
                ),
            ));
        }
        match self.previous_step(instr, scope, at)? {
            Some(p) => p
                .calls()
                .map(Some)
                .ok_or_else(|| self.error_at(at, "the async operand has no computation")),
            None => Ok(None),
        }
    }

    /// Attributes of a short `op-update`/`op-done`: its own (`async_execution_thread`,
    /// metadata, ...) or, as XLA allows, the wrapped op's (`custom_call_target="foo"` again),
    /// kept as written.
    pub(super) fn parse_short_step_attrs(
        &mut self,
        step: Opcode,
        wrapped: Opcode,
        scope: &Scope<'a>,
    ) -> PResult<Vec<Attribute>> {
        let mut attrs = Vec::new();
        let mut seen = SeenNames::default();
        while self.lex.peek().kind == Tok::Comma {
            let t2 = self.lex.peek2();
            let name = AttrName::from_text(self.lex.text(t2));
            let schema = if attr_kind(step, &name).is_some() {
                step
            } else {
                wrapped
            };
            let (a, at) = self.parse_attr(schema, scope)?;
            if !seen.insert(&a.name) {
                return Err(
                    self.error_at(at, format!("attribute `{}` given twice", a.name.as_str()))
                );
            }
            attrs.push(a);
        }
        Ok(attrs)
    }

    /// Builds the generic async representation of `op-start/-update/-done`.
    pub(super) fn finish_short_async(
        &mut self,
        mut instr: Instruction,
        step: AsyncStep,
        wrapped: Opcode,
        scope: &mut Scope<'a>,
        at: usize,
        shape_text: &'a str,
    ) -> PResult<InstrId> {
        if wrapped.has_native_async_form() {
            return Err(self.error_at(
                at,
                format!(
                    "{wrapped} has its own asynchronous form; {wrapped}-{} is not an async op",
                    step_name(step)
                ),
            ));
        }
        if step != AsyncStep::Start {
            return self.finish_short_step(instr, step, wrapped, scope, at, shape_text);
        }
        // Start: attributes of the wrapped op go to it, shared ones stay on the start.
        let start_only = |n: &AttrName| {
            is_generic(n)
                || (attr_kind(wrapped, n).is_none() && attr_kind(Opcode::AsyncStart, n).is_some())
        };
        let mut start_attrs: Vec<Attribute> = Vec::new();
        let mut wrapped_attrs: Vec<Attribute> = Vec::new();
        let mut seen = SeenNames::default();
        while self.lex.peek().kind == Tok::Comma {
            let t2 = self.lex.peek2();
            let on_start = start_only(&AttrName::from_text(self.lex.text(t2)));
            let opcode = if on_start {
                Opcode::AsyncStart
            } else {
                wrapped
            };
            let (a, at_attr) = self.parse_attr(opcode, scope)?;
            if on_start && a.name == AttrName::Calls {
                return Err(self.error_at(at_attr, format!("{wrapped}-start takes no calls=")));
            }
            if !seen.insert(&a.name) {
                return Err(self.error_at(
                    at_attr,
                    format!("attribute `{}` given twice", a.name.as_str()),
                ));
            }
            if on_start {
                start_attrs.push(a);
            } else {
                wrapped_attrs.push(a);
            }
        }
        check_start_shape(&instr.shape).map_err(|m| self.error_at(at, m))?;
        let result = instr.shape.tuple_shapes()[1].clone();
        let bound = self.operand_shapes(&instr.operands, scope);
        let thread = thread_of(&start_attrs);
        let comp = self.generate_wrapped(wrapped, bound, result, wrapped_attrs, thread, at)?;
        instr.attrs = start_attrs;
        insert_calls(&mut instr.attrs, comp);
        Ok(scope.add(instr, shape_text))
    }

    /// `op-update(prev, x...)` / `op-done(prev)`: the chain's generated computation, its
    /// parameters resynchronized with the operands this update binds; a new one built
    /// from the state's shapes when the chain's start is out of sight.
    fn finish_short_step(
        &mut self,
        mut instr: Instruction,
        step: AsyncStep,
        wrapped: Opcode,
        scope: &mut Scope<'a>,
        at: usize,
        shape_text: &'a str,
    ) -> PResult<InstrId> {
        instr.attrs = self.parse_short_step_attrs(instr.opcode, wrapped, scope)?;
        self.check_async_thread(&instr, scope, at)?;
        let chain = self.async_chain(&instr, scope, at)?;
        let written = instr.calls();
        if let (Some(c), Some(comp)) = (written, chain) {
            if c != comp {
                return Err(
                    self.error_at(at, "calls= differs from the computation of the async-start")
                );
            }
        }
        instr.attrs.retain(|a| a.name != AttrName::Calls);
        // The operands bound before this step: element 0 of the state it continues.
        let state = instr
            .operands
            .first()
            .and_then(|&o| scope.builder.get(o))
            .map(|o| o.shape().clone());
        let state = state.filter(|s| check_start_shape(s).is_ok()).ok_or_else(|| {
            self.error_at(
                at,
                format!(
                    "{wrapped}-{}'s operand 0 must be an async state ((operands...), result, context...)",
                    step_name(step)
                ),
            )
        })?;
        let before = state.tuple_shapes()[0].tuple_shapes().len();
        let new_operands = self.operand_shapes(&instr.operands[1..], scope);
        let comp = match chain.or(written) {
            Some(comp) => {
                let root = self.comps[comp.index()].root_instr();
                if root.opcode != wrapped {
                    return Err(self.error_at(
                        at,
                        format!("this async chain wraps {}, not {wrapped}", root.opcode),
                    ));
                }
                self.check_repeated_attrs(&instr, step, comp, at)?;
                if self.generated.contains(&comp) {
                    resynchronize(&mut self.comps[comp.index()], before, new_operands);
                }
                comp
            }
            None => {
                // No start in sight: the wrapped op as this step's state describes it.
                let mut bound: Vec<Shape> = state.tuple_shapes()[0].tuple_shapes().to_vec();
                bound.extend(new_operands);
                let result = state.tuple_shapes()[1].clone();
                let attrs = instr
                    .attrs
                    .iter()
                    .filter(|a| attr_kind(instr.opcode, &a.name).is_none())
                    .cloned()
                    .collect();
                instr
                    .attrs
                    .retain(|a| attr_kind(instr.opcode, &a.name).is_some());
                let thread = thread_of(&instr.attrs);
                self.generate_wrapped(wrapped, bound, result, attrs, thread, at)?
            }
        };
        insert_calls(&mut instr.attrs, comp);
        Ok(scope.add(instr, shape_text))
    }

    /// The wrapped op's attributes, when repeated on an update or done, must be the
    /// wrapped op's.
    fn check_repeated_attrs(
        &self,
        instr: &Instruction,
        step: AsyncStep,
        comp: crate::ir::CompId,
        at: usize,
    ) -> PResult<()> {
        let root = self.comps[comp.index()].root_instr();
        for a in &instr.attrs {
            if attr_kind(instr.opcode, &a.name).is_none() && root.attr(&a.name) != Some(&a.value) {
                return Err(self.error_at(
                    at,
                    format!(
                        "async-{} expects its wrapped async computation to be identical to its operand's (`{}` differs)",
                        step_name(step),
                        a.name.as_str()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The shapes of `operands` (an empty tuple for one not defined).
    fn operand_shapes(&self, operands: &[InstrId], scope: &Scope<'a>) -> Vec<Shape> {
        operands
            .iter()
            .map(|&op| {
                scope
                    .builder
                    .get(op)
                    .map(|o| o.shape().clone())
                    .unwrap_or_else(|| Shape::tuple(vec![]))
            })
            .collect()
    }

    /// A computation `wrapped(params...)` with `attrs`, one parameter per bound operand
    /// shape, padded below the op's fixed arity with placeholder parameters of the result
    /// shape (a later update binds them and gives them their shapes).
    fn generate_wrapped(
        &mut self,
        wrapped: Opcode,
        bound: Vec<Shape>,
        result: Shape,
        attrs: Vec<Attribute>,
        thread: Option<String>,
        at: usize,
    ) -> PResult<crate::ir::CompId> {
        let n = bound.len().max(wrapped.arity().unwrap_or(0));
        let mut b = ComputationBuilder::new("async_wrapped");
        let mut params = Vec::with_capacity(n);
        for i in 0..n {
            let shape = bound.get(i).cloned().unwrap_or_else(|| result.clone());
            let pname = if i == 0 {
                "async_param".to_string()
            } else {
                format!("async_param.{i}")
            };
            params.push(b.add(Instruction::parameter(pname, i as i64, shape)));
        }
        let mut root = Instruction::new("async_op", wrapped, result, params);
        root.attrs = attrs;
        b.add(root);
        let mut comp = b
            .build(None)
            .map_err(|e| self.error_at(at, e.to_string()))?;
        // The wrapped computation runs on the thread the start names.
        comp.execution_thread = thread;
        let offsets = vec![at; comp.instrs.len()];
        Ok(self.push_generated(comp, offsets))
    }
}

/// Resynchronizes a generated wrapped computation with the operands an update binds
/// from position `before` on: each parameter takes the shape of the operand bound to it;
/// a variadic op (`custom-call`, `dynamic-slice`, ...) gains a parameter, and a root
/// operand, per operand bound past its parameters. A fixed-arity op gains none (the
/// verifier reports the over-binding).
fn resynchronize(c: &mut crate::ir::Computation, before: usize, bound: Vec<Shape>) {
    let variadic = c.root_instr().opcode.arity().is_none();
    for (k, shape) in bound.into_iter().enumerate() {
        let i = before + k;
        if let Some(&p) = c.params.get(i) {
            c.instr_mut(p).set_shape(shape);
        } else if variadic && i == c.params.len() {
            let root = c.root;
            let name = if i == 0 {
                "async_param".to_string()
            } else {
                format!("async_param.{i}")
            };
            let p = crate::ir::edit::add(c, Instruction::parameter(name, i as i64, shape));
            c.params.push(p);
            c.instr_mut(root).operands.push(p);
            c.instr_mut(p).users.push(root);
            crate::ir::edit::repair_order(c);
        }
    }
}

/// The thread `async_execution_thread=` names among `attrs`, unless `main`.
fn thread_of(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.value {
        AttrValue::String(t) if a.name == AttrName::AsyncExecutionThread && t != "main" => {
            Some(t.clone())
        }
        _ => None,
    })
}

/// The short-form suffix of an async step (`start`, `update`, `done`).
fn step_name(step: AsyncStep) -> &'static str {
    match step {
        AsyncStep::Start => "start",
        AsyncStep::Update => "update",
        AsyncStep::Done => "done",
    }
}

/// An async-start's shape is `((operands...), outputs, state...)`.
fn check_start_shape(shape: &Shape) -> Result<(), String> {
    let t = shape.tuple_shapes();
    if shape.is_tuple() && t.len() >= 2 && t[0].is_tuple() {
        Ok(())
    } else {
        Err(format!(
            "an async start's shape must be ((operands...), outputs, context...), not {}",
            shape.to_string_without_layout()
        ))
    }
}

/// Puts `calls=comp` after an `async_execution_thread=` if there is one, else first
/// (where XLA prints it).
fn insert_calls(attrs: &mut Vec<Attribute>, comp: crate::ir::CompId) {
    let pos = attrs
        .iter()
        .position(|a| a.name == AttrName::AsyncExecutionThread)
        .map_or(0, |i| i + 1);
    attrs.insert(
        pos,
        Attribute::new(AttrName::Calls, AttrValue::Computation(comp)),
    );
}
