//! Golden tests of the per-op and fusion maps: each case of `tests/ops/*.test` is an HLO
//! module, optional `# instr: NAME`, `# direction: in-to-out`, `# operand: N`,
//! `# producer: P` / `# consumer: C` and `# epilogue: HERO` headers, and the expected text
//! (the `hloc indexing` format). Bless with `UPDATE_EXPECT=1`.

use testkit::golden;

use std::path::Path;

fn run(case: &golden::Case) -> String {
    let module = match hlo::parse_module(&case.input) {
        Ok(m) => m,
        Err(e) => return format!("parse error: {e}"),
    };
    let lookup = |name: &str| module.instr(name);
    let result = (|| -> Result<String, String> {
        if let (Some(p), Some(c)) = (case.header_value("producer"), case.header_value("consumer")) {
            let producer = lookup(p).ok_or("no producer")?;
            let consumer = lookup(c).ok_or("no consumer")?;
            let v = indexing::producer_consumer(&producer, &consumer).map_err(|e| e.to_string())?;
            return Ok(indexing::format_values(&v));
        }
        if let Some(h) = case.header_value("epilogue") {
            let hero = lookup(h).ok_or("no hero")?;
            let v = indexing::epilogue_indexing(&hero).map_err(|e| e.to_string())?;
            return Ok(indexing::format_in_to_out(&v));
        }
        let instr = match case.header_value("instr") {
            Some(n) => lookup(n).ok_or("no such instruction")?,
            None => module
                .instr_ref(module.entry_id(), module.entry().root())
                .ok_or("no root")?,
        };
        if case.header_value("direction") == Some("in-to-out") {
            let operand: usize = case
                .header_value("operand")
                .unwrap_or("0")
                .parse()
                .map_err(|_| "bad operand")?;
            let v = indexing::input_to_output(&instr, operand).map_err(|e| e.to_string())?;
            Ok(indexing::format_in_to_out(&v))
        } else {
            let v = indexing::output_to_input(&instr).map_err(|e| e.to_string())?;
            Ok(indexing::format_grouped(&v))
        }
    })();
    match result {
        Ok(s) => s.trim_end().to_string(),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn op_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ops");
    for path in golden::files(&dir, "test") {
        golden::check_file(&path, run);
    }
}
