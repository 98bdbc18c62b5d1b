//! Unit tests of the plans and limits.

use super::geometry::Label;
use super::*;

fn geometry(text: &str) -> Geometry {
    let m = hlo::parse_module(text).unwrap();
    let e = m.entry();
    let id = e
        .instructions()
        .find(|(_, i)| i.opcode == Opcode::Convolution)
        .unwrap()
        .0;
    Geometry::of(e, id).unwrap()
}

#[test]
fn weight_gradients_are_cut_by_output_position_without_transposes() {
    // JAX's NHWC weight gradient: the convolution's batch (the channels) comes last.
    let g = geometry(
        "HloModule m
ENTRY e {
  x = f32[2,6,6,4] parameter(0)
  dy = f32[2,6,6,4] parameter(1)
  ROOT c = f32[3,3,4,4] convolution(x, dy), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
}",
    );
    assert_eq!(g.macs(), Some(3 * 3 * 4 * 4 * 36 * 2));
    let plan = ConvToGemm::always().plan(&g).unwrap();
    assert!(plan.transpose.is_none());
    assert_eq!(plan.parts, 9);
    use Label::*;
    assert_eq!(plan.labels, [Feature, Win(0), Win(1), Outs, Batch]);
    assert_eq!((plan.outer, plan.contracted), (0, 3));
}

#[test]
fn nchw_is_a_batched_dot_and_nhwc_a_plain_one() {
    let nchw = geometry(
        "HloModule m
ENTRY e {
  x = f32[2,3,9,9] parameter(0)
  k = f32[4,3,3,3] parameter(1)
  ROOT c = f32[2,4,4,4] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=bf01_oi01->bf01
}",
    );
    let plan = ConvToGemm::always().plan(&nchw).unwrap();
    use Label::*;
    assert_eq!(plan.labels, [Batch, Wins, Feature, Out(0), Out(1)]);
    assert_eq!((plan.outer, plan.contracted), (1, 2));
    let nhwc = geometry(
        "HloModule m
ENTRY e {
  x = f32[2,9,9,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  ROOT c = f32[2,4,4,4] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f
}",
    );
    let plan = ConvToGemm::always().plan(&nhwc).unwrap();
    assert_eq!(plan.labels, [Batch, Out(0), Out(1), Wins, Feature]);
    assert_eq!((plan.outer, plan.contracted), (3, 2));
}

#[test]
fn limits_decide() {
    let tiny = geometry(
        "HloModule m
ENTRY e {
  x = f32[1,3,3,1] parameter(0)
  k = f32[3,3,1,1] parameter(1)
  ROOT c = f32[1,3,3,1] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}",
    );
    assert_eq!(tiny.macs(), Some(81));
    assert!(ConvToGemm::always().plan(&tiny).is_some());
    assert!(ConvToGemm::default().plan(&tiny).is_none());
    let g = geometry(
        "HloModule m
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  k = f32[3,3,4,4] parameter(1)
  ROOT c = f32[1,8,8,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}",
    );
    assert_eq!(g.macs(), Some(64 * 4 * 9 * 4));
    assert!(ConvToGemm::default().plan(&g).is_some());
    let few_slices = ConvToGemm {
        max_slices: 5,
        ..ConvToGemm::default()
    };
    assert!(few_slices.plan(&g).is_none());
    let small_patches = ConvToGemm {
        max_patch_bytes: 64 * 9 * 4 * 4 - 1,
        ..ConvToGemm::default()
    };
    assert!(small_patches.plan(&g).is_none());
}
