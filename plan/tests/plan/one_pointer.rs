//! In-place kernels name the bytes they share once (`plan::memory::one_pointer`): after
//! building, no kernel call binds two parameters its body uses to the same bytes where
//! one is written, unless their element types differ, and then the kernel says its
//! pointers may alias (the C printer then keeps `restrict` off its written pointers).

use codegen::kir::Access;
use plan::memory::one_pointer::{may_alias, used_params};
use plan::{Program, Thunk};

/// `b` and `n` may each be written over their dying operand (`a`, `b`); `cv` over `n`
/// too, though as another element type.
const MODULE: &str = r#"HloModule m
ENTRY e {
  p = f32[64] parameter(0)
  q = f32[64] parameter(1)
  a = f32[64] exponential(p)
  b = f32[64] add(a, q)
  n = f32[64] negate(b)
  cv = s32[64] bitcast-convert(n)
  ROOT m = s32[64] multiply(cv, cv)
}
"#;

/// Where buffer `b`'s bytes lie: (region, offset, size).
fn place(p: &Program, b: usize) -> Option<(Option<usize>, u64, u64)> {
    let a = p.allocations.get(p.buffers[b].allocation)?;
    Some(match a.offset {
        Some(o) => (a.parent, o, p.buffers[b].bytes),
        None => (Some(p.buffers[b].allocation), 0, p.buffers[b].bytes),
    })
}

#[test]
fn used_pointers_of_a_call_never_share_bytes() {
    let m = hlo::parse_module(MODULE).unwrap();
    let p = plan::build_program(&m).unwrap();
    let (mut folded, mut apart) = (0, 0);
    for t in &p.thunks {
        let Thunk::Kernel { kernel, args, .. } = t else {
            continue;
        };
        let k = &p.kernels[*kernel];
        let used = used_params(k);
        for i in 0..args.len() {
            for j in 0..i {
                let shared =
                    place(&p, args[i]).is_some() && place(&p, args[i]) == place(&p, args[j]);
                let written =
                    k.buffers[i].access != Access::In || k.buffers[j].access != Access::In;
                if !(shared && written) {
                    continue;
                }
                if k.buffers[i].ty == k.buffers[j].ty {
                    // One name for the bytes: the other parameter is bound, unused.
                    assert!(!(used[i] && used[j]), "{}: b{j} and b{i}", k.name);
                    folded += 1;
                } else {
                    // s32 over f32: two pointers, not `restrict`.
                    assert!(may_alias(k), "{}", k.name);
                    apart += 1;
                }
            }
        }
    }
    // `b` over `a` and `n` over `b` at least; `cv` over `n` as another type.
    assert!(folded >= 2 && apart == 1, "{folded} folded, {apart} apart");
}

#[test]
fn only_an_unfolded_in_place_kernel_may_alias() {
    let m = hlo::parse_module(MODULE).unwrap();
    let p = plan::build_program(&m).unwrap();
    for k in &p.kernels {
        let in_place = k.buffers.iter().any(|b| b.access == Access::InOut);
        let two_types = in_place && k.buffers.iter().any(|b| b.ty != k.buffers[0].ty);
        assert_eq!(may_alias(k), two_types, "{}", k.name);
    }
}
