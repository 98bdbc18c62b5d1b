//! Sorting by typed keys instead of a comparator call per comparison: a recognized
//! comparator ([`SortOrder`](plan::SortOrder)) becomes one [`KeySpec`] per key,
//! which maps an element's bits to an unsigned integer whose order is the key's order
//! (floats by their total order, `-0` merged with `+0` where the comparator does,
//! canonicalized NaNs on top, descending keys inverted).
//!
//! A line with one key sorts `(key, index)` pairs packed into one integer: an LSD radix
//! sort over the key's bits (stable; unique items, so a small line may use the unstable
//! sort), top-k a bounded heap of the `k` smallest pairs. Several keys sort positions by
//! comparing their keys in turn (a stable merge sort). An IEEE-ordered float key whose
//! line holds a NaN is not a strict weak order: that line runs the evaluator's merge sort
//! over the same comparison, so the result is the evaluator's, whatever it is.

use std::collections::BinaryHeap;

use codegen::kir::ScalarType;
use hlo_eval::numeric::merge_sort;
use plan::{KeyCompare, SortKey};

use super::arrays::Arr;

/// How a key's element bits compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Unsigned,
    Signed,
    Float,
}

/// One key of a recognized order: which operand, and how its elements' bits become an
/// unsigned integer ordered as the comparator orders them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeySpec {
    /// The operand holding the key.
    pub operand: usize,
    kind: Kind,
    /// The sign bit of the value's width.
    sign: u64,
    /// All bits of the value's width.
    mask: u64,
    /// A float's infinity: a larger magnitude is a NaN.
    inf: u64,
    canonical: bool,
    /// IEEE comparison (`-0 == +0`, NaN unordered).
    partial: bool,
    /// `mask` for a descending key, else 0.
    flip: u64,
    /// Bytes of an element.
    width: usize,
}

impl KeySpec {
    /// The spec of `key`; `None` for types it does not handle (complex, `f8`).
    pub fn new(key: &SortKey) -> Option<KeySpec> {
        let (kind, inf) = match key.ty {
            ScalarType::Pred
            | ScalarType::U8
            | ScalarType::U16
            | ScalarType::U32
            | ScalarType::U64 => (Kind::Unsigned, 0),
            ScalarType::S8 | ScalarType::S16 | ScalarType::S32 | ScalarType::S64 => {
                (Kind::Signed, 0)
            }
            ScalarType::F16 => (Kind::Float, 0x7c00),
            ScalarType::BF16 => (Kind::Float, 0x7f80),
            ScalarType::F32 => (Kind::Float, 0x7f80_0000),
            ScalarType::F64 => (Kind::Float, 0x7ff0_0000_0000_0000),
            _ => return None,
        };
        let float = kind == Kind::Float;
        match key.compare {
            KeyCompare::Integer if float => return None,
            KeyCompare::Float | KeyCompare::TotalOrder if !float => return None,
            _ => {}
        }
        if key.canonical && !float {
            return None;
        }
        let bits = key.ty.bits();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Some(KeySpec {
            operand: key.operand,
            kind,
            sign: 1u64 << (bits - 1),
            mask,
            inf,
            canonical: key.canonical,
            partial: key.compare == KeyCompare::Float,
            flip: if key.descending { mask } else { 0 },
            width: key.ty.byte_width() as usize,
        })
    }

    /// The key of an element's bits (zero-extended): keys compare as the comparator
    /// compares elements (where it is a strict weak order: no NaN for an IEEE key).
    #[inline]
    pub fn key(&self, raw: u64) -> u64 {
        match self.kind {
            Kind::Unsigned => raw ^ self.flip,
            Kind::Signed => raw ^ self.sign ^ self.flip,
            Kind::Float => self.float_key(raw),
        }
    }

    /// [`KeySpec::key`] of a float, branch-free (selects) so loops over it vectorize.
    #[inline(always)]
    fn float_key(&self, raw: u64) -> u64 {
        let abs = raw & (self.sign - 1);
        let bits = if (self.canonical | self.partial) & (abs == 0) {
            0
        } else {
            raw
        };
        let k = if bits & self.sign != 0 {
            !bits & self.mask
        } else {
            bits | self.sign
        };
        // A canonicalized NaN is one positive NaN: after every number.
        let k = if self.canonical & (abs > self.inf) {
            self.mask
        } else {
            k
        };
        k ^ self.flip
    }

