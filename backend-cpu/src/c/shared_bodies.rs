//! Kernels whose C differs only in some integer literals share one body function, the
//! differing literals passed as parameters: the C compiler then builds one function where
//! it built several. A layer's transposed-convolution phases (weight slices at other tap
//! offsets), the same patch or optimizer kernel of layers of other sizes differ only in
//! offsets, strides and outer trip counts; gcc's time is per function (about 5-30 ms each
//! at `-O2`), not per call.
//!
//! Only literals whose value the compiler does not need to make the loop fast become
//! parameters; a literal stays in the text (and must be equal for two kernels to share)
//! where it is
//! - a divisor or modulus (an argument of a `*div*`, `*rem*` or `*mod*` function, or after
//!   `/` or `%`): a division by a variable is a `div` instruction, by a constant a multiply
//!   and shifts. Except a power of two `2^k` (`2 <= 2^k <= 2^30`) divided by with
//!   `hloc_floordiv`, `hloc_mod`, `hloc_div_s32/s64` or `hloc_rem_s32/s64`: the shared body
//!   takes `k` and calls a shift-and-mask form of the helper ([`POW2_HELPERS`], as fast as
//!   the constant's), so the patch kernels of layers of other spatial sizes (divisors 16
//!   and 32, 256 and 1024) share one body; not inside an innermost loop, where it stays;
//! - the bound of an innermost loop below [`MIN_VARIABLE_TRIP`] (short loops are unrolled
//!   whole when their count is known), or the multiplier of an innermost loop's variable
//!   (a known unit or constant stride is what the vectorizer needs);
//! - the only token between brackets (array sizes and constant indices of local arrays),
//!   in an attribute (`aligned`), after `case`, in a preprocessor line, or not a plain
//!   decimal `int`/`long long` (hex, octal, suffixed unsigned, floats);
//!
//! and a kernel with an aggregate initializer (`= {`) or whose name appears in more than
//! its body function's name shares nothing. The shared body is `noclone` under gcc, so
//! that interprocedural constant propagation does not clone it back per caller.

use std::ops::Range;

/// Innermost loops with a literal bound below this stay specialized (unrolled whole or
/// with no vector epilogue when the compiler knows the count).
pub(super) const MIN_VARIABLE_TRIP: i64 = 16;

/// Most literals one shared body takes as parameters.
pub(super) const MAX_PARAMS: usize = 32;

/// The C that makes `HLOC_NOCLONE` gcc's `noclone` attribute (nothing for other
/// compilers), printed before each shared body (guarded, so once per unit in effect).
const NOCLONE_MACRO: &str = "#ifndef HLOC_NOCLONE\n#if defined(__GNUC__) && !defined(__clang__)\n\
#define HLOC_NOCLONE __attribute__((noclone))\n#else\n#define HLOC_NOCLONE\n#endif\n#endif\n";

/// A kernel body's code up to its parameterizable literals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BodyShape {
    /// The code's tokens, with the body's own name as `@` and each parameterizable literal
    /// as `#`: kernels of equal keys differ only in those literals.
    pub key: String,
    /// The parameterizable literals, as written.
    pub values: Vec<String>,
    /// Where each is in the body text.
    spans: Vec<Range<usize>>,
    /// For a power-of-two divisor, the span of its helper's name and of the whole divisor
    /// argument (a parameter of a shared body is its log2, the helper its shift form).
    pow2: Vec<Option<Pow2Spans>>,
}

/// The division helpers whose power-of-two divisors may become parameters, each with its
/// shift-and-mask form for a divisor `2^k` (defined by [`POW2_C`]).
pub(super) const POW2_HELPERS: [(&str, &str); 6] = [
    ("hloc_floordiv", "hloc_p2_floordiv"),
    ("hloc_mod", "hloc_p2_mod"),
    ("hloc_div_s32", "hloc_p2_div_s32"),
    ("hloc_rem_s32", "hloc_p2_rem_s32"),
    ("hloc_div_s64", "hloc_p2_div_s64"),
    ("hloc_rem_s64", "hloc_p2_rem_s64"),
];

