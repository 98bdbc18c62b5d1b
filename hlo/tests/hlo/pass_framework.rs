//! The pass framework: nesting, fixed point with its cap, disabling, the verify hook,
//! statistics and dump file names.

use std::cell::Cell;
use std::rc::Rc;

use hlo::pass::{DumpConfig, FixedPoint, Pass, PassContext, PassError, Pipeline};
use hlo::Module;

/// Negates the root until `budget` runs have changed it, then reports no change.
struct Countdown {
    name: &'static str,
    budget: Rc<Cell<u32>>,
}

impl Pass for Countdown {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test pass"
    }
    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        if self.budget.get() == 0 {
            return Ok(false);
        }
        self.budget.set(self.budget.get() - 1);
        let text = hlo::print_module(module).replacen("negate", "abs", 1);
        *module =
            hlo::parse_module(&text).map_err(|e| PassError::invalid(self.name, e.to_string()))?;
        Ok(true)
    }
}

fn module() -> Module {
    hlo::parse_module(
        "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  a = f32[] negate(p)\n  b = f32[] negate(a)\n  ROOT c = f32[] negate(b)\n}\n",
    )
    .unwrap()
}

fn countdown(name: &'static str, n: u32) -> (Countdown, Rc<Cell<u32>>) {
    let budget = Rc::new(Cell::new(n));
    (
        Countdown {
            name,
            budget: budget.clone(),
        },
        budget,
    )
}

#[test]
fn fixed_point_stops_when_unchanged_or_at_cap() {
    let (p, left) = countdown("neg-to-abs", 2);
    let mut m = module();
    let mut ctx = PassContext::new();
    assert!(FixedPoint::new(p).run_in(&mut m, &mut ctx).unwrap());
    assert_eq!(left.get(), 0);
    let s = ctx.stats().get("neg-to-abs").unwrap();
    assert_eq!((s.runs, s.changes), (3, 2));

    let (p, left) = countdown("neg-to-abs", 10);
    let mut ctx = PassContext::new();
    let mut m = module();
    assert!(FixedPoint::new(p)
        .max_iterations(3)
        .run_in(&mut m, &mut ctx)
        .unwrap());
    assert_eq!(left.get(), 7);
}

#[test]
fn nested_pipelines_disable_and_verify() {
    let (a, a_left) = countdown("a", 1);
    let (b, b_left) = countdown("b", 1);
    let (c, c_left) = countdown("c", 1);
    let mut p = Pipeline::new("outer")
        .with(a)
        .with(Pipeline::new("inner").with(b).with(c));
    let mut ctx = PassContext::new();
    ctx.disable("c");
    let mut m = module();
    assert!(p.run_in(&mut m, &mut ctx).unwrap());
    assert_eq!((a_left.get(), b_left.get(), c_left.get()), (0, 0, 1));
    assert_eq!(hlo::print_module(&m).matches("abs").count(), 2);

    // A verifier that rejects everything stops the run after the first pass.
    let (a, _) = countdown("a", 1);
    let (b, b_left) = countdown("b", 1);
    let mut p = Pipeline::new("p").with(a).with(b);
    let mut ctx = PassContext::new();
    ctx.set_verifier(Box::new(|_: &Module| Err("rejected".to_string())));
    let err = p.run_in(&mut module(), &mut ctx).unwrap_err();
    assert!(
        matches!(err, PassError::Verify { ref pass, .. } if pass == "a"),
        "{err}"
    );
    assert_eq!(b_left.get(), 1);
}

#[test]
fn dumps_use_xla_names() {
    let dir = std::env::temp_dir().join(format!("hloc-pass-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (a, _) = countdown("first", 1);
    let (b, _) = countdown("second", 0);
    let (c, _) = countdown("third", 1);
    let mut p = Pipeline::new("pipe").with(a).with(b).with(c);
    let mut ctx = PassContext::new();
    let dump = DumpConfig::new(&dir, 7).with_pass_filter(Box::new(|n| n != "third"));
    let mut m = module();
    dump.write_before_optimizations(&m).unwrap();
    ctx.set_dump(dump);
    p.run_in(&mut m, &mut ctx).unwrap();
    DumpConfig::new(&dir, 7)
        .write_after_optimizations(&m)
        .unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "module_0007.m.0001.pipe.after_first.before_second.txt",
            "module_0007.m.after_optimizations.txt",
            "module_0007.m.before_optimizations.txt",
        ]
    );
    let after_first =
        std::fs::read_to_string(dir.join("module_0007.m.0001.pipe.after_first.before_second.txt"))
            .unwrap();
    assert_eq!(after_first.matches("abs").count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
