"""Error bounds of the norm family for the tests: test/families/norm.py and test_norm.py.

ours(...) mirrors csrc/backend/cpu/norm_bounds.h (the first-order rounding-error bound of
shaders/norm.comp, in units of the compute type's eps; see docs/normalization.md), so that a test
holds vkml to what check mode holds it to. Against torch CPU the reference has rounding errors of
its own, from a different formula: torch's CPU kernels compute y = x * (rstd * w) + (b - mean * rstd
* w) and layer/group norm's dx from uncentered sums (sum dy * w * x), which lose accuracy with a
large mean. cpu_*(...) bound those terms; a test against torch CPU allows ours + torch's, with the
row's bound (2) and n = 1 (the scales carry the growth with the group size).
"""
import math

import torch


def eps_of(dtype):
    return 2.0 ** -52 if dtype == torch.float64 else 2.0 ** -23


def _L(n):
    return math.log2(max(n, 1))


def denormal(e):
    """(denormal spacing, smallest normal) of the compute type whose eps is e: below the second a
    rounding is absolute, up to one of the first."""
    fi = torch.finfo(torch.float64 if e == eps_of(torch.float64) else torch.float32)
    return fi.smallest_normal * fi.eps, fi.smallest_normal


class Groups:
    """x (any float dtype) as [A, C, S] in float64, grouped: per channel (batch norm) or G groups
    per sample (layer norm: G = 1, S = 1). Group stats are computed exactly enough (float64)."""

    def __init__(self, x3, per_channel, G=1):
        self.x = x3.double()
        A, C, S = self.x.shape
        self.A, self.C, self.S, self.G, self.per_channel = A, C, S, G, per_channel
        self.K = C // G
        g = self.x.permute(1, 0, 2).reshape(C, A * S) if per_channel else self.x.reshape(A * G, self.K * S)
        self.R = g.shape[1]
        self.mu = g.mean(1)
        self.var = ((g - self.mu[:, None]) ** 2).mean(1)
        self.mabs = g.abs().mean(1)

    def expand(self, v):
        """A per-group vector back to [A, C, S]."""
        if self.per_channel:
            return v[None, :, None].expand(self.A, self.C, self.S)
        return v.reshape(self.A, self.G, 1, 1).expand(self.A, self.G, self.K, self.S).reshape(self.A, self.C, self.S)

    def chan(self, t, default):
        """A [C] parameter (or None) as float64 broadcast over [A, C, S]."""
        v = torch.full((self.C,), float(default), dtype=torch.float64) if t is None else t.double().reshape(-1)
        return v[None, :, None].expand(self.A, self.C, self.S)

    def e_mean(self, e):
        L, sd = _L(self.R), self.var.sqrt()
        d = (L + 5) * e * self.mabs
        return e * (self.mu.abs() + (L + 6) * (sd + d))

    def e_var(self, e):
        L, sd = _L(self.R), self.var.sqrt()
        d = (L + 5) * e * self.mabs
        return e * ((L + 9) * (self.var + d * d) + 2 * (L + 3) * d * (sd + d))

    def e_var_cpu(self, e):
        """torch CPU's variance (Welford / its cascade): x - mean rounds to e |x|, not e |x - mean|,
        and the running mean's own error meets |x - mean| too: 4 e mabs sd per term, over sums of
        depth L + 9, on top of the bound of an accurate two-pass variance (ours)."""
        return self.e_var(e) + (_L(self.R) + 9) * 4 * e * self.mabs * self.var.sqrt()


