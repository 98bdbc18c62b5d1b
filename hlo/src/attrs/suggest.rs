//! The error for an attribute name no opcode takes, with the likely intended name.
//!
//! XLA's parser rejects an attribute an opcode does not take; only the values of
//! `backend_config` and `frontend_attributes` are free-form. Keeping an unknown name
//! verbatim would leave a misspelled attribute's op with its default (`largst=false` on a
//! `topk` would sort largest first) and change the answer silently.

use super::{attr_kind, AttrName};
use crate::opcode::Opcode;

/// The message for the unknown attribute `text` on an `opcode` instruction: it names the
/// attribute of `opcode` it most likely misspells, when one is close enough.
pub fn unknown_attribute_message(opcode: Opcode, text: &str) -> String {
    let close = AttrName::KNOWN
        .iter()
        .filter(|n| attr_kind(opcode, &AttrName::from_text(n)).is_some())
        .map(|n| (edit_distance(text, n), *n))
        .filter(|&(d, n)| d <= (n.len().max(text.len()) / 3).max(1))
        .min();
    let hint = match close {
        Some((_, n)) => format!("; did you mean `{n}`?"),
        None => String::new(),
    };
    format!(
        "unknown attribute `{text}` on {opcode}{hint} (XLA's parser rejects it too; \
         free-form values belong in backend_config or frontend_attributes)"
    )
}

/// Levenshtein distance between `a` and `b` (in characters), an adjacent swap counting
/// one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("largst", "largest"), 1);
        assert_eq!(edit_distance("lagrest", "largest"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn the_closest_name_the_opcode_takes() {
        assert_eq!(
            unknown_attribute_message(Opcode::TopK, "largst"),
            "unknown attribute `largst` on topk; did you mean `largest`? (XLA's parser \
             rejects it too; free-form values belong in backend_config or frontend_attributes)"
        );
        // `dimension` is close to `dimensions`, which reduce takes.
        assert!(unknown_attribute_message(Opcode::Reduce, "dimension")
            .contains("did you mean `dimensions`?"));
        // Nothing close: no guess.
        assert!(!unknown_attribute_message(Opcode::Add, "frobnicate").contains("did you mean"));
    }
}
