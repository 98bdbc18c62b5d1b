//! A [`GemmShape`] (row-major semantics: `out[m, n] = sum_k lhs[m, k] rhs[k, n]`, with
//! element strides for every matrix and batch dimension) as cuBLAS's column-major
//! strided-batched GEMM: `C = op(A) op(B)` with leading dimensions and one batch stride
//! per matrix, looping over the other batch dimensions. cuBLAS needs every matrix to step
//! by one element along rows or columns; where the result steps by one along its columns
//! (row-major, the usual case), it computes `out^T = rhs^T lhs^T` (operands swapped).
//! Pure arithmetic, so the mapping is tested on any machine against the shape's own
//! definition.

use plan::GemmShape;

/// How cuBLAS reads a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// As stored (column-major).
    N,
    /// Transposed.
    T,
}

/// One cuBLAS `cublasGemmStridedBatchedEx` call (or several, at `outer`'s offsets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CublasGemm {
    /// Whether cuBLAS's `A` is the shape's lhs (else its rhs: the operands swapped).
    pub a_is_lhs: bool,
    /// `op(A)`.
    pub transa: Op,
    /// `op(B)`.
    pub transb: Op,
    /// Rows of `C`.
    pub m: usize,
    /// Columns of `C`.
    pub n: usize,
    /// The contraction.
    pub k: usize,
    /// Leading dimension of `A`.
    pub lda: i64,
    /// Leading dimension of `B`.
    pub ldb: i64,
    /// Leading dimension of `C`.
    pub ldc: i64,
    /// Matrices in one call, and the element strides between them (`A`, `B`, `C`).
    pub batch: (usize, i64, i64, i64),
    /// Element offsets (`A`, `B`, `C`) of each call (one entry: a single call).
    pub outer: Vec<(i64, i64, i64)>,
}

/// A matrix `rows x cols` whose element `(i, j)` lies at `i rs + j cs`, as cuBLAS reads
/// it: stored column-major (`N`, leading dimension `cs`) or as the transpose of a
/// column-major matrix (`T`, leading dimension `rs`). `None` when it steps by one along
/// neither dimension.
fn column_major(rows: usize, cols: usize, rs: isize, cs: isize) -> Option<(Op, i64)> {
    let (r, c) = (rows as i64, cols as i64);
    let (rs, cs) = (rs as i64, cs as i64);
    let unit_rows = rows <= 1 || rs == 1;
    let unit_cols = cols <= 1 || cs == 1;
    if unit_rows && (cols <= 1 || cs >= r.max(1)) {
        return Some((Op::N, if cols <= 1 { r.max(1) } else { cs }));
    }
    if unit_cols && (rows <= 1 || rs >= c.max(1)) {
        return Some((Op::T, if rows <= 1 { c.max(1) } else { rs }));
    }
    None
}

