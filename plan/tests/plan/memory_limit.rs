//! `--memory-limit` in the planner ([`plan::memory::limit::build_within`]): a limit the
//! default program fits gives that program; one below everything the planner can reach
//! gives the error with the least it reached (never more than the default's) and the
//! largest values live at that program's peak; the least reached is exact (a limit of
//! exactly that many bytes compiles).

use plan::memory::limit::{build_within, live_at_peak};
use plan::BuildOptions;

/// A chain of elementwise ops with two long-lived values, so that the peak holds
/// several temporaries.
const CHAIN: &str = "HloModule chain

ENTRY e {
  p0 = f32[256] parameter(0)
  a = f32[256] exponential(p0)
  b = f32[256] negate(a)
  c = f32[256] sqrt(b)
  d = f32[256] add(a, c)
  e = f32[256] add(d, b)
  ROOT r = (f32[256], f32[256]) tuple(e, c)
}
";

#[test]
fn a_limit_the_default_fits_gives_the_default_program() {
    let m = hlo::parse_module(CHAIN).unwrap();
    let default = plan::build_program(&m).unwrap();
    let options = BuildOptions::default();
    let p = build_within(&m, &options, default.buffer_bytes())
        .unwrap()
        .expect("fits");
    assert_eq!(p, default);
}

#[test]
fn below_the_least_reached_is_a_clear_error() {
    let m = hlo::parse_module(CHAIN).unwrap();
    let default = plan::build_program(&m).unwrap();
    let options = BuildOptions::default();
    let over = build_within(&m, &options, 1)
        .unwrap()
        .expect_err("nothing fits 1 byte");
    assert_eq!(over.limit, 1);
    assert!(over.lowest_bytes <= default.buffer_bytes());
    assert!(over.peak_bytes <= over.lowest_bytes);
    // The parameter is live throughout, so at the peak; the largest first.
    assert!(over.live_at_peak.iter().any(|(n, _)| n == "p0"), "{over}");
    assert!(over.live_at_peak.windows(2).all(|w| w[0].1 >= w[1].1));
    let text = over.to_string();
    assert!(
        text.starts_with(
            "no schedule fits the memory limit of 1 bytes: the least the planner reached is "
        ),
        "{text}"
    );
    assert!(text.contains("live at the peak: %"), "{text}");
    // Exactly the least reached fits.
    let p = build_within(&m, &options, over.lowest_bytes)
        .unwrap()
        .expect("the least reached fits");
    assert_eq!(p.buffer_bytes(), over.lowest_bytes);
    // The values listed are live at one step: together at most the peak.
    let live: u64 = live_at_peak(&p).iter().map(|(_, b)| b).sum();
    assert!(live <= p.peak_bytes, "{live} > {}", p.peak_bytes);
}

/// A broadcast read by the first op and the last: kept, it is live beside the two values
/// the middle of the chain holds together.
const FAR: &str = "HloModule far

ENTRY e {
  p0 = f32[16] parameter(0)
  x = f32[256,16] parameter(1)
  b = f32[256,16] broadcast(p0), dimensions={1}
  a = f32[256,16] add(b, x)
  c = f32[256,16] exponential(a)
  d = f32[256,16] negate(c)
  e = f32[256,16] add(c, d)
  f = f32[256,16] sqrt(e)
  ROOT z = f32[256,16] multiply(f, b)
}
";

#[test]
fn a_cheap_value_is_recomputed_when_no_schedule_fits() {
    let m = hlo::parse_module(FAR).unwrap();
    let default = plan::build_program(&m).unwrap();
    let options = BuildOptions::default();
    let p = build_within(&m, &options, default.buffer_bytes() - 1)
        .unwrap()
        .expect("recomputing the broadcast fits");
    assert!(p.buffer_bytes() < default.buffer_bytes());
    // The broadcast's kernel runs twice (a renamed copy), the second right before the
    // multiply `z`, into a buffer of its own.
    assert_eq!(p.kernels.len(), default.kernels.len() + 1);
    let again = p.kernels.iter().position(|k| k.name.contains("_again"));
    let at = p
        .thunks
        .iter()
        .position(|t| matches!(t, plan::Thunk::Kernel { kernel, .. } if Some(*kernel) == again))
        .expect("the copy runs");
    let next = &p.thunks[at + 1];
    let plan::Thunk::Kernel { kernel, .. } = next else {
        panic!("{next:?}");
    };
    assert!(
        p.kernels[*kernel].name.ends_with("_z"),
        "{}",
        p.kernels[*kernel].name
    );
    // Without recomputation nothing reaches that: the error names the least reached.
    let plain = BuildOptions {
        recompute: false,
        ..BuildOptions::default()
    };
    let kept = plan::build_program_with(&m, &plain).unwrap();
    assert_eq!(kept.buffer_bytes(), default.buffer_bytes());
}
