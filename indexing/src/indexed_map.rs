//! An indexing map together with the provenance of its runtime variables.

use affine::{Expr, IndexingMap, Interval, MapError, MapForm, Var, VarKind};
use hlo::{CompId, InstrId};

/// Where runtime variable `rtK` of a map comes from: the value of an element of another
/// tensor (a start index, a gather index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeVar {
    /// The computation holding the producer.
    pub computation: CompId,
    /// The instruction whose output holds the value.
    pub producer: InstrId,
    /// Its name, for printing.
    pub producer_name: String,
    /// From the owning map's variables (the same dimensions, range variables and runtime
    /// variables, with the same bounds) to the element of `producer` that holds the value.
    pub map: IndexingMap,
}

/// A map and the provenance of each of its runtime variables (`runtime[k]` describes `rtK`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedMap {
    /// The map.
    pub map: IndexingMap,
    /// One entry per runtime variable of `map`.
    pub runtime: Vec<RuntimeVar>,
}

fn constraints_of(m: &IndexingMap) -> Vec<(Expr, Interval)> {
    m.constraints()
        .iter()
        .map(|c| (c.expr, c.interval))
        .collect()
}

/// `m` with extra unused range and runtime variables appended.
fn extend_vars(
    m: &IndexingMap,
    ranges: &[Interval],
    runtimes: &[Interval],
) -> Result<IndexingMap, MapError> {
    if m.form() != MapForm::Normal {
        return Ok(m.clone());
    }
    IndexingMap::new(
        m.dims().to_vec(),
        m.ranges().iter().chain(ranges).copied().collect(),
        m.runtimes().iter().chain(runtimes).copied().collect(),
        m.results().to_vec(),
        constraints_of(m),
    )
}

/// Rebuilds `m` over new variable bounds, renaming variables with `rename`.
fn rebuild(
    m: &IndexingMap,
    dims: Vec<Interval>,
    ranges: Vec<Interval>,
    runtimes: Vec<Interval>,
    rename: &mut dyn FnMut(Var) -> Option<Expr>,
) -> Result<IndexingMap, MapError> {
    if m.form() != MapForm::Normal {
        return Ok(m.clone());
    }
    let results = m.results().iter().map(|e| e.substitute(rename)).collect();
    let constraints = m
        .constraints()
        .iter()
        .map(|c| (c.expr.substitute(rename), c.interval))
        .collect();
    IndexingMap::new(dims, ranges, runtimes, results, constraints)
}

impl IndexedMap {
    /// A map without runtime variables.
    pub fn plain(map: IndexingMap) -> IndexedMap {
        IndexedMap {
            map,
            runtime: Vec::new(),
        }
    }

    /// The UNDEFINED map.
    pub fn undefined() -> IndexedMap {
        IndexedMap::plain(IndexingMap::undefined())
    }

    /// `self`, then `next`: from `self`'s source to `next`'s target. Runtime variables of
    /// both keep their provenance (`next`'s are re-expressed over the composed variables).
    /// Not simplified.
    pub fn compose(&self, next: &IndexedMap) -> Result<IndexedMap, MapError> {
        let map = self.map.compose(&next.map)?;
        if map.form() != MapForm::Normal {
            return Ok(IndexedMap::plain(map));
        }
        let mut runtime = Vec::with_capacity(self.runtime.len() + next.runtime.len());
        for rv in &self.runtime {
            runtime.push(RuntimeVar {
                map: extend_vars(&rv.map, next.map.ranges(), next.map.runtimes())?,
                ..rv.clone()
            });
        }
        for rv in &next.runtime {
            runtime.push(RuntimeVar {
                map: self.map.compose(&rv.map)?,
                ..rv.clone()
            });
        }
        Ok(IndexedMap { map, runtime })
    }

    /// Simplifies the map and the runtime variables' maps (over the map's tightened
    /// bounds), then removes range and runtime variables that nothing uses (a runtime
    /// variable's map counts as a use of the variables it reads, when the runtime variable
    /// itself is used).
    pub fn normalize(&mut self) -> Result<(), MapError> {
        self.map.simplify();
        if self.map.form() != MapForm::Normal {
            self.runtime.clear();
            return Ok(());
        }
        self.remove_unused()?;
        let (d, r, t) = (
            self.map.dims().to_vec(),
            self.map.ranges().to_vec(),
            self.map.runtimes().to_vec(),
        );
        for rv in &mut self.runtime {
            let mut m = rebuild(&rv.map, d.clone(), r.clone(), t.clone(), &mut |_| None)?;
            m.simplify();
            rv.map = m;
        }
        Ok(())
    }

