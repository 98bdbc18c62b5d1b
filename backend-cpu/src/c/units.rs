//! A module's kernels as translation units, each kernel's code printed once: kernels whose
//! C is the same but for their names and comments (a layer repeated, a chain of identical
//! groups) share one function, each kernel's entry point an alias of the first's. The
//! system C compiler's time grows with the code it is given, so a module of thousands of
//! identical kernels compiles in the time of a few (issue 36 item 9: 2,500 transpose, exp,
//! reduce and broadcast groups spent 22 s in `cc`).

use codegen::kir::Kernel;

use super::prelude::prelude_for;
use super::printer::kernel_c_called;
use super::shared_bodies::{self, BodyShape};
use super::unit_balance::{assign, kernel_cost, Cost, ALIAS_US};

/// Each kernel's text, and which earlier kernel's code it shares (`None`: its own). A
/// kernel that shares another's is printed as an alias of that kernel's entry point.
/// `calls[i]` is how often a run calls kernel `i` (missing: once), which sets its `-O`
/// level and math style.
fn kernel_texts(kernels: &[Kernel], calls: &[u64]) -> (Vec<String>, Vec<Option<usize>>) {
    let mut first: std::collections::HashMap<String, usize> = Default::default();
    let mut texts = Vec::with_capacity(kernels.len());
    let mut owner = Vec::with_capacity(kernels.len());
    // The kernels with code of their own, by the shape of their body (for
    // `shared_bodies`: the same code up to some integer literals).
    let mut shapes: Vec<Option<BodyShape>> = vec![None; kernels.len()];
    let mut by_shape: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (i, k) in kernels.iter().enumerate() {
        let text = kernel_c_called(k, calls.get(i).copied().unwrap_or(1));
        let entry = format!("void {}(void *const *bufs", k.name);
        let Some(at) = text.find(&entry) else {
            texts.push(text);
            owner.push(None);
            continue;
        };
        let body = &text[..at];
        let own = format!(" {}_body(", k.name);
        let Some(key) = body
            .contains(&own)
            .then(|| code_without_comments(&body.replacen(&own, " @_body(", 1)))
            .flatten()
        else {
            texts.push(text);
            owner.push(None);
            continue;
        };
        match first.get(&key) {
            Some(&j) => {
                // The same entry point as kernel `j`'s: an alias of it (no function of its
                // own for the compiler to build; with a thousand small ones, that was most
                // of its time).
                texts.push(format!(
                    "void {}(void *const *bufs, int64_t block_begin, int64_t block_end) \
                     __attribute__((alias(\"{}\")));\n",
                    k.name, kernels[j].name
                ));
                owner.push(Some(j));
            }
            None => {
                first.insert(key, i);
                let own_body = format!("{}_body", k.name);
                if let Some(s) = shared_bodies::body_shape(body, &own_body, &k.name) {
                    by_shape.entry(s.key.clone()).or_default().push(i);
                    shapes[i] = Some(s);
                }
                texts.push(text);
                owner.push(None);
            }
        }
    }
    for members in by_shape.values().filter(|m| m.len() > 1) {
        share_body(kernels, members, &shapes, &mut texts, &mut owner);
    }
    (texts, owner)
}

/// Kernels `members` (in order, of one body shape) printed as one body taking the
/// literals they differ in, which the first one's text defines, and an entry point each
/// calling it with its own (`shared_bodies`); each later one's owner is the first.
fn share_body(
    kernels: &[Kernel],
    members: &[usize],
    shapes: &[Option<BodyShape>],
    texts: &mut [String],
    owner: &mut [Option<usize>],
) {
    let Some(group) = members
        .iter()
        .map(|&i| shapes[i].as_ref())
        .collect::<Option<Vec<&BodyShape>>>()
    else {
        return;
    };
    let Some(params) = shared_bodies::differing(&group) else {
        return;
    };
    let split = |i: usize| {
        let at = texts[i].find(&format!("void {}(void *const *bufs", kernels[i].name))?;
        Some((texts[i][..at].to_string(), texts[i][at..].to_string()))
    };
    let Some(parts) = members
        .iter()
        .map(|&i| split(i))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let o = members[0];
    let body = format!("{}_body", kernels[o].name);
    for (n, (&i, (own_body, entry))) in members.iter().zip(parts).enumerate() {
        let name = format!("{}_body", kernels[i].name);
        let call = shared_bodies::calling(&entry, &name, &body, group[n], &params);
        texts[i] = if n == 0 {
            shared_bodies::shared_body(&own_body, group[0], &params) + &call
        } else {
            owner[i] = Some(o);
            call
        };
    }
}

