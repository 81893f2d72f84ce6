"""The float32 polynomial of shaders/common.glsl tanh_T for |x| < 0.625: fits
(tanh(x)/x - 1)/x^2 as a degree-5 polynomial P in u = x^2 (weighted least squares at Chebyshev
points, relative to tanh), rounds the coefficients to float32, then evaluates x + x*u*P(u) in
float32 arithmetic (no fma) at 2M points of (0, 0.625] and prints the worst error in ulp of the
result against float64 tanh, and the coefficients (as in common.glsl).

    .venv/bin/python scripts/fit_tanh.py     # 0.78 ulp
"""
import numpy as np

X0, DEG = 0.625, 5


def fit():
    u = (np.cos(np.linspace(0, np.pi, 4000)) + 1) / 2 * X0 ** 2
    u = u[u > 1e-12]
    x = np.sqrt(u)
    g = (np.tanh(x) / x - 1) / u
    w = x ** 3 / np.tanh(x)  # tanh's relative error per unit error of g
    coef, *_ = np.linalg.lstsq(np.vander(u, DEG + 1, increasing=True) * w[:, None], g * w, rcond=None)
    return coef.astype(np.float32)


def worst_ulp(c32, n=2_000_000):
    xs = np.linspace(0, X0, n + 1).astype(np.float32)[1:]
    xs = xs[xs < np.float32(X0)]
    us = xs * xs
    p = np.full_like(us, c32[-1])
    for c in c32[-2::-1]:
        p = p * us + c  # float32 arithmetic throughout
    t = xs + (xs * us) * p
    ref = np.tanh(xs.astype(np.float64))
    return float((np.abs(t.astype(np.float64) - ref) / np.spacing(ref.astype(np.float32))).max())


if __name__ == "__main__":
    c = fit()
    print("coefficients:", ", ".join(repr(float(v)) for v in c))
    print(f"worst error: {worst_ulp(c):.3f} ulp")
