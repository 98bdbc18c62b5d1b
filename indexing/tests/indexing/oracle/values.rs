//! Element values for the oracle: random arguments of every element type, a perturbation
//! of one element that survives rounding, and exact bit patterns of output elements.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::ElementType;

/// The inclusive value range of an integral element type (sub-byte types are stored in
/// bytes but keep their own range).
fn int_range(ty: ElementType) -> (i128, i128) {
    use ElementType as T;
    match ty {
        T::S1 => (-1, 0),
        T::S2 => (-2, 1),
        T::S4 => (-8, 7),
        T::S8 => (i8::MIN.into(), i8::MAX.into()),
        T::S16 => (i16::MIN.into(), i16::MAX.into()),
        T::S32 => (i32::MIN.into(), i32::MAX.into()),
        T::S64 => (i64::MIN.into(), i64::MAX.into()),
        T::U1 => (0, 1),
        T::U2 => (0, 3),
        T::U4 => (0, 15),
        T::U8 => (0, u8::MAX.into()),
        T::U16 => (0, u16::MAX.into()),
        T::U32 => (0, u32::MAX.into()),
        _ => (0, u64::MAX.into()),
    }
}

/// `count` values of `ty` from the random stream `next`: integers in [-3, 12] (clamped to
/// the type), reals in ±[0.5, 2.5) (never zero, off round numbers), random predicates; `None` for types
/// without storage (token, opaque) or a value that does not encode.
pub fn random_data(
    ty: ElementType,
    count: usize,
    next: &mut dyn FnMut() -> u64,
) -> Option<ArrayData> {
    let float = |next: &mut dyn FnMut() -> u64| {
        let x = 0.5 + ((next() % 2_000_000) as f64 + 0.37) / 1_000_000.0;
        if next() & 1 == 0 {
            x
        } else {
            -x
        }
    };
    let mut d = ArrayData::new(ty)?;
    for _ in 0..count {
        match d {
            ArrayData::Pred(_) => d.push_bool(ty, next() & 1 == 0).ok()?,
            ArrayData::S8(_)
            | ArrayData::S16(_)
            | ArrayData::S32(_)
            | ArrayData::S64(_)
            | ArrayData::U8(_)
            | ArrayData::U16(_)
            | ArrayData::U32(_)
            | ArrayData::U64(_) => {
                let (lo, hi) = int_range(ty);
                d.push_int(ty, ((next() % 16) as i128 - 3).clamp(lo, hi))
                    .ok()?
            }
            ArrayData::C64(_) | ArrayData::C128(_) => {
                let c = [float(next), float(next)];
                d.push_complex(ty, c, "random").ok()?
            }
            _ => d.push_float(ty, float(next), None, "random").ok()?,
        }
    }
    Some(d)
}

/// The integer `x` moved by 5 inside its type's range (up when it fits, else down): a
/// change every sum, difference and copy shows.
fn bump(x: i128, ty: ElementType) -> i128 {
    let (lo, hi) = int_range(ty);
    if x + 5 <= hi {
        x + 5
    } else {
        (x - 5).max(lo)
    }
}

/// A real value moved to `x + 3.25 + |x|`: at least 3.25 away, always positive, so it
/// survives rounding to every floating type and crosses every integer boundary.
fn push_up(x: f64) -> f64 {
    x + 3.25 + x.abs()
}

/// The data of `a` with element `e` perturbed: predicates flip, integers move by 5,
/// floating values (both parts of complex ones) by `push_up`.
pub fn perturbed(a: &ArrayLiteral, e: usize) -> ArrayData {
    let ty = a.element_type();
    let mut d = a.data().clone();
    let small = |x: f64| -> u32 {
        let mut s = ArrayData::new(ty).expect("storage");
        s.push_float(ty, push_up(x), None, "perturbed")
            .expect("perturbed value encodes");
        match s {
            ArrayData::Bits16(v) => u32::from(v[0]),
            ArrayData::Bits8(v) => u32::from(v[0]),
            _ => unreachable!("small floats are stored as bits"),
        }
    };
    match &mut d {
        ArrayData::Pred(v) => v[e] = !v[e],
        ArrayData::S8(v) => v[e] = bump(v[e].into(), ty) as i8,
        ArrayData::S16(v) => v[e] = bump(v[e].into(), ty) as i16,
        ArrayData::S32(v) => v[e] = bump(v[e].into(), ty) as i32,
        ArrayData::S64(v) => v[e] = bump(v[e].into(), ty) as i64,
        ArrayData::U8(v) => v[e] = bump(v[e].into(), ty) as u8,
        ArrayData::U16(v) => v[e] = bump(v[e].into(), ty) as u16,
        ArrayData::U32(v) => v[e] = bump(v[e].into(), ty) as u32,
        ArrayData::U64(v) => v[e] = bump(v[e].into(), ty) as u64,
        ArrayData::Bits16(v) => v[e] = small(a.get_f64(e).expect("decodes")) as u16,
        ArrayData::Bits8(v) => v[e] = small(a.get_f64(e).expect("decodes")) as u8,
        ArrayData::F32(v) => v[e] = push_up(v[e].into()) as f32,
        ArrayData::F64(v) => v[e] = push_up(v[e]),
        ArrayData::C64(v) => v[e] = v[e].map(|x| push_up(x.into()) as f32),
        ArrayData::C128(v) => v[e] = v[e].map(push_up),
    }
    d
}

/// Element `i` as exact bits (both parts of a complex value), for change detection.
pub fn element_bits(a: &ArrayLiteral, i: usize) -> (u64, u64) {
    match a.data() {
        ArrayData::Pred(v) => (v[i].into(), 0),
        ArrayData::S8(v) => (v[i] as u64, 0),
        ArrayData::S16(v) => (v[i] as u64, 0),
        ArrayData::S32(v) => (v[i] as u64, 0),
        ArrayData::S64(v) => (v[i] as u64, 0),
        ArrayData::U8(v) => (v[i].into(), 0),
        ArrayData::U16(v) => (v[i].into(), 0),
        ArrayData::U32(v) => (v[i].into(), 0),
        ArrayData::U64(v) => (v[i], 0),
        ArrayData::Bits16(v) => (v[i].into(), 0),
        ArrayData::Bits8(v) => (v[i].into(), 0),
        ArrayData::F32(v) => (v[i].to_bits().into(), 0),
        ArrayData::F64(v) => (v[i].to_bits(), 0),
        ArrayData::C64(v) => (v[i][0].to_bits().into(), v[i][1].to_bits().into()),
        ArrayData::C128(v) => (v[i][0].to_bits(), v[i][1].to_bits()),
    }
}
