//! Symmetric eigendecomposition and SVD for the LAPACK FFI custom calls JAX emits on CPU
//! for `eigh` (`lapack_{s,d}syevd_ffi`) and `svd` (`lapack_{s,d}gesdd_ffi`).
//!
//! This is our own reference, not LAPACK's algorithm: cyclic Jacobi rotations for the
//! eigenproblem and one-sided (Hestenes) Jacobi for the SVD, both in `f64`. Jacobi is
//! slow (O(n^3) per sweep) but simple and accurate to working precision, which is what
//! a reference needs. Values come out in LAPACK's order (eigenvalues nondecreasing,
//! singular values nonincreasing); vectors are unique only up to sign (and rotation
//! within a repeated value), so they agree with LAPACK's or a backend's only after that
//! freedom is removed: `--check-reference` compares them by reconstruction
//! (`reconstruct.rs`), never element-wise.
//!
//! Matrices are row-major logical `rows x cols` slices.

/// Sweeps before giving up (Jacobi converges quadratically; 60 is far beyond need).
const MAX_SWEEPS: usize = 60;

/// The symmetric matrix the `lower` (or upper) triangle of `a` describes.
pub(super) fn symmetric(a: &[f64], n: usize, lower: bool) -> Vec<f64> {
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let (r, c) = if (j <= i) == lower { (i, j) } else { (j, i) };
            s[i * n + j] = a[r * n + c];
        }
    }
    s
}

/// Eigenvalues (nondecreasing) and eigenvectors (column `j` of the row-major `n x n`
/// result belongs to value `j`) of the symmetric matrix whose `lower` (or upper)
/// triangle `a` holds; `None` when Jacobi did not converge (LAPACK's `info > 0`).
pub fn symmetric_eigen(a: &[f64], n: usize, lower: bool) -> Option<(Vec<f64>, Vec<f64>)> {
    let mut s = symmetric(a, n, lower);
    let mut v = identity(n);
    let scale = s.iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut converged = false;
    for _ in 0..MAX_SWEEPS {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| s[i * n + j] * s[i * n + j])
            .sum::<f64>()
            .sqrt();
        if off <= f64::EPSILON * scale || off == 0.0 {
            converged = true;
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let (app, aqq) = (s[p * n + p], s[q * n + q]);
                // The rotation that zeroes s[p][q] (Golub & Van Loan, Algorithm 8.4.1).
                let (c, sn) = jacobi_rotation((aqq - app) / (2.0 * apq));
                rotate_columns(&mut s, n, n, p, q, (c, sn));
                for k in 0..n {
                    let (spk, sqk) = (s[p * n + k], s[q * n + k]);
                    s[p * n + k] = c * spk - sn * sqk;
                    s[q * n + k] = sn * spk + c * sqk;
                }
                rotate_columns(&mut v, n, n, p, q, (c, sn));
            }
        }
    }
    if !converged || s.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let values: Vec<f64> = (0..n).map(|i| s[i * n + i]).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| values[x].total_cmp(&values[y]));
    Some((
        order.iter().map(|&k| values[k]).collect(),
        permute_columns(&v, n, n, &order),
    ))
}