/// The shift forms of [`POW2_HELPERS`] for `1 <= k <= 30`, as exact as the division
/// helpers by the constant `2^k` (which never reach their zero or `-1` cases): floor
/// division an arithmetic shift, floor modulo a mask, truncating division a shift of the
/// dividend biased by `2^k - 1` when negative, its remainder what the quotient leaves.
/// Printed before each shared body, guarded (once per unit in effect).
const POW2_C: &str = "#ifndef HLOC_P2_HELPERS\n#define HLOC_P2_HELPERS\n\
static inline int64_t hloc_p2_floordiv(int64_t a, int64_t k) { return a >> k; }\n\
static inline int64_t hloc_p2_mod(int64_t a, int64_t k) { return a & ((INT64_C(1) << k) - 1); }\n\
static inline int32_t hloc_p2_div_s32(int32_t a, int64_t k) {\n\
  return (int32_t)((a + (int32_t)((uint32_t)(a >> 31) >> (32 - k))) >> k);\n}\n\
static inline int32_t hloc_p2_rem_s32(int32_t a, int64_t k) {\n\
  return (int32_t)((uint32_t)a - ((uint32_t)hloc_p2_div_s32(a, k) << k));\n}\n\
static inline int64_t hloc_p2_div_s64(int64_t a, int64_t k) {\n\
  return (a + (int64_t)((uint64_t)(a >> 63) >> (64 - k))) >> k;\n}\n\
static inline int64_t hloc_p2_rem_s64(int64_t a, int64_t k) {\n\
  return (int64_t)((uint64_t)a - ((uint64_t)hloc_p2_div_s64(a, k) << k));\n}\n#endif\n";

/// One token of C: an identifier, a plain decimal integer literal, or anything else
/// (punctuation, other literals, a whole preprocessor line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ident,
    Int,
    Other,
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    span: Range<usize>,
}

/// The tokens of `c`, comments and whitespace left out; `None` for text this scanner does
/// not follow (an unterminated comment or string).
fn tokens(c: &str) -> Option<Vec<Token>> {
    let b = c.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let ch = b[i];
        if ch == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if ch.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if ch == b'#' && line_start {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            out.push(Token {
                kind: Kind::Other,
                span: start..i,
            });
            continue;
        }
        line_start = false;
        if c[i..].starts_with("/*") {
            i += 2 + c[i + 2..].find("*/")? + 2;
            continue;
        }
        if c[i..].starts_with("//") {
            i += c[i..].find('\n').unwrap_or(c.len() - i);
            continue;
        }
        if ch == b'"' || ch == b'\'' {
            i += 1;
            while i < b.len() && b[i] != ch {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push(Token {
                kind: Kind::Other,
                span: start..i,
            });
            continue;
        }
        if ch.is_ascii_alphabetic() || ch == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                kind: Kind::Ident,
                span: start..i,
            });
            continue;
        }
        if ch.is_ascii_digit() || (ch == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < b.len() {
                let x = b[i];
                let exponent_sign = (x == b'+' || x == b'-')
                    && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P')
                    && !c[start..i].starts_with("0x")
                    || (x == b'+' || x == b'-')
                        && matches!(b[i - 1], b'p' | b'P')
                        && c[start..i].starts_with("0x");
                if x.is_ascii_alphanumeric() || x == b'.' || x == b'_' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let text = &c[start..i];
            let digits = text.strip_suffix("LL").unwrap_or(text);
            let plain = !digits.is_empty()
                && digits.bytes().all(|d| d.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'))
                && digits.parse::<i64>().is_ok();
            out.push(Token {
                kind: if plain { Kind::Int } else { Kind::Other },
                span: start..i,
            });
            continue;
        }
        i += 1;
        out.push(Token {
            kind: Kind::Other,
            span: start..i,
        });
    }
    Some(out)
}

