//! Computations: an arena of instructions with a text order, parameters and a root.

use super::{InstrId, Instruction, IrError};
use crate::attrs::AttrValue;

/// A computation. Instructions live in an arena indexed by [`InstrId`]; `instructions()`
/// yields the live ones in order (the text order for parsed modules, so operands precede
/// their users).
#[derive(Clone, Debug, PartialEq)]
pub struct Computation {
    /// The computation's name, unique in its module.
    pub name: String,
    /// The arena: every instruction ever added, indexed by [`InstrId`] (removed ones stay
    /// in the arena but leave `order`).
    pub instrs: Vec<Instruction>,
    /// The live instructions in order (operands before users after
    /// [`crate::ir::edit::repair_order`]).
    pub order: Vec<InstrId>,
    /// Parameter instructions by parameter number.
    pub params: Vec<InstrId>,
    /// The root instruction: the computation's result.
    pub root: InstrId,
    /// Whether this is the module's entry computation.
    pub is_entry: bool,
    /// `execution_thread=` of the computation, if written.
    pub execution_thread: Option<String>,
}

/// Builds a [`Computation`] instruction by instruction.
#[derive(Clone, Debug, Default)]
pub struct ComputationBuilder {
    name: String,
    instrs: Vec<Instruction>,
}

impl ComputationBuilder {
    /// A builder for a computation named `name`.
    pub fn new(name: impl Into<String>) -> ComputationBuilder {
        ComputationBuilder {
            name: name.into(),
            instrs: Vec::new(),
        }
    }

    /// A builder with room for `n` instructions.
    pub fn with_capacity(name: impl Into<String>, n: usize) -> ComputationBuilder {
        ComputationBuilder {
            name: name.into(),
            instrs: Vec::with_capacity(n),
        }
    }

    /// Adds an instruction and returns its id. Its operands must be ids returned earlier.
    pub fn add(&mut self, instr: Instruction) -> InstrId {
        let id = InstrId::from_index(self.instrs.len());
        self.instrs.push(instr);
        id
    }

    /// The instruction added as `id`.
    pub fn get(&self, id: InstrId) -> Option<&Instruction> {
        self.instrs.get(id.index())
    }

    /// Number of instructions added so far.
    pub fn len(&self) -> usize {
        self.instrs.len()
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.instrs.is_empty()
    }

