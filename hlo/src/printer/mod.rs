//! The HLO text printer: XLA's canonical text (`HloModule::ToString()`), with the
//! normalizations listed in the crate documentation.

mod attrs;
mod instr;

use std::fmt::{self, Write};

use crate::ir::{CompId, Computation, InstrId, Module, ModuleAttrValue, StackFrameIndex, TableRow};
use crate::opcode::Opcode;
use crate::shape::Shape;
use crate::text::write_quoted;

pub use crate::text::PrintOptions;

/// Prints a module in XLA's text, in the conventions it was parsed with
/// ([`Module::source_style`]: `%` sigils or not, operand shapes or not); modules built in
/// code print with XLA's defaults ([`PrintOptions::default`]).
pub fn print_module(module: &Module) -> String {
    print_module_with(module, &module.source_style())
}

/// Prints a module with the given options.
pub fn print_module_with(module: &Module, options: &PrintOptions) -> String {
    let mut p = Printer::new(module, *options);
    p.module();
    p.out
}

impl fmt::Display for Module {
    /// The module's text ([`print_module`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_module(self))
    }
}

impl Module {
    /// One instruction's line (without indentation or `ROOT`), with default options.
    pub fn instruction_to_string(&self, comp: CompId, id: InstrId) -> String {
        let mut p = Printer::new(self, PrintOptions::default());
        if let Some(c) = self.get_computation(comp) {
            if c.get(id).is_some() {
                p.instruction(c, id);
            }
        }
        p.out
    }
}

/// Which computations print in the short async form, and the async-start calling each.
pub(crate) struct AsyncSugar {
    /// `short[c]`: computation `c` is wrapped by a short-form async chain.
    short: Vec<bool>,
}

impl AsyncSugar {
    fn compute(m: &Module) -> AsyncSugar {
        let n = m.computation_count();
        let mut starts: Vec<Vec<(CompId, InstrId)>> = vec![Vec::new(); n];
        let mut other = vec![false; n];
        for (cid, c) in m.computations() {
            for (iid, i) in c.instructions() {
                for callee in i.called_computations_iter() {
                    let Some(slot) = starts.get_mut(callee.index()) else {
                        continue;
                    };
                    match i.opcode() {
                        Opcode::AsyncStart if i.calls() == Some(callee) => slot.push((cid, iid)),
                        Opcode::AsyncUpdate | Opcode::AsyncDone if i.calls() == Some(callee) => {}
                        _ => other[callee.index()] = true,
                    }
                }
            }
        }
        let short = (0..n)
            .map(|c| {
                let comp = m.computation(CompId::from_index(c));
                match starts[c][..] {
                    [(caller, start)] if !other[c] && !comp.is_entry() => {
                        expandable(comp, m.computation(caller), start)
                    }
                    _ => false,
                }
            })
            .collect();
        AsyncSugar { short }
    }

    fn is_short(&self, c: CompId) -> bool {
        self.short.get(c.index()).copied().unwrap_or(false)
    }
}

/// True when `comp` is exactly one instruction over its parameters, in order, with the
/// operand and result shapes of `start`, so the short form rebuilds it identically.
fn expandable(comp: &Computation, caller: &Computation, start: InstrId) -> bool {
    let start = caller.instr(start);
    let root = comp.root_instr();
    let params = comp.parameters();
    // The parser gives a generated computation the thread its start names.
    let thread = match start.attr(&crate::AttrName::AsyncExecutionThread) {
        Some(crate::AttrValue::String(t)) if t != "main" => Some(t.as_str()),
        _ => None,
    };
    comp.execution_thread() == thread
        && comp.instruction_count() == params.len() + 1
        && root.opcode() != Opcode::Parameter
        && root.opcode() != Opcode::Constant
        && !root.opcode().is_async()
        && root.operands() == params
        && root.control_predecessors().is_empty()
        && start.shape().tuple_shapes().get(1) == Some(root.shape())
        && params.len() == start.operands().len()
        && params.iter().zip(start.operands()).all(|(&p, &o)| {
            let p = comp.instr(p);
            p.attrs().is_empty() && caller.get(o).map(|o| o.shape()) == Some(p.shape())
        })
}

/// Printer state.
pub(crate) struct Printer<'m> {
    pub(crate) m: &'m Module,
    pub(crate) o: PrintOptions,
    pub(crate) out: String,
    pub(crate) sugar: AsyncSugar,
}

