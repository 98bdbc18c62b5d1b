//! A generated sweep of convolutions on small shapes: every combination of window stride,
//! padding (zero, positive, negative on either side), lhs (base) and rhs (window)
//! dilation, and feature or batch groups, with window size, reversal and dimension labels
//! varied along the sweep. Both directions are checked exactly against the evaluator:
//! output-to-input maps with [`check_module`], input-to-output maps by comparing, for
//! every input element, the outputs the maps reach with the outputs that changed when
//! that element was perturbed.

use super::*;

/// One convolution of the sweep.
#[derive(Clone, Copy, Debug)]
struct Conv {
    /// Spatial size of the input.
    n: i64,
    /// Window size.
    k: i64,
    stride: i64,
    pad: (i64, i64),
    lhs_dilate: i64,
    rhs_dilate: i64,
    feature_groups: i64,
    batch_groups: i64,
    reversal: bool,
    /// Use `fb0_o0i->0bf` labels instead of `b0f_0io->b0f`.
    permuted_labels: bool,
}

impl Conv {
    /// The output's spatial size (XLA's shape inference), or `None` when empty.
    fn out_size(&self) -> Option<i64> {
        let padded = (self.n - 1) * self.lhs_dilate + 1 + self.pad.0 + self.pad.1;
        let window = (self.k - 1) * self.rhs_dilate + 1;
        (padded >= window).then(|| (padded - window) / self.stride + 1)
    }

    /// The module: the convolution of two parameters as the entry root.
    fn hlo(&self) -> Option<String> {
        let out_n = self.out_size()?;
        let (fg, bg) = (self.feature_groups, self.batch_groups);
        let (batch, group_features) = (2, 2);
        let in_batch = batch * bg;
        let in_features = group_features * fg;
        let out_features = 2 * fg * bg;
        let (lhs, rhs, out, labels) = if self.permuted_labels {
            (
                [in_features, in_batch, self.n],
                [out_features, self.k, group_features],
                [out_n, batch, out_features],
                "fb0_o0i->0bf",
            )
        } else {
            (
                [in_batch, self.n, in_features],
                [self.k, group_features, out_features],
                [batch, out_n, out_features],
                "b0f_0io->b0f",
            )
        };
        let dims = |d: [i64; 3]| format!("{},{},{}", d[0], d[1], d[2]);
        Some(format!(
            "HloModule m
ENTRY e {{
  a = f32[{}] parameter(0)
  w = f32[{}] parameter(1)
  ROOT r = f32[{}] convolution(a, w), window={{size={} stride={} pad={}_{} lhs_dilate={} rhs_dilate={} rhs_reversal={}}}, dim_labels={labels}, feature_group_count={fg}, batch_group_count={bg}
}}",
            dims(lhs),
            dims(rhs),
            dims(out),
            self.k,
            self.stride,
            self.pad.0,
            self.pad.1,
            self.lhs_dilate,
            self.rhs_dilate,
            u8::from(self.reversal),
        ))
    }
}

/// Output elements changed by perturbing each element of operand `j` of the root.
fn observed_users(module: &Module, args: &[Literal], j: usize) -> Vec<BTreeSet<usize>> {
    let base = output_bits(&run(module, args), 0);
    let operand = args[j].as_array().unwrap();
    (0..operand.data().len())
        .map(|e| {
            let mut a = args.to_vec();
            a[j] = array(operand.shape(), values::perturbed(operand, e));
            let r = output_bits(&run(module, &a), 0);
            base.iter()
                .zip(&r)
                .enumerate()
                .filter(|(_, (x, y))| x != y)
                .map(|(o, _)| o)
                .collect()
        })
        .collect()
}

/// Input-to-output maps of operand `j`: the outputs they reach from every operand element.
fn in_to_out_image(module: &Module, j: usize) -> Vec<BTreeSet<usize>> {
    let entry = module.entry();
    let root = module.instr_ref(module.entry_id(), entry.root()).unwrap();
    let operand_dims = entry
        .instr(root.instr().operands()[j])
        .shape()
        .dims()
        .to_vec();
    let out_dims = root.instr().shape().dims().to_vec();
    let len: i64 = operand_dims.iter().product();
    let mut users = vec![BTreeSet::new(); len as usize];
    let sets = indexing::input_to_output(&root, j).expect("input-to-output maps");
    let mut img = BTreeMap::new();
    for m in sets[0].maps() {
        // The same enumeration as for output-to-input maps, with the roles swapped.
        image(module, m, &operand_dims, &out_dims, &[], &mut img);
    }
    for (e, outs) in img {
        users[e] = outs;
    }
    users
}

