//! Outputs taken out of a run whole (`Executable::take_output`, the Python package's
//! zero-copy path): the same bytes `output_bytes` gives, taken once, refused for a
//! layout that is not row-major, and their memory reused by the next run once dropped.

use crate::gen;

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_ne_bytes).collect()
}

#[test]
fn a_taken_output_holds_the_run_bytes_and_its_memory_serves_the_next_run() {
    let m = gen::parse(
        0,
        "HloModule t\nENTRY main {\n  a = f32[1000] parameter(0)\n  \
         n = f32[1000] negate(a)\n  ROOT s = (f32[1000], f32[1000]) tuple(a, n)\n}\n",
    );
    let exe = runtime::compile(&m, &gen::options("hloc-cache-taken")).expect("compiles");
    let arg = f32_bytes((0..1000).map(|i| i as f32));
    let prepared = exe.prepare_bytes(&[&arg]).expect("prepares");
    let mut raw = exe.run_prepared(&prepared).expect("runs");
    let want: Vec<Vec<u8>> = (0..2)
        .map(|k| exe.output_bytes(&raw, k).expect("output").into_owned())
        .collect();
    assert_eq!(want[0], arg, "output 0 is the parameter");
    assert_eq!(want[1], f32_bytes((0..1000).map(|i| -(i as f32))));
    let mut taken: Vec<_> = (0..2)
        .map(|k| exe.take_output(&mut raw, k).expect("row-major: taken"))
        .collect();
    for (t, w) in taken.iter().zip(&want) {
        assert_eq!(t.bytes(), w.as_slice());
    }
    // Taken once; past the last output there is nothing.
    assert!(exe.take_output(&mut raw, 0).is_none());
    assert!(exe.take_output(&mut raw, 2).is_none());
    // The caller owns the memory: the next run, while it is held, writes elsewhere.
    let a1 = taken[1].as_mut_ptr().cast_const();
    drop(raw);
    let mut again = exe.run_prepared(&prepared).expect("runs");
    let kept = exe.take_output(&mut again, 1).expect("taken");
    assert_ne!(kept.bytes().as_ptr(), a1, "a held buffer is not reused");
    assert_eq!(
        taken[1].bytes(),
        want[1].as_slice(),
        "the next run left it alone"
    );
    // Dropped, the buffer becomes the memory of the next run's output: no fresh pages.
    drop(taken.pop());
    let mut third = exe.run_prepared(&prepared).expect("runs");
    let reused = exe.take_output(&mut third, 1).expect("taken");
    assert_eq!(reused.bytes().as_ptr(), a1, "the dropped buffer was reused");
    assert_eq!(reused.bytes(), want[1].as_slice());
    drop(kept);
}

#[test]
fn an_output_in_another_layout_is_not_taken() {
    let m = gen::parse(
        0,
        "HloModule t\nENTRY main {\n  a = f32[2,3]{1,0} parameter(0)\n  \
         ROOT t = f32[3,2]{0,1} negate(f32[3,2]{0,1} transpose(a), dimensions={1,0})\n}\n",
    );
    let exe = runtime::compile(&m, &gen::options("hloc-cache-taken")).expect("compiles");
    let arg = f32_bytes((0..6).map(|i| i as f32));
    let prepared = exe.prepare_bytes(&[&arg]).expect("prepares");
    let mut raw = exe.run_prepared(&prepared).expect("runs");
    assert!(exe.take_output(&mut raw, 0).is_none());
    let bytes = exe.output_bytes(&raw, 0).expect("bytes").into_owned();
    assert_eq!(bytes, f32_bytes([-0., -3., -1., -4., -2., -5.]));
}
