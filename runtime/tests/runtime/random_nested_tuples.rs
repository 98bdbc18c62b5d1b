//! Differential test of nested tuples at every boundary (issue 36 item 3, whose reproducers
//! the compiled backend once rejected): a random nested tuple as the entry parameter, its
//! leaves regrouped into another random nesting, that value passed through a conditional, a
//! call and a while loop (each present or not, in random order) as operand, parameter and
//! result, and a nested root holding it beside part of the parameter. Compiled for the CPU
//! and compared with the reference evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, Rng};

/// A value's type: an array, or a tuple of types.
#[derive(Clone)]
enum Ty {
    Leaf(&'static str),
    Tuple(Vec<Ty>),
}

impl Ty {
    fn text(&self) -> String {
        match self {
            Ty::Leaf(t) => (*t).to_string(),
            Ty::Tuple(items) => format!(
                "({})",
                items.iter().map(Ty::text).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// Array types of the leaves (a non-default layout among them).
const LEAVES: &[&str] = &[
    "f32[3]{0}",
    "s32[4]{0}",
    "f32[2,3]{0,1}",
    "f32[]",
    "s32[2,2]{1,0}",
];

/// A random nesting of `leaves` (in order) of depth at most `depth`: a tuple at the top
/// (empty tuples included where no leaf is left).
fn nest(rng: &mut Rng, leaves: &[&'static str], depth: usize) -> Ty {
    if leaves.is_empty() {
        return Ty::Tuple(Vec::new());
    }
    let mut items = Vec::new();
    let mut rest = leaves;
    while !rest.is_empty() {
        let take = 1 + rng.below(rest.len().min(3));
        let (now, later) = rest.split_at(take);
        rest = later;
        items.push(if take == 1 && (depth == 0 || rng.below(2) == 0) {
            Ty::Leaf(now[0])
        } else if depth == 0 {
            Ty::Tuple(now.iter().map(|t| Ty::Leaf(t)).collect())
        } else {
            nest(rng, now, depth - 1)
        });
    }
    Ty::Tuple(items)
}

/// The lines of one computation, with fresh names.
struct Body {
    lines: Vec<String>,
    next: usize,
}

impl Body {
    fn new() -> Body {
        Body {
            lines: Vec::new(),
            next: 0,
        }
    }

    /// Adds `name = TYPE EXPR` and returns the name.
    fn add(&mut self, ty: &str, expr: String) -> String {
        let name = format!("v{}", self.next);
        self.next += 1;
        self.lines.push(format!("  {name} = {ty} {expr}"));
        name
    }

    /// The leaves of `value` (of type `ty`) by get-tuple-element, in order.
    fn unpack(&mut self, value: &str, ty: &Ty, out: &mut Vec<(String, &'static str)>) {
        match ty {
            Ty::Leaf(t) => out.push((value.to_string(), t)),
            Ty::Tuple(items) => {
                for (i, item) in items.iter().enumerate() {
                    let v = self.add(
                        &item.text(),
                        format!("get-tuple-element({value}), index={i}"),
                    );
                    self.unpack(&v, item, out);
                }
            }
        }
    }

    /// A value of type `ty` from `leaves` (consumed in order).
    fn pack(&mut self, ty: &Ty, leaves: &mut std::slice::Iter<'_, String>) -> String {
        match ty {
            Ty::Leaf(_) => leaves.next().expect("a leaf per leaf type").clone(),
            Ty::Tuple(items) => {
                let names: Vec<String> = items.iter().map(|i| self.pack(i, leaves)).collect();
                self.add(&ty.text(), format!("tuple({})", names.join(", ")))
            }
        }
    }

    /// Each leaf through an elementwise op `op` (exact in both backends).
    fn touch(&mut self, leaves: &[(String, &'static str)], op: &str) -> Vec<String> {
        leaves
            .iter()
            .map(|(v, t)| match op {
                "negate" => self.add(t, format!("negate({v})")),
                _ => self.add(t, format!("{op}({v}, {v})")),
            })
            .collect()
    }

    /// `ty` unpacked, each leaf through `op`, packed as `ty` again.
    fn rewrite(&mut self, value: &str, ty: &Ty, op: &str) -> String {
        let mut leaves = Vec::new();
        self.unpack(value, ty, &mut leaves);
        let touched = self.touch(&leaves, op);
        self.pack(ty, &mut touched.iter())
    }

    fn finish(mut self, name: &str, params: &[(String, String)], root: &str) -> String {
        let mut text = format!("{name} {{\n");
        for (i, (p, ty)) in params.iter().enumerate() {
            text.push_str(&format!("  {p} = {ty} parameter({i})\n"));
        }
        if let Some(last) = self
            .lines
            .iter()
            .rposition(|l| l.starts_with(&format!("  {root} ")))
        {
            self.lines[last] = self.lines[last].replacen("  ", "  ROOT ", 1);
        }
        text.push_str(&self.lines.join("\n"));
        text.push_str("\n}\n");
        text
    }
}

/// A computation `name` taking one `ty` and returning it, each leaf through `op`.
fn rewriter(name: &str, ty: &Ty, op: &str) -> String {
    let mut b = Body::new();
    let out = b.rewrite("p", ty, op);
    b.finish(name, &[("p".into(), ty.text())], &out)
}

/// One random module: the boundaries are drawn per seed.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = 1 + rng.below(5);
    let leaves: Vec<&'static str> = (0..n).map(|_| *rng.pick(LEAVES)).collect();
    let a = nest(&mut rng, &leaves, 2);
    let b_ty = nest(&mut rng, &leaves, 2);
    let mut comps = vec![
        rewriter("on_true", &b_ty, "add"),
        rewriter("on_false", &b_ty, "negate"),
        rewriter("callee", &b_ty, "multiply"),
    ];
    let state = Ty::Tuple(vec![Ty::Leaf("s32[]"), b_ty.clone()]);
    {
        let mut c = Body::new();
        let i = c.add("s32[]", "get-tuple-element(s), index=0".into());
        let two = c.add("s32[]", "constant(2)".into());
        let lt = c.add("pred[]", format!("compare({i}, {two}), direction=LT"));
        comps.push(c.finish("cond", &[("s".into(), state.text())], &lt));
        let mut body = Body::new();
        let i = body.add("s32[]", "get-tuple-element(s), index=0".into());
        let one = body.add("s32[]", "constant(1)".into());
        let j = body.add("s32[]", format!("add({i}, {one})"));
        let v = body.add(&b_ty.text(), "get-tuple-element(s), index=1".into());
        let w = body.rewrite(&v, &b_ty, "add");
        let r = body.add(&state.text(), format!("tuple({j}, {w})"));
        comps.push(body.finish("body", &[("s".into(), state.text())], &r));
    }
    let mut e = Body::new();
    let mut flat = Vec::new();
    e.unpack("p0", &a, &mut flat);
    let touched = e.touch(&flat, "negate");
    let mut v = e.pack(&b_ty, &mut touched.iter());
    let mut steps = vec!["conditional", "call", "while"];
    rng.shuffle(&mut steps);
    let mut last_while = None;
    for step in steps {
        if rng.below(4) == 0 {
            continue;
        }
        let bt = b_ty.text();
        v = match step {
            "conditional" => e.add(
                &bt,
                format!(
                    "conditional(p1, {v}, {v}), true_computation=on_true, \
                     false_computation=on_false"
                ),
            ),
            "call" => e.add(&bt, format!("call({v}), to_apply=callee")),
            _ => {
                let zero = e.add("s32[]", "constant(0)".into());
                let init = e.add(&state.text(), format!("tuple({zero}, {v})"));
                let w = e.add(
                    &state.text(),
                    format!("while({init}), condition=cond, body=body"),
                );
                last_while = Some(w.clone());
                e.add(&bt, format!("get-tuple-element({w}), index=1"))
            }
        };
    }
    // The root nests the result, part of the parameter, and the loop's whole state.
    let mut items = vec![(v, b_ty.text())];
    if let Ty::Tuple(parts) = &a {
        if let Some(first) = parts.first() {
            let g = e.add(&first.text(), "get-tuple-element(p0), index=0".into());
            items.push((g, first.text()));
        }
    }
    if let Some(w) = last_while {
        items.push((w, state.text()));
    }
    let root_ty = format!(
        "({})",
        items
            .iter()
            .map(|i| i.1.clone())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let names: Vec<String> = items.into_iter().map(|i| i.0).collect();
    let root = e.add(&root_ty, format!("tuple({})", names.join(", ")));
    let entry = e.finish(
        "ENTRY e",
        &[("p0".into(), a.text()), ("p1".into(), "pred[]".into())],
        &root,
    );
    format!("HloModule nested_{seed}\n{}\n{entry}", comps.join("\n"))
}

#[test]
fn random_nested_tuples_at_every_boundary_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-nested-tuples", gen::seeds(0..60), |seed| {
        Some(module(seed))
    });
    assert!(ran > 0);
}

#[test]
fn the_generator_nests_tuples_in_parameters_and_roots() {
    // Some module has a tuple inside its entry parameter's tuple, and a conditional, a
    // call and a while loop over nested tuples.
    let texts: Vec<String> = (0..60).map(module).collect();
    let nested_parameter = |t: &String| {
        t.lines()
            .any(|l| l.starts_with("  p0 = ") && l.matches('(').count() > 2)
    };
    assert!(texts.iter().any(nested_parameter));
    for op in ["conditional(", "call(", "while("] {
        assert!(texts.iter().any(|t| t.contains(op)), "no {op}");
    }
}
