//! The trigonometric entry points compiled once per module rather than once per
//! translation unit.
//!
//! Each function's entries (`trig.rs`: the scalar one, the vector function ABI's 128-,
//! 256- and 512-bit ones, and gcc's SIMD clone of the Payne-Hanek version behind them)
//! are the costliest code a unit can hold: measured with gcc 12 under `cc::FLAGS`
//! (AVX-512), f64 `sin` alone 115 ms of compiler time, `sin` and `cos` 210 ms, against
//! 20-120 ms for a kernel. A module of several units called them in each:
//! f64_pendulum_chain_rk4's two units each spent 250 of their 400 ms on them. So where a
//! module has two units or more, one more unit, the math unit, defines the entries its
//! kernels call (global, hidden symbols: `HLOC_VM_EXPORT`), and the kernel units only
//! declare them (`HLOC_VM_IMPORT`); the C compiler builds the math unit in parallel with
//! the others. The entries' code is the same text under the same flags, so every result
//! is the same bit for bit; only the symbols' linkage differs. A module of one unit keeps
//! them local (no second process, no link step). Outside gcc on x86-64 (where the entries
//! are gcc's own SIMD clones, local to a unit) each unit still defines its own and the math
//! unit is empty.
//!
//! A unit of their own rather than a place in a kernel unit: merged into the unit the
//! balancer chose (their ~60 ms a function weighed with the kernels), six fresh programs'
//! two-core compile went 0.90-1.07x (session 55, C): the third process costs ~20 ms of CPU,
//! but it fills whichever core the balancer's kernel estimates (off 2-3x on single kernels)
//! left idle, which a fixed placement cannot.

use super::trig;

/// The translation units of a module whose kernel units hold the kernel texts `units` (in
/// order): each unit's prelude (`prelude_for`) and its kernels; with two units or more and
/// a trigonometric function called in any of them, the kernel units declare the entries
/// of those functions and one more unit, last, defines them.
pub fn units_sharing_math(units: &[Vec<&str>]) -> Vec<String> {
    let called: Vec<&str> = if units.len() >= 2 {
        trig::entries()
            .map(|(name, _)| name)
            .filter(|name| {
                let call = format!("{name}(");
                units.iter().flatten().any(|t| t.contains(&call))
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut out: Vec<String> = units
        .iter()
        .map(|texts| {
            let mut unit = importing(super::super::prelude_for(texts.iter().copied()), &called);
            for t in texts {
                unit.push('\n');
                unit.push_str(t);
            }
            unit
        })
        .collect();
    if !called.is_empty() {
        out.push(math_unit(&called));
    }
    out
}

/// `prelude` with the entry definitions of the functions `shared` turned into
/// declarations.
fn importing(prelude: String, shared: &[&str]) -> String {
    let mut prelude = prelude;
    for name in shared {
        prelude = prelude.replace(
            &format!("HLOC_VM_ENTRIES({name},"),
            &format!("HLOC_VM_IMPORT({name},"),
        );
    }
    prelude
}

/// The math unit: the entries of the functions `names`, exported to the module's other
/// units.
fn math_unit(names: &[&str]) -> String {
    let calls: Vec<String> = names.iter().map(|n| format!("{n}(")).collect();
    format!(
        "/* hloc generated code: the module's trigonometric entry points */\n\
         #define HLOC_VM_EXPORT 1\n{}",
        super::super::prelude_for(calls.iter().map(String::as_str))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIN: &str = "void k0(double *y) { y[0] = hloc_vsin_f64(y[0]); }";
    const COS: &str = "void k1(float *y) { y[0] = hloc_vcos_f32(y[0]); }";
    const EXP: &str = "void k2(double *y) { y[0] = hloc_vexp_f64(y[0]); }";

    fn defines(unit: &str, name: &str) -> bool {
        unit.contains(&format!("HLOC_VM_ENTRIES({name},"))
    }
    fn declares(unit: &str, name: &str) -> bool {
        unit.contains(&format!("HLOC_VM_IMPORT({name},"))
    }

    #[test]
    fn one_unit_keeps_its_entries() {
        let units = units_sharing_math(&[vec![SIN, EXP]]);
        assert_eq!(units.len(), 1);
        assert!(defines(&units[0], "hloc_vsin_f64"));
        assert!(!units[0].contains("HLOC_VM_IMPORT(hloc_"));
        assert!(!units[0].contains("#define HLOC_VM_EXPORT"));
    }

    #[test]
    fn several_units_declare_and_the_math_unit_defines() {
        let units = units_sharing_math(&[vec![SIN], vec![COS, EXP], vec![EXP]]);
        assert_eq!(units.len(), 4);
        assert!(declares(&units[0], "hloc_vsin_f64") && !defines(&units[0], "hloc_vsin_f64"));
        assert!(declares(&units[1], "hloc_vcos_f32") && !defines(&units[1], "hloc_vcos_f32"));
        // A unit declares only what its kernels call.
        assert!(!declares(&units[0], "hloc_vcos_f32") && !declares(&units[2], "hloc_vsin_f64"));
        let math = &units[3];
        assert!(math.contains("#define HLOC_VM_EXPORT 1"));
        assert!(defines(math, "hloc_vsin_f64") && defines(math, "hloc_vcos_f32"));
        for other in ["hloc_vtan_f64", "hloc_vsin_f32", "hloc_vcos_f64"] {
            assert!(!defines(math, other), "{other}");
        }
        // Kernels stay in their units, after the prelude.
        assert!(units[0].ends_with(SIN) && units[2].ends_with(EXP));
    }

    #[test]
    fn units_without_trigonometry_get_no_math_unit() {
        let units = units_sharing_math(&[vec![EXP], vec![EXP]]);
        assert_eq!(units.len(), 2);
    }
}
