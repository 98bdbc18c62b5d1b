//! `.npy`/`.npz` reading and writing: round trips of every element type, the corpus
//! files, Fortran order, bit-pattern types and the errors.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Shape};
use hlo_eval::npy::{adapt_to, read_npy, read_npz, write_npy, write_npz, NpyError};

fn lit(ty: ElementType, dims: &[i64], data: ArrayData) -> ArrayLiteral {
    ArrayLiteral::new(Shape::array(ty, dims.to_vec()), data).expect("valid literal")
}

fn samples() -> Vec<ArrayLiteral> {
    use ElementType as T;
    vec![
        lit(T::Pred, &[3], ArrayData::Pred(vec![true, false, true])),
        lit(T::S8, &[2], ArrayData::S8(vec![-128, 127])),
        lit(T::S16, &[2], ArrayData::S16(vec![-300, 300])),
        lit(T::S32, &[2, 2], ArrayData::S32(vec![1, -2, 3, i32::MIN])),
        lit(T::S64, &[1], ArrayData::S64(vec![i64::MAX])),
        lit(T::U8, &[2], ArrayData::U8(vec![0, 255])),
        lit(T::U16, &[2], ArrayData::U16(vec![0, 65535])),
        lit(T::U32, &[2], ArrayData::U32(vec![1, u32::MAX])),
        lit(T::U64, &[2], ArrayData::U64(vec![1, u64::MAX])),
        lit(T::F16, &[2], ArrayData::Bits16(vec![0x3c00, 0xfc00])),
        lit(
            T::F32,
            &[2, 1, 2],
            ArrayData::F32(vec![1.5, -0.0, f32::INFINITY, 3.25]),
        ),
        lit(T::F64, &[], ArrayData::F64(vec![std::f64::consts::PI])),
        lit(T::C64, &[1], ArrayData::C64(vec![[1.0, -2.0]])),
        lit(T::C128, &[1], ArrayData::C128(vec![[0.5, 4.0]])),
        lit(T::F32, &[0, 3], ArrayData::F32(vec![])),
    ]
}

#[test]
fn npy_round_trips_every_dtype() {
    for a in samples() {
        let bytes = write_npy(&a).unwrap();
        assert_eq!(read_npy(&bytes).unwrap(), a, "{}", a.shape());
        // NumPy's readers need the data 64-byte aligned.
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
    }
}

#[test]
fn npz_round_trips() {
    let entries: Vec<(String, ArrayLiteral)> = samples()
        .into_iter()
        .enumerate()
        .map(|(i, a)| (format!("out{i}"), a))
        .collect();
    let bytes = write_npz(&entries).unwrap();
    assert_eq!(read_npz(&bytes).unwrap(), entries);
}

#[test]
fn bit_pattern_types_adapt_to_parameters() {
    let u16s = lit(ElementType::U16, &[2], ArrayData::U16(vec![0x3f80, 0xc000]));
    let bf16 = adapt_to(
        u16s.clone(),
        &Shape::array(ElementType::BF16, vec![2]),
        "in0",
    )
    .unwrap();
    assert_eq!(bf16.get_f64(0), Some(1.0));
    assert_eq!(bf16.get_f64(1), Some(-2.0));
    // bf16 is written as uint16 bit patterns.
    assert_eq!(read_npy(&write_npy(&bf16).unwrap()).unwrap(), u16s);
    let err = adapt_to(
        u16s,
        &Shape::array(ElementType::F32, vec![2]),
        "in0 for parameter 0 (`p`)",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "in0 for parameter 0 (`p`): expected f32[2], got u16[2] (as <u2)"
    );
}

/// A version 1.0 `.npy` file with `header` (padded) and `data`.
pub(crate) fn npy_with_header(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    h.push_str(&" ".repeat((64 - (10 + h.len() + 1) % 64) % 64));
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn fortran_order_is_transposed() {
    let data: Vec<u8> = [1i32, 2, 3, 4, 5, 6]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let b = npy_with_header(
        "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
        &data,
    );
    let a = read_npy(&b).unwrap();
    assert_eq!(a.data(), &ArrayData::S32(vec![1, 3, 5, 2, 4, 6]));
}

#[test]
fn bad_files_are_errors() {
    assert!(matches!(read_npy(b"hello"), Err(NpyError::NotNpy(_))));
    let b = npy_with_header(
        "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }",
        &[0; 12],
    );
    assert!(matches!(read_npy(&b), Err(NpyError::Dtype(_))));
    let b = npy_with_header(
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
        &[0; 4],
    );
    assert!(matches!(read_npy(&b), Err(NpyError::Size(_))));
    assert!(matches!(
        read_npz(b"PK\x03\x04 truncated"),
        Err(NpyError::NotNpz(_))
    ));
    assert!(matches!(read_npz(b"not a zip"), Err(NpyError::NotNpz(_))));
    // Every truncation of a valid archive is an error, never a panic.
    let entries = vec![("in0".to_string(), samples().remove(3))];
    let bytes = write_npz(&entries).unwrap();
    for n in 0..bytes.len() {
        assert!(read_npz(&bytes[..n]).is_err(), "prefix of {n} bytes");
    }
}

#[test]
fn corpus_files_read() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/bf16_matmul");
    let inputs = read_npz(&std::fs::read(dir.join("inputs.npz")).unwrap()).unwrap();
    let keys: Vec<&str> = inputs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["in0", "in1", "in2"]);
    assert_eq!(inputs[0].1.shape().dims(), &[8, 16]);
    assert_eq!(inputs[0].1.element_type(), ElementType::U16);
}
