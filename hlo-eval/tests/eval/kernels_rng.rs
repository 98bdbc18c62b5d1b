//! `rng-bit-generator` against XLA's recorded outputs (corpus `rng_bit_generator`:
//! Philox and ThreeFry with a `u32[4]` key) and counter arithmetic (the Random123
//! known-answer vectors are unit tests of `kernels::rng`).

use crate::support;

use hlo::literal::ArrayData;
use support::*;

fn state_of(words: &[u32]) -> Literal {
    let v: Vec<u64> = words
        .chunks(2)
        .map(|c| u64::from(c[0]) | (u64::from(c[1]) << 32))
        .collect();
    arr(&format!("u64[{}]", v.len()), ArrayData::U64(v))
}

fn words_of(l: &Literal) -> Vec<u32> {
    match l.as_array().unwrap().data() {
        ArrayData::U64(v) => v
            .iter()
            .flat_map(|&x| [x as u32, (x >> 32) as u32])
            .collect(),
        d => panic!("{d:?}"),
    }
}

fn u32s_of(l: &Literal) -> Vec<u32> {
    match l.as_array().unwrap().data() {
        ArrayData::U32(v) => v.clone(),
        d => panic!("{d:?}"),
    }
}

use hlo::Literal;

fn generate(algorithm: &str, out: &str, key: &[u32]) -> Literal {
    let text = format!(
        "HloModule m\nENTRY e {{\n  s = u64[2] parameter(0)\n  ROOT r = (u64[2], {out}) rng-bit-generator(s), algorithm={algorithm}\n}}"
    );
    eval_root(&text, &[state_of(key)]).unwrap()
}

#[test]
fn philox_matches_xla() {
    let key = corpus_array("rng_bit_generator", "inputs.npz", "in0").u32s();
    let r = generate("rng_philox", "u32[8]", &key);
    assert_eq!(
        words_of(part(&r, 0)),
        corpus_array("rng_bit_generator", "outputs.npz", "out0").u32s()
    );
    assert_eq!(
        u32s_of(part(&r, 1)),
        corpus_array("rng_bit_generator", "outputs.npz", "out1").u32s()
    );
}

#[test]
fn threefry_matches_xla() {
    let key = corpus_array("rng_bit_generator", "inputs.npz", "in0").u32s();
    let r = generate("rng_three_fry", "u32[2,3]", &key);
    assert_eq!(
        words_of(part(&r, 0)),
        corpus_array("rng_bit_generator", "outputs.npz", "out2").u32s()
    );
    assert_eq!(
        u32s_of(part(&r, 1)),
        corpus_array("rng_bit_generator", "outputs.npz", "out3").u32s()
    );
}

#[test]
fn default_algorithm_is_philox_and_counts_advance() {
    let key = [1, 2, 3, 4];
    let a = generate("rng_default", "u32[5]", &key);
    let b = generate("rng_philox", "u32[5]", &key);
    assert_eq!(a, b);
    // 5 words take two Philox blocks: the counter (state word 1) advances by 2.
    let s = words_of(part(&a, 0));
    assert_eq!((s[0], s[1], s[2], s[3]), (1, 2, 5, 4));
    // ThreeFry u64: one block per element.
    let t = generate("rng_three_fry", "u64[3]", &key);
    let s = words_of(part(&t, 0));
    assert_eq!((s[2], s[3]), (6, 4));
}

#[test]
fn philox_u64_values_pair_the_u32_stream() {
    // XLA builds u64 Philox values from consecutive 32-bit words of the same blocks.
    let key = [7, 8, 9, 10];
    let wide = generate("rng_philox", "u64[5]", &key);
    let narrow = generate("rng_philox", "u32[10]", &key);
    let w = match part(&wide, 1).as_array().unwrap().data() {
        ArrayData::U64(v) => v.clone(),
        d => panic!("{d:?}"),
    };
    let n = u32s_of(part(&narrow, 1));
    let paired: Vec<u64> = n
        .chunks(2)
        .map(|c| u64::from(c[0]) | (u64::from(c[1]) << 32))
        .collect();
    assert_eq!(w, paired);
    assert_eq!(words_of(part(&wide, 0)), words_of(part(&narrow, 0)));
}
