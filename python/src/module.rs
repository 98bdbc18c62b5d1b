//! `hloc.parse` and `hloc.Module`: a parsed HLO module, printed, verified, listed.

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;

use crate::errors;

/// Parses `text` (`file` names it in errors) into its parsed form (`HloError` on a syntax
/// error).
pub fn parse_text(text: &str, file: &str) -> PyResult<hlo::parser::Parsed> {
    let options = hlo::ParseOptions {
        file_name: Some(file.to_string()),
        ..Default::default()
    };
    hlo::parse_module_with(text, &options).map_err(|e| errors::parse_error(&e))
}

/// Parses and verifies `text` (`HloError` with the first error's line and column).
pub fn parse_verified(text: &str, file: &str) -> PyResult<hlo::Module> {
    let parsed = parse_text(text, file)?;
    hlo::verifier::verify_parsed(&parsed, text).map_err(|e| errors::verify_error(&e, file))?;
    Ok(parsed.module)
}

/// An HLO module parsed by `hloc.parse`: `str(module)` prints it in hloc's canonical text,
/// `module.verify()` checks it, `module.instructions()` lists instruction names.
#[pyclass(frozen, module = "hloc")]
pub struct Module {
    parsed: hlo::parser::Parsed,
    text: String,
    file: String,
}

#[pymethods]
impl Module {
    /// The module's name (`HloModule NAME`).
    #[getter]
    fn name(&self) -> String {
        self.parsed.module.name().to_string()
    }

    /// Checks the module (structure and XLA's shape inference for every instruction):
    /// returns None, or raises `hloc.HloError` listing every problem, with the first one's
    /// `.line` and `.column`.
    fn verify(&self) -> PyResult<()> {
        hlo::verifier::verify_parsed(&self.parsed, &self.text)
            .map_err(|e| errors::verify_error(&e, &self.file))
    }

    /// The names of the instructions of `computation` (default: the entry computation),
    /// in the computation's order; `KeyError` for an unknown computation.
    #[pyo3(signature = (computation = None))]
    fn instructions(&self, computation: Option<&str>) -> PyResult<Vec<String>> {
        let m = &self.parsed.module;
        let id = match computation {
            None => m.entry_id(),
            Some(c) => m
                .computation_by_name(c)
                .ok_or_else(|| PyKeyError::new_err(format!("no computation named `{c}`")))?,
        };
        Ok(m.computation(id)
            .instructions()
            .map(|(_, i)| i.name().to_string())
            .collect())
    }

    /// The names of every computation, the entry computation last as XLA prints it.
    fn computations(&self) -> Vec<String> {
        self.parsed
            .module
            .computations()
            .map(|(_, c)| c.name().to_string())
            .collect()
    }

    /// The module as text (XLA's syntax).
    fn __str__(&self) -> String {
        hlo::print_module(&self.parsed.module)
    }

    /// `Module(NAME)`.
    fn __repr__(&self) -> String {
        format!("Module({})", self.parsed.module.name())
    }
}

/// Parses HLO text (`name` shown in errors) without verifying it; `HloError` with `.line`
/// and `.column` on a syntax error.
#[pyfunction]
#[pyo3(signature = (text, name = None))]
pub fn parse(py: Python<'_>, text: &str, name: Option<&str>) -> PyResult<Module> {
    let file = name.unwrap_or("<string>").to_string();
    let parsed = py.detach(|| parse_text(text, &file))?;
    Ok(Module {
        parsed,
        text: text.to_string(),
        file,
    })
}