/// The SVD of the row-major `m x n` matrix `a`: singular values (nonincreasing, `min(m,
/// n)` of them), `U` (`m x m` when `full`, else `m x min(m, n)`) and `V^T` (`n x n` when
/// `full`, else `min(m, n) x n`); `None` when Jacobi did not converge.
#[allow(clippy::type_complexity)]
pub fn svd(a: &[f64], m: usize, n: usize, full: bool) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    if m < n {
        // A^T = V S U^T: decompose the transpose and swap the factors.
        let (s, u_t, vt_t) = svd(&transpose(a, m, n), n, m, full)?;
        let (ur, uc) = (n, if full { n } else { m });
        let (vr, vc) = (m, m);
        // U of A^T is V of A (n x uc): V^T of A is its transpose.
        let vt = transpose(&u_t, ur, uc);
        // V^T of A^T (vr x m) is U^T of A: U of A is its transpose.
        let u = transpose(&vt_t, vr, vc);
        return Some((s, u, vt));
    }
    // m >= n: orthogonalise the columns of W = A V.
    let mut w = a.to_vec();
    let mut v = identity(n);
    let scale = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut converged = n < 2;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for k in 0..m {
                    let (x, y) = (w[k * n + p], w[k * n + q]);
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if gamma == 0.0
                    || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt()
                    || gamma.abs() <= f64::MIN_POSITIVE * scale
                {
                    continue;
                }
                rotated = true;
                let cs = jacobi_rotation((beta - alpha) / (2.0 * gamma));
                rotate_columns(&mut w, m, n, p, q, cs);
                rotate_columns(&mut v, n, n, p, q, cs);
            }
        }
        if !rotated {
            converged = true;
            break;
        }
    }
    if !converged || w.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| {
            (0..m)
                .map(|k| w[k * n + j] * w[k * n + j])
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    let v = permute_columns(&v, n, n, &order);
    // U's columns: W's normalised; those of zero singular values and, when `full`, the
    // rest of an m x m basis are completed by Gram-Schmidt.
    let ucols = if full { m } else { n };
    let mut u = vec![0.0; m * ucols];
    let tiny = f64::EPSILON * scale.max(f64::MIN_POSITIVE) * (m.max(n) as f64);
    let mut have = Vec::with_capacity(ucols);
    for (col, &j) in order.iter().enumerate() {
        if norms[j] > tiny {
            for k in 0..m {
                u[k * ucols + col] = w[k * n + j] / norms[j];
            }
            have.push(col);
        }
    }
    complete_basis(&mut u, m, ucols, &have);
    Some((s, u, transpose(&v, n, n)))
}

/// Fills the columns of the row-major `rows x cols` orthonormal-column matrix `u` not in
/// `have` with unit vectors orthogonal to all others (Gram-Schmidt of the standard basis,
/// twice for stability).
fn complete_basis(u: &mut [f64], rows: usize, cols: usize, have: &[usize]) {
    let mut done: Vec<usize> = have.to_vec();
    let mut candidate = 0;
    for col in 0..cols {
        if have.contains(&col) {
            continue;
        }
        while candidate < rows {
            let mut x = vec![0.0; rows];
            x[candidate] = 1.0;
            candidate += 1;
            for _ in 0..2 {
                for &d in &done {
                    let dot: f64 = (0..rows).map(|k| x[k] * u[k * cols + d]).sum();
                    (0..rows).for_each(|k| x[k] -= dot * u[k * cols + d]);
                }
            }
            let norm = x.iter().map(|y| y * y).sum::<f64>().sqrt();
            if norm > 0.5 {
                (0..rows).for_each(|k| u[k * cols + col] = x[k] / norm);
                done.push(col);
                break;
            }
        }
    }
}

fn identity(n: usize) -> Vec<f64> {
    let mut v = vec![0.0; n * n];
    (0..n).for_each(|i| v[i * n + i] = 1.0);
    v
}

/// The row-major transpose of the row-major `rows x cols` matrix `a`.
fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = a[i * cols + j];
        }
    }
    t
}

/// Column `c` of the result is column `order[c]` of the row-major `rows x cols` `a`.
fn permute_columns(a: &[f64], rows: usize, cols: usize, order: &[usize]) -> Vec<f64> {
    let mut p = vec![0.0; rows * cols];
    for i in 0..rows {
        for (c, &j) in order.iter().enumerate() {
            p[i * cols + c] = a[i * cols + j];
        }
    }
    p
}

/// The cosine and sine of the Jacobi rotation for `tau = (a_qq - a_pp) / (2 a_pq)`: the
/// smaller root `t` of `t^2 + 2 tau t - 1 = 0` (Golub & Van Loan, Algorithm 8.4.1), so
/// the rotation angle stays within 45 degrees.
fn jacobi_rotation(tau: f64) -> (f64, f64) {
    let t = tau.signum() / (tau.abs() + (1.0 + tau * tau).sqrt());
    let t = if tau == 0.0 { 1.0 } else { t };
    let c = 1.0 / (1.0 + t * t).sqrt();
    (c, t * c)
}