    /// Replaces elements' bits by their keys.
    pub fn keys_in_place(&self, v: &mut [u64]) {
        match self.kind {
            Kind::Unsigned => v.iter_mut().for_each(|x| *x ^= self.flip),
            Kind::Signed => v.iter_mut().for_each(|x| *x ^= self.sign ^ self.flip),
            Kind::Float => v.iter_mut().for_each(|x| *x = self.float_key(*x)),
        }
    }

    /// The keys of elements `start..start + out.len()` of a line.
    fn fill_keys(&self, l: &Line<'_>, start: usize, out: &mut [u64]) {
        l.fill_raw(start, out);
        self.keys_in_place(out);
    }

    /// [`KeySpec::fill_keys`] for keys of at most 32 bits, as `u32`s (a contiguous `f32`
    /// line computed in 32-bit lanes).
    fn fill_keys32(&self, l: &Line<'_>, start: usize, out: &mut [u32]) {
        if let (Data::B4(s), Kind::Float, 1) = (l.data, self.kind, l.stride) {
            let first = l.base + start;
            let src = &s[first..first + out.len()];
            let (sign, inf, flip) = (self.sign as u32, self.inf as u32, self.flip as u32);
            let (merge, canonical) = (self.canonical | self.partial, self.canonical);
            for (o, &raw) in out.iter_mut().zip(src) {
                let abs = raw & (sign - 1);
                let bits = if merge & (abs == 0) { 0 } else { raw };
                let k = if bits & sign != 0 { !bits } else { bits | sign };
                let k = if canonical & (abs > inf) { u32::MAX } else { k };
                *o = k ^ flip;
            }
            return;
        }
        let mut wide = [0u64; BLOCK];
        for (c, o) in out.chunks_mut(BLOCK).enumerate() {
            let w = &mut wide[..o.len()];
            self.fill_keys(l, start + c * BLOCK, w);
            for (o, &k) in o.iter_mut().zip(w.iter()) {
                *o = k as u32;
            }
        }
    }

    /// Whether the element's bits are a NaN that this key compares as unordered.
    #[inline]
    fn unordered(&self, raw: u64) -> bool {
        self.partial && raw & (self.sign - 1) > self.inf
    }

    /// Whether the key fits 32 bits.
    fn narrow(&self) -> bool {
        self.width <= 4
    }
}

