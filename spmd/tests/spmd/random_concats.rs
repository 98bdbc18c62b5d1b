//! Property test: random concatenates of two or three operands along a dimension that
//! random shardings split (uneven and empty shards, partial replication, shuffled
//! devices; `concat_split.rs` assembles each device's tile from the operands' tiles by
//! collective-permutes), partitioned and evaluated on 2, 4 or 8 devices, equal the
//! global evaluation; and the partitioned module gathers nothing where the operands
//! already split the concatenated dimension as the result does.

use rand_xoshiro::SplitMix64;

use crate::check::check_random_modules;
use crate::random_windows::{dims_text, pick, sharding};

/// A random concatenate over `devices` devices.
fn module_text(rng: &mut SplitMix64, devices: i64) -> String {
    let along = pick(rng, 2);
    let other = [1i64, 2, 3][pick(rng, 3)];
    let count = 2 + pick(rng, 2);
    let mut params = Vec::new();
    let mut names = Vec::new();
    let mut total = 0;
    for j in 0..count {
        let n = [1i64, 2, 3, 5, 8, 13, 16][pick(rng, 7)];
        total += n;
        let mut dims = [other, other];
        dims[along] = n;
        // The first operand is split along the concatenated dimension (the case this
        // file is about), the others at random.
        let s = match j {
            0 => {
                let mut t = [1i64, 1];
                t[along] = devices;
                format!("{{devices=[{},{}]<=[{devices}]}}", t[0], t[1])
            }
            _ => sharding(rng, &dims, devices),
        };
        params.push(format!(
            "  x{j} = f32[{}] parameter({j}), sharding={s}",
            dims_text(&dims)
        ));
        names.push(format!("x{j}"));
    }
    let mut out = [other, other];
    out[along] = total;
    let o = dims_text(&out);
    let root = match pick(rng, 2) {
        0 => format!(", sharding={}", sharding(rng, &out, devices)),
        _ => String::new(),
    };
    format!(
        "HloModule random_concat\n\nENTRY e {{\n{}\n  y = f32[{o}] concatenate({}), dimensions={{{along}}}\n  \
         ROOT t = f32[{o}] tanh(y){root}\n}}\n",
        params.join("\n"),
        names.join(", ")
    )
}

#[test]
fn partitioned_concatenates_equal_the_global_evaluation() {
    check_random_modules(3536, 90, "concatenates", module_text);
}

#[test]
fn concatenate_of_split_operands_gathers_nothing() {
    let text = "HloModule c\n\nENTRY e {\n  a = f32[6,3] parameter(0), sharding={devices=[4,1]<=[4]}\n  \
                b = f32[10,3] parameter(1), sharding={devices=[4,1]<=[4]}\n  \
                ROOT y = f32[16,3] concatenate(a, b), dimensions={0}, sharding={devices=[4,1]<=[4]}\n}\n";
    let module = hlo::parse_module(text).expect("parses");
    let p = spmd::partition(&module, 4).expect("partitions");
    let printed = p.module.to_string();
    assert!(!printed.contains("all-gather"), "{printed}");
    assert!(printed.contains("collective-permute"), "{printed}");
}
