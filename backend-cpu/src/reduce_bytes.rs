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
    match ty {
        ScalarType::Pred => fold::<u8>(acc, x, |a, b| {
            let (a, b) = (a != 0, b != 0);
            Some(u8::from(match reducer {
                Reducer::Add | Reducer::Or | Reducer::Max => a | b,
                Reducer::Mul | Reducer::And | Reducer::Min => a & b,
                Reducer::Xor => a ^ b,
            }))
        }),
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
        _ => None,
    }
    .ok_or_else(|| format!("{reducer:?} of {ty} across devices"))
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
            fn read(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_ne_bytes(a)
            }
            fn write(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
element!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// Applies `f` to every element pair; `None` when `f` refuses the reducer.
fn fold<T: Element>(acc: &mut [u8], x: &[u8], f: impl Fn(T, T) -> Option<T>) -> Option<()> {
    for (a, b) in acc.chunks_exact_mut(T::WIDTH).zip(x.chunks_exact(T::WIDTH)) {
        f(T::read(a), T::read(b))?.write(a);
    }
    Some(())
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
            fn wrapping_add(self, o: Self) -> Self { <$t>::wrapping_add(self, o) }
            fn wrapping_mul(self, o: Self) -> Self { <$t>::wrapping_mul(self, o) }
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
int!(u8, u16, u32, u64, i8, i16, i32, i64);

fn ints<T: Int>(r: Reducer, acc: &mut [u8], x: &[u8]) -> Option<()> {
    fold::<T>(acc, x, |a, b| {
        Some(match r {
            Reducer::Add => a.wrapping_add(b),
            Reducer::Mul => a.wrapping_mul(b),
            Reducer::Max => a.max(b),
            Reducer::Min => a.min(b),
            Reducer::And => a.and(b),
            Reducer::Or => a.or(b),
            Reducer::Xor => a.xor(b),
        })
    })
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
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
            fn max(self, o: Self) -> Self { <$t>::max(self, o) }
            fn min(self, o: Self) -> Self { <$t>::min(self, o) }
        }
    )*};
}
float!(f32, f64);

fn floats<T: Float>(r: Reducer, acc: &mut [u8], x: &[u8]) -> Option<()> {
    fold::<T>(acc, x, |a, b| match r {
        Reducer::Add => Some(a + b),
        Reducer::Mul => Some(a * b),
        Reducer::Max | Reducer::Min if a.is_nan() => Some(a),
        Reducer::Max | Reducer::Min if b.is_nan() => Some(b),
        Reducer::Max => Some(a.max(b)),
        Reducer::Min => Some(a.min(b)),
        _ => None,
    })
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
