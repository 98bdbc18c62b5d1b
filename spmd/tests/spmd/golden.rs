//! Golden text cases (`tests/spmd/cases/*.test`, bless with UPDATE_EXPECT=1): each case
//! an annotated module and `# devices: N`; the expected output is the propagation's
//! explanation, then the partitioned module (or the error). Every case that partitions is
//! also run on N devices against the global evaluation, so a blessed module is a correct
//! one.

use std::path::Path;

use crate::check::{check_module, random_args};

#[test]
fn propagation_and_partitioned_modules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spmd/cases");
    let files = testkit::golden::files(&dir, "test");
    assert!(!files.is_empty(), "no golden files in {}", dir.display());
    for file in files {
        testkit::golden::check_file(&file, |case| {
            let devices: usize = case
                .header_value("devices")
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| {
                    panic!(
                        "{}: case `{}` needs `# devices: N`",
                        file.display(),
                        case.title
                    )
                });
            let module = hlo::parse_module(&case.input)
                .unwrap_or_else(|e| panic!("{}: `{}`: {e}", file.display(), case.title));
            match spmd::partition(&module, devices) {
                Err(e) => format!("error: {e}"),
                Ok(_) => {
                    let p = check_module(&module, devices, &random_args(&module, 35))
                        .unwrap_or_else(|e| panic!("{}: `{}`: {e}", file.display(), case.title));
                    format!("{}\n{}", p.explain, hlo::print_module(&p.module))
                }
            }
        });
    }
}
