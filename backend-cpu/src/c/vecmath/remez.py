"""Minimax coefficients of the polynomials in the vectorizable transcendentals (vecmath).

Linear Remez exchange in mpmath (60 digits): minimise max |w(z) (f(z) - sum_j c_j z^j)| on
a cosine-spaced grid, w the relative error of the function's final result, so that the
reported error is what the polynomial adds to the result. Prints the coefficients (lowest
degree first) rounded to double; f32 coefficients of f32-arithmetic functions were rounded
to float. Usage: python3 remez.py NAME [TERMS], NAME one of those in FITS; needs mpmath.
"""
import sys

import mpmath as mp

mp.mp.dps = 60


def remez(f, w, n, a, b, grid=1500, iters=30):
    """Best (coefficients, max weighted error) of a polynomial with n terms on [a, b]."""
    N = n + 1
    ref = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (N - 1 - i) / (N - 1)) for i in range(N)]
    gz = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * mp.mpf(i) / grid) for i in range(grid + 1)]
    fz = [f(z) for z in gz]
    wz = [w(z) for z in gz]
    best = None
    for _ in range(iters):
        A = mp.matrix(N, N)
        rhs = mp.matrix(N, 1)
        for i, z in enumerate(ref):
            for j in range(n):
                A[i, j] = z**j
            A[i, n] = (-1) ** i / w(z)
            rhs[i] = f(z)
        sol = mp.lu_solve(A, rhs)
        c = [sol[j] for j in range(n)]
        E = sol[n]
        err = [wz[k] * (fz[k] - mp.polyval(c[::-1], gz[k])) for k in range(len(gz))]
        m = max(abs(e) for e in err)
        if best is None or m < best[1]:
            best = (c, m)
        if m <= abs(E) * (1 + mp.mpf("1e-6")):
            break
        # new reference: the extremum of each run of equal sign, trimmed at the ends
        ext = []
        k = 0
        while k < len(err):
            s = err[k] >= 0
            j, bi = k, k
            while j < len(err) and (err[j] >= 0) == s:
                if abs(err[j]) > abs(err[bi]):
                    bi = j
                j += 1
            ext.append(bi)
            k = j
        while len(ext) > N:
            ext.pop(0 if abs(err[ext[0]]) < abs(err[ext[-1]]) else -1)
        if len(ext) < N:
            break
        ref = [gz[i] for i in ext]
    return best


sq = mp.sqrt
pi4 = mp.pi / 4
t8 = mp.tan(mp.pi / 8) * mp.mpf("1.0001")
# name: (f, w, a, b, default terms); z = r^2 or t^2 where the polynomial is in the square
FITS = {
    # sin r = r + r^3 p(r^2): 6 terms (f64), 4 (f32 in double)
    "sin": (lambda z: (mp.sin(sq(z)) - sq(z)) / sq(z) ** 3, lambda z: sq(z) ** 3 / mp.sin(sq(z)),
            mp.mpf("1e-16"), pi4**2 * mp.mpf("1.0001"), 6),
    # cos r = 1 - r^2/2 + r^4 q(r^2): 6 terms (f64), 3 (f32 in double)
    "cos": (lambda z: (mp.cos(sq(z)) - 1 + z / 2) / z**2, lambda z: z**2 / mp.cos(sq(z)),
            mp.mpf("1e-16"), pi4**2 * mp.mpf("1.0001"), 6),
    # atan t = t + t^3 p(t^2), |t| <= tan(pi/8): 11 terms (f64), 6 (f32 in double)
    "atan": (lambda z: (mp.atan(sq(z)) - sq(z)) / sq(z) ** 3, lambda z: sq(z) ** 3 / mp.atan(sq(z)),
             mp.mpf("1e-16"), t8**2, 11),
    # cbrt(m), m in [1, 2]: 6 terms
    "cbrt": (lambda m: mp.cbrt(m), lambda m: 1 / mp.cbrt(m), mp.mpf(1), mp.mpf(2), 6),
    # erf x = x p(x^2), |x| < 1 (f64): 12 terms
    "erf_small": (lambda z: mp.erf(sq(z)) / sq(z), lambda z: sq(z) / mp.erf(sq(z)),
                  mp.mpf("1e-20"), mp.mpf(1), 12),
    # erf x = 1 - e^(-x^2) q(x - 7/2), 1 <= x <= 6 (f64): 22 terms, weighted by erf's error
    "erf_large": (lambda u: mp.erfc(u + 3.5) * mp.exp((u + 3.5) ** 2),
                  lambda u: mp.exp(-((u + 3.5) ** 2)) / mp.erf(u + 3.5), mp.mpf(-2.5), mp.mpf(2.5), 22),
    # log(1 + f) = f - f^2/2 + f^3 q(f), f in pow's [-2^-9, 2^-8] (with margin): 6 terms
    "log1p_pow": (lambda t: (mp.log1p(t) - t + t * t / 2) / t**3, lambda t: abs(t**3 / mp.log1p(t)),
                  mp.mpf("-0.0021"), mp.mpf("0.0040"), 6),
}

if __name__ == "__main__":
    f, w, a, b, n = FITS[sys.argv[1]]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else n
    c, m = remez(f, w, n, a, b)
    print("max weighted error 2^%s" % mp.nstr(mp.log(m, 2), 5))
    for x in c:
        print(float(x).hex())