    /// Finishes the computation with `root` (the last instruction when `None`).
    ///
    /// Checks that operands and control predecessors refer to earlier instructions, that
    /// parameter numbers are `0..n` without repeats, and computes users.
    pub fn build(mut self, root: Option<InstrId>) -> Result<Computation, IrError> {
        if self.instrs.capacity() > 2 * self.instrs.len() + 16 {
            self.instrs.shrink_to_fit();
        }
        let n = self.instrs.len();
        if n == 0 {
            return Err(IrError::EmptyComputation(self.name));
        }
        let root = root.unwrap_or(InstrId::from_index(n - 1));
        if root.index() >= n {
            return Err(IrError::BadId(self.name, root.index()));
        }
        let mut params: Vec<Option<InstrId>> = Vec::new();
        for (i, instr) in self.instrs.iter().enumerate() {
            let refs = instr.operands.iter().chain(instr.control_predecessors());
            for op in refs {
                if op.index() >= i {
                    return Err(IrError::ForwardReference {
                        computation: self.name.clone(),
                        instruction: instr.name.clone(),
                    });
                }
            }
            if let Some(p) = instr.parameter_number() {
                let pi = usize::try_from(p)
                    .ok()
                    .filter(|&p| p < n)
                    .ok_or_else(|| IrError::BadParameterNumber(self.name.clone(), p))?;
                if params.len() <= pi {
                    params.resize(pi + 1, None);
                }
                if params[pi].is_some() {
                    return Err(IrError::DuplicateParameter(self.name.clone(), p));
                }
                params[pi] = Some(InstrId::from_index(i));
            }
        }
        let params = params
            .into_iter()
            .enumerate()
            .map(|(i, p)| p.ok_or_else(|| IrError::MissingParameter(self.name.clone(), i as i64)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut c = Computation {
            name: self.name,
            instrs: self.instrs,
            order: (0..n).map(InstrId::from_index).collect(),
            params,
            root,
            is_entry: false,
            execution_thread: None,
        };
        c.recompute_users();
        Ok(c)
    }
}

impl Computation {
    /// The name (without `%`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renames the computation (names must stay unique in the module).
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// True for the module's entry computation.
    pub fn is_entry(&self) -> bool {
        self.is_entry
    }

    /// The `execution_thread=` written after the computation, if any.
    pub fn execution_thread(&self) -> Option<&str> {
        self.execution_thread.as_deref()
    }

    /// The live instructions in order.
    pub fn instructions(&self) -> impl Iterator<Item = (InstrId, &Instruction)> + '_ {
        self.order
            .iter()
            .map(move |&id| (id, &self.instrs[id.index()]))
    }

    /// Ids of the live instructions in order.
    pub fn instruction_ids(&self) -> &[InstrId] {
        &self.order
    }

    /// Number of live instructions.
    pub fn instruction_count(&self) -> usize {
        self.order.len()
    }

    /// The instruction `id` (ids of removed instructions still resolve).
    ///
    /// Panics when `id` does not come from this computation (see [`Computation::get`]).
    pub fn instr(&self, id: InstrId) -> &Instruction {
        &self.instrs[id.index()]
    }

    /// The instruction `id`, or `None` for an id outside this computation.
    pub fn get(&self, id: InstrId) -> Option<&Instruction> {
        self.instrs.get(id.index())
    }

    /// Mutable access to an instruction. Changing operands here does not update users; use
    /// [`Computation::set_operand`] or call [`Computation::recompute_users`] afterwards.
    ///
    /// Panics when `id` does not come from this computation.
    pub fn instr_mut(&mut self, id: InstrId) -> &mut Instruction {
        &mut self.instrs[id.index()]
    }

    /// The operands of `id` (panics when `id` does not come from this computation).
    pub fn operands(&self, id: InstrId) -> &[InstrId] {
        self.instr(id).operands()
    }

    /// The users of `id` (panics when `id` does not come from this computation).
    pub fn users(&self, id: InstrId) -> &[InstrId] {
        self.instr(id).users()
    }

    /// Instructions that list `id` as a control predecessor.
    pub fn control_successors(&self, id: InstrId) -> Vec<InstrId> {
        self.instructions()
            .filter(|(_, i)| i.control_predecessors().contains(&id))
            .map(|(s, _)| s)
            .collect()
    }

    /// Parameter instructions by parameter number.
    pub fn parameters(&self) -> &[InstrId] {
        &self.params
    }

    /// Parameter `n`.
    pub fn parameter(&self, n: usize) -> Option<InstrId> {
        self.params.get(n).copied()
    }

    /// The root instruction.
    pub fn root(&self) -> InstrId {
        self.root
    }

    /// The root instruction itself.
    pub fn root_instr(&self) -> &Instruction {
        self.instr(self.root)
    }

    /// Makes `id` the root.
    pub fn set_root(&mut self, id: InstrId) -> Result<(), IrError> {
        if id.index() >= self.instrs.len() {
            return Err(IrError::BadId(self.name.clone(), id.index()));
        }
        self.root = id;
        Ok(())
    }

    /// The live instruction named `name` (linear search).
    pub fn find(&self, name: &str) -> Option<InstrId> {
        self.instructions()
            .find(|(_, i)| i.name == name)
            .map(|(id, _)| id)
    }

    /// Appends an instruction (its operands must already exist) and updates users.
    pub fn add_instruction(&mut self, instr: Instruction) -> Result<InstrId, IrError> {
        let id = InstrId::from_index(self.instrs.len());
        if let Some(bad) = instr
            .operands
            .iter()
            .chain(instr.control_predecessors())
            .find(|o| o.index() >= self.instrs.len())
        {
            return Err(IrError::BadId(self.name.clone(), bad.index()));
        }
        for &op in &instr.operands {
            let users = &mut self.instrs[op.index()].users;
            if !users.contains(&id) {
                users.push(id);
            }
        }
        self.instrs.push(instr);
        self.order.push(id);
        Ok(id)
    }

    /// Inserts an instruction (its operands must already exist) into the order just before
    /// `before`, and updates users.
    pub fn add_instruction_before(
        &mut self,
        instr: Instruction,
        before: InstrId,
    ) -> Result<InstrId, IrError> {
        let pos = self
            .order
            .iter()
            .position(|&i| i == before)
            .ok_or_else(|| IrError::BadId(self.name.clone(), before.index()))?;
        let id = self.add_instruction(instr)?;
        self.order.pop();
        self.order.insert(pos, id);
        Ok(id)
    }

    /// The live instructions in an order where every operand and control predecessor comes
    /// before its user: the stored order when it already is one (always, for parsed
    /// modules), else a depth-first post order that keeps the stored order where it can.
    pub fn def_before_use_order(&self) -> std::borrow::Cow<'_, [InstrId]> {
        let n = self.instrs.len();
        let mut pos = vec![usize::MAX; n];
        for (k, &id) in self.order.iter().enumerate() {
            pos[id.index()] = k;
        }
        let deps = |id: InstrId| {
            let i = &self.instrs[id.index()];
            i.operands.iter().chain(i.control_predecessors()).copied()
        };
        let ok = self
            .order
            .iter()
            .enumerate()
            .all(|(k, &id)| deps(id).all(|d| pos.get(d.index()).is_some_and(|&p| p < k)));
        if ok {
            return std::borrow::Cow::Borrowed(&self.order);
        }
        let live: Vec<bool> = pos.iter().map(|&p| p != usize::MAX).collect();
        let mut visited = vec![false; n];
        let mut out = Vec::with_capacity(self.order.len());
        for &start in &self.order {
            if visited[start.index()] {
                continue;
            }
            visited[start.index()] = true;
            // Iterative DFS: (node, index of the next dependency to visit).
            let mut stack = vec![(start, 0usize)];
            while let Some(&mut (id, ref mut next)) = stack.last_mut() {
                let dep = deps(id).nth(*next);
                *next += 1;
                match dep {
                    Some(d) if d.index() < n && live[d.index()] && !visited[d.index()] => {
                        visited[d.index()] = true;
                        stack.push((d, 0));
                    }
                    Some(_) => {}
                    None => {
                        out.push(id);
                        stack.pop();
                    }
                }
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// Replaces operand `i` of `id` with `new`, updating users.
    pub fn set_operand(&mut self, id: InstrId, i: usize, new: InstrId) -> Result<(), IrError> {
        if new.index() >= self.instrs.len() || id.index() >= self.instrs.len() {
            return Err(IrError::BadId(
                self.name.clone(),
                new.index().max(id.index()),
            ));
        }
        let Some(slot) = self.instrs[id.index()].operands.get_mut(i) else {
            return Err(IrError::BadOperandIndex(self.name.clone(), i));
        };
        let old = std::mem::replace(slot, new);
        if !self.instrs[id.index()].operands.contains(&old) {
            self.instrs[old.index()].users.retain(|&u| u != id);
        }
        let users = &mut self.instrs[new.index()].users;
        if !users.contains(&id) {
            users.push(id);
        }
        Ok(())
    }

    /// Makes every user of `old` use `new` instead (and the root, if `old` was the root).
    pub fn replace_all_uses(&mut self, old: InstrId, new: InstrId) -> Result<(), IrError> {
        if old.index() >= self.instrs.len() || new.index() >= self.instrs.len() {
            return Err(IrError::BadId(
                self.name.clone(),
                old.index().max(new.index()),
            ));
        }
        if old == new {
            return Ok(());
        }
        let users = std::mem::take(&mut self.instrs[old.index()].users);
        for &u in &users {
            for op in &mut self.instrs[u.index()].operands {
                if *op == old {
                    *op = new;
                }
            }
            let nu = &mut self.instrs[new.index()].users;
            if !nu.contains(&u) {
                nu.push(u);
            }
        }
        if self.root == old {
            self.root = new;
        }
        Ok(())
    }

    /// Removes an instruction without users from the order. Its id stays valid for
    /// [`Computation::instr`] but it is no longer listed, printed or used.
    pub fn remove_instruction(&mut self, id: InstrId) -> Result<(), IrError> {
        let instr = self
            .get(id)
            .ok_or_else(|| IrError::BadId(self.name.clone(), id.index()))?;
        if !instr.users.is_empty() || id == self.root || instr.opcode == crate::Opcode::Parameter {
            return Err(IrError::StillUsed(self.name.clone(), instr.name.clone()));
        }
        let operands = instr.operands.clone();
        for op in operands {
            self.instrs[op.index()].users.retain(|&u| u != id);
        }
        self.order.retain(|&i| i != id);
        for i in &mut self.instrs {
            if let Some(crate::attrs::Attribute {
                value: AttrValue::Instructions(v),
                ..
            }) = i
                .attrs
                .iter_mut()
                .find(|a| a.name == crate::attrs::AttrName::ControlPredecessors)
            {
                v.retain(|&p| p != id);
            }
        }
        Ok(())
    }

    /// Recomputes every instruction's users from the operands of live instructions.
    pub fn recompute_users(&mut self) {
        for i in &mut self.instrs {
            i.users.clear();
        }
        for idx in 0..self.order.len() {
            let user = self.order[idx];
            for k in 0..self.instrs[user.index()].operands.len() {
                let op = self.instrs[user.index()].operands[k];
                if let Some(target) = self.instrs.get_mut(op.index()) {
                    // A user's operands are visited together, so a repeat is always last.
                    if target.users.last() != Some(&user) {
                        target.users.push(user);
                    }
                }
            }
        }
    }
}
