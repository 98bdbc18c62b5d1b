//! The `.npy`/`.npz` variants NumPy users produce beyond `np.savez`: deflated archives
//! (`np.savez_compressed`) and big-endian arrays.

use super::eval_npy::npy_with_header;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Shape};
use hlo_eval::npy::{read_npy, read_npz, read_npz_from, write_npz, NpyError};
use std::io::{Cursor, Write};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// The fixtures shared with the `hloc run` cases (written by `make_fixtures.py` there).
fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/cli/run");
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `negate_in.npy`'s values, the content of every fixture below.
fn negate_in() -> ArrayLiteral {
    ArrayLiteral::new(
        Shape::array(ElementType::F32, vec![2, 3]),
        ArrayData::F32(vec![1.0, -2.0, 0.5, 0.0, -0.0, 3.0]),
    )
    .unwrap()
}

/// An archive of deflated members, as `np.savez_compressed` writes them.
fn deflated(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in members {
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[test]
fn savez_compressed_archives_read() {
    let arrays = read_npz(&fixture("negate_savez_compressed.npz")).unwrap();
    assert_eq!(arrays, vec![("arr_0".to_string(), negate_in())]);
    // The older fixture, deflated as well.
    let arrays = read_npz(&fixture("compressed.npz")).unwrap();
    assert_eq!(arrays.len(), 1);
    assert_eq!(arrays[0].0, "in0");
}

#[test]
fn deflated_and_stored_members_mix() {
    let a = npy_with_header(
        "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
        &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0],
    );
    let b = hlo_eval::npy::write_npy(&negate_in()).unwrap();
    let bytes = deflated(&[("x.npy", &a), ("y.npy", &b)]);
    let arrays = read_npz_from(Cursor::new(&bytes), 1 << 20).unwrap();
    assert_eq!(arrays[0].1.data(), &ArrayData::S32(vec![1, 2, 3]));
    assert_eq!(arrays[1].1, negate_in());
    // Written archives are stored (np.savez) and read back the same.
    let stored = write_npz(&[("out0".to_string(), negate_in())]).unwrap();
    assert_eq!(read_npz(&stored).unwrap()[0].1, negate_in());
    assert_ne!(stored, deflated(&[("out0.npy", &b)]));
}

#[test]
fn big_endian_arrays_are_byte_swapped() {
    assert_eq!(
        read_npy(&fixture("negate_big_endian.npy")).unwrap(),
        negate_in()
    );
    let inside = read_npz(&fixture("negate_big_endian.npz")).unwrap();
    assert_eq!(inside, vec![("in0".to_string(), negate_in())]);
    let be = |descr: &str, shape: &str, data: &[u8]| {
        let h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        read_npy(&npy_with_header(&h, data)).unwrap()
    };
    let i8s = be(
        ">i8",
        "(2,)",
        &[
            0, 0, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
        ],
    );
    assert_eq!(i8s.data(), &ArrayData::S64(vec![256, -2]));
    let u2 = be(">u2", "(1,)", &[0x12, 0x34]);
    assert_eq!(u2.data(), &ArrayData::U16(vec![0x1234]));
    let f8 = be(">f8", "()", &1.5f64.to_be_bytes());
    assert_eq!(f8.data(), &ArrayData::F64(vec![1.5]));
    // A complex swaps its real and imaginary parts separately.
    let mut c = 1.0f32.to_be_bytes().to_vec();
    c.extend_from_slice(&(-2.0f32).to_be_bytes());
    assert_eq!(
        be(">c8", "(1,)", &c).data(),
        &ArrayData::C64(vec![[1.0, -2.0]])
    );
    // Single bytes have no order.
    assert_eq!(be(">i1", "(1,)", &[0xff]).data(), &ArrayData::S8(vec![-1]));
    // Big-endian and Fortran order together.
    let data: Vec<u8> = [1i32, 2, 3, 4, 5, 6]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let h = "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }";
    let a = read_npy(&npy_with_header(h, &data)).unwrap();
    assert_eq!(a.data(), &ArrayData::S32(vec![1, 3, 5, 2, 4, 6]));
}

#[test]
fn other_compression_methods_are_named() {
    // Method 12 (bzip2) is not built in: the error names the member and the method.
    let mut bytes = deflated(&[("in0.npy", b"x")]);
    for sig in [&b"PK\x03\x04"[..], b"PK\x01\x02"] {
        let at = bytes.windows(4).position(|w| w == sig).unwrap();
        let method_at = at + if sig[2] == 3 { 8 } else { 10 };
        bytes[method_at] = 12;
    }
    let err = read_npz(&bytes).unwrap_err();
    assert!(matches!(err, NpyError::NotNpz(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("member in0.npy") && text.contains("np.savez_compressed"),
        "{text}"
    );
}
