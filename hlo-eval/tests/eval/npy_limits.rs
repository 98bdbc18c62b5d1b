//! Bounded memory and clear errors on hostile or broken `.npy`/`.npz` input: huge
//! declared sizes are refused before allocation, corrupt and truncated archives are
//! errors, never panics.

use super::eval_npy::npy_with_header;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Shape};
use hlo_eval::npy::{read_npy, read_npy_with_limit, read_npz, read_npz_from, write_npz, NpyError};
use std::io::{Cursor, Write};
use std::time::{Duration, Instant};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

fn f32s(n: usize) -> ArrayLiteral {
    ArrayLiteral::new(
        Shape::array(ElementType::F32, vec![n as i64]),
        ArrayData::F32((0..n).map(|i| i as f32).collect()),
    )
    .unwrap()
}

fn deflated(name: &str, data: &[u8]) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    zip.start_file(name, options).unwrap();
    zip.write_all(data).unwrap();
    zip.finish().unwrap().into_inner()
}

#[test]
fn huge_declared_shapes_are_refused_before_allocation() {
    let start = Instant::now();
    let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }";
    let b = npy_with_header(h, &[]);
    let err = read_npy_with_limit(&b, 1 << 30).unwrap_err();
    assert_eq!(
        err,
        NpyError::TooLarge {
            what: "an array of shape (100000, 100000) (<f4)".into(),
            bytes: 40_000_000_000,
            limit: 1 << 30,
        }
    );
    assert_eq!(
        err.to_string(),
        "an array of shape (100000, 100000) (<f4) needs 40000000000 bytes (37.3 GiB), more \
         than the limit of 1073741824 bytes (1 GiB)"
    );
    // Inside a compressed archive: the member's own header is checked.
    let err = read_npz_from(Cursor::new(deflated("in0.npy", &b)), 1 << 30).unwrap_err();
    assert!(
        matches!(&err, NpyError::TooLarge { what, .. } if what.starts_with("member in0.npy: ")),
        "{err}"
    );
    // A shape beyond 2^64 bytes, and a negative one.
    let h = "{'descr': '<c16', 'fortran_order': False, 'shape': (4294967296, 4294967296), }";
    assert!(matches!(
        read_npy(&npy_with_header(h, &[])),
        Err(NpyError::NotNpy(_))
    ));
    let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }";
    assert!(matches!(
        read_npy(&npy_with_header(h, &[])),
        Err(NpyError::NotNpy(_))
    ));
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn declared_member_sizes_are_checked_first() {
    // The fixture's zip directory claims a 4 GiB member.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/cli/run");
    let bytes = std::fs::read(dir.join("declared_huge.npz")).unwrap();
    let err = read_npz_from(Cursor::new(&bytes), 1 << 30).unwrap_err();
    assert_eq!(
        err,
        NpyError::TooLarge {
            what: "member arr_0.npy".into(),
            bytes: 0xFFFF_FFF0,
            limit: 1 << 30,
        }
    );
}

#[test]
fn members_share_the_limit() {
    let entries: Vec<(String, ArrayLiteral)> =
        (0..3).map(|i| (format!("in{i}"), f32s(100))).collect();
    let bytes = write_npz(&entries).unwrap();
    // Each array is 400 bytes (+128 header bytes per member): two fit in 1000, three not.
    assert_eq!(read_npz_from(Cursor::new(&bytes), 1600).unwrap().len(), 3);
    let err = read_npz_from(Cursor::new(&bytes), 1000).unwrap_err();
    assert!(
        matches!(&err, NpyError::TooLarge { what, .. } if what.contains("in2.npy")),
        "{err}"
    );
    // An .npy's data is checked against the limit exactly.
    let one = hlo_eval::npy::write_npy(&f32s(100)).unwrap();
    assert!(read_npy_with_limit(&one, 400).is_ok());
    assert!(matches!(
        read_npy_with_limit(&one, 399),
        Err(NpyError::TooLarge { bytes: 400, .. })
    ));
}

#[test]
fn corrupt_and_truncated_archives_are_errors() {
    let npy = hlo_eval::npy::write_npy(&f32s(64)).unwrap();
    let compressed = deflated("in0.npy", &npy);
    let stored = write_npz(&[("in0".to_string(), f32s(64))]).unwrap();
    let start = Instant::now();
    for bytes in [&compressed, &stored] {
        // Every prefix fails.
        for n in 0..bytes.len() {
            assert!(read_npz(&bytes[..n]).is_err(), "prefix of {n} bytes");
        }
        // Every single flipped byte fails or (in fields nobody checks) still reads the
        // same array; none panics.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            if let Ok(arrays) = read_npz(&b) {
                assert_eq!(arrays.len(), 1, "flipped byte {i}");
            }
        }
    }
    // A flipped byte in the data fails the CRC-32.
    let mut b = stored.clone();
    let at = b.len() / 2;
    b[at] ^= 1;
    let err = read_npz(&b).unwrap_err().to_string();
    assert!(err.contains("member in0.npy"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[test]
fn data_longer_than_the_header_announces_is_an_error() {
    let h = "{'descr': '<i2', 'fortran_order': False, 'shape': (1,), }";
    let err = read_npy(&npy_with_header(h, &[1, 0, 2])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "data has more bytes, the header (<i2, shape (1,)) needs 2"
    );
    let err = read_npy(&npy_with_header(h, &[1])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "data has 1 bytes, the header (<i2, shape (1,)) needs 2"
    );
}
