//! The analyses of the command line as functions on text: `hloc.indexing` (`hloc
//! indexing`), `hloc.fuse` (`hloc fuse --explain`) and `hloc.simplify_map` (`hloc map
//! simplify`).

use std::fmt::Write;

use ::indexing::OperandIndexing;
use hlo::pass::Pass;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::errors;
use crate::module::{parse_text, parse_verified};

/// A failed analysis as `ValueError`.
fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The text `hloc indexing FILE --instr INSTR [--operand N] [--direction D]` prints.
fn indexing_text(
    module: &hlo::Module,
    instr: &str,
    operand: Option<usize>,
    in_to_out: bool,
) -> PyResult<String> {
    let handle = module
        .instr(instr)
        .ok_or_else(|| value_error(format!("no instruction named `{instr}`")))?;
    let arity = handle.instr().operands().len();
    if let Some(n) = operand {
        if n >= arity {
            return Err(value_error(format!(
                "`{instr}` has {arity} operands; operand {n} does not exist"
            )));
        }
    }
    let mut out = String::new();
    if in_to_out {
        let operands: Vec<usize> = match operand {
            Some(n) => vec![n],
            None => (0..arity).collect(),
        };
        for n in operands {
            let v = ::indexing::input_to_output(&handle, n).map_err(value_error)?;
            if operand.is_some() {
                out.push_str(&::indexing::format_in_to_out(&v));
            } else {
                let _ = writeln!(out, "operand id = {n}");
                for line in ::indexing::format_in_to_out(&v).lines() {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
        return Ok(out);
    }
    let mut grouped = ::indexing::output_to_input(&handle).map_err(value_error)?;
    match operand {
        None => out.push_str(&::indexing::format_grouped(&grouped)),
        Some(n) => {
            for g in &mut grouped {
                for (j, s) in g.operands.iter_mut().enumerate() {
                    if j != n {
                        *s = OperandIndexing::none();
                    }
                }
            }
            let multi = grouped.len() > 1;
            for (k, g) in grouped.iter().enumerate() {
                let pad = if multi {
                    let _ = writeln!(out, "output id = {k}");
                    "  "
                } else {
                    ""
                };
                let _ = writeln!(out, "{pad}operand id = {n}");
                out.push_str(&::indexing::format_operand(
                    &g.operands[n],
                    &format!("{pad}  "),
                ));
            }
        }
    }
    Ok(out)
}

/// The indexing maps of instruction `instr` of HLO text, as `hloc indexing` prints them:
/// `direction` "out-to-in" (each operand's elements read by an output element) or
/// "in-to-out"; `operand` restricts them to one operand.
#[pyfunction(name = "indexing")]
#[pyo3(signature = (text, instr, operand = None, direction = "out-to-in", name = None))]
pub fn indexing_text_of(
    py: Python<'_>,
    text: &str,
    instr: &str,
    operand: Option<usize>,
    direction: &str,
    name: Option<&str>,
) -> PyResult<String> {
    let in_to_out = match direction {
        "out-to-in" => false,
        "in-to-out" => true,
        d => {
            return Err(value_error(format!(
                "direction must be \"out-to-in\" or \"in-to-out\", not {d:?}"
            )))
        }
    };
    let file = name.unwrap_or("<string>");
    py.detach(|| {
        let module = parse_text(text, file)?.module;
        indexing_text(&module, instr, operand, in_to_out)
    })
}

/// `hloc fuse --target TARGET --explain`: the module after the target-independent passes
/// and fusion for the device description `target` ("cpu", "h100" or a description file),
/// and the explain report as JSON lines.
#[pyfunction]
#[pyo3(signature = (text, target = "cpu", name = None))]
pub fn fuse(
    py: Python<'_>,
    text: &str,
    target: &str,
    name: Option<&str>,
) -> PyResult<(String, String)> {
    let file = name.unwrap_or("<string>");
    py.detach(|| {
        let device = if std::path::Path::new(target).is_file() {
            device::load_file(std::path::Path::new(target))
        } else {
            device::load(target)
        }
        .map_err(value_error)?;
        let mut module = parse_verified(text, file)?;
        let failed = |e: &dyn std::fmt::Display| PyRuntimeError::new_err(e.to_string());
        hlo_transforms::default_pipeline()
            .run(&mut module)
            .map_err(|e| failed(&e))?;
        let log = fusion::fuse_logged(&mut module, &device).map_err(|e| failed(&e))?;
        hlo_transforms::Cse
            .run(&mut module)
            .and_then(|_| hlo_transforms::Dce.run(&mut module))
            .map_err(|e| failed(&e))?;
        hlo::ir::edit::default_missing_layouts(&mut module);
        let report = fusion::FusionReport::build(&module, &log);
        Ok((hlo::print_module(&module), report.to_json_lines()))
    })
}

/// `hloc map simplify`: an indexing map (XLA's syntax) simplified to its canonical form;
/// `HloError` with the line and column of a syntax error.
#[pyfunction]
pub fn simplify_map(text: &str) -> PyResult<String> {
    let mut m = affine::parse::parse_map(text)
        .map_err(|e| errors::hlo_error(e.render(text, None), Some(e.line), Some(e.column)))?;
    let _ = m.simplify();
    Ok(m.to_string())
}
