//! Which translation unit each kernel goes to, so that the C compiler's processes (one per
//! unit, one per core) finish together: the module's compile time is its slowest unit's.
//!
//! Kernels are placed by an estimate of what they cost the compiler, not by their text's
//! length: measured (gcc 12, `cc::FLAGS`, 326 kernels of nine fresh programs compiled one
//! at a time after their unit's prelude), a kernel costs about 5.5 ms however small (its
//! two functions through every pass) plus 4.2 ms per KiB of code, comments not counted
//! (the printer's index-map comments are up to half a kernel's text), and 5 ms per call of
//! an always-inlined vector function (`hloc_vexp_f32`, ...). What a unit compiles once
//! for all its kernels is charged once per unit: the vector-math part of the prelude
//! (15 ms to parse) and each SIMD-cloned function (`vecmath::PER_UNIT_CLONED`: `pow`,
//! `atan2`, ...: 55-65 ms each, compiled in every unit that calls it; `sin`, `cos` and
//! `tan` are compiled once per module, `vecmath::shared`, and a call of one costs as an
//! inlined call). Balancing by bytes put `unet_block`'s 12 KB convolution patch kernel
//! and one small kernel in one unit and seven small kernels plus the vector prelude in
//! the other: 90 ms against 160 ms of compiler time.

use super::vecmath::PER_UNIT_CLONED;

/// Estimated compiler time of a kernel's own functions, however small (µs).
const KERNEL_US: u64 = 5_500;
/// Estimated compiler time per KiB of a kernel's code without comments (µs).
const PER_KIB_US: u64 = 4_200;
/// Estimated compiler time of each call of an always-inlined vector function (µs).
const INLINE_CALL_US: u64 = 5_000;
/// Estimated compiler time of the prelude's vector-math part, once per unit (µs).
const VECMATH_PRELUDE_US: u64 = 15_000;
/// Estimated compiler time of a SIMD-cloned vector function, once per unit (µs).
const SIMD_CLONE_US: u64 = 60_000;
/// Estimated compiler time of an alias's declaration (µs).
pub(super) const ALIAS_US: u64 = 200;

/// What one kernel (or a group: a kernel and the aliases of its entry point) costs the
/// compiler: its own part, and what it needs compiled once in whichever unit holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Cost {
    /// Its own functions (µs).
    pub own: u64,
    /// The shared parts it needs: `vecmath` (the prelude's vector functions) and the name
    /// of each SIMD-cloned function it calls.
    pub shared: Vec<String>,
}

/// The cost of the kernel whose C text is `text`, of which `code_bytes` are code (not
/// comments).
pub(super) fn kernel_cost(text: &str, code_bytes: usize) -> Cost {
    let mut cost = Cost {
        own: KERNEL_US + code_bytes as u64 * PER_KIB_US / 1024,
        shared: Vec::new(),
    };
    for call in vector_calls(text) {
        if !cost.shared.iter().any(|s| s == "vecmath") {
            cost.shared.push("vecmath".to_string());
        }
        if PER_UNIT_CLONED.iter().any(|p| call.starts_with(p)) {
            if !cost.shared.iter().any(|s| s == call) {
                cost.shared.push(call.to_string());
            }
        } else {
            cost.own += INLINE_CALL_US;
        }
    }
    cost
}

/// What the shared part `name` costs the unit that compiles it (µs).
fn shared_cost(name: &str) -> u64 {
    if name == "vecmath" {
        VECMATH_PRELUDE_US
    } else {
        SIMD_CLONE_US
    }
}

/// The prelude's vector functions called in `text` (`hloc_vexp_f32`, `hloc_vsin_f64`, ...;
/// not their helpers `hloc_vm_*`, which kernels do not call), once per call.
fn vector_calls(text: &str) -> impl Iterator<Item = &str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.split(move |c: char| !ident(c))
        .filter(|w| w.starts_with("hloc_v") && !w.starts_with("hloc_vm_"))
}

/// The unit (of `n`) of each of `groups`: the most expensive first, each into the unit
/// where it ends soonest (its own cost plus the shared parts the unit lacks so far; the
/// first such unit on a tie), then single kernels moved between units while a move lets
/// the pair end sooner, or as soon and with less work: a kernel needing a SIMD clone thus
/// joins a unit that already compiles it unless that unit would then end later than
/// another one paying for the clone again.
pub(super) fn assign(groups: &[Cost], n: usize) -> Vec<usize> {
    let n = n.max(1);
    let mut units = Units {
        load: vec![0; n],
        need: vec![Vec::new(); n],
    };
    let mut order: Vec<usize> = (0..groups.len()).collect();
    let full = |g: &Cost| g.own + g.shared.iter().map(|s| shared_cost(s)).sum::<u64>();
    order.sort_by_key(|&i| (std::cmp::Reverse(full(&groups[i])), i));
    let mut unit_of = vec![0; groups.len()];
    for &i in &order {
        let best = (0..n)
            .min_by_key(|&u| (units.load[u] + units.adding(&groups[i], u), u))
            .unwrap_or(0);
        units.add(&groups[i], best);
        unit_of[i] = best;
    }
    // Each accepted move lowers the loads sorted in decreasing order (lexicographically),
    // so this ends; the bound only caps the work on a module of many kernels.
    for _ in 0..4 {
        let mut moved = false;
        for &i in &order {
            let (g, from) = (&groups[i], unit_of[i]);
            let left = units.load[from] - units.removing(g, from);
            for to in (0..n).filter(|&u| u != from) {
                let arrived = units.load[to] + units.adding(g, to);
                let (before, after) = (units.load[from].max(units.load[to]), left.max(arrived));
                let less_work = left + arrived < units.load[from] + units.load[to];
                if after < before || (after == before && less_work) {
                    units.remove(g, from);
                    units.add(g, to);
                    unit_of[i] = to;
                    moved = true;
                    break;
                }
            }
        }
        if !moved {
            break;
        }
    }
    unit_of
}