/// The shape of the kernel body `body` (its C up to its entry point) whose function is
/// named `body_name`; `None` when it may share nothing.
pub(super) fn body_shape(body: &str, body_name: &str, kernel_name: &str) -> Option<BodyShape> {
    let toks = tokens(body)?;
    let text = |t: &Token| &body[t.span.clone()];
    // One function of this kernel (no helper the parameters would have to reach), and no
    // aggregate initializer (whose elements must stay constants).
    let own = toks
        .iter()
        .filter(|t| t.kind == Kind::Ident && text(t).starts_with(kernel_name))
        .count();
    if own != 1
        || toks
            .windows(2)
            .any(|w| text(&w[0]) == "=" && text(&w[1]) == "{")
    {
        return None;
    }
    let (fixed, pow2_at) = fixed_literals(body, &toks);
    let mut key = String::with_capacity(body.len());
    let (mut values, mut spans, mut pow2) = (Vec::new(), Vec::new(), Vec::new());
    for (i, t) in toks.iter().enumerate() {
        let s = text(t);
        if t.kind == Kind::Ident && s == body_name {
            key.push('@');
        } else if t.kind == Kind::Int && !fixed[i] {
            // A power-of-two divisor parameter only meets another such one.
            key.push(if pow2_at[i].is_some() { '%' } else { '#' });
            values.push(s.to_string());
            spans.push(t.span.clone());
            pow2.push(pow2_at[i].clone());
        } else {
            key.push_str(s);
        }
        key.push(' ');
    }
    Some(BodyShape {
        key,
        values,
        spans,
        pow2,
    })
}

/// The spans of a power-of-two divisor's helper name and divisor argument.
type Pow2Spans = (Range<usize>, Range<usize>);

/// Which tokens are literals that must stay in the text (see the module docs), and for
/// each power-of-two divisor that may become a parameter, its helper's and argument's
/// spans.
fn fixed_literals(body: &str, toks: &[Token]) -> (Vec<bool>, Vec<Option<Pow2Spans>>) {
    let text = |i: usize| &body[toks[i].span.clone()];
    let n = toks.len();
    let mut fixed: Vec<bool> = toks.iter().map(|t| t.kind != Kind::Int).collect();
    let mut pow2: Vec<Option<Pow2Spans>> = vec![None; n];
    // Matching brackets.
    let mut close = vec![n; n];
    let mut open_of = vec![n; n];
    let mut open: Vec<usize> = Vec::new();
    for (i, opened) in open_of.iter_mut().enumerate() {
        match text(i) {
            "(" | "{" | "[" => open.push(i),
            ")" | "}" | "]" => {
                if let Some(o) = open.pop() {
                    close[o] = i;
                    *opened = o;
                }
            }
            _ => {}
        }
    }
    // A power of two as the second argument of a division helper, plain (`2LL`) or cast
    // (`((int32_t)16LL)`): the helper's name and the argument's spans.
    let pow2_divisor = |i: usize| -> Option<Pow2Spans> {
        let v: i64 = text(i).trim_end_matches("LL").parse().ok()?;
        if !(2..=1 << 30).contains(&v) || v & (v - 1) != 0 {
            return None;
        }
        let (first, end) = if i >= 1 && text(i - 1) == "," {
            (i, i + 1)
        } else if i >= 5
            && text(i - 5) == ","
            && text(i - 4) == "("
            && text(i - 3) == "("
            && toks[i - 2].kind == Kind::Ident
            && text(i - 1) == ")"
            && text(i + 1) == ")"
        {
            (i - 4, i + 2)
        } else {
            return None;
        };
        if end >= n || text(end) != ")" || text(first - 1) != "," {
            return None;
        }
        let o = open_of[end];
        let name = o.checked_sub(1).filter(|&h| {
            toks[h].kind == Kind::Ident && POW2_HELPERS.iter().any(|(f, _)| *f == text(h))
        })?;
        Some((
            toks[name].span.clone(),
            toks[first].span.start..toks[end - 1].span.end,
        ))
    };
    // Literals inside calls of division-like functions or attributes; after `/`, `%` or
    // `case`; alone between brackets.
    let mut calls: Vec<&str> = Vec::new();
    for i in 0..n {
        let t = text(i);
        if t == "(" {
            calls.push(if i > 0 && toks[i - 1].kind == Kind::Ident {
                text(i - 1)
            } else {
                ""
            });
            continue;
        }
        if t == ")" {
            calls.pop();
            continue;
        }
        if toks[i].kind != Kind::Int {
            continue;
        }
        let divisor = calls.iter().any(|c| {
            ["div", "rem", "mod", "aligned", "vector_size"]
                .iter()
                .any(|w| c.contains(w))
        });
        let after = i > 0 && matches!(text(i - 1), "/" | "%" | "case");
        let alone = i > 0 && i + 1 < n && text(i - 1) == "[" && text(i + 1) == "]";
        if divisor && !after && !alone {
            if let Some(spans) = pow2_divisor(i) {
                pow2[i] = Some(spans);
                continue;
            }
        }
        if divisor || after || alone {
            fixed[i] = true;
        }
    }
    // Innermost loops: a short literal bound stays, and so does a multiplier of the loop's
    // variable.
    for f in 0..n {
        if text(f) != "for" || f + 1 >= n || text(f + 1) != "(" {
            continue;
        }
        let header_end = close[f + 1];
        if header_end + 1 >= n || text(header_end + 1) != "{" {
            continue;
        }
        let block_end = close[header_end + 1].min(n);
        if (header_end + 2..block_end).any(|i| text(i) == "for") {
            continue;
        }
        // `for ( TYPE VAR = ...`: the variable is the identifier before the first `=`.
        let var = (f + 2..header_end)
            .find(|&i| text(i) == "=")
            .and_then(|eq| (eq > 0 && toks[eq - 1].kind == Kind::Ident).then(|| text(eq - 1)));
        for i in f + 2..header_end {
            if toks[i].kind == Kind::Int {
                let v: i64 = text(i).trim_end_matches("LL").parse().unwrap_or(0);
                if v < MIN_VARIABLE_TRIP {
                    fixed[i] = true;
                }
            }
        }
        let Some(var) = var else {
            continue;
        };
        for i in header_end + 2..block_end {
            if toks[i].kind != Kind::Int {
                continue;
            }
            // A divisor evaluated per innermost iteration stays a constant.
            if pow2[i].is_some() {
                fixed[i] = true;
            }
            let by_var = (i >= 2 && text(i - 1) == "*" && text(i - 2) == var)
                || (i + 2 < n && text(i + 1) == "*" && text(i + 2) == var);
            if by_var {
                fixed[i] = true;
            }
        }
    }
    for (p, f) in pow2.iter_mut().zip(&fixed) {
        if *f {
            *p = None;
        }
    }
    (fixed, pow2)
}

