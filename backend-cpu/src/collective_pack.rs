//! The messages one collective step posts, and how what they receive becomes its
//! results. A combined collective (XLA's all-reduce, all-gather and reduce-scatter
//! combiners join independent ones into one op of several operands) moves its operands
//! as one message, as XLA's runtimes do: one rendezvous (in process) or one MPI call per
//! step instead of one per operand. All-reduce and reduce-scatter operands are joined per
//! element type (the reduction reads the message as one type); an all-gather joins them
//! all. Each operand's pieces of a dimension are packed in its physical layout (outer
//! elements x member x inner run), as a [`Communicator`] moves contiguous bytes.
//!
//! [`Communicator`]: plan::Communicator

use std::borrow::Cow;

use codegen::kir::ScalarType;
use plan::{ArraySpec, CollectiveKind, CommOp};

/// Where `len` bytes at `at` of a received message go: all of result `k`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Part {
    pub k: usize,
    pub at: usize,
    pub len: usize,
}

/// How the bytes a posted message receives become results.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Unpack {
    /// Each part straight into its result.
    Parts(Vec<Part>),
    /// A gathered message: `members` blocks of `stride` bytes, member-major; each part's
    /// bytes of every block are result `k`'s pieces along a dimension with `outer`
    /// elements more major than it.
    Gathered {
        members: usize,
        stride: usize,
        parts: Vec<(Part, usize)>,
    },
    /// `[member][outer][chunk]` into result `k` as `[outer][member][chunk]`.
    Interleave {
        k: usize,
        members: usize,
        outer: usize,
    },
    /// Piece `i` of `members` equal pieces into result `i`.
    Split(usize),
    /// The first member's piece of `members` into result `k`.
    First { k: usize, members: usize },
    /// Into result `k`, or zeros there when nothing was sent to this device.
    OrZero(usize),
}

/// One message of a step: what it computes, this device's bytes (the operand's own when
/// one operand is sent as it lies), how many it receives and where they go.
pub(crate) struct Message<'a> {
    pub op: CommOp<'a>,
    pub send: Cow<'a, [u8]>,
    pub recv_bytes: usize,
    pub unpack: Unpack,
}

/// Elements more major than `dim` in `spec`'s physical layout, and bytes of one run of
/// `dim` and everything more minor.
fn outer_inner(spec: &ArraySpec, dim: usize) -> Result<(usize, usize), String> {
    let major_to_minor: Vec<usize> = spec
        .minor_to_major
        .iter()
        .rev()
        .map(|&d| d as usize)
        .collect();
    let pos = major_to_minor
        .iter()
        .position(|&d| d == dim)
        .ok_or("dimension out of range")?;
    let size =
        |ds: &[usize]| -> usize { ds.iter().map(|&d| spec.dims[d].max(0) as usize).product() };
    let outer = size(&major_to_minor[..pos]);
    let inner = size(&major_to_minor[pos..]) * spec.ty.byte_width() as usize;
    Ok((outer, inner))
}

/// `[outer][members][chunk]` as `[members][outer][chunk]`.
fn member_major(src: &[u8], members: usize, outer: usize, chunk: usize) -> Vec<u8> {
    let mut dst = vec![0u8; src.len()];
    for o in 0..outer {
        for m in 0..members {
            let from = (o * members + m) * chunk;
            let to = (m * outer + o) * chunk;
            dst[to..to + chunk].copy_from_slice(&src[from..from + chunk]);
        }
    }
    dst
}

/// `[members][outer][chunk]` into `dst` as `[outer][members][chunk]`.
fn outer_major(src: &[u8], dst: &mut [u8], members: usize, outer: usize, chunk: usize) {
    for m in 0..members {
        for o in 0..outer {
            let from = (m * outer + o) * chunk;
            let to = (o * members + m) * chunk;
            dst[to..to + chunk].copy_from_slice(&src[from..from + chunk]);
        }
    }
}

