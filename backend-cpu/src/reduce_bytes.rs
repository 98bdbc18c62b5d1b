//! Element-wise combination of two buffers of one element type with a recognized reducer
//! ([`hlo::ir::reducer::Reducer`]), as XLA's collectives combine the devices' values:
//! wrapping integer arithmetic, `pred` add as or and multiply as and, maximum and minimum
//! propagating NaN. Bytes in, bytes out, so a communicator can fold what it received
//! without knowing the program.

use codegen::kir::ScalarType;
use hlo::ir::reducer::Reducer;

/// `acc[i] = acc[i] op x[i]` for every element; an error names an unsupported pairing.
pub fn combine(reducer: Reducer, ty: ScalarType, acc: &mut [u8], x: &[u8]) -> Result<(), String> {
    if acc.len() != x.len() {
        return Err(format!(
            "reduced buffers of {} and {} bytes",
            acc.len(),
            x.len()
        ));
    }
    let done = match ty {
        ScalarType::Pred => {
            // Any nonzero byte is true; the result is 0 or 1.
            let b = |v: u8| v != 0;
            match reducer {
                Reducer::Add | Reducer::Or | Reducer::Max => {
                    zip_with::<u8>(acc, x, |p, q| u8::from(b(p) | b(q)))
                }
                Reducer::Mul | Reducer::And | Reducer::Min => {
                    zip_with::<u8>(acc, x, |p, q| u8::from(b(p) & b(q)))
                }
                Reducer::Xor => zip_with::<u8>(acc, x, |p, q| u8::from(b(p) ^ b(q))),
            }
            true
        }
        ScalarType::S8 => ints::<i8>(reducer, acc, x),
        ScalarType::S16 => ints::<i16>(reducer, acc, x),
        ScalarType::S32 => ints::<i32>(reducer, acc, x),
        ScalarType::S64 => ints::<i64>(reducer, acc, x),
        ScalarType::U8 => ints::<u8>(reducer, acc, x),
        ScalarType::U16 => ints::<u16>(reducer, acc, x),
        ScalarType::U32 => ints::<u32>(reducer, acc, x),
        ScalarType::U64 => ints::<u64>(reducer, acc, x),
        ScalarType::F32 => floats::<f32>(reducer, acc, x),
        ScalarType::F64 => floats::<f64>(reducer, acc, x),
        _ => false,
    };
    match done {
        true => Ok(()),
        false => Err(format!("{reducer:?} of {ty} across devices")),
    }
}

/// A fixed-width element read from and written to native-endian bytes.
trait Element: Copy {
    const WIDTH: usize;
    fn read(b: &[u8]) -> Self;
    fn write(self, b: &mut [u8]);
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn read(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_ne_bytes(a)
            }
            #[inline(always)]
            fn write(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
element!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// `acc[i] = f(acc[i], x[i])` over typed elements. Each caller passes one reducer's
/// operation, chosen before the loop: a loop with the reducer's `match` (and a refusal)
/// inside it folded one element at a time, 13-14% of an all-reducing program's samples.
#[inline(always)]
fn zip_with<T: Element>(acc: &mut [u8], x: &[u8], f: impl Fn(T, T) -> T) {
    for (a, b) in acc.chunks_exact_mut(T::WIDTH).zip(x.chunks_exact(T::WIDTH)) {
        f(T::read(a), T::read(b)).write(a);
    }
}

/// Integer types: wrapping arithmetic and bitwise ops.
trait Int: Element + Ord {
    fn wrapping_add(self, o: Self) -> Self;
    fn wrapping_mul(self, o: Self) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            #[inline(always)]
            fn wrapping_add(self, o: Self) -> Self { <$t>::wrapping_add(self, o) }
            #[inline(always)]
            fn wrapping_mul(self, o: Self) -> Self { <$t>::wrapping_mul(self, o) }
            #[inline(always)]
            fn and(self, o: Self) -> Self { self & o }
            #[inline(always)]
            fn or(self, o: Self) -> Self { self | o }
            #[inline(always)]
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
int!(u8, u16, u32, u64, i8, i16, i32, i64);

fn ints<T: Int>(r: Reducer, acc: &mut [u8], x: &[u8]) -> bool {
    match r {
        Reducer::Add => zip_with::<T>(acc, x, T::wrapping_add),
        Reducer::Mul => zip_with::<T>(acc, x, T::wrapping_mul),
        Reducer::Max => zip_with::<T>(acc, x, Ord::max),
        Reducer::Min => zip_with::<T>(acc, x, Ord::min),
        Reducer::And => zip_with::<T>(acc, x, T::and),
        Reducer::Or => zip_with::<T>(acc, x, T::or),
        Reducer::Xor => zip_with::<T>(acc, x, T::xor),
    }
    true
}

/// Float types: IEEE arithmetic; maximum and minimum return NaN when either is NaN.
trait Float: Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    fn is_nan(self) -> bool;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
}

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            #[inline(always)]
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
            #[inline(always)]
            fn max(self, o: Self) -> Self { <$t>::max(self, o) }
            #[inline(always)]
            fn min(self, o: Self) -> Self { <$t>::min(self, o) }
        }
    )*};
}
float!(f32, f64);