/// The units being filled: each one's estimated compile time and how many of its kernels
/// need each shared part.
struct Units<'a> {
    load: Vec<u64>,
    need: Vec<Vec<(&'a str, usize)>>,
}

impl<'a> Units<'a> {
    /// How many of unit `u`'s kernels need the shared part `s`.
    fn users(&self, u: usize, s: &str) -> usize {
        self.need[u]
            .iter()
            .find(|(n, _)| *n == s)
            .map_or(0, |(_, c)| *c)
    }

    /// What unit `u` would take longer with `g` in it.
    fn adding(&self, g: &Cost, u: usize) -> u64 {
        g.own
            + g.shared
                .iter()
                .filter(|s| self.users(u, s) == 0)
                .map(|s| shared_cost(s))
                .sum::<u64>()
    }

    /// What unit `u` (holding `g`) would take less without it.
    fn removing(&self, g: &Cost, u: usize) -> u64 {
        g.own
            + g.shared
                .iter()
                .filter(|s| self.users(u, s) == 1)
                .map(|s| shared_cost(s))
                .sum::<u64>()
    }

    fn add(&mut self, g: &'a Cost, u: usize) {
        self.load[u] += self.adding(g, u);
        for s in &g.shared {
            match self.need[u].iter_mut().find(|(n, _)| n == s) {
                Some((_, c)) => *c += 1,
                None => self.need[u].push((s, 1)),
            }
        }
    }

    fn remove(&mut self, g: &Cost, u: usize) {
        self.load[u] -= self.removing(g, u);
        for s in &g.shared {
            if let Some((_, c)) = self.need[u].iter_mut().find(|(n, _)| n == s) {
                *c -= 1;
            }
        }
        self.need[u].retain(|(_, c)| *c > 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(own: u64, shared: &[&str]) -> Cost {
        Cost {
            own,
            shared: shared.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_kernel_costs_its_code_and_its_inlined_calls_and_needs_its_clones() {
        // sin's entries are compiled once per module (`vecmath::shared`): a call as an
        // inlined one.
        let text =
            "v1 = hloc_vexp_f32(v0); v2 = hloc_vpow_f64(v1, v0); v3 = hloc_vpow_f64(v2, v0); \
                    v4 = hloc_vm_sel_f32(1, v3, v2); v5 = hloc_max_f32(v4, v4); \
                    v6 = hloc_vsin_f64(v5);";
        let c = kernel_cost(text, 2048);
        assert_eq!(c.own, KERNEL_US + 2 * PER_KIB_US + 2 * INLINE_CALL_US);
        assert_eq!(
            c.shared,
            vec!["vecmath".to_string(), "hloc_vpow_f64".into()]
        );
        let plain = kernel_cost("b1[d0] = b0[d0];", 0);
        assert_eq!(plain, cost(KERNEL_US, &[]));
    }

    #[test]
    fn the_largest_kernels_spread_over_the_units_first() {
        // By cost, not by order: 9 + 3 | 5 + 4 + 3 (the longest processing time rule).
        let groups = [3, 9, 5, 4, 3].map(|c| cost(c * 1000, &[]));
        assert_eq!(assign(&groups, 2), vec![0, 0, 1, 1, 1]);
        let loads = |units: &[usize]| {
            let mut l = [0u64; 2];
            for (g, &u) in groups.iter().zip(units) {
                l[u] += g.own;
            }
            l
        };
        assert_eq!(loads(&assign(&groups, 2)), [12_000, 12_000]);
    }

    #[test]
    fn kernels_calling_one_clone_share_a_unit_while_that_ends_sooner() {
        // Two small pow kernels: compiling the clone twice would cost more than it saves.
        let small = [
            cost(10_000, &["vecmath", "hloc_vpow_f64"]),
            cost(10_000, &["vecmath", "hloc_vpow_f64"]),
            cost(20_000, &[]),
        ];
        let units = assign(&small, 2);
        assert_eq!(units[0], units[1]);
        assert_ne!(units[2], units[0]);
        // Two large ones: each unit compiles its own clone and the two end together.
        let large = [
            cost(200_000, &["vecmath", "hloc_vpow_f64"]),
            cost(200_000, &["vecmath", "hloc_vpow_f64"]),
        ];
        let units = assign(&large, 2);
        assert_ne!(units[0], units[1]);
    }

    #[test]
    fn one_unit_holds_everything() {
        let groups = [cost(1, &[]), cost(2, &["vecmath"])];
        assert_eq!(assign(&groups, 1), vec![0, 0]);
        assert_eq!(assign(&groups, 0), vec![0, 0]);
        assert!(assign(&[], 3).is_empty());
    }
}
