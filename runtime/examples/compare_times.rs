//! Times one module compiled for the CPU against the reference evaluator, on the
//! recorded inputs of a corpus program:
//! `cargo run --release -p runtime --example compare_times -- corpus/NAME/before_optimizations.hlo [REPEAT]`
//! (inputs are read from `inputs.npz` beside the module, else random). Prints the compile time, the
//! median run times of both and whether the outputs match.

use std::path::Path;
use std::time::Instant;

use hlo::Literal;
use hlo_eval::npy::{adapt_to, read_npz};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let file = args
        .get(1)
        .ok_or("usage: compare_times MODULE.hlo [REPEAT]")?;
    let repeat: usize = args.get(2).map_or(Ok(20), |r| r.parse())?;
    let module = hlo::parse_module(&std::fs::read_to_string(file)?)?;
    let dir = Path::new(file).parent().ok_or("no directory")?;
    let arrays = match std::fs::read(dir.join("inputs.npz")) {
        Ok(bytes) => Some(read_npz(&bytes)?),
        Err(_) => None,
    };
    let entry = module.entry();
    let mut inputs = Vec::new();
    for n in 0..entry.parameters().len() {
        let id = entry.parameter(n).ok_or("parameter")?;
        let shape = entry.instr(id).shape();
        let key = format!("in{n}");
        inputs.push(match &arrays {
            Some(arrays) => {
                let (_, a) = arrays
                    .iter()
                    .find(|(k, _)| *k == key)
                    .ok_or("missing input")?;
                Literal::Array(adapt_to(a.clone(), shape, &key)?)
            }
            None => hlo_eval::random::random_literal(shape, 0, n as u64, 1 << 34)?,
        });
    }
    let exe = runtime::compile(&module, &runtime::CompileOptions::default())?;
    let (outs, timing) = runtime::run_repeated(&exe, &inputs, repeat)?;
    println!("{}", timing.line(exe.stats()));
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        hlo_eval::evaluate(&module, &inputs)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "reference evaluator: median {:.3} ms",
        times[times.len() / 2]
    );
    match runtime::check_reference(&module, &inputs, &outs) {
        Ok(()) => println!("outputs match the reference"),
        Err(e) => println!("MISMATCH: {e}"),
    }
    Ok(())
}