/// The operands' indices grouped by element type, in order of first appearance.
fn by_type(operands: &[(&ArraySpec, &[u8])]) -> Vec<(ScalarType, Vec<usize>)> {
    let mut groups: Vec<(ScalarType, Vec<usize>)> = Vec::new();
    for (k, (spec, _)) in operands.iter().enumerate() {
        match groups.iter_mut().find(|(ty, _)| *ty == spec.ty) {
            Some((_, ks)) => ks.push(k),
            None => groups.push((spec.ty, vec![k])),
        }
    }
    groups
}

/// `pieces` one after another, each copied whole (a byte-wise `flat_map` copy was a tenth
/// of a 4-device train step's samples, joining its combined gradient all-reduce).
fn joined<'b>(pieces: impl Iterator<Item = &'b [u8]> + Clone) -> Vec<u8> {
    let mut out = Vec::with_capacity(pieces.clone().map(<[u8]>::len).sum());
    for p in pieces {
        out.extend_from_slice(p);
    }
    out
}

/// The messages of collective `kind` over a group of `members` for this device's
/// `operands` (each with its bytes).
pub(crate) fn messages<'a>(
    kind: &'a CollectiveKind,
    members: usize,
    operands: &[(&ArraySpec, &'a [u8])],
) -> Result<Vec<Message<'a>>, String> {
    match kind {
        CollectiveKind::AllReduce { reducer } => Ok(by_type(operands)
            .into_iter()
            .map(|(ty, ks)| {
                let mut parts = Vec::new();
                let mut at = 0;
                for &k in &ks {
                    let len = operands[k].1.len();
                    parts.push(Part { k, at, len });
                    at += len;
                }
                let send = match ks[..] {
                    [k] => Cow::Borrowed(operands[k].1),
                    _ => Cow::Owned(joined(ks.iter().map(|&k| operands[k].1))),
                };
                let op = CommOp::AllReduce {
                    reducer: *reducer,
                    ty,
                };
                let recv_bytes = send.len();
                Message {
                    op,
                    send,
                    recv_bytes,
                    unpack: Unpack::Parts(parts),
                }
            })
            .collect()),
        CollectiveKind::ReduceScatter { dim, reducer } => {
            let mut out = Vec::new();
            for (ty, ks) in by_type(operands) {
                // Member m's block holds its piece of every operand, one after another.
                let mut pieces = Vec::new();
                for &k in &ks {
                    let (spec, bytes) = operands[k];
                    let (outer, inner) = outer_inner(spec, *dim)?;
                    if inner % members != 0 {
                        return Err("the scattered dimension does not split".into());
                    }
                    pieces.push(member_major(bytes, members, outer, inner / members));
                }
                let block: usize = pieces.iter().map(|p| p.len() / members).sum();
                let mut send = Vec::with_capacity(block * members);
                for m in 0..members {
                    for p in &pieces {
                        let w = p.len() / members;
                        send.extend_from_slice(&p[m * w..(m + 1) * w]);
                    }
                }
                let mut at = 0;
                let parts = ks
                    .iter()
                    .zip(&pieces)
                    .map(|(&k, p)| {
                        let len = p.len() / members;
                        at += len;
                        Part {
                            k,
                            at: at - len,
                            len,
                        }
                    })
                    .collect();
                let op = CommOp::ReduceScatter {
                    reducer: *reducer,
                    ty,
                };
                out.push(Message {
                    op,
                    send: Cow::Owned(send),
                    recv_bytes: block,
                    unpack: Unpack::Parts(parts),
                });
            }
            Ok(out)
        }
        CollectiveKind::AllGather { dim } => {
            let mut send = Vec::new();
            let mut parts = Vec::new();
            for (k, (spec, bytes)) in operands.iter().enumerate() {
                let (outer, _) = outer_inner(spec, *dim)?;
                let part = Part {
                    k,
                    at: send.len(),
                    len: bytes.len(),
                };
                parts.push((part, outer));
                send.extend_from_slice(bytes);
            }
            let stride = send.len();
            Ok(vec![Message {
                op: CommOp::AllGather,
                send: Cow::Owned(send),
                recv_bytes: stride * members,
                unpack: Unpack::Gathered {
                    members,
                    stride,
                    parts,
                },
            }])
        }
        CollectiveKind::AllToAll { split_dim: None } => {
            if operands.len() != members {
                return Err("a tuple all-to-all needs one operand per member".into());
            }
            let send = joined(operands.iter().map(|(_, b)| *b));
            let n = send.len();
            Ok(vec![Message {
                op: CommOp::AllToAll,
                send: Cow::Owned(send),
                recv_bytes: n,
                unpack: Unpack::Split(members),
            }])
        }
        CollectiveKind::AllToAll { split_dim: Some(d) } => operands
            .iter()
            .enumerate()
            .map(|(k, (spec, bytes))| {
                let (outer, inner) = outer_inner(spec, *d)?;
                if inner % members != 0 {
                    return Err("the split dimension does not split".to_string());
                }
                Ok(Message {
                    op: CommOp::AllToAll,
                    send: Cow::Owned(member_major(bytes, members, outer, inner / members)),
                    recv_bytes: bytes.len(),
                    unpack: Unpack::Interleave { k, members, outer },
                })
            })
            .collect(),
        CollectiveKind::CollectivePermute { pairs } => Ok(operands
            .iter()
            .enumerate()
            .map(|(k, (_, bytes))| Message {
                op: CommOp::CollectivePermute { pairs },
                send: Cow::Borrowed(*bytes),
                recv_bytes: bytes.len(),
                unpack: Unpack::OrZero(k),
            })
            .collect()),
        CollectiveKind::CollectiveBroadcast => Ok(operands
            .iter()
            .enumerate()
            .map(|(k, (_, bytes))| Message {
                op: CommOp::AllGather,
                send: Cow::Borrowed(*bytes),
                recv_bytes: bytes.len() * members,
                unpack: Unpack::First { k, members },
            })
            .collect()),
        CollectiveKind::ReplicaId | CollectiveKind::PartitionId => Err("not an exchange".into()),
    }
}