fn floats<T: Float>(r: Reducer, acc: &mut [u8], x: &[u8]) -> bool {
    // NaN in either operand wins (`a + b` is NaN for a NaN `a`, so `a` is picked first).
    let pick = |a: T, b: T, f: fn(T, T) -> T| match (a.is_nan(), b.is_nan()) {
        (true, _) => a,
        (_, true) => b,
        _ => f(a, b),
    };
    match r {
        Reducer::Add => zip_with::<T>(acc, x, |a, b| a + b),
        Reducer::Mul => zip_with::<T>(acc, x, |a, b| a * b),
        Reducer::Max => zip_with::<T>(acc, x, |a, b| pick(a, b, T::max)),
        Reducer::Min => zip_with::<T>(acc, x, |a, b| pick(a, b, T::min)),
        Reducer::And | Reducer::Or | Reducer::Xor => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn floats_add_and_propagate_nan() {
        let mut a = f32s(&[1.0, f32::NAN, 3.0]);
        combine(
            Reducer::Max,
            ScalarType::F32,
            &mut a,
            &f32s(&[2.0, 1.0, f32::NAN]),
        )
        .unwrap();
        let got: Vec<f32> = a
            .chunks_exact(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got[0], 2.0);
        assert!(got[1].is_nan() && got[2].is_nan());
        let mut a = f32s(&[1.5]);
        combine(Reducer::Add, ScalarType::F32, &mut a, &f32s(&[2.0])).unwrap();
        assert_eq!(a, f32s(&[3.5]));
    }

    #[test]
    fn ints_wrap_and_pred_adds_as_or() {
        let mut a = 250u8.to_ne_bytes().to_vec();
        combine(Reducer::Add, ScalarType::U8, &mut a, &10u8.to_ne_bytes()).unwrap();
        assert_eq!(a, vec![4]);
        let mut p = vec![0u8, 1, 0];
        combine(Reducer::Add, ScalarType::Pred, &mut p, &[0, 0, 1]).unwrap();
        assert_eq!(p, vec![0, 1, 1]);
        let mut p = vec![1u8, 1];
        combine(Reducer::Mul, ScalarType::Pred, &mut p, &[0, 1]).unwrap();
        assert_eq!(p, vec![0, 1]);
    }

    #[test]
    fn unsupported_pairings_are_errors() {
        let mut a = f32s(&[1.0]);
        assert!(combine(Reducer::Xor, ScalarType::F32, &mut a, &f32s(&[1.0])).is_err());
        assert!(combine(Reducer::Add, ScalarType::F32, &mut a, &[0u8; 8]).is_err());
    }
}
