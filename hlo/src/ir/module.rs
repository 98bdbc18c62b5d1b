//! Modules: header attributes, stack frame tables, computations and the entry.

use super::{CompId, Computation, IrError, StackFrameIndex};
use crate::shape::Shape;
use crate::text::PrintOptions;

/// `entry_computation_layout={(params...)->result}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ComputationLayout {
    /// Parameter shapes with layouts.
    pub parameters: Vec<Shape>,
    /// Result shape with layout.
    pub result: Shape,
}

/// The value of a module header attribute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ModuleAttrValue {
    /// `true`/`false` (`is_scheduled`, `alias_passthrough_params`).
    Bool(bool),
    /// An integer (`replica_count`, `num_partitions`).
    Int(i64),
    /// `entry_computation_layout`.
    Layout(ComputationLayout),
    /// Anything else, verbatim (`input_output_alias`, `frontend_attributes`,
    /// `allow_spmd_sharding_propagation_to_output`, ...).
    Raw(String),
}

/// One `name=value` of the `HloModule` line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModuleAttr {
    /// The name.
    pub name: String,
    /// The value.
    pub value: ModuleAttrValue,
}

/// An HLO module.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// The name on the `HloModule` line.
    pub name: String,
    /// Header attributes in written order.
    pub attrs: Vec<ModuleAttr>,
    /// The FileNames/FunctionNames/FileLocations/StackFrames tables, if any.
    pub stack_frames: Option<StackFrameIndex>,
    /// Computations, indexed by [`CompId`]; callees before callers in text order.
    pub computations: Vec<Computation>,
    /// The entry computation.
    pub entry: CompId,
    /// The conventions of the text the module was parsed from (sigils, operand shapes).
    pub source_style: PrintOptions,
}

impl Module {
    /// A module of the given computations; `entry` must index one of them.
    pub fn new(
        name: impl Into<String>,
        computations: Vec<Computation>,
        entry: CompId,
    ) -> Result<Module, IrError> {
        let mut m = Module {
            name: name.into(),
            attrs: Vec::new(),
            stack_frames: None,
            computations,
            entry: CompId::from_index(0),
            source_style: PrintOptions::default(),
        };
        m.set_entry(entry)?;
        Ok(m)
    }

    /// The module name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renames the module.
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// Header attributes in written order.
    pub fn attrs(&self) -> &[ModuleAttr] {
        &self.attrs
    }

    /// Mutable header attributes.
    pub fn attrs_mut(&mut self) -> &mut Vec<ModuleAttr> {
        &mut self.attrs
    }

    /// The value of header attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&ModuleAttrValue> {
        self.attrs.iter().find(|a| a.name == name).map(|a| &a.value)
    }

    /// `entry_computation_layout`, if written.
    pub fn entry_computation_layout(&self) -> Option<&ComputationLayout> {
        match self.attr("entry_computation_layout")? {
            ModuleAttrValue::Layout(l) => Some(l),
            _ => None,
        }
    }

    /// `is_scheduled=true`.
    pub fn is_scheduled(&self) -> bool {
        matches!(self.attr("is_scheduled"), Some(ModuleAttrValue::Bool(true)))
    }

    /// The stack frame tables, if the text had them.
    pub fn stack_frames(&self) -> Option<&StackFrameIndex> {
        self.stack_frames.as_ref()
    }

    /// Sets or clears the stack frame tables.
    pub fn set_stack_frames(&mut self, index: Option<StackFrameIndex>) {
        self.stack_frames = index;
    }

    /// The entry computation.
    pub fn entry(&self) -> &Computation {
        &self.computations[self.entry.index()]
    }

    /// The entry computation's id.
    pub fn entry_id(&self) -> CompId {
        self.entry
    }

    /// Makes `id` the entry computation.
    pub fn set_entry(&mut self, id: CompId) -> Result<(), IrError> {
        if id.index() >= self.computations.len() {
            return Err(IrError::BadComputation(id.index()));
        }
        for (i, c) in self.computations.iter_mut().enumerate() {
            c.is_entry = i == id.index();
        }
        self.entry = id;
        Ok(())
    }

    /// Computation `id` (panics when `id` does not come from this module; see
    /// [`Module::get_computation`]).
    pub fn computation(&self, id: CompId) -> &Computation {
        &self.computations[id.index()]
    }

    /// Computation `id`, or `None` for an id outside this module.
    pub fn get_computation(&self, id: CompId) -> Option<&Computation> {
        self.computations.get(id.index())
    }

    /// Mutable access to computation `id` (panics when `id` does not come from this
    /// module).
    pub fn computation_mut(&mut self, id: CompId) -> &mut Computation {
        &mut self.computations[id.index()]
    }

    /// All computations in order (callees before callers for parsed modules), with ids.
    pub fn computations(&self) -> impl Iterator<Item = (CompId, &Computation)> + '_ {
        self.computations
            .iter()
            .enumerate()
            .map(|(i, c)| (CompId::from_index(i), c))
    }

    /// Number of computations.
    pub fn computation_count(&self) -> usize {
        self.computations.len()
    }

    /// The computation named `name`.
    pub fn computation_by_name(&self, name: &str) -> Option<CompId> {
        self.computations
            .iter()
            .position(|c| c.name == name)
            .map(CompId::from_index)
    }

    /// Appends a computation and returns its id.
    pub fn add_computation(&mut self, mut computation: Computation) -> CompId {
        computation.is_entry = false;
        self.computations.push(computation);
        CompId::from_index(self.computations.len() - 1)
    }

    /// The text conventions of the parsed input (sigils, operand shapes, signatures), for
    /// printing a module back in the style it was written in.
    pub fn source_style(&self) -> PrintOptions {
        self.source_style
    }
}