/// Rotates columns `p` and `q` of the row-major `rows x cols` matrix `a` by `(c, s)`.
fn rotate_columns(a: &mut [f64], rows: usize, cols: usize, p: usize, q: usize, (c, s): (f64, f64)) {
    for k in 0..rows {
        let (x, y) = (a[k * cols + p], a[k * cols + q]);
        a[k * cols + p] = c * x - s * y;
        a[k * cols + q] = s * x + c * y;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random matrix in [-1, 1).
    fn random(len: usize, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
            }
        }
        c
    }

    fn max_diff(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    }

    fn orthonormal_columns(u: &[f64], rows: usize, cols: usize) -> f64 {
        max_diff(
            &matmul(&transpose(u, rows, cols), u, cols, rows, cols),
            &identity(cols),
        )
    }

    #[test]
    fn eigen_reconstructs_random_symmetric_matrices() {
        for (seed, n) in [(1, 1), (2, 2), (3, 5), (4, 9), (5, 16)] {
            let r = random(n * n, seed);
            // Only the lower triangle is read; the upper holds junk.
            let a: Vec<f64> = (0..n * n)
                .map(|k| if k / n >= k % n { r[k] } else { 99.0 })
                .collect();
            let (w, v) = symmetric_eigen(&a, n, true).expect("converges");
            assert!(w.windows(2).all(|p| p[0] <= p[1]), "{w:?}");
            let sym: Vec<f64> = (0..n * n)
                .map(|k| {
                    let (i, j) = (k / n, k % n);
                    r[i.max(j) * n + i.min(j)]
                })
                .collect();
            let av = matmul(&sym, &v, n, n, n);
            let vw: Vec<f64> = (0..n * n).map(|k| v[k] * w[k % n]).collect();
            assert!(max_diff(&av, &vw) < 1e-12, "n={n}");
            assert!(orthonormal_columns(&v, n, n) < 1e-12, "n={n}");
        }
    }

    #[test]
    fn eigen_reads_the_upper_triangle_and_repeated_values() {
        // diag(2, 2, 5) rotated: a repeated value still yields an orthonormal basis.
        let a = [2.0, 0.0, 0.0, -7.0, 2.0, 0.0, -7.0, -7.0, 5.0];
        let (w, v) = symmetric_eigen(&a, 3, false).expect("converges");
        assert!(max_diff(&w, &[2.0, 2.0, 5.0]) < 1e-14, "{w:?}");
        assert!(orthonormal_columns(&v, 3, 3) < 1e-14);
    }

    #[test]
    fn svd_reconstructs_random_matrices_thin_and_full() {
        for (seed, m, n) in [(7, 1, 1), (8, 4, 4), (9, 7, 3), (10, 3, 7), (11, 12, 5)] {
            let a = random(m * n, seed);
            let k = m.min(n);
            for full in [false, true] {
                let (s, u, vt) = svd(&a, m, n, full).expect("converges");
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                assert!(s.windows(2).all(|p| p[0] >= p[1]) && s[k - 1] >= 0.0);
                assert!(
                    orthonormal_columns(&u, m, uc) < 1e-12,
                    "{m}x{n} full={full}"
                );
                let v = transpose(&vt, vr, n);
                assert!(
                    orthonormal_columns(&v, n, vr) < 1e-12,
                    "{m}x{n} full={full}"
                );
                // A = U[:, :k] diag(s) V^T[:k, :].
                let mut usk = vec![0.0; m * k];
                for i in 0..m {
                    for j in 0..k {
                        usk[i * k + j] = u[i * uc + j] * s[j];
                    }
                }
                let back = matmul(&usk, &vt[..k * n], m, k, n);
                assert!(max_diff(&back, &a) < 1e-12, "{m}x{n} full={full}");
            }
        }
    }

    #[test]
    fn svd_of_a_rank_deficient_matrix_completes_u() {
        // Rank 1: u v^T; the zero singular values' U columns are completed.
        let a: Vec<f64> = (0..4 * 3)
            .map(|k| ((k / 3) + 1) as f64 * ((k % 3) as f64 - 1.0))
            .collect();
        let (s, u, _) = svd(&a, 4, 3, true).expect("converges");
        assert!(s[1] < 1e-12 && s[2] < 1e-12, "{s:?}");
        assert!(orthonormal_columns(&u, 4, 4) < 1e-12);
    }
}