impl<'m> Printer<'m> {
    fn new(m: &'m Module, o: PrintOptions) -> Printer<'m> {
        Printer {
            m,
            o,
            out: String::new(),
            sugar: AsyncSugar::compute(m),
        }
    }

    pub(crate) fn name(&mut self, name: &str) {
        // A name spelled like an element type (`%s2`) reads back only with its sigil.
        if self.o.sigils || name.parse::<crate::shape::ElementType>().is_ok() {
            self.out.push('%');
        }
        self.out.push_str(name);
    }

    pub(crate) fn comp_name(&mut self, id: CompId) {
        let name = self
            .m
            .get_computation(id)
            .map_or("<unknown>", Computation::name);
        self.name(name);
    }

    fn module(&mut self) {
        self.out.push_str("HloModule ");
        self.out.push_str(self.m.name());
        for a in self.m.attrs() {
            let _ = write!(self.out, ", {}=", a.name);
            match &a.value {
                ModuleAttrValue::Bool(b) => {
                    let _ = write!(self.out, "{b}");
                }
                ModuleAttrValue::Int(i) => {
                    let _ = write!(self.out, "{i}");
                }
                ModuleAttrValue::Raw(r) => self.out.push_str(r),
                ModuleAttrValue::Layout(l) => {
                    self.out.push_str("{(");
                    for (i, s) in l.parameters.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                            if i % 5 == 0 {
                                let _ = write!(self.out, "/*index={i}*/");
                            }
                        }
                        s.write_to(&mut self.out, true);
                    }
                    self.out.push_str(")->");
                    l.result.write_to(&mut self.out, true);
                    self.out.push('}');
                }
            }
        }
        self.out.push_str("\n\n");
        if let Some(sf) = self.m.stack_frames() {
            self.stack_frames(sf);
        }
        for (id, c) in self.m.computations() {
            if self.sugar.is_short(id) {
                continue;
            }
            self.computation(c);
            self.out.push_str("\n\n");
        }
    }

    fn stack_frames(&mut self, sf: &StackFrameIndex) {
        let out = &mut self.out;
        let strings = |out: &mut String, title: &str, rows: &[(i64, String)]| {
            let _ = writeln!(out, "{title}");
            for (id, s) in rows {
                let _ = write!(out, "{id} ");
                write_quoted(out, s);
                out.push('\n');
            }
            out.push('\n');
        };
        let table = |out: &mut String, title: &str, rows: &[TableRow]| {
            let _ = writeln!(out, "{title}");
            for r in rows {
                let _ = write!(out, "{} {{", r.id);
                for (i, (k, v)) in r.fields.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{k}={v}");
                }
                out.push_str("}\n");
            }
            out.push('\n');
        };
        strings(out, "FileNames", &sf.file_names);
        strings(out, "FunctionNames", &sf.function_names);
        table(out, "FileLocations", &sf.file_locations);
        table(out, "StackFrames", &sf.stack_frames);
        out.push('\n');
    }

    fn computation(&mut self, c: &Computation) {
        if c.is_entry() {
            self.out.push_str("ENTRY ");
        }
        self.name(c.name());
        self.out.push(' ');
        if self.o.signatures {
            self.out.push('(');
            for (i, &p) in c.parameters().iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let p = c.instr(p);
                self.out.push_str(p.name());
                self.out.push_str(": ");
                p.shape().write_to(&mut self.out, false);
            }
            self.out.push_str(") -> ");
            c.root_instr().shape().write_to(&mut self.out, false);
            self.out.push(' ');
        }
        self.out.push_str("{\n");
        for &id in c.def_before_use_order().iter() {
            self.out.push_str("  ");
            if id == c.root() {
                self.out.push_str("ROOT ");
            }
            self.instruction(c, id);
            self.out.push('\n');
        }
        self.out.push('}');
        if let Some(t) = c.execution_thread() {
            self.out.push_str(", execution_thread=");
            write_quoted(&mut self.out, t);
        }
    }

    pub(crate) fn shape(&mut self, s: &Shape) {
        s.write_to(&mut self.out, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{ComputationBuilder, Instruction};
    use crate::shape::ElementType;

    #[test]
    fn prints_a_built_module() {
        let mut b = ComputationBuilder::new("main");
        let s = Shape::array(ElementType::F32, vec![2]);
        let p = b.add(Instruction::parameter("p", 0, s.clone()));
        b.add(Instruction::new("n", Opcode::Negate, s, vec![p]));
        let c = b.build(None).unwrap();
        let m = Module::new("m", vec![c], CompId::from_index(0)).unwrap();
        assert_eq!(
            print_module(&m),
            "HloModule m\n\nENTRY %main (p: f32[2]) -> f32[2] {\n  %p = f32[2] parameter(0)\n  ROOT %n = f32[2] negate(f32[2] %p)\n}\n\n"
        );
        assert_eq!(
            m.instruction_to_string(CompId::from_index(0), InstrId::from_index(1)),
            "%n = f32[2] negate(f32[2] %p)"
        );
    }
}
