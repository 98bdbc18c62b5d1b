//! Random small modules: every pass and the default pipeline keep the evaluator's results
//! (integers bit for bit, floats within `hlo_eval::tolerance`) and leave a module that
//! verifies. Modules are drawn from a fixed-seed generator (deterministic runs): chains
//! of elementwise ops, broadcast constants (0, 1, 2, -1, 0.25), compares and selects,
//! reshapes, transposes, slices, reverses and reduces over two parameters.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::{Pass, PassContext, Pipeline};
use hlo::{ElementType, Literal, Shape};
use hlo_eval::tolerance;

use testkit::rng::Lcg as Rng;

/// A random module over `ty` (`f32` or `s32`) values of shape [2,3].
fn random_module(rng: &mut Rng, ty: &str) -> String {
    let mut lines = vec![
        format!("  v0 = {ty}[2,3] parameter(0)"),
        format!("  v1 = {ty}[2,3] parameter(1)"),
    ];
    let mut n = 2;
    let consts = if ty == "f32" {
        ["0", "1", "2", "-1", "0.25"]
    } else {
        ["0", "1", "2", "-1", "3"]
    };
    let bin = ["add", "subtract", "multiply", "maximum", "minimum"];
    let un: &[&str] = if ty == "f32" {
        &["negate", "abs", "exponential", "floor", "sign"]
    } else {
        &["negate", "abs", "sign", "not"]
    };
    let steps = 4 + rng.pick(8);
    for _ in 0..steps {
        let a = rng.pick(n);
        let b = rng.pick(n);
        let line = match rng.pick(9) {
            0 | 1 => format!("{ty}[2,3] {}(v{a}, v{b})", bin[rng.pick(bin.len())]),
            2 => format!("{ty}[2,3] {}(v{a})", un[rng.pick(un.len())]),
            3 => {
                let c = consts[rng.pick(consts.len())];
                lines.push(format!("  c{n} = {ty}[] constant({c})"));
                lines.push(format!(
                    "  b{n} = {ty}[2,3] broadcast(c{n}), dimensions={{}}"
                ));
                let op = bin[rng.pick(bin.len())];
                if rng.pick(2) == 0 {
                    format!("{ty}[2,3] {op}(v{a}, b{n})")
                } else {
                    format!("{ty}[2,3] {op}(b{n}, v{a})")
                }
            }
            4 => {
                lines.push(format!(
                    "  k{n} = pred[2,3] compare(v{a}, v{b}), direction=LT"
                ));
                let c = rng.pick(n);
                format!("{ty}[2,3] select(k{n}, v{b}, v{c})")
            }
            5 => {
                lines.push(format!(
                    "  t{n} = {ty}[3,2] transpose(v{a}), dimensions={{1,0}}"
                ));
                format!("{ty}[2,3] transpose(t{n}), dimensions={{1,0}}")
            }
            6 => {
                lines.push(format!("  r{n} = {ty}[6] reshape(v{a})"));
                lines.push(format!(
                    "  rev{n} = {ty}[6] reverse(r{n}), dimensions={{0}}"
                ));
                format!("{ty}[2,3] reshape(rev{n})")
            }
            7 => {
                lines.push(format!(
                    "  l{n} = {ty}[1,3] slice(v{a}), slice={{[1:2], [0:3]}}"
                ));
                lines.push(format!("  m{n} = {ty}[3] reshape(l{n})"));
                format!("{ty}[2,3] broadcast(m{n}), dimensions={{1}}")
            }
            _ => {
                lines.push(format!("  z{n} = {ty}[] constant(0)"));
                lines.push(format!(
                    "  d{n} = {ty}[2] reduce(v{a}, z{n}), dimensions={{1}}, to_apply=sum"
                ));
                format!("{ty}[2,3] broadcast(d{n}), dimensions={{0}}")
            }
        };
        lines.push(format!("  v{n} = {line}"));
        n += 1;
    }
    let k = rng.pick(n);
    let l = n - 1;
    format!(
        "HloModule random\nsum {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  ROOT s = {ty}[] add(x, y)\n}}\nENTRY e {{\n{}\n  ROOT out = ({ty}[2,3], {ty}[2,3]) tuple(v{l}, v{k})\n}}\n",
        lines.join("\n")
    )
}

fn argument(rng: &mut Rng, ty: &str) -> Literal {
    let (t, data) = if ty == "f32" {
        let v = (0..6).map(|_| (rng.pick(17) as f32 - 8.0) * 0.25).collect();
        (ElementType::F32, ArrayData::F32(v))
    } else {
        let v = (0..6).map(|_| rng.pick(21) as i32 - 10).collect();
        (ElementType::S32, ArrayData::S32(v))
    };
    Literal::Array(ArrayLiteral::new(Shape::array(t, vec![2, 3]), data).unwrap())
}

#[test]
fn passes_preserve_random_modules() {
    let mut rng = Rng(0x5eed);
    let mut failures = Vec::new();
    let mut changed_runs = 0;
    for case in 0..150 {
        let ty = if case % 2 == 0 { "f32" } else { "s32" };
        let text = random_module(&mut rng, ty);
        let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        hlo::pass::verify::verify(&m).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let args = [argument(&mut rng, ty), argument(&mut rng, ty)];
        let want = hlo_eval::evaluate(&m, &args).unwrap();
        let mut pipelines: Vec<Pipeline> = hlo_transforms::all_passes()
            .into_iter()
            .map(|p| {
                let mut pl = Pipeline::new("one");
                pl.add(p);
                pl
            })
            .collect();
        pipelines.push(Pipeline::new("default").with(hlo_transforms::default_pipeline()));
        for mut p in pipelines {
            let mut t = m.clone();
            let mut ctx = PassContext::new();
            ctx.set_verifier(hlo::pass::verify::verify_hook());
            let name = p
                .passes()
                .next()
                .map(|x| x.name().to_string())
                .unwrap_or_default();
            match p.run_in(&mut t, &mut ctx) {
                Err(e) => {
                    failures.push(format!("{name}: {e}\n{text}"));
                    continue;
                }
                Ok(false) => continue,
                Ok(true) => changed_runs += 1,
            }
            match hlo_eval::evaluate(&t, &args) {
                Ok(got) if tolerance::literals_match(&got, &want) => {}
                Ok(got) => failures.push(format!(
                    "{name}: results differ: {got:?} vs {want:?}\n{text}\n{}",
                    hlo::print_module(&t)
                )),
                Err(e) => failures.push(format!("{name}: evaluating: {e}\n{text}")),
            }
        }
    }
    // The test must exercise the passes, not only run them.
    assert!(
        changed_runs > 300,
        "only {changed_runs} runs changed a module"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