/// The literal positions (indices into [`BodyShape::values`]) where the shapes `members`
/// (of one key) differ; `None` when there are more than [`MAX_PARAMS`].
pub(super) fn differing(members: &[&BodyShape]) -> Option<Vec<usize>> {
    let first = members.first()?;
    let d: Vec<usize> = (0..first.values.len())
        .filter(|&p| members.iter().any(|m| m.values[p] != first.values[p]))
        .collect();
    (d.len() <= MAX_PARAMS).then_some(d)
}

/// The body `body` (of shape `shape`) taking the literals at `params` as parameters
/// `hloc_c0, hloc_c1, ...` after its block range, and not cloned back by the compiler.
pub(super) fn shared_body(body: &str, shape: &BodyShape, params: &[usize]) -> String {
    let mut out = body.to_string();
    // Each parameter's text (a power-of-two divisor's helper renamed too), last first, so
    // that earlier spans keep their offsets.
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for (j, &p) in params.iter().enumerate() {
        match &shape.pow2[p] {
            Some((name, arg)) => {
                let helper = &body[name.clone()];
                let shift = POW2_HELPERS
                    .iter()
                    .find(|(f, _)| *f == helper)
                    .map_or(helper, |(_, s)| *s);
                edits.push((name.clone(), shift.to_string()));
                edits.push((arg.clone(), format!("hloc_c{j}")));
            }
            None => edits.push((shape.spans[p].clone(), format!("hloc_c{j}"))),
        }
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    for (r, t) in edits {
        out.replace_range(r, &t);
    }
    let extra: String = (0..params.len())
        .map(|j| format!(", int64_t hloc_c{j}"))
        .collect();
    let out = out.replacen(
        "int64_t block_begin, int64_t block_end) {",
        &format!("int64_t block_begin, int64_t block_end{extra}) {{"),
        1,
    );
    let out = out.replacen(
        "__attribute__((noinline)) void",
        "__attribute__((noinline)) HLOC_NOCLONE void",
        1,
    );
    let helpers = if params.iter().any(|&p| shape.pow2[p].is_some()) {
        POW2_C
    } else {
        ""
    };
    format!("{NOCLONE_MACRO}{helpers}{out}")
}

/// The entry point `entry` (the kernel's `void NAME(void *const *bufs, ...)` calling
/// `own_body`) calling `body` instead, with the literals at `params` of `shape`.
pub(super) fn calling(
    entry: &str,
    own_body: &str,
    body: &str,
    shape: &BodyShape,
    params: &[usize],
) -> String {
    // A power-of-two divisor passes its log2.
    let values: String = params
        .iter()
        .map(|&p| match shape.pow2[p] {
            Some(_) => {
                let v: i64 = shape.values[p].trim_end_matches("LL").parse().unwrap_or(2);
                format!(", {}", v.trailing_zeros())
            }
            None => format!(", {}", shape.values[p]),
        })
        .collect();
    entry
        .replacen(&format!("{own_body}("), &format!("{body}("), 1)
        .replacen(
            ", block_begin, block_end);",
            &format!(", block_begin, block_end{values});"),
            1,
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body in the printer's form: an elementwise loop over `rows` x `cols` with the
    /// input read at stride `stride` and a value divided by `div`.
    fn body(name: &str, rows: i64, cols: i64, stride: i64, div: i64) -> String {
        format!(
            "static __attribute__((noinline)) void {name}_body(\n    const float *restrict b0 /* in p */,\n    \
             float *restrict b1 /* out f */,\n    int64_t block_begin, int64_t block_end) {{\n  \
             for (int64_t s0 = block_begin; s0 < block_end; ++s0) {{\n    // fusion f: 12 comment 7\n    \
             for (int64_t d1 = 0; d1 <= {r}; ++d1) {{\n      \
             for (int64_t d2 = 0; d2 <= {c}; ++d2) {{\n        \
             b1[((d2 + (d1 * {cols}LL)) + (s0 * {st}LL))] = b0[(hloc_floordiv(d2, {div}LL) + (d1 * {stride}LL))];\n      \
             }}\n    }}\n  }}\n}}\n",
            r = rows - 1,
            c = cols - 1,
            st = rows * cols,
        )
    }

    fn shape(name: &str, text: &str) -> BodyShape {
        body_shape(text, &format!("{name}_body"), name).expect("shares")
    }

    #[test]
    fn kernels_differing_in_outer_sizes_and_strides_share_a_key() {
        let a = shape("hloc_k1_f", &body("hloc_k1_f", 4, 64, 64, 4));
        let b = shape("hloc_k7_g", &body("hloc_k7_g", 8, 32, 96, 4));
        assert_eq!(a.key, b.key);
        // The comment's numbers are not code, nor is the innermost loop's start (short);
        // its bound (63 vs 31), the outer loop's, the strides and the block stride are
        // parameters, those that differ (not the block stride, 256 in both) taken.
        assert_eq!(a.values, ["0", "3", "63", "64LL", "256LL", "64LL"]);
        assert_eq!(differing(&[&a, &b]), Some(vec![1, 2, 3, 5]));
    }

    #[test]
    fn divisors_short_inner_loops_and_inner_strides_stay_literals() {
        let base = shape("hloc_k1_f", &body("hloc_k1_f", 4, 64, 64, 4));
        // Another divisor: another key.
        let div = shape("hloc_k1_f", &body("hloc_k1_f", 4, 64, 64, 8));
        assert_ne!(base.key, div.key);
        // An innermost loop of 8 iterations: its bound stays (and the keys differ).
        let short = shape("hloc_k1_f", &body("hloc_k1_f", 4, 8, 64, 4));
        assert_ne!(base.key, short.key);
        assert!(short.key.contains("d2 < = 7 ;"), "{}", short.key);
        // A multiplier of the innermost variable stays.
        let strided = body("hloc_k1_f", 4, 64, 64, 4).replace("b0[(hloc", "b0[(d2 * 3LL) + (hloc");
        let s = shape("hloc_k1_f", &strided);
        assert!(s.key.contains("d2 * 3LL"), "{}", s.key);
        // Local array sizes and attributes stay.
        let local = body("hloc_k1_f", 4, 64, 64, 4).replace(
            "int64_t block_end) {\n",
            "int64_t block_end) {\n  float l0[64] __attribute__((aligned(64)));\n",
        );
        let l = shape("hloc_k1_f", &local);
        assert!(
            l.key
                .contains("l0 [ 64 ] __attribute__ ( ( aligned ( 64 ) ) )"),
            "{}",
            l.key
        );
    }

    #[test]
    fn helpers_and_initializers_share_nothing() {
        let two = format!(
            "static void hloc_k1_f_helper(void) {{}}\n{}",
            body("hloc_k1_f", 4, 64, 64, 4)
        );
        assert!(body_shape(&two, "hloc_k1_f_body", "hloc_k1_f").is_none());
        let init = body("hloc_k1_f", 4, 64, 64, 4).replace(
            "int64_t block_end) {\n",
            "int64_t block_end) {\n  static const int64_t t[2] = {3, 4};\n",
        );
        assert!(body_shape(&init, "hloc_k1_f_body", "hloc_k1_f").is_none());
    }

    #[test]
    fn the_shared_body_takes_the_differing_literals_and_entries_pass_theirs() {
        let text = body("hloc_k1_f", 4, 64, 64, 4);
        let a = shape("hloc_k1_f", &text);
        let b = shape("hloc_k7_g", &body("hloc_k7_g", 8, 32, 96, 4));
        let params = differing(&[&a, &b]).expect("few");
        let shared = shared_body(&text, &a, &params);
        assert!(shared.contains(
            "int64_t block_begin, int64_t block_end, int64_t hloc_c0, int64_t hloc_c1, \
             int64_t hloc_c2, int64_t hloc_c3) {"
        ));
        assert!(shared.contains("d1 <= hloc_c0"), "{shared}");
        assert!(shared.contains("hloc_floordiv(d2, 4LL)"), "{shared}");
        assert!(shared.contains("__attribute__((noinline)) HLOC_NOCLONE void"));
        let entry = "void hloc_k7_g(void *const *bufs, int64_t block_begin, int64_t block_end) {\n  \
                     hloc_k7_g_body((const float *)bufs[0], (float *)bufs[1], block_begin, block_end);\n}\n";
        assert_eq!(
            calling(entry, "hloc_k7_g_body", "hloc_k1_f_body", &b, &params),
            "void hloc_k7_g(void *const *bufs, int64_t block_begin, int64_t block_end) {\n  \
             hloc_k1_f_body((const float *)bufs[0], (float *)bufs[1], block_begin, block_end, \
             7, 31, 32LL, 96LL);\n}\n"
        );
    }

    /// A patch-like body: divisions of the outer position by `div` (a power of two or
    /// not), outside the innermost loop of `cols` elements, and one by 4 inside it.
    fn divided(name: &str, div: i64, cols: i64) -> String {
        format!(
            "static __attribute__((noinline)) void {name}_body(\n    const float *restrict b0 /* in p */,\n    \
             float *restrict b1 /* out f */,\n    int64_t block_begin, int64_t block_end) {{\n  \
             for (int64_t d0 = block_begin; d0 < block_end; ++d0) {{\n    \
             const int32_t v1 = hloc_div_s32(((int32_t)(d0)), ((int32_t){div}LL));\n    \
             const int64_t v2 = hloc_mod(d0, {div}LL);\n    \
             for (int64_t d1 = 0; d1 <= {c}; ++d1) {{\n      \
             b1[((d0 * {cols}LL) + d1)] = b0[(((v1 * {cols}LL) + (v2 * 3LL)) + hloc_floordiv(d1, 4LL))];\n    \
             }}\n  }}\n}}\n",
            c = cols - 1,
        )
    }

    #[test]
    fn power_of_two_divisors_outside_the_innermost_loop_are_shift_parameters() {
        let (ta, tb) = (divided("hloc_k1_f", 16, 64), divided("hloc_k2_g", 256, 32));
        let (a, b) = (shape("hloc_k1_f", &ta), shape("hloc_k2_g", &tb));
        assert_eq!(a.key, b.key);
        // The innermost loop's own division stays a constant.
        assert!(a.key.contains("hloc_floordiv ( d1 , 4LL )"), "{}", a.key);
        let params = differing(&[&a, &b]).expect("few");
        let shared = shared_body(&ta, &a, &params);
        assert!(shared.contains("#define HLOC_P2_HELPERS"), "{shared}");
        assert!(
            shared.contains("hloc_p2_div_s32(((int32_t)(d0)), hloc_c0)"),
            "{shared}"
        );
        assert!(shared.contains("hloc_p2_mod(d0, hloc_c1)"), "{shared}");
        assert!(shared.contains("hloc_floordiv(d1, 4LL)"), "{shared}");
        let entry = "void hloc_k2_g(void *const *bufs, int64_t block_begin, int64_t block_end) {\n  \
                     hloc_k2_g_body((const float *)bufs[0], (float *)bufs[1], block_begin, block_end);\n}\n";
        // log2(256) = 8 for both divisors, then the other differing literals.
        let call = calling(entry, "hloc_k2_g_body", "hloc_k1_f_body", &b, &params);
        assert!(call.contains("block_begin, block_end, 8, 8, "), "{call}");
        // Another innermost divisor, or a divisor that is no power of two: another key.
        let inner = shape(
            "hloc_k3_h",
            &divided("hloc_k3_h", 16, 64).replace("d1, 4LL", "d1, 8LL"),
        );
        assert_ne!(a.key, inner.key);
        let twelve = shape("hloc_k4_i", &divided("hloc_k4_i", 12, 64));
        assert_ne!(a.key, twelve.key);
        assert!(twelve.key.contains("( int32_t ) 12LL"), "{}", twelve.key);
    }

    #[test]
    fn the_shift_forms_divide_as_the_helpers_do() {
        // Compiled with the system compiler and run: every k in 1..=30 against C's `/`
        // and `%` (what `hloc_div_*` and `hloc_rem_*` compute for a divisor 2^k) and the
        // floor forms, on values around 0, the extremes and multiples of 2^k.
        let dir = std::env::temp_dir().join(format!("hloc-p2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("p2.c");
        let program = format!(
            "#include <stdint.h>\n#include <stdio.h>\n{POW2_C}\n\
             static int64_t fdiv(int64_t a, int64_t b) {{ int64_t q = a / b; return q - ((a % b != 0) && ((a % b < 0) != (b < 0))); }}\n\
             int main(void) {{\n  int bad = 0;\n  const int64_t base[] = {{0, 1, -1, 2, -2, 7, -7, 1000003, -1000003,\n\
               INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, INT64_MAX / 3, INT64_MIN / 3}};\n\
               for (int64_t k = 1; k <= 30; ++k) {{\n    int64_t d = (int64_t)1 << k;\n\
                 for (unsigned i = 0; i < sizeof base / sizeof base[0]; ++i) for (int64_t e = -2; e <= 2; ++e) {{\n\
                   int64_t a = base[i] + e * d + e;\n      int32_t a32 = (int32_t)(uint32_t)(uint64_t)a;\n\
                   bad += hloc_p2_div_s32(a32, k) != a32 / (int32_t)d;\n\
                   bad += hloc_p2_rem_s32(a32, k) != a32 % (int32_t)d;\n\
                   bad += hloc_p2_div_s64(a, k) != a / d;\n      bad += hloc_p2_rem_s64(a, k) != a % d;\n\
                   bad += hloc_p2_floordiv(a, k) != fdiv(a, d);\n\
                   bad += hloc_p2_mod(a, k) != a - fdiv(a, d) * d;\n    }}\n  }}\n\
               printf(\"%d\\n\", bad);\n  return bad != 0;\n}}\n"
        );
        std::fs::write(&src, program).unwrap();
        let exe = dir.join("p2");
        let built = std::process::Command::new(crate::cc::compiler())
            .args(["-O2", "-std=gnu11", "-o"])
            .arg(&exe)
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let ran = std::process::Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            ran.status.success(),
            "mismatches: {}",
            String::from_utf8_lossy(&ran.stdout)
        );
    }

    #[test]
    fn the_scanner_keeps_float_hex_and_suffixed_literals_whole() {
        let c =
            "x = 1.5e-05f + 0x1p-12f + 0x7f + 3U + 017 + 12LL + 0; // 99\n#pragma GCC unroll 4\n";
        let toks = tokens(c).expect("scans");
        let ints: Vec<&str> = toks
            .iter()
            .filter(|t| t.kind == Kind::Int)
            .map(|t| &c[t.span.clone()])
            .collect();
        assert_eq!(ints, ["12LL", "0"]);
        let others: Vec<&str> = toks.iter().map(|t| &c[t.span.clone()]).collect();
        assert!(others.contains(&"1.5e-05f"), "{others:?}");
        assert!(others.contains(&"0x1p-12f"), "{others:?}");
        assert!(others.contains(&"#pragma GCC unroll 4"), "{others:?}");
    }
}