/// `c` without its `/* */` and `//` comments, or `None` where a string or character literal
/// makes that uncertain (the printer writes none inside a kernel but for attributes, which
/// hold no comment markers).
fn code_without_comments(c: &str) -> Option<String> {
    let mut out = String::with_capacity(c.len());
    let mut rest = c;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = &r[r.find("*/")? + 2..];
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = &r[r.find('\n').unwrap_or(r.len())..];
        } else if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"')?;
            if r[..end].contains(['\\', '/', '\n']) {
                return None;
            }
            out.push('"');
            out.push_str(&r[..=end]);
            rest = &r[end + 1..];
        } else if rest.starts_with('\'') {
            return None;
        } else {
            let ch = rest.chars().next()?;
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    Some(out)
}

/// One translation unit: the prelude (with the vectorizable functions only when a kernel
/// calls one) and every kernel.
pub fn translation_unit(kernels: &[Kernel]) -> String {
    translation_unit_called(kernels, &[])
}

/// [`translation_unit`] of kernels called `calls[i]` times a run (missing: once).
pub fn translation_unit_called(kernels: &[Kernel], calls: &[u64]) -> String {
    let (texts, _) = kernel_texts(kernels, calls);
    let mut out = prelude_for(texts.iter().map(String::as_str));
    for t in &texts {
        out.push('\n');
        out.push_str(t);
    }
    out
}

/// The kernels split into at most `n` translation units, each with the prelude and at
/// least `min_bytes` of kernel text (as far as there is enough), so a C compiler can
/// build them in parallel and its processes end together: kernels placed by their
/// estimated compile time ([`super::unit_balance`]), a kernel that shares another's code in
/// that kernel's unit (an alias and its target are in one unit); within a unit, kernels
/// keep their order.
pub fn translation_units(kernels: &[Kernel], n: usize, min_bytes: usize) -> Vec<String> {
    translation_units_called(kernels, &[], n, min_bytes)
}

/// [`translation_units`] of kernels called `calls[i]` times a run (missing: once).
pub fn translation_units_called(
    kernels: &[Kernel],
    calls: &[u64],
    n: usize,
    min_bytes: usize,
) -> Vec<String> {
    let (texts, owner) = kernel_texts(kernels, calls);
    let total: usize = texts.iter().map(String::len).sum();
    let n = n
        .min(total / min_bytes.max(1))
        .clamp(1, kernels.len().max(1));
    // Each body's group: its own cost and its sharers' entry points.
    let own: Vec<usize> = (0..texts.len()).filter(|&i| owner[i].is_none()).collect();
    let mut group_of = vec![0; texts.len()];
    let mut costs: Vec<Cost> = own
        .iter()
        .enumerate()
        .map(|(g, &i)| {
            group_of[i] = g;
            let code = code_without_comments(&texts[i]).map_or(texts[i].len(), |c| c.len());
            kernel_cost(&texts[i], code)
        })
        .collect();
    for (i, o) in owner.iter().enumerate() {
        if let Some(j) = *o {
            group_of[i] = group_of[j];
            costs[group_of[j]].own += ALIAS_US;
        }
    }
    let unit_of_group = assign(&costs, n);
    let mut units: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, &g) in group_of.iter().enumerate() {
        units[unit_of_group[g]].push(i);
    }
    let units: Vec<Vec<&str>> = units
        .into_iter()
        .filter(|u| !u.is_empty() || n == 1)
        .map(|members| members.iter().map(|&i| texts[i].as_str()).collect())
        .collect();
    // With the module's trigonometric entries in a unit of their own where there are
    // several (compiled once, not once per unit).
    super::vecmath::shared::units_sharing_math(&units)
}
