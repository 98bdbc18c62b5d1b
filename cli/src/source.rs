//! Reading the HLO module a command works on: the text of FILE (or standard input for
//! `-`), parsed with errors at file:line:column (exit 2), and the parser's warnings shown
//! on stderr as `FILE:LINE:COL: warning: ...` by every command.

use std::io::Read;

use anyhow::{anyhow, Context, Result};

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
    let text = std::fs::read_to_string(file).map_err(|e| anyhow!("cannot read {file}: {e}"))?;
    Ok(Source {
        text,
        name: file.to_string(),
    })
}

/// Parses the module; a syntax error is the error (file:line:column, the line and a
/// caret); warnings go to stderr.
pub fn parse(src: &Source) -> Result<hlo::Parsed> {
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