def forward(grp, w, b, eps, e, rm=None, rv=None, training=True, momentum=0.1, vs_cpu=True, fold=False):
    """[(scale, 1)] for y, mean, rstd (and the running stats' new values when given), in eps units.
    fold: group norm, whose y vkml computes in torch's folded form too (norm_bounds.h e_fold)."""
    if training:
        mu, var = grp.mu, grp.var
        v = var + eps
        rstd = torch.where((var == 0) & (eps == 0) & grp.per_channel, torch.zeros_like(v), v.rsqrt())
        em, ev, evc = grp.e_mean(e), grp.e_var(e), grp.e_var_cpu(e)
        er, erc = rstd * (ev / (2 * v) + 3 * e), rstd * (evc / (2 * v) + 3 * e)
    else:
        mu, rstd = rm.double(), (rv.double() + eps).rsqrt()
        em, ev, evc, er = torch.zeros_like(mu), torch.zeros_like(mu), torch.zeros_like(mu), 3 * e * rstd
        erc = er
    x = grp.x
    M, Rs, EM, ER, ERC = (grp.expand(t) for t in (mu, rstd, em, er, erc))
    W, B = grp.chan(w, 1), grp.chan(b, 0)
    xh = (x - M) * Rs
    nz = lambda t: torch.where(Rs > 0, t / Rs, torch.zeros_like(Rs))  # noqa: E731
    ey = W.abs() * Rs * EM + W.abs() * xh.abs() * (nz(ER) + 3 * e) + e * (W.abs() * xh.abs() + B.abs())
    fold_term = e * ((2 * x.abs() + 3 * M.abs()) * Rs * W.abs() + B.abs() + (xh * W + B).abs())
    if fold:  # ours in the folded form: its own rounding (e_fold)
        ey = ey + fold_term
    if vs_cpu:  # torch CPU: its statistics' bound, and its alpha/beta form
        ey = ey + W.abs() * Rs * EM + W.abs() * xh.abs() * nz(ERC) + \
            fold_term
    k = 2 if vs_cpu else 1
    out = [(ey / e, 1), (k * em / e, 1), ((er + (erc if vs_cpu else 0)) / e, 1)]
    if training and rm is not None:
        m, n = momentum, grp.R
        unb = var * n / (n - 1) if n > 1 else torch.full_like(var, math.nan)
        nm, nv = m * mu + (1 - m) * rm.double(), m * unb + (1 - m) * rv.double()
        am, a1 = abs(m), abs(1 - m)
        erm = am * em + 3 * e * (am * mu.abs() + (am + a1) * rm.double().abs() + nm.abs())
        ratio = n / (n - 1) if n > 1 else 1
        rounding = 4 * e * (am * unb.abs() + (am + a1) * rv.double().abs() + nv.abs())
        erv = am * ev * ratio + rounding
        if vs_cpu:
            erv = erv + am * evc * ratio + rounding
        out += [(k * erm / e, 1), (erv / e, 1)]
    return out