/// The results (index, bytes) a message of `recv_len` received bytes unpacks into.
pub(crate) fn result_sizes(unpack: &Unpack, recv_len: usize) -> Vec<(usize, usize)> {
    match unpack {
        Unpack::Parts(parts) => parts.iter().map(|p| (p.k, p.len)).collect(),
        Unpack::Gathered { members, parts, .. } => {
            parts.iter().map(|(p, _)| (p.k, p.len * members)).collect()
        }
        Unpack::Interleave { k, .. } | Unpack::OrZero(k) => vec![(*k, recv_len)],
        Unpack::Split(members) => {
            let w = recv_len / (*members).max(1);
            (0..*members).map(|i| (i, w)).collect()
        }
        Unpack::First { k, members } => vec![(*k, recv_len / (*members).max(1))],
    }
}

/// Writes the results that `recv`, a message's received bytes, holds straight into
/// `outs` (result `k`'s memory at `outs[k]`, as [`result_sizes`] sizes it; `received`:
/// false for a collective-permute that sent nothing to this device, whose result is
/// zeros). Unpacked through fresh vectors before, a gathered result was zeroed and faulted
/// in on every step: a tenth of an 8-device attention step's samples.
pub(crate) fn unpack_into(
    unpack: &Unpack,
    recv: &[u8],
    received: bool,
    outs: &mut [Option<&mut [u8]>],
) -> Result<(), String> {
    let slice = |at: usize, len: usize| {
        recv.get(at..at + len).ok_or_else(|| {
            format!(
                "{} bytes received, a part at {at}..{}",
                recv.len(),
                at + len
            )
        })
    };
    for (k, len) in result_sizes(unpack, recv.len()) {
        match outs.get(k).map(Option::as_ref) {
            Some(Some(out)) if out.len() == len => {}
            _ => return Err(format!("result {k} is not {len} bytes of writable memory")),
        }
    }
    // Checked above: every result of the unpack has memory of its size.
    fn out<'o>(outs: &'o mut [Option<&mut [u8]>], k: usize) -> &'o mut [u8] {
        outs[k].as_deref_mut().unwrap_or_default()
    }
    match unpack {
        Unpack::Parts(parts) => {
            for p in parts {
                out(outs, p.k).copy_from_slice(slice(p.at, p.len)?);
            }
        }
        Unpack::Gathered {
            members,
            stride,
            parts,
        } => {
            for (p, outer) in parts {
                // Member m's piece is `[outer][chunk]`; the result is `[outer][member][chunk]`
                // (along the outermost dimension, the pieces one after another).
                let outer = (*outer).max(1);
                let chunk = p.len / outer;
                let dst = out(outs, p.k);
                for m in 0..*members {
                    let piece = slice(m * stride + p.at, p.len)?;
                    for o in 0..outer {
                        let to = (o * members + m) * chunk;
                        dst[to..to + chunk].copy_from_slice(&piece[o * chunk..(o + 1) * chunk]);
                    }
                }
            }
        }
        Unpack::Interleave { k, members, outer } => {
            let chunk = recv.len() / (members * outer).max(1);
            outer_major(recv, out(outs, *k), *members, *outer, chunk);
        }
        Unpack::Split(members) => {
            let w = recv.len() / (*members).max(1);
            for i in 0..*members {
                out(outs, i).copy_from_slice(&recv[i * w..(i + 1) * w]);
            }
        }
        Unpack::First { k, members } => {
            let w = recv.len() / (*members).max(1);
            out(outs, *k).copy_from_slice(&recv[..w]);
        }
        Unpack::OrZero(k) => match received {
            true => out(outs, *k).copy_from_slice(recv),
            false => out(outs, *k).fill(0),
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::ir::reducer::Reducer;

    fn spec(ty: ScalarType, dims: &[i64], minor_to_major: &[i64]) -> ArraySpec {
        ArraySpec {
            buffer: 0,
            ty,
            element_type: match ty {
                ScalarType::S32 => hlo::ElementType::S32,
                _ => hlo::ElementType::F32,
            },
            dims: dims.to_vec(),
            minor_to_major: minor_to_major.to_vec(),
        }
    }

    /// Bytes numbered from `start` (a distinct value per byte of a small test).
    fn bytes(start: u8, n: usize) -> Vec<u8> {
        (0..n).map(|i| start.wrapping_add(i as u8)).collect()
    }

    /// The results `recv` unpacks into, owned, to compare.
    fn owned(unpack: &Unpack, recv: &[u8]) -> Vec<(usize, Vec<u8>)> {
        let sizes = result_sizes(unpack, recv.len());
        let count = sizes.iter().map(|&(k, _)| k + 1).max().unwrap_or(0);
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); count];
        for &(k, len) in &sizes {
            bufs[k] = vec![0xee; len];
        }
        let mut outs: Vec<Option<&mut [u8]>> = bufs.iter_mut().map(|b| Some(&mut b[..])).collect();
        unpack_into(unpack, recv, true, &mut outs).expect("unpacks");
        sizes.iter().map(|&(k, _)| (k, bufs[k].clone())).collect()
    }

    /// What `members` devices' messages (their bytes `sends`, device-major) deliver to
    /// device `me` for an all-gather: every member's send, in group order.
    fn gathered(sends: &[Vec<u8>]) -> Vec<u8> {
        sends.concat()
    }

    #[test]
    fn a_combined_all_gather_is_one_message_and_unpacks_each_operand() {
        // Two members; a [2,3] f32 in row-major gathered along dim 1, and a [2]
        // column-major-irrelevant rank-1 s32 gathered along dim 0 of the same op.
        let a = spec(ScalarType::F32, &[2, 3], &[1, 0]);
        let b = spec(ScalarType::S32, &[2], &[0]);
        let kind = CollectiveKind::AllGather { dim: 0 };
        let dev: Vec<(Vec<u8>, Vec<u8>)> = (0..2u8)
            .map(|m| (bytes(100 * m, 24), bytes(100 * m + 50, 8)))
            .collect();
        let msgs: Vec<Vec<Message<'_>>> = dev
            .iter()
            .map(|(x, y)| messages(&kind, 2, &[(&a, x), (&b, y)]).expect("packs"))
            .collect();
        assert!(msgs.iter().all(|m| m.len() == 1), "one message per device");
        let recv = gathered(&msgs.iter().map(|m| m[0].send.to_vec()).collect::<Vec<_>>());
        assert_eq!(recv.len(), msgs[0][0].recv_bytes);
        let out = owned(&msgs[0][0].unpack, &recv);
        // Gathering along the major dimension of each: member 0's bytes, then member 1's.
        assert_eq!(out[0], (0, [dev[0].0.clone(), dev[1].0.clone()].concat()));
        assert_eq!(out[1], (1, [dev[0].1.clone(), dev[1].1.clone()].concat()));
    }

    #[test]
    fn a_combined_all_gather_interleaves_a_minor_dimension_per_operand() {
        // [2,2] bytes gathered along dim 1 (minor): rows interleave members' halves.
        let a = spec(ScalarType::S32, &[2, 1], &[1, 0]);
        let kind = CollectiveKind::AllGather { dim: 1 };
        let x0 = bytes(0, 8);
        let x1 = bytes(100, 8);
        let m0 = messages(&kind, 2, &[(&a, &x0), (&a, &x1)]).expect("packs");
        let m1 = messages(&kind, 2, &[(&a, &x1), (&a, &x0)]).expect("packs");
        let recv = gathered(&[m0[0].send.to_vec(), m1[0].send.to_vec()]);
        let out = owned(&m0[0].unpack, &recv);
        // Result 0: member 0's x0 row r then member 1's x1 row r, for each row r.
        let want0 = [&x0[0..4], &x1[0..4], &x0[4..8], &x1[4..8]].concat();
        let want1 = [&x1[0..4], &x0[0..4], &x1[4..8], &x0[4..8]].concat();
        assert_eq!(out, vec![(0, want0), (1, want1)]);
    }

    #[test]
    fn a_combined_all_reduce_is_one_message_per_element_type() {
        let f = spec(ScalarType::F32, &[3], &[0]);
        let s = spec(ScalarType::S32, &[2], &[0]);
        let kind = CollectiveKind::AllReduce {
            reducer: Reducer::Add,
        };
        let (x, y, z) = (bytes(0, 12), bytes(50, 8), bytes(90, 12));
        let msgs = messages(&kind, 4, &[(&f, &x), (&s, &y), (&f, &z)]).expect("packs");
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].send, [x.clone(), z.clone()].concat());
        assert_eq!(msgs[1].send, y);
        // A reduction of one member returns the send: each part comes back whole.
        let mut out = owned(&msgs[0].unpack, &msgs[0].send);
        out.extend(owned(&msgs[1].unpack, &msgs[1].send));
        out.sort();
        assert_eq!(out, vec![(0, x), (1, y), (2, z)]);
    }

    #[test]
    fn a_combined_reduce_scatter_gives_each_member_its_piece_of_every_operand() {
        // Two members, two [4] f32 operands: member m's block is piece m of each.
        let a = spec(ScalarType::F32, &[4], &[0]);
        let kind = CollectiveKind::ReduceScatter {
            dim: 0,
            reducer: Reducer::Add,
        };
        let (x, y) = (bytes(0, 16), bytes(100, 16));
        let msgs = messages(&kind, 2, &[(&a, &x), (&a, &y)]).expect("packs");
        assert_eq!(msgs.len(), 1);
        let m = &msgs[0];
        assert_eq!(m.recv_bytes, 16);
        assert_eq!(m.send, [&x[..8], &y[..8], &x[8..], &y[8..]].concat());
        // Member 1 receives the reduction of block 1 (here one member's: the block).
        let out = owned(&m.unpack, &m.send[16..]);
        assert_eq!(out, vec![(0, x[8..].to_vec()), (1, y[8..].to_vec())]);
    }
}
