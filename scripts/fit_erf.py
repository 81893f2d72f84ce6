"""The float32 polynomials of shaders/common.glsl erf_T: |x| < 0.875, erf(x) = x + x R(x^2) (R of
degree 5, fitted to erf(x)/x - 1 relative to erf); 0.875 <= |x| < 3.925, erf(x) = 1 - exp(-x^2) Q(x)
(Q of degree 10 in x, fitted to erfc(x) exp(x^2), weighted by exp(-x^2)); beyond, 1 (erf(3.925)
rounds to 1 in float32). Coefficients are rounded to float32, the forms evaluated in float32
arithmetic (no fma; exp correctly rounded) at 4M points of (0, 4], and the worst error in ulp of the
result against float64 erf printed, with the coefficients (as in common.glsl).

    .venv/bin/python scripts/fit_erf.py     # 0.98 ulp and 1.52 ulp
"""
import numpy as np
from scipy.special import erf, erfc

XA, XB = 0.875, 3.925


def fit_small(deg=5):
    u = (np.cos(np.linspace(0, np.pi, 6000)) + 1) / 2 * XA ** 2
    u = u[u > 1e-14]
    x = np.sqrt(u)
    w = x / erf(x)
    c, *_ = np.linalg.lstsq(np.vander(u, deg + 1, increasing=True) * w[:, None], (erf(x) / x - 1) * w, rcond=None)
    return c.astype(np.float32)


def fit_large(deg=10):
    x = (np.cos(np.linspace(0, np.pi, 8000)) + 1) / 2 * (XB - XA) + XA
    w = np.exp(-x * x)  # an error in Q moves erf by exp(-x^2) times it
    c, *_ = np.linalg.lstsq(np.vander(x, deg + 1, increasing=True) * w[:, None], erfc(x) * np.exp(x * x) * w, rcond=None)
    return c.astype(np.float32)


def horner(c, v):
    p = np.full_like(v, c[-1])
    for cc in c[-2::-1]:
        p = p * v + cc  # float32 arithmetic
    return p


if __name__ == "__main__":
    xs = np.linspace(0, 4.0, 4_000_001).astype(np.float32)[1:]
    ref = erf(xs.astype(np.float64))
    ulp = np.spacing(ref.astype(np.float32)).astype(np.float64)
    cs, cl = fit_small(), fit_large()
    a = xs < XA
    got = xs[a] + xs[a] * horner(cs, xs[a] * xs[a])
    print("R:", ", ".join(repr(float(v)) for v in cs))
    print(f"|x| < {XA}: {(np.abs(got - ref[a]) / ulp[a]).max():.3f} ulp")
    b = ~a
    xb = xs[b]
    e = np.exp(-(xb * xb).astype(np.float64)).astype(np.float32)
    got = np.where(xb >= XB, np.float32(1), np.float32(1) - e * horner(cl, xb))
    print("Q:", ", ".join(repr(float(v)) for v in cl))
    print(f"{XA} <= |x|: {(np.abs(got - ref[b]) / ulp[b]).max():.3f} ulp")
