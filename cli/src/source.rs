//! Reading the HLO module a command works on: the text of FILE (or standard input for
//! `-`), parsed with errors at file:line:column (exit 2), and the parser's warnings shown
//! on stderr as `FILE:LINE:COL: warning: ...` by every command.
//!
//! Input of the wrong kind gets an error that says how to get the right one: a binary file
//! (a serialized `HloModuleProto`), StableHLO/MLIR text, and (for commands that need the
//! values: `run`, `compile`) constants whose values the dump elided (`{...}`).

use std::io::Read;

use anyhow::{anyhow, bail, Context, Result};

/// The text of a module file and the name its messages show.
pub struct Source {
    /// The module text.
    pub text: String,
    /// The file as given (`<stdin>` for `-`).
    pub name: String,
}

/// Reads FILE, or all of standard input for `-`.
pub fn read(file: &str) -> Result<Source> {
    if file == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading standard input")?;
        return Ok(Source {
            text,
            name: "<stdin>".to_string(),
        });
    }
    let bytes = std::fs::read(file).map_err(|e| anyhow!("cannot read {file}: {e}"))?;
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(Source {
            text,
            name: file.to_string(),
        }),
        Ok(text) => bail!("{}", binary_message(file, text.as_bytes())),
        Err(e) => bail!("{}", binary_message(file, e.as_bytes())),
    }
}

/// What to do with a binary file given as a module.
fn binary_message(file: &str, bytes: &[u8]) -> String {
    // An HloModuleProto starts with its field 1 (`name`, length-delimited): byte 0x0a.
    let proto = bytes.first() == Some(&0x0a) || file.ends_with(".pb");
    let what = if proto {
        "binary: it looks like a serialized HloModuleProto (.pb)"
    } else {
        "binary, not HLO text"
    };
    format!(
        "{file} is {what}. hloc reads HLO text: dump text instead (XLA_FLAGS=--xla_dump_to=DIR \
         writes .txt files unless --xla_dump_hlo_as_proto is given), or print the proto as \
         text with python -c \"import sys; from jax._src.lib import xla_client as xc; \
         print(xc.XlaComputation(open(sys.argv[1], 'rb').read()).as_hlo_text())\" {file}"
    )
}

/// Where the text is StableHLO or another MLIR dialect rather than HLO: the offset of its
/// first significant line (HLO text starts with `HloModule`, a computation or a comment).
fn mlir_at(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let at = offset + (line.len() - t.len());
        offset += line.len();
        if t.trim().is_empty() || t.starts_with("//") {
            continue;
        }
        let word: String = t
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '"'))
            .collect();
        let rest = t[word.len()..].trim_start();
        let mlir = match word.as_str() {
            "module" => {
                rest.starts_with('@') || rest.starts_with('{') || rest.starts_with("attributes")
            }
            "func.func" | "\"builtin.module\"" => true,
            _ => t.starts_with("#loc") || t.starts_with("#map") || t.starts_with("#sdy"),
        };
        return mlir.then_some(at);
    }
    None
}

/// Parses the module; a syntax error is the error (file:line:column, the line and a
/// caret); warnings go to stderr.
pub fn parse(src: &Source) -> Result<hlo::Parsed> {
    if let Some(at) = mlir_at(&src.text) {
        let (line, col) = hlo::source_map::LineIndex::new(&src.text).line_col(&src.text, at);
        bail!(
            "{}:{line}:{col}: this is StableHLO/MLIR text, not HLO; export HLO with \
             `jax.jit(f).lower(x).as_text(dialect='hlo')`, or run with \
             XLA_FLAGS=--xla_dump_to=DIR and use DIR's *.before_optimizations.txt",
            src.name
        );
    }
    let options = hlo::ParseOptions {
        file_name: Some(src.name.clone()),
        ..hlo::ParseOptions::default()
    };
    let parsed = hlo::parse_module_with(&src.text, &options).map_err(|e| anyhow!("{e}"))?;
    for w in &parsed.warnings {
        eprintln!("{}:{w}", src.name);
    }
    Ok(parsed)
}

/// Reads and parses FILE (see [`read`] and [`parse`]).
pub fn load(file: &str) -> Result<(Source, hlo::Parsed)> {
    let src = read(file)?;
    let parsed = parse(&src)?;
    Ok((src, parsed))
}

/// Fails at the first constant whose values the text elides (`{...}`, as XLA prints large
/// constants by default): a command that computes with the module cannot guess them.
pub fn require_constants(src: &Source, parsed: &hlo::Parsed) -> Result<()> {
    for (comp_id, comp) in parsed.module.computations() {
        for (id, instr) in comp.instructions() {
            if !instr.literal().is_some_and(hlo::Literal::is_elided) {
                continue;
            }
            let start = parsed.source_map.offset(comp_id, id).unwrap_or(0);
            // Point at the `{...}` itself when it is on the instruction's line.
            let line_end = src.text[start..]
                .find('\n')
                .map_or(src.text.len(), |i| start + i);
            let at = src.text[start..line_end]
                .find("{...}")
                .or_else(|| src.text[start..line_end].find("..."))
                .map_or(start, |i| start + i);
            let (line, col) = hlo::source_map::LineIndex::new(&src.text).line_col(&src.text, at);
            bail!(
                "{}:{line}:{col}: the values of constant `{}` are elided (`{{...}}`); hloc needs \
                 them: dump the module with its large constants (XLA_FLAGS=\"--xla_dump_to=DIR \
                 --xla_dump_large_constants\", or `.as_hlo_text(print_large_constants=True)`)",
                src.name,
                instr.name()
            );
        }
    }
    Ok(())
}

/// The instruction `name` (a leading `%` sigil, as XLA's text writes names, is dropped),
/// or an error naming the flag it was given with.
pub fn instr<'m>(module: &'m hlo::Module, flag: &str, name: &str) -> Result<hlo::InstrRef<'m>> {
    let bare = name.strip_prefix('%').unwrap_or(name);
    module
        .instr(bare)
        .ok_or_else(|| anyhow!("{flag}: no instruction named `{bare}`"))
}
