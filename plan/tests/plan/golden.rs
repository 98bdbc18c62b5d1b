//! Golden text tests of the program builder (testkit's format): each case is an HLO module
//! and, after `----`, the kernel IR (`tests/golden/kir.test`) or the thunks and buffer
//! assignment (`tests/golden/thunks.test`) of its entry computation, or a pass's result
//! and its thunks. Bless with `UPDATE_EXPECT=1`.

use testkit::golden;

use std::path::Path;

fn program(input: &str) -> Result<plan::Program, String> {
    let m = hlo::parse_module(input).map_err(|e| e.to_string())?;
    plan::build_program(&m).map_err(|e| e.to_string())
}

fn path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[test]
fn kernel_ir() {
    golden::check_file(&path("kir.test"), |case| match program(&case.input) {
        Ok(p) => p
            .kernels
            .iter()
            .map(codegen::kir::kernel_text)
            .collect::<String>()
            .trim_end()
            .to_string(),
        Err(e) => format!("error: {e}"),
    });
}

#[test]
fn thunks_and_buffers() {
    golden::check_file(&path("thunks.test"), |case| match program(&case.input) {
        Ok(p) => format!(
            "{}{}",
            plan::thunks_text(&p),
            plan::buffer_assignment_text(&p)
        )
        .trim_end()
        .to_string(),
        Err(e) => format!("error: {e}"),
    });
}

/// `outline.test`: the module after [`plan::OutlineFusedGemms`], then its thunks.
#[test]
fn fused_gemms_outlined() {
    pass_then_thunks("outline.test", plan::OutlineFusedGemms);
}

/// `boundary_layouts.test`: the module after [`plan::MatchBoundaryLayouts`], then
/// its thunks.
#[test]
fn boundary_layouts_matched() {
    pass_then_thunks("boundary_layouts.test", plan::MatchBoundaryLayouts);
}

/// Checks golden file `file`: each input module after `pass`, verified, then its thunks.
fn pass_then_thunks(file: &str, mut pass: impl hlo::pass::Pass) {
    golden::check_file(&path(file), |case| {
        let mut run = || -> Result<String, String> {
            let mut m = hlo::parse_module(&case.input).map_err(|e| e.to_string())?;
            let changed = pass.run(&mut m).map_err(|e| e.to_string())?;
            hlo::pass::verify::verify(&m).map_err(|e| format!("{e:?}"))?;
            let p = plan::build_program(&m).map_err(|e| e.to_string())?;
            Ok(format!(
                "changed: {changed}\n{}\n{}",
                hlo::print_module(&m).trim_end(),
                plan::thunks_text(&p).trim_end()
            ))
        };
        run().unwrap_or_else(|e| format!("error: {e}"))
    });
}

/// `values.test`: the dataflow values of each module ([`plan::memory::dataflow`]).
#[test]
fn dataflow_values() {
    golden::check_file(&path("values.test"), |case| {
        match hlo::parse_module(&case.input) {
            Ok(m) => plan::memory::values_text(&m, &plan::memory::dataflow(&m))
                .trim_end()
                .to_string(),
            Err(e) => format!("error: {e}"),
        }
    });
}

/// `schedules.test`: every candidate order of the entry computation with its heap
/// simulation's peak, and the chosen one ([`plan::memory::schedule::schedule`]).
#[test]
fn entry_schedules() {
    golden::check_file(&path("schedules.test"), |case| {
        let m = match hlo::parse_module(&case.input) {
            Ok(m) => m,
            Err(e) => return format!("error: {e}"),
        };
        let flow = plan::memory::dataflow(&m);
        let s = plan::memory::schedule::schedule(&m, m.entry_id(), &flow);
        let entry = m.entry();
        let mut out = String::new();
        for (k, c) in s.candidates.iter().enumerate() {
            let names: Vec<&str> = c.order.iter().map(|&i| entry.instr(i).name()).collect();
            let mark = if k == s.chosen { " (chosen)" } else { "" };
            out += &format!("{}: peak {}{mark}\n  {}\n", c.name, c.peak, names.join(" "));
        }
        out.trim_end().to_string()
    });
}

/// `memory_dumps.test`: XLA's `buffer-assignment.txt` and `memory-usage-report.txt`
/// layouts of each module's program ([`plan::memory::xla_memory_dumps`]).
#[test]
fn xla_memory_dumps() {
    golden::check_file(&path("memory_dumps.test"), |case| {
        let run = || -> Result<String, String> {
            let m = hlo::parse_module(&case.input).map_err(|e| e.to_string())?;
            let p = plan::build_program(&m).map_err(|e| e.to_string())?;
            Ok(plan::memory::xla_memory_dumps(0, &m, &p)
                .into_iter()
                .map(|(name, text)| format!("== {name}\n{text}"))
                .collect::<String>())
        };
        run()
            .unwrap_or_else(|e| format!("error: {e}"))
            .trim_end()
            .to_string()
    });
}

/// `alias_layouts.test`: the module after [`plan::MatchBoundaryLayouts`] (whose first step
/// gives donated outputs their parameters' layouts), then its buffer assignment.
#[test]
fn aliased_outputs_take_their_parameters_layouts() {
    golden::check_file(&path("alias_layouts.test"), |case| {
        let run = || -> Result<String, String> {
            let mut m = hlo::parse_module(&case.input).map_err(|e| e.to_string())?;
            let changed = hlo::pass::Pass::run(&mut plan::MatchBoundaryLayouts, &mut m)
                .map_err(|e| e.to_string())?;
            hlo::pass::verify::verify(&m).map_err(|e| format!("{e:?}"))?;
            let p = plan::build_program(&m).map_err(|e| e.to_string())?;
            Ok(format!(
                "changed: {changed}\n{}\n{}",
                hlo::print_module(&m).trim_end(),
                plan::buffer_assignment_text(&p).trim_end()
            ))
        };
        run().unwrap_or_else(|e| format!("error: {e}"))
    });
}

/// `stream_peak.test`: the thunks and buffer assignment of each (already fused, patches
/// made by conv-to-gemm) module built with two workers (two scratch slots, on any
/// machine): a patch matrix under the streaming threshold streams where it is live at
/// the temp peak and stays whole elsewhere.
#[test]
fn patch_matrices_stream_at_the_peak() {
    golden::check_file(&path("stream_peak.test"), |case| {
        let run = || -> Result<String, String> {
            let m = hlo::parse_module(&case.input).map_err(|e| e.to_string())?;
            let options = plan::BuildOptions {
                workers: 2,
                ..plan::BuildOptions::default()
            };
            let p = plan::build_program_with(&m, &options).map_err(|e| e.to_string())?;
            Ok(format!(
                "{}{}",
                plan::thunks_text(&p),
                plan::buffer_assignment_text(&p)
            ))
        };
        run()
            .unwrap_or_else(|e| format!("error: {e}"))
            .trim_end()
            .to_string()
    });
}