    fn remove_unused(&mut self) -> Result<(), MapError> {
        let (nr, nt) = (self.map.ranges().len(), self.map.runtimes().len());
        if nr == 0 && nt == 0 {
            return Ok(());
        }
        let mut used_r = vec![false; nr];
        let mut used_t = vec![false; nt];
        let mark = |m: &IndexingMap, used_r: &mut Vec<bool>, used_t: &mut Vec<bool>| {
            let exprs = m
                .results()
                .iter()
                .copied()
                .chain(m.constraints().iter().map(|c| c.expr));
            for e in exprs {
                for v in e.variables() {
                    match v.kind {
                        VarKind::Range => used_r[v.index as usize] = true,
                        VarKind::Runtime => used_t[v.index as usize] = true,
                        VarKind::Dim => {}
                    }
                }
            }
        };
        mark(&self.map, &mut used_r, &mut used_t);
        // A used runtime variable uses what its own map reads (to a fixpoint).
        let mut done = vec![false; nt];
        loop {
            let next = (0..nt).find(|&k| used_t[k] && !done[k]);
            let Some(k) = next else { break };
            done[k] = true;
            if let Some(rv) = self.runtime.get(k) {
                mark(&rv.map, &mut used_r, &mut used_t);
            }
        }
        if used_r.iter().all(|&u| u) && used_t.iter().all(|&u| u) {
            return Ok(());
        }
        let renumber = |used: &[bool]| -> Vec<Option<u32>> {
            let mut next = 0;
            used.iter()
                .map(|&u| {
                    u.then(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect()
        };
        let (new_r, new_t) = (renumber(&used_r), renumber(&used_t));
        let ranges: Vec<Interval> = self
            .map
            .ranges()
            .iter()
            .zip(&used_r)
            .filter(|(_, &u)| u)
            .map(|(i, _)| *i)
            .collect();
        let runtimes: Vec<Interval> = self
            .map
            .runtimes()
            .iter()
            .zip(&used_t)
            .filter(|(_, &u)| u)
            .map(|(i, _)| *i)
            .collect();
        let dims = self.map.dims().to_vec();
        let mut rename = |v: Var| -> Option<Expr> {
            match v.kind {
                VarKind::Dim => None,
                // Unused variables never occur in what is renamed; 0 keeps this total.
                VarKind::Range => Some(Expr::range(new_r[v.index as usize].unwrap_or(0))),
                VarKind::Runtime => Some(Expr::runtime(new_t[v.index as usize].unwrap_or(0))),
            }
        };
        self.map = rebuild(
            &self.map,
            dims.clone(),
            ranges.clone(),
            runtimes.clone(),
            &mut rename,
        )?;
        let old = std::mem::take(&mut self.runtime);
        for (k, rv) in old.into_iter().enumerate() {
            if used_t.get(k).copied().unwrap_or(false) {
                let map = rebuild(
                    &rv.map,
                    dims.clone(),
                    ranges.clone(),
                    runtimes.clone(),
                    &mut rename,
                )?;
                self.runtime.push(RuntimeVar { map, ..rv });
            }
        }
        Ok(())
    }

    /// Replaces runtime variable `k` by `value` (an expression over the map's variables)
    /// everywhere, leaving `rtK` unused.
    pub(crate) fn substitute_runtime(&mut self, k: u32, value: Expr) -> Result<(), MapError> {
        let mut sub = |v: Var| (v == Var::runtime(k)).then_some(value);
        let m = &self.map;
        self.map = rebuild(
            m,
            m.dims().to_vec(),
            m.ranges().to_vec(),
            m.runtimes().to_vec(),
            &mut sub,
        )?;
        for rv in &mut self.runtime {
            let m = &rv.map;
            rv.map = rebuild(
                m,
                m.dims().to_vec(),
                m.ranges().to_vec(),
                m.runtimes().to_vec(),
                &mut sub,
            )?;
        }
        Ok(())
    }

    /// A deterministic text key: the map and its runtime variables' provenance.
    pub fn key(&self) -> String {
        let mut s = self.map.to_string();
        for rv in &self.runtime {
            s.push('|');
            s.push_str(&rv.producer_name);
            s.push(';');
            s.push_str(&rv.map.to_string());
        }
        s
    }
}