/// Every combination of stride, padding, dilations and groups (one spatial dimension,
/// window size 1 to 3 and reversal alternating along the sweep), both directions exact.
#[test]
fn convolution_sweep_exact() {
    let mut checked = 0;
    let mut case = 0usize;
    let mut rng = XorShift(0x0c0f_fee0_dead_beef);
    for stride in [1, 2, 3] {
        for pad in [(0, 0), (1, 2), (2, 0), (-1, 1), (1, -2), (-1, -1)] {
            for lhs_dilate in [1, 2, 3] {
                for rhs_dilate in [1, 2] {
                    for (feature_groups, batch_groups) in [(1, 1), (2, 1), (3, 1), (1, 2), (1, 3)] {
                        case += 1;
                        let conv = Conv {
                            n: 3 + (case % 3) as i64,
                            k: 1 + (case % 3) as i64,
                            stride,
                            pad,
                            lhs_dilate,
                            rhs_dilate,
                            feature_groups,
                            batch_groups,
                            reversal: case % 2 == 1,
                            permuted_labels: case.is_multiple_of(5),
                        };
                        let Some(text) = conv.hlo() else { continue };
                        let module = hlo::parse_module(&text)
                            .unwrap_or_else(|e| panic!("{conv:?}: {e}\n{text}"));
                        let args = args_for(&module, NO, &mut rng).unwrap();
                        let name = format!("{conv:?}");
                        check_module(&name, &module, &args, &[Exact, Exact], usize::MAX);
                        for j in 0..2 {
                            let seen = observed_users(&module, &args, j);
                            let claimed = in_to_out_image(&module, j);
                            for (e, (s, c)) in seen.iter().zip(&claimed).enumerate() {
                                assert_eq!(
                                    s, c,
                                    "{name}: operand {j} element {e}: outputs observed vs input-to-output maps\n{text}"
                                );
                            }
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 400, "only {checked} convolutions were non-empty");
}

/// Random two-dimensional convolutions: per spatial dimension its own stride, padding
/// (up to three on either side, negative down to -2), dilations, window size and reversal;
/// dimension labels permuted at random; feature or batch groups. Both directions exact.
#[test]
fn convolution_2d_random_exact() {
    let mut rng = XorShift(0x002d_2dc0_ffee_1234);
    let mut checked = 0;
    for _ in 0..300 {
        let mut pick = |lo: i64, hi: i64| lo + (rng.next_u64() % (hi - lo + 1) as u64) as i64;
        let (fg, bg) = [(1, 1), (2, 1), (1, 2), (1, 3), (3, 1)][pick(0, 4) as usize];
        let mut win = Vec::new();
        let mut ns = Vec::new();
        let mut ks = Vec::new();
        let mut outs = Vec::new();
        for _ in 0..2 {
            let (n, k) = (pick(1, 4), pick(1, 3));
            let (stride, ld, rd) = (pick(1, 3), pick(1, 3), pick(1, 2));
            let (pl, ph) = (pick(-2, 3), pick(-2, 3));
            let padded = (n - 1) * ld + 1 + pl + ph;
            let window = (k - 1) * rd + 1;
            if padded < window {
                break;
            }
            outs.push((padded - window) / stride + 1);
            ns.push(n);
            ks.push(k);
            win.push(format!(
                "size={k} stride={stride} pad={pl}_{ph} lhs_dilate={ld} rhs_dilate={rd} rhs_reversal={}",
                pick(0, 1)
            ));
        }
        if win.len() < 2 {
            continue;
        }
        // One window attribute per field, `x`-separated across dimensions.
        let fields: Vec<Vec<String>> = win
            .iter()
            .map(|w| w.split(' ').map(str::to_string).collect())
            .collect();
        let window = (0..fields[0].len())
            .map(|f| {
                let key = fields[0][f].split('=').next().unwrap();
                let vals: Vec<&str> = fields
                    .iter()
                    .map(|d| d[f].split('=').nth(1).unwrap())
                    .collect();
                format!("{key}={}", vals.join("x"))
            })
            .collect::<Vec<_>>()
            .join(" ");
        let (batch, cg) = (pick(1, 2), pick(1, 2));
        let of = pick(1, 2) * fg * bg;
        // Labels: a random order of the four roles per operand.
        let mut order = |roles: [char; 4]| -> String {
            let mut r = roles.to_vec();
            for i in (1..4).rev() {
                r.swap(i, pick(0, i as i64) as usize);
            }
            r.into_iter().collect()
        };
        let (ll, kl, ol) = (
            order(['b', 'f', '0', '1']),
            order(['i', 'o', '0', '1']),
            order(['b', 'f', '0', '1']),
        );
        let size_of = |label: &str, by: &dyn Fn(char) -> i64| -> String {
            label
                .chars()
                .map(|ch| by(ch).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let lhs = size_of(&ll, &|ch| match ch {
            'b' => batch * bg,
            'f' => cg * fg,
            '0' => ns[0],
            _ => ns[1],
        });
        let rhs = size_of(&kl, &|ch| match ch {
            'i' => cg,
            'o' => of,
            '0' => ks[0],
            _ => ks[1],
        });
        let out = size_of(&ol, &|ch| match ch {
            'b' => batch,
            'f' => of,
            '0' => outs[0],
            _ => outs[1],
        });
        let text = format!(
            "HloModule m
ENTRY e {{
  a = f32[{lhs}] parameter(0)
  w = f32[{rhs}] parameter(1)
  ROOT r = f32[{out}] convolution(a, w), window={{{window}}}, dim_labels={ll}_{kl}->{ol}, feature_group_count={fg}, batch_group_count={bg}
}}"
        );
        let module = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let args = args_for(&module, NO, &mut rng).unwrap();
        check_module(&text, &module, &args, &[Exact, Exact], usize::MAX);
        for j in 0..2 {
            let seen = observed_users(&module, &args, j);
            let claimed = in_to_out_image(&module, j);
            for (e, (s, c)) in seen.iter().zip(&claimed).enumerate() {
                assert_eq!(
                    s, c,
                    "operand {j} element {e}: outputs observed vs input-to-output maps\n{text}"
                );
            }
        }
        checked += 1;
    }
    assert!(checked > 150, "only {checked} convolutions were non-empty");
}