/// The elements of one array an accessor reads, by element width.
#[derive(Clone, Copy)]
enum Data<'a> {
    B1(&'a [u8]),
    B2(&'a [u16]),
    B4(&'a [u32]),
    B8(&'a [u64]),
    /// The position itself (top-k's index operand).
    Index,
}

/// One line of an array: element `i` is at `base + i * stride`.
#[derive(Clone, Copy)]
pub(crate) struct Line<'a> {
    data: Data<'a>,
    base: usize,
    stride: usize,
}

impl<'a> Line<'a> {
    /// The line of `a` starting at physical element `base` with element stride `stride`;
    /// `None` for element widths other than 1, 2, 4 and 8 bytes.
    pub fn new(a: &'a Arr, base: usize, stride: usize) -> Option<Line<'a>> {
        let data = match a.width {
            1 => Data::B1(bytemuck::cast_slice(&a.words)),
            2 => Data::B2(bytemuck::cast_slice(&a.words)),
            4 => Data::B4(bytemuck::cast_slice(&a.words)),
            8 => Data::B8(&a.words),
            _ => return None,
        };
        Some(Line { data, base, stride })
    }

    /// A line whose element `i` is `i` (an `s32` index).
    pub fn index() -> Line<'static> {
        Line {
            data: Data::Index,
            base: 0,
            stride: 1,
        }
    }

    /// The bits of elements `start..start + out.len()`, zero-extended.
    pub fn fill_raw(&self, start: usize, out: &mut [u64]) {
        fn copy<T: Copy + Into<u64>>(s: &[T], first: usize, stride: usize, out: &mut [u64]) {
            if stride == 1 {
                let len = out.len();
                for (o, &x) in out.iter_mut().zip(&s[first..first + len]) {
                    *o = x.into();
                }
            } else {
                for (j, o) in out.iter_mut().enumerate() {
                    *o = s[first + j * stride].into();
                }
            }
        }
        let first = self.base + start * self.stride;
        match self.data {
            Data::B1(s) => copy(s, first, self.stride, out),
            Data::B2(s) => copy(s, first, self.stride, out),
            Data::B4(s) => copy(s, first, self.stride, out),
            Data::B8(s) => copy(s, first, self.stride, out),
            Data::Index => {
                for (j, o) in out.iter_mut().enumerate() {
                    *o = (start + j) as u64;
                }
            }
        }
    }

    /// The bits of element `i`, zero-extended.
    #[inline]
    fn raw(&self, i: usize) -> u64 {
        let e = self.base + i * self.stride;
        match self.data {
            Data::B1(s) => u64::from(s[e]),
            Data::B2(s) => u64::from(s[e]),
            Data::B4(s) => u64::from(s[e]),
            Data::B8(s) => s[e],
            Data::Index => i as u64,
        }
    }
}

/// A key above a payload (a position, or the element's bits), packed into one integer.
trait Packed: Copy + Ord + Default + Send {
    /// The pair.
    fn pack(key: u64, low: u64) -> Self;
    /// The key.
    fn key(self) -> u64;
    /// The payload.
    fn low(self) -> u64;
    /// `bits` bits of the key from bit `shift` of the key.
    fn digit(self, shift: u32, mask: usize) -> usize;
}

/// A key of at most 32 bits above a 32-bit payload.
impl Packed for u64 {
    #[inline]
    fn pack(key: u64, low: u64) -> u64 {
        key << 32 | low
    }
    #[inline]
    fn key(self) -> u64 {
        self >> 32
    }
    #[inline]
    fn low(self) -> u64 {
        self & 0xffff_ffff
    }
    #[inline]
    fn digit(self, shift: u32, mask: usize) -> usize {
        ((self >> 32) >> shift) as usize & mask
    }
}

/// A 64-bit key above a 64-bit payload.
impl Packed for u128 {
    #[inline]
    fn pack(key: u64, low: u64) -> u128 {
        u128::from(key) << 64 | u128::from(low)
    }
    #[inline]
    fn key(self) -> u64 {
        (self >> 64) as u64
    }
    #[inline]
    fn low(self) -> u64 {
        self as u64
    }
    #[inline]
    fn digit(self, shift: u32, mask: usize) -> usize {
        ((self >> 64) as u64 >> shift) as usize & mask
    }
}

/// Lines up to this length sort with the standard library's stable sort.
const SMALL: usize = 256;

/// Elements whose keys one block computes at once.
const BLOCK: usize = 256;

/// Sorts `v` stably by the low `key_bits` bits of each item's key (payloads do not
/// count): an LSD radix sort, skipping the digits every item shares.
fn radix_sort<P: Packed>(v: &mut Vec<P>, key_bits: u32) {
    let n = v.len();
    if n <= SMALL {
        v.sort_by_key(|x| x.key());
        return;
    }
    let digit_bits: u32 = if n < 1 << 16 { 8 } else { 11 };
    let buckets = 1usize << digit_bits;
    let mask = buckets - 1;
    let passes = key_bits.div_ceil(digit_bits) as usize;
    let mut counts = vec![0usize; passes * buckets];
    for &x in v.iter() {
        for (p, c) in counts.chunks_exact_mut(buckets).enumerate() {
            c[x.digit(p as u32 * digit_bits, mask)] += 1;
        }
    }
    let mut tmp = vec![P::default(); n];
    for (p, c) in counts.chunks_exact_mut(buckets).enumerate() {
        if c.contains(&n) {
            continue;
        }
        let mut sum = 0;
        for x in c.iter_mut() {
            let t = *x;
            *x = sum;
            sum += t;
        }
        let shift = p as u32 * digit_bits;
        for &x in v.iter() {
            let b = x.digit(shift, mask);
            tmp[c[b]] = x;
            c[b] += 1;
        }
        std::mem::swap(v, &mut tmp);
    }
}

/// Whether `a` sorts strictly before `b` under the keys: the comparator's own answer
/// (an unordered NaN makes the key neither less nor equal, so the answer is false).
fn less(specs: &[KeySpec], lines: &[Line<'_>], a: usize, b: usize) -> bool {
    for (s, l) in specs.iter().zip(lines) {
        let (x, y) = (l.raw(a), l.raw(b));
        if s.unordered(x) || s.unordered(y) {
            return false;
        }
        let (kx, ky) = (s.key(x), s.key(y));
        if kx != ky {
            return kx < ky;
        }
    }
    false
}

/// Whether some element of the line is a NaN one of the keys leaves unordered.
fn has_unordered(specs: &[KeySpec], lines: &[Line<'_>], n: usize) -> bool {
    specs
        .iter()
        .zip(lines)
        .any(|(s, l)| s.partial && (0..n).any(|i| s.unordered(l.raw(i))))
}

/// The evaluator's stable merge sort over [`less`].
fn merge_sorted(specs: &[KeySpec], lines: &[Line<'_>], n: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..n).collect();
    let mut lt = |a: usize, b: usize| -> Result<bool, std::convert::Infallible> {
        Ok(less(specs, lines, a, b))
    };
    match merge_sort(&mut perm, &mut lt) {
        Ok(()) => perm,
        Err(e) => match e {},
    }
}

/// Whether the order is one key, or one key then the position ascending (the same order
/// for a stable sort): the pair of key and position is the whole order.
fn single_key(specs: &[KeySpec], lines: &[Line<'_>]) -> bool {
    match (specs, lines) {
        ([_], _) => true,
        ([_, s], [_, l]) => matches!(l.data, Data::Index) && s.kind == Kind::Signed && s.flip == 0,
        _ => false,
    }
}

/// The packed `(key, position)` pairs, or with `values` `(key, bits)` pairs, of a line's
/// elements.
fn packed<P: Packed>(s: &KeySpec, l: &Line<'_>, n: usize, values: bool) -> Vec<P> {
    let mut v = Vec::with_capacity(n);
    let (mut keys, mut raw) = ([0u64; BLOCK], [0u64; BLOCK]);
    for start in (0..n).step_by(BLOCK) {
        let len = BLOCK.min(n - start);
        l.fill_raw(start, &mut raw[..len]);
        keys[..len].copy_from_slice(&raw[..len]);
        s.keys_in_place(&mut keys[..len]);
        if values {
            v.extend(
                keys[..len]
                    .iter()
                    .zip(&raw[..len])
                    .map(|(&k, &r)| P::pack(k, r)),
            );
        } else {
            v.extend(
                keys[..len]
                    .iter()
                    .enumerate()
                    .map(|(j, &k)| P::pack(k, (start + j) as u64)),
            );
        }
    }
    v
}

/// A line of one key sorted, its elements' bits in order (`out`), without positions:
/// the radix sort moves `(key, bits)` pairs and keeps equal keys in order. `false` (and
/// `out` untouched) where an unordered NaN makes the order the merge sort's.
pub(crate) fn sort_values(s: &KeySpec, l: &Line<'_>, n: usize, out: &mut [u64]) -> bool {
    fn run<P: Packed>(s: &KeySpec, l: &Line<'_>, n: usize, out: &mut [u64]) {
        let mut v: Vec<P> = packed(s, l, n, true);
        radix_sort(&mut v, 8 * s.width as u32);
        for (o, x) in out.iter_mut().zip(&v) {
            *o = x.low();
        }
    }
    if has_unordered(std::slice::from_ref(s), std::slice::from_ref(l), n) {
        return false;
    }
    if s.narrow() {
        run::<u64>(s, l, n, out);
    } else {
        run::<u128>(s, l, n, out);
    }
    true
}

/// The stable order of one line of `n` elements under the keys (`lines[i]` holds key
/// `i`'s elements): `perm[pos]` is the position of the element sorted to `pos`.
pub(crate) fn sort_line(specs: &[KeySpec], lines: &[Line<'_>], n: usize, perm: &mut [u32]) {
    fn place<P: Packed>(v: &[P], perm: &mut [u32]) {
        for (p, x) in perm.iter_mut().zip(v) {
            *p = x.low() as u32;
        }
    }
    if has_unordered(specs, lines, n) {
        for (p, x) in perm.iter_mut().zip(merge_sorted(specs, lines, n)) {
            *p = x as u32;
        }
        return;
    }
    if single_key(specs, lines) {
        let s = &specs[0];
        if s.narrow() {
            let mut v: Vec<u64> = packed(s, &lines[0], n, false);
            radix_sort(&mut v, 8 * s.width as u32);
            place(&v, perm);
        } else {
            let mut v: Vec<u128> = packed(s, &lines[0], n, false);
            radix_sort(&mut v, 64);
            place(&v, perm);
        }
        return;
    }
    let keys: Vec<Vec<u64>> = specs
        .iter()
        .zip(lines)
        .map(|(s, l)| {
            let mut k = vec![0u64; n];
            s.fill_keys(l, 0, &mut k);
            k
        })
        .collect();
    for (i, p) in perm.iter_mut().enumerate() {
        *p = i as u32;
    }
    // Stable: equal keys keep their positions' order.
    perm.sort_by(|&a, &b| {
        keys.iter()
            .map(|k| k[a as usize].cmp(&k[b as usize]))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
}

/// The first `k` positions of a line's stable order under the keys, in order.
/// A key a top-k block holds: `u32` for keys of up to 32 bits (twice the lanes), `u64`.
trait BlockKey: Copy + Default + Ord {
    /// The key of a packed pair.
    fn of(key: u64) -> Self;
    /// As a packed pair's key.
    fn wide(self) -> u64;
}

impl BlockKey for u32 {
    #[inline]
    fn of(key: u64) -> u32 {
        key as u32
    }
    #[inline]
    fn wide(self) -> u64 {
        u64::from(self)
    }
}

impl BlockKey for u64 {
    #[inline]
    fn of(key: u64) -> u64 {
        key
    }
    #[inline]
    fn wide(self) -> u64 {
        self
    }
}

/// The `out.len()` smallest `(key, position)` pairs of `n` elements whose keys `fill`
/// gives block by block, in order: a bounded max-heap. A later element enters only with a
/// key below the top's (an equal key has a larger position), which most blocks show no
/// element has.
fn heap_select<P: Packed, K: BlockKey>(fill: impl Fn(usize, &mut [K]), n: usize, out: &mut [u32]) {
    // Short blocks: early on, most blocks hold an element that enters.
    const HEAP_BLOCK: usize = 64;
    let k = out.len();
    let mut heap: BinaryHeap<P> = BinaryHeap::with_capacity(k);
    let mut keys = [K::default(); HEAP_BLOCK];
    let mut limit = K::default();
    for start in (0..n).step_by(HEAP_BLOCK) {
        let len = HEAP_BLOCK.min(n - start);
        fill(start, &mut keys[..len]);
        let mut j = 0;
        while heap.len() < k && j < len {
            heap.push(P::pack(keys[j].wide(), (start + j) as u64));
            j += 1;
            if heap.len() == k {
                limit = heap.peek().map_or(limit, |t| K::of(t.key()));
            }
        }
        let rest = &keys[j..len];
        if !rest.iter().fold(false, |any, &x| any | (x < limit)) {
            continue;
        }
        for (i, &x) in rest.iter().enumerate() {
            if x < limit {
                if let Some(mut t) = heap.peek_mut() {
                    *t = P::pack(x.wide(), (start + j + i) as u64);
                }
                limit = heap.peek().map_or(limit, |t| K::of(t.key()));
            }
        }
    }
    for (o, x) in out.iter_mut().zip(heap.into_sorted_vec()) {
        *o = x.low() as u32;
    }
}

/// The first `k` positions of a line's stable order under the keys, in order.
pub(crate) fn select_line(specs: &[KeySpec], lines: &[Line<'_>], n: usize, out: &mut [u32]) {
    let k = out.len();
    if k == 0 {
        return;
    }
    // A heap pays while few elements enter it; else sort the whole line.
    if k.saturating_mul(16) <= n && single_key(specs, lines) && !has_unordered(specs, lines, n) {
        let (s, l) = (&specs[0], &lines[0]);
        if s.narrow() {
            heap_select::<u64, u32>(|start, keys| s.fill_keys32(l, start, keys), n, out);
        } else {
            heap_select::<u128, u64>(|start, keys| s.fill_keys(l, start, keys), n, out);
        }
        return;
    }
    let mut perm = vec![0u32; n];
    sort_line(specs, lines, n, &mut perm);
    out.copy_from_slice(&perm[..k]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ty: ScalarType, compare: KeyCompare, canonical: bool, descending: bool) -> KeySpec {
        KeySpec::new(&SortKey {
            operand: 0,
            ty,
            compare,
            canonical,
            descending,
        })
        .expect("a supported key")
    }

    /// Deterministic pseudo-random words (SplitMix64).
    fn words(seed: u64, n: usize) -> Vec<u64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            })
            .collect()
    }

    fn arr(ty: ScalarType, words: Vec<u64>) -> Arr {
        let width = ty.byte_width() as usize;
        let n = words.len() * 8 / width;
        Arr {
            dims: vec![n],
            strides: vec![1],
            width,
            ty,
            words,
        }
    }

    #[test]
    fn float_keys_follow_the_total_order() {
        let s = spec(ScalarType::F32, KeyCompare::TotalOrder, false, false);
        let order = [
            f32::from_bits(0xffc0_0001),
            f32::NEG_INFINITY,
            -1.5,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            1e-45,
            2.0,
            f32::INFINITY,
            f32::NAN,
        ];
        let keys: Vec<u64> = order
            .iter()
            .map(|x| s.key(u64::from(x.to_bits())))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:x?}");
        let d = spec(ScalarType::F32, KeyCompare::TotalOrder, false, true);
        let keys: Vec<u64> = order
            .iter()
            .map(|x| d.key(u64::from(x.to_bits())))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] > w[1]), "{keys:x?}");
    }

    #[test]
    fn canonical_and_ieee_keys_merge_zeros_and_nans() {
        let c = spec(ScalarType::F64, KeyCompare::TotalOrder, true, false);
        let key = |x: f64| c.key(x.to_bits());
        assert_eq!(key(-0.0), key(0.0));
        assert_eq!(key(f64::NAN), key(-f64::NAN));
        assert!(key(f64::INFINITY) < key(-f64::NAN));
        let p = spec(ScalarType::F64, KeyCompare::Float, false, false);
        assert_eq!(p.key((-0.0f64).to_bits()), p.key(0.0f64.to_bits()));
        assert!(p.unordered(f64::NAN.to_bits()) && !p.unordered(f64::INFINITY.to_bits()));
        let h = spec(ScalarType::BF16, KeyCompare::TotalOrder, true, false);
        assert_eq!(h.key(0x8000), h.key(0));
        assert_eq!(h.key(0xffc1), h.key(0x7fc0));
        assert!(h.key(0x7f80) < h.key(0x7fc0) && h.key(0xff80) < h.key(0xbf80));
    }

    #[test]
    fn integer_keys_follow_the_values() {
        let s = spec(ScalarType::S8, KeyCompare::Integer, false, false);
        let vals: [i8; 5] = [-128, -1, 0, 1, 127];
        let keys: Vec<u64> = vals.iter().map(|&v| s.key(u64::from(v as u8))).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let u = spec(ScalarType::U64, KeyCompare::Integer, false, true);
        assert!(u.key(u64::MAX) < u.key(0));
    }

    /// Radix-sorted, heap-selected and merge-sorted orders agree with a stable sort of the
    /// keys for several types, lengths and directions (with many ties).
    #[test]
    fn line_orders_match_a_stable_sort() {
        let cases = [
            (ScalarType::F32, KeyCompare::TotalOrder),
            (ScalarType::F64, KeyCompare::TotalOrder),
            (ScalarType::S16, KeyCompare::Integer),
            (ScalarType::U8, KeyCompare::Integer),
            (ScalarType::S64, KeyCompare::Integer),
        ];
        for (c, (ty, cmp)) in cases.into_iter().enumerate() {
            for n in [0usize, 1, 7, 300, 5000, 70000] {
                for desc in [false, true] {
                    let s = spec(ty, cmp, false, desc);
                    let width = ty.byte_width() as usize;
                    // Few distinct values: mask to a handful of bit patterns.
                    let w: Vec<u64> = words(c as u64 * 31 + n as u64, (n * width).div_ceil(8))
                        .into_iter()
                        .map(|x| x & 0x0303_0303_0303_0383)
                        .collect();
                    let a = arr(ty, w);
                    let line = Line::new(&a, 0, 1).expect("line");
                    let mut want: Vec<u32> = (0..n as u32).collect();
                    want.sort_by_key(|&i| s.key(line.raw(i as usize)));
                    let mut got = vec![0u32; n];
                    sort_line(&[s], &[line], n, &mut got);
                    assert_eq!(got, want, "{ty:?} n={n} desc={desc}");
                    let mut values = vec![0u64; n];
                    assert!(sort_values(&s, &line, n, &mut values));
                    let want_values: Vec<u64> =
                        want.iter().map(|&i| line.raw(i as usize)).collect();
                    assert_eq!(values, want_values, "values {ty:?} n={n} desc={desc}");
                    let merged: Vec<u32> = merge_sorted(&[s], &[line], n)
                        .into_iter()
                        .map(|x| x as u32)
                        .collect();
                    assert_eq!(merged, want, "merge {ty:?} n={n} desc={desc}");
                    for k in [0, 1.min(n), n / 20, n / 2, n] {
                        let mut top = vec![0u32; k];
                        select_line(&[s], &[line], n, &mut top);
                        assert_eq!(top, want[..k], "top {k} {ty:?} n={n} desc={desc}");
                    }
                }
            }
        }
    }

    /// Canonicalized keys merge both zeros and every NaN: elements with equal keys but
    /// different bits keep their order, in the radix sort and in the short lines' sort.
    #[test]
    fn equal_keys_of_different_bits_keep_their_order() {
        let pool: [u32; 8] = [
            0,
            0x8000_0000,
            0x7fc0_0000,
            0xffc0_0000,
            0x3f80_0000,
            0x7f80_0001,
            0xff80_0000,
            0xbf80_0000,
        ];
        for n in [7usize, 600, 70_000] {
            for desc in [false, true] {
                let s = spec(ScalarType::F32, KeyCompare::TotalOrder, true, desc);
                let bits: Vec<u32> = (0..n).map(|i| pool[(i * 5 + i / 3) % 8]).collect();
                let words = bits
                    .chunks(2)
                    .map(|c| u64::from(c[0]) | u64::from(c.get(1).copied().unwrap_or(0)) << 32)
                    .collect();
                let a = arr(ScalarType::F32, words);
                let line = Line::new(&a, 0, 1).expect("line");
                let mut want: Vec<u64> = bits.iter().map(|&b| u64::from(b)).collect();
                want.sort_by_key(|&b| s.key(b));
                let mut got = vec![0u64; n];
                assert!(sort_values(&s, &line, n, &mut got));
                assert_eq!(got, want, "n={n} desc={desc}");
                let mut perm = vec![0u32; n];
                sort_line(&[s], &[line], n, &mut perm);
                let by_perm: Vec<u64> = perm.iter().map(|&p| u64::from(bits[p as usize])).collect();
                assert_eq!(by_perm, want, "n={n} desc={desc}");
            }
        }
    }

    #[test]
    fn a_nan_under_ieee_order_takes_the_merge_sort() {
        let s = spec(ScalarType::F32, KeyCompare::Float, false, false);
        let vals = [f32::NAN, 3.0, 1.0];
        let words = vec![
            u64::from(vals[0].to_bits()) | u64::from(vals[1].to_bits()) << 32,
            u64::from(vals[2].to_bits()),
        ];
        let a = arr(ScalarType::F32, words);
        let line = Line::new(&a, 0, 1).expect("line");
        let mut got = vec![0u32; 3];
        sort_line(&[s], &[line], 3, &mut got);
        // The evaluator's merge sort: nothing is less than the NaN, nor is it less than
        // anything, so it stays first; a sort by keys would put it last.
        assert_eq!(got, [0, 2, 1]);
        let mut top = vec![0u32; 2];
        select_line(&[s], &[line], 3, &mut top);
        assert_eq!(top, [0, 2]);
    }
}