/// The cuBLAS call computing `shape` (`k > 0`); `None` for strides cuBLAS cannot take.
pub fn cublas_gemm(shape: &GemmShape) -> Option<CublasGemm> {
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let (l, r, o) = (shape.lhs, shape.rhs, shape.out);
    // out^T = rhs^T lhs^T: C is out^T (n x m), A = rhs^T (n x k), B = lhs^T (k x m).
    let swapped = match column_major(n, m, o.1, o.0) {
        Some((Op::N, ldc)) => Some((
            false,
            column_major(n, k, r.1, r.0)?,
            column_major(k, m, l.1, l.0)?,
            ldc,
            (n, m),
        )),
        _ => None,
    };
    let (a_is_lhs, (transa, lda), (transb, ldb), ldc, (cm, cn)) = match swapped {
        Some(s) => s,
        None => match column_major(m, n, o.0, o.1)? {
            (Op::N, ldc) => (
                true,
                column_major(m, k, l.0, l.1)?,
                column_major(k, n, r.0, r.1)?,
                ldc,
                (m, n),
            ),
            _ => return None,
        },
    };
    // The largest batch dimension is cuBLAS's batch; the others loop.
    let dims: Vec<_> = shape.batch.iter().filter(|b| b.0 > 1).collect();
    let inner = (0..dims.len()).max_by_key(|&i| dims[i].0);
    let order = |b: &(usize, isize, isize, isize)| -> (i64, i64, i64) {
        let (ls, rs, os) = (b.1 as i64, b.2 as i64, b.3 as i64);
        if a_is_lhs {
            (ls, rs, os)
        } else {
            (rs, ls, os)
        }
    };
    let batch = match inner {
        Some(i) => {
            let (sa, sb, sc) = order(dims[i]);
            (dims[i].0, sa, sb, sc)
        }
        None => (1, 0, 0, 0),
    };
    let mut outer = vec![(0i64, 0i64, 0i64)];
    for (i, d) in dims.iter().enumerate() {
        if Some(i) == inner {
            continue;
        }
        let (sa, sb, sc) = order(d);
        outer = outer
            .iter()
            .flat_map(|&(a, b, c)| {
                (0..d.0 as i64).map(move |t| (a + t * sa, b + t * sb, c + t * sc))
            })
            .collect();
    }
    Some(CublasGemm {
        a_is_lhs,
        transa,
        transb,
        m: cm,
        n: cn,
        k,
        lda,
        ldb,
        ldc,
        batch,
        outer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use codegen::kir::ScalarType;

    /// cuBLAS's semantics, literally: `C = op(A) op(B)` column-major, per call and batch.
    fn run_cublas(g: &CublasGemm, a: &[f64], b: &[f64], c: &mut [f64]) {
        for &(oa, ob, oc) in &g.outer {
            for t in 0..g.batch.0 as i64 {
                let (ba, bb, bc) = (oa + t * g.batch.1, ob + t * g.batch.2, oc + t * g.batch.3);
                for i in 0..g.m as i64 {
                    for j in 0..g.n as i64 {
                        let mut s = 0.0;
                        for p in 0..g.k as i64 {
                            let av = match g.transa {
                                Op::N => a[(ba + i + p * g.lda) as usize],
                                Op::T => a[(ba + p + i * g.lda) as usize],
                            };
                            let bv = match g.transb {
                                Op::N => b[(bb + p + j * g.ldb) as usize],
                                Op::T => b[(bb + j + p * g.ldb) as usize],
                            };
                            s += av * bv;
                        }
                        c[(bc + i + j * g.ldc) as usize] = s;
                    }
                }
            }
        }
    }

    /// The shape's own definition.
    fn run_shape(s: &GemmShape, l: &[f64], r: &[f64], o: &mut [f64]) {
        let mut offs = vec![(0isize, 0isize, 0isize)];
        for b in &s.batch {
            offs = offs
                .iter()
                .flat_map(|&(x, y, z)| {
                    (0..b.0 as isize).map(move |t| (x + t * b.1, y + t * b.2, z + t * b.3))
                })
                .collect();
        }
        for (lo, ro, oo) in offs {
            for i in 0..s.m as isize {
                for j in 0..s.n as isize {
                    let mut acc = 0.0;
                    for p in 0..s.k as isize {
                        acc += l[(lo + i * s.lhs.0 + p * s.lhs.1) as usize]
                            * r[(ro + p * s.rhs.0 + j * s.rhs.1) as usize];
                    }
                    o[(oo + i * s.out.0 + j * s.out.1) as usize] = acc;
                }
            }
        }
    }

    /// Strides of a `rows x cols` matrix stored row-major (`false`) or column-major.
    fn strides(rows: usize, cols: usize, col_major: bool) -> (isize, isize) {
        if col_major {
            (1, rows as isize)
        } else {
            (cols as isize, 1)
        }
    }

    #[test]
    fn every_layout_and_batch_matches_the_shapes_definition() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut checked = 0;
        for case in 0..400 {
            let (m, n, k) = (
                1 + next(5) as usize,
                1 + next(5) as usize,
                1 + next(4) as usize,
            );
            let layouts = [next(2) == 1, next(2) == 1, next(2) == 1];
            let (ls, rs, os) = (
                strides(m, k, layouts[0]),
                strides(k, n, layouts[1]),
                strides(m, n, layouts[2]),
            );
            let (lsz, rsz, osz) = (m * k, k * n, m * n);
            // Up to two batch dimensions, each matrix's batches packed outside it.
            let mut batch = Vec::new();
            let (mut lt, mut rt, mut ot) = (lsz, rsz, osz);
            for _ in 0..next(3) {
                let e = 1 + next(3) as usize;
                let rhs_broadcast = next(4) == 0;
                batch.push((
                    e,
                    lt as isize,
                    if rhs_broadcast { 0 } else { rt as isize },
                    ot as isize,
                ));
                lt *= e;
                if !rhs_broadcast {
                    rt *= e;
                }
                ot *= e;
            }
            batch.reverse();
            let shape = GemmShape {
                ty: ScalarType::F64,
                lhs_ty: ScalarType::F64,
                rhs_ty: ScalarType::F64,
                out_ty: ScalarType::F64,
                m,
                n,
                k,
                lhs: ls,
                rhs: rs,
                out: os,
                batch,
            };
            let g = cublas_gemm(&shape)
                .unwrap_or_else(|| panic!("case {case}: no cuBLAS call for {shape:?}"));
            let l: Vec<f64> = (0..lt).map(|i| (i * 7 % 11) as f64 - 5.0).collect();
            let r: Vec<f64> = (0..rt).map(|i| (i * 5 % 13) as f64 - 6.0).collect();
            let (mut want, mut got) = (vec![0.0; ot], vec![0.0; ot]);
            run_shape(&shape, &l, &r, &mut want);
            let (a, b) = if g.a_is_lhs { (&l, &r) } else { (&r, &l) };
            run_cublas(&g, a, b, &mut got);
            assert_eq!(got, want, "case {case}: {shape:?} as {g:?}");
            checked += 1;
        }
        assert_eq!(checked, 400);
    }

    #[test]
    fn strides_stepping_by_one_nowhere_are_refused() {
        let shape = GemmShape {
            ty: ScalarType::F32,
            lhs_ty: ScalarType::F32,
            rhs_ty: ScalarType::F32,
            out_ty: ScalarType::F32,
            m: 2,
            n: 2,
            k: 2,
            lhs: (4, 2),
            rhs: (2, 1),
            out: (2, 1),
            batch: Vec::new(),
        };
        assert_eq!(cublas_gemm(&shape), None);
    }
}