def backward(grp, dy3, w, mean, rstd, e, var_given=False, eps=0.0, train=True, vs_cpu=True):
    """[(scale, 1)] for dx, dw, db, in eps units. mean / rstd: the statistics given to the backward
    (per group); var_given: rstd holds the running variance (eval batch norm)."""
    mean = mean.double().reshape(-1)
    rstd = (rstd.double().reshape(-1) + eps).rsqrt() if var_given else rstd.double().reshape(-1)
    x, dy = grp.x, dy3.double()
    M, Rs = grp.expand(mean), grp.expand(rstd)
    Ra = Rs.abs()  # bounds are magnitudes: a given rstd may be negative (any tensor is a valid input)
    W = grp.chan(w, 1)
    xh = (x - M) * Rs
    a = dy if grp.per_channel else dy * W
    wp = W if grp.per_channel else torch.ones_like(W)

    def per_group(t):  # mean over each group's elements, back to [A, C, S]
        if grp.per_channel:
            return grp.expand(t.permute(1, 0, 2).reshape(grp.C, grp.A * grp.S).mean(1))
        return grp.expand(t.reshape(grp.A * grp.G, grp.K * grp.S).mean(1))

    def per_chan(t):  # sum over (a, s) per channel
        return t.sum((0, 2))
    L = _L(grp.R)
    ma, mb = per_group(a.abs()), per_group((a * xh).abs())
    if train:
        # the small factors meet the large ones first: rstd * w * e alone underflows for a tiny w
        edx = e * (Ra * (wp.abs() * ((L + 17) * (ma + xh.abs() * mb) + 5 * a.abs())))
    else:
        edx = 6 * e * (dy * W * Rs).abs()
        # the shader's (dy * w) * rstd: a product below the normal range is rounded to the denormal
        # spacing, which rstd scales (a subnormal w: a norm-only fuzz run, 2026-12-02); torch CPU's
        # first product may be another pair (dy * invstd, subnormal for a subnormal dy, seen in the
        # same run), scaled by the third factor
        spacing, tiny = denormal(e)
        zero = torch.zeros_like(edx)
        edx = edx + torch.where((dy * W).abs() < tiny, spacing * Ra, zero)
        if vs_cpu:
            edx = edx + torch.where((W * Rs).abs() < tiny, spacing * dy.abs(), zero) + \
                torch.where((dy * Rs).abs() < tiny, spacing * W.abs(), zero)
    Lc = _L(grp.A * grp.S)
    edw = (Lc + 8) * e * per_chan((dy * xh).abs())
    # below the normal range a rounding is absolute, up to one denormal spacing, which the later
    # factors scale: the shader's dy * ((x - mean) * rstd) (float64 dw of -5.2e-308: a norm-only
    # fuzz run, 2026-12-02), and torch's dy * x of its uncentered sums
    spacing, tiny = denormal(e)
    xm, ady, z = (x - M).abs(), dy.abs(), torch.zeros_like(dy)
    sub = spacing * (torch.where(xm < tiny, Ra * ady, z) + torch.where(xm * Ra < tiny, ady, z) +
                     torch.where(xm * Ra * ady < tiny, z + 1, z))
    edw = edw + per_chan(sub)
    if vs_cpu:
        edw = edw + per_chan(spacing * torch.where((dy * x).abs() < tiny, Ra, z))
    edb = (Lc + 3) * e * per_chan(dy.abs())
    if not vs_cpu:
        return [(edx / e, 1), (edw / e, 1), (edb / e, 1)]
    cdx, cdw = 2 * edx, 2 * edw
    if not grp.per_channel:  # torch CPU: dx = rstd * a + b' * x + c' from uncentered sums
        n = grp.K * grp.S
        Lg = _L(n)

        def gsum(t):  # sum over each group, back to [A, C, S]
            return per_group(t) * n
        ds, db = gsum(a * x), gsum(a)
        e_ds, e_db = (Lg + 3) * e * gsum((a * x).abs()), (Lg + 3) * e * gsum(a.abs())
        bp = (db * M - ds) * Rs ** 3 / n
        cp = -bp * M - db * Rs / n
        e1 = e_db * M.abs() + e_ds + 2 * e * ((db * M).abs() + ds.abs())
        e_bp = e1 * Ra ** 3 / n + 4 * e * bp.abs()
        e_cp = e_bp * M.abs() + 2 * e * (bp * M).abs() + e_db * Ra / n + 3 * e * (db * Rs / n).abs()
        cdx = cdx + 2 * e * (Rs * a).abs() + e_bp * x.abs() + e * (bp * x).abs() + e_cp + \
            2 * e * ((Rs * a).abs() + (bp * x).abs() + cp.abs())
        # torch's c1 = rstd * w: below the normal range its rounding is absolute, up to one
        # denormal spacing, and c1 * dy carries it (a given rstd of 1.4e-45: fuzz seed 31337)
        spacing, tiny = denormal(e)
        cdx = cdx + torch.where((Rs * W).abs() < tiny, spacing * dy.abs(), torch.zeros_like(dy))
        # group norm's dw from sum(dy * x) - sum(dy) * mean (uncentered)
        cdw = cdw + (Lc + 4) * e * per_chan(Ra * (dy * x).abs() + Ra * M.abs() * dy.abs())
    return [(cdx / e, 1), (cdw / e, 1), (2 * edb / e, 1)]


def shaped(scales, shapes):
    """The scales reshaped to the outputs' shapes (None: leave as is)."""
    return [(s.reshape(shape) if s is not None and shape is not None else s, n) for (s, n), shape in zip(scales, shapes)]
