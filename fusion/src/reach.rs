//! Reachability between the instructions of one computation (bitsets over the
//! def-before-use order): whether `a` feeds `b` through any path, the check that keeps
//! multi-output and horizontal fusion from creating cycles.

use std::collections::HashMap;

use hlo::{Computation, InstrId};

/// Which instructions each instruction reaches through users.
#[derive(Clone, Debug)]
pub struct Reachability {
    index: HashMap<InstrId, usize>,
    words: usize,
    bits: Vec<u64>,
}

impl Reachability {
    /// Computes reachability over the live instructions of `comp`.
    pub fn new(comp: &Computation) -> Reachability {
        let order = comp.def_before_use_order();
        let n = order.len();
        let index: HashMap<InstrId, usize> =
            order.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        let words = n.div_ceil(64).max(1);
        let mut bits = vec![0u64; n * words];
        for i in (0..n).rev() {
            let id = order[i];
            for &u in comp.users(id) {
                // Users come later in def-before-use order: their rows are complete.
                let Some(&j) = index.get(&u).filter(|&&j| j > i) else {
                    continue;
                };
                let (head, tail) = bits.split_at_mut(j * words);
                let row = &mut head[i * words..(i + 1) * words];
                row[j / 64] |= 1 << (j % 64);
                for (d, s) in row.iter_mut().zip(&tail[..words]) {
                    *d |= *s;
                }
            }
        }
        Reachability { index, words, bits }
    }

    /// True when a path of one or more operand edges leads from `a` to `b`.
    pub fn reaches(&self, a: InstrId, b: InstrId) -> bool {
        match (self.index.get(&a), self.index.get(&b)) {
            (Some(&i), Some(&j)) => self.bits[i * self.words + j / 64] >> (j % 64) & 1 == 1,
            _ => false,
        }
    }

    /// True when neither reaches the other.
    pub fn independent(&self, a: InstrId, b: InstrId) -> bool {
        !self.reaches(a, b) && !self.reaches(b, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  a = f32[2] negate(p)\n  b = f32[2] abs(p)\n  c = f32[2] add(a, p)\n  ROOT d = f32[2] add(c, b)\n}",
        )
        .unwrap();
        let c = m.entry();
        let id = |n: &str| c.find(n).unwrap();
        let r = Reachability::new(c);
        assert!(r.reaches(id("p"), id("d")));
        assert!(r.reaches(id("a"), id("d")));
        assert!(r.reaches(id("a"), id("c")));
        assert!(!r.reaches(id("c"), id("a")));
        assert!(r.independent(id("a"), id("b")));
        assert!(!r.independent(id("c"), id("d")));
        assert!(!r.reaches(id("d"), id("d")));
    }
}
