r"""Q along the chain from additive statistics: the bucket path's view of each prefix kernel.

The bucket-and-bound path (:mod:`mdsd_ot.fast.bucket`) never sorts the whole row, so it cannot
scan Q prefix by prefix.  It evaluates Q at a few chain points only (the bucket boundaries and
the prefixes inside the few buckets it keeps), from *additive* statistics of the set H:

.. math::

   \Lambda_s(H) = \sum_{y \in L \cap H} w_s(y), \qquad
   \mathrm{seg}(H) = |A \cap H|, \qquad \lambda(H) = q(H^c),

where A is a handful of *heavy* tokens (the largest masses, entering the chain in their own
order), L the light rest and :math:`w_s` per-token weights (powers of q, or :math:`q/(1-q)`).
Sums over buckets (histograms) and over sorted survivors give the statistics at any chain point
in O(1) each.  One evaluator per kernel name (:data:`CHAINS`):

- ``with``: :math:`Q = q(H)^n`;
- ``without``, n = 2: the closed form of :func:`mdsd_ot.fast.prefix.prefix_Q_without2` with the
  largest token as the one heavy token;
- ``without``, n >= 3: the certified series of :mod:`mdsd_ot.fast.series` (light power sums
  :math:`\pi_j`, heavy segment, :math:`\lambda`, count of positive masses);
- ``conditional-poisson``: :math:`Q = e_n(H)/e_n(\Sigma)` with
  :math:`e_n(H) = \sum_j e_{n-j}(A \cap H)\, e_j(L \cap H)`, the heavy part exact (products
  of :math:`1 + z q`) and the light part from its power sums by Newton's identities.  Newton's
  identities cancel; their error is bounded by the same recursion with positive signs (the
  complete homogeneous sums :math:`h_j`), so :math:`|\hat Q - Q| \le \gamma_D \kappa` with
  :math:`\kappa = \sum_j e_{n-j}(A)\, h_j(L) / e_n(\Sigma) \ge 1`.  With the n largest masses
  heavy, :math:`\kappa` stays near :math:`j!` on realistic rows; a row with a larger
  :math:`\kappa` reports an infinite error and the caller sorts it instead.

Every evaluator returns Q at the points and a bound on its error per row (0 for the closed forms
beyond the rounding bound :func:`mdsd_ot.fast.prefix.error_bound`).  numpy and torch alike, no
host synchronisation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _backend as bk
from . import _fused as _fz
from . import _histograms as hg
from ._dd import gamma
from .prefix import sort_key
from .series import PLANS, series_eval, series_setup

__all__ = ["CHAINS", "chain_for", "KAPPA_MAX"]

#: Conditional Poisson rows whose Newton condition number exceeds this are sorted instead.
KAPPA_MAX: float = 1e3
#: ... and rows whose e_n, as computed, underflow could have moved by more than 2^-this of
#: itself (subnormal light scale or heavy masses: :meth:`ConditionalPoisson._log2_underflow`);
#: below, the loss is under one rounding, which the depth of the bound counts.
UNDERFLOW_BITS: float = 60.0

_NONE = np.zeros(0, dtype=np.int64)  # no heavy token


def _heavy_in_chain_order(idx: Any, p: Any, q: Any, ctx: dict[str, Any]) -> Any:
    """Heavy token indices (B, h) sorted by (p/q, index): the order the chain adds them.

    Sets ``ctx["heavy_ties"]``: whether two heavy tokens share a ratio (then the survivors
    must be sorted stably to keep this order; numpy checks, torch assumes so).
    """
    idx = bk.sort_int(idx)
    key = sort_key(bk.take_rows(p, idx), bk.take_rows(q, idx))
    order = bk.stable_argsort(key)
    if isinstance(key, np.ndarray):
        ks = np.sort(key, axis=-1)
        ctx["heavy_ties"] = bool(np.any(ks[:, 1:] == ks[:, :-1]))
    return bk.take_rows(idx, order)


def _top(q: Any, h: int, qmax: Any = None) -> tuple[Any, Any]:
    """The h + 1 largest masses and indices per row (fewer when V <= h); ``qmax`` as in
    :meth:`Chain.setup`."""
    return bk.topk(q, min(h + 1, q.shape[-1]), qmax)


def ctx_sq(sq: Any, xp: Any) -> Any:
    """Row sums of q in float64 (the series computes in float64 whatever the input dtype)."""
    return xp.astype(sq, xp.float64, copy=False)


def _powers(u: Any, count: int) -> list[Any]:
    """[u, u^2, ..., u^count]."""
    out = [u]
    for _ in range(1, count):
        out.append(out[-1] * u)
    return out


def _fused_powers(ids, q, divisors, heavy, K, nbins, odds=None) -> list[Any]:
    """:func:`mdsd_ot.fast._fused.power_histograms` on the one row of (1, V) arrays: a list of
    (1, nbins) histograms (the caller checked :func:`mdsd_ot.fast._fused.one_row`)."""
    h = _fz.power_histograms(ids[0], q[0], divisors, np.reshape(heavy, -1), K, nbins, odds)
    return [x[None, :] for x in h]


def _power_histograms(u: Any, count: int, ids: Any, nbins: int, div: Any = None) -> list[Any]:
    """Histograms of u, u^2, ..., u^count, the powers formed in one reused buffer (with ``div``,
    the row is q and u = q / div: the fused kernel forms u itself; numpy divides in place)."""
    if div is not None and _fz.one_row(u):
        return _fused_powers(ids, u, (float(div[0]), 1.0), _NONE, count, nbins)
    if div is not None:
        u /= div[:, None]
    out = [hg.histogram(ids, u, nbins)]
    if count > 1:
        buf = u * u
        out.append(hg.histogram(ids, buf, nbins))
        for _ in range(2, count):
            buf *= u
            out.append(hg.histogram(ids, buf, nbins))
    return out


class Chain:
    """One kernel on the bucket path: its statistics and Q from them (see the module)."""

    kernel: str = ""
    #: the statistics Q reads at a point: "L" (light sums), "seg" (heavy count), "qc" (q(H)),
    #: "lam" (q outside H, as suffix sums) and "cnt" (number of positive masses in H)
    uses: frozenset[str] = frozenset({"L", "seg"})
    #: a row whose fullest bucket holds more than this share of V is sorted at once (numpy):
    #: scanning that many survivors would cost more than the sort (see mdsd_ot.fast.bucket)
    dense_fraction: float = 0.4
    #: buckets per octave (2**bits) on the fused route: finer buckets cost more evaluations of
    #: Q at their boundaries and leave fewer survivors (measured per law, docs/fast.md)
    fused_sub_bits: int = 7

    def __init__(self, n: int):
        self.n = n

    def setup(self, p: Any, q: Any, sq: Any, xp: Any, qmax: Any = None) -> dict[str, Any]:
        """Per-row constants: ``heavy`` (B, h) in chain order, ``hq`` their normalised masses,
        ``scale`` (B,) with :math:`q_{light}(H)/\\sum q = \\text{scale} \\cdot \\Lambda_0(H)`.
        ``qmax``: the block maxima of q from the fused bucketing pass of this one numpy row
        (:func:`mdsd_ot.fast._fused.bucket_front`), which spare a read of q when the heavy
        tokens are found; None otherwise."""
        B = q.shape[0]
        dev = getattr(q, "device", None)
        empty = xp.zeros((B, 0), dtype=xp.int64, device=dev)
        hq = xp.zeros((B, 0), dtype=q.dtype, device=dev)
        return {"heavy": empty, "hq": hq, "scale": 1.0 / sq, "heavy_ties": False}

    def stats(self, q: Any, ctx: dict[str, Any], heavy_flags: Any = None) -> list[Any]:
        """Per-token weights :math:`w_s` (heavy entries 0) of the raw q values given."""
        return [q]

    def histograms(
        self, ids: Any, q: Any, ctx: dict[str, Any], nbins: int, Hq: Any = None
    ) -> list[Any]:
        """Per-bucket sums of every statistic of the whole rows (B, V) -> list of (B, nbins).

        ``Hq``: the histogram of q when the bucketing pass formed it already (or None)."""
        return [hg.histogram(ids, s, nbins) for s in self.stats(q, ctx)]

    def Q(self, ctx, L, seg, qc, lam, cnt, depth):  # pragma: no cover - abstract
        raise NotImplementedError


class With(Chain):
    r"""With replacement: :math:`Q(H) = q(H)^n` (no heavy tokens, one statistic: q)."""

    kernel = "with"
    uses = frozenset({"qc"})

    def histograms(self, ids, q, ctx, nbins, Hq=None):
        return [Hq] if Hq is not None else [hg.histogram(ids, q, nbins)]

    def Q(self, ctx, L, seg, qc, lam, cnt, depth):
        return qc**self.n, 0.0


class Without2(Chain):
    r"""Sequential without replacement, n = 2 (:func:`mdsd_ot.fast.prefix.prefix_Q_without2`).

    The largest token a is the heavy token; statistics :math:`q` and :math:`q/(1-q)` off a.
    """

    kernel = "without"
    fused_sub_bits = 6

    def setup(self, p, q, sq, xp, qmax=None):
        if qmax is not None and isinstance(q, np.ndarray) and q.shape[0] == 1:
            # np.argmax from the block maxima of the bucketing pass: one block read, not V
            # (the first of the largest, as argmax picks it; 0.04 of 1.1 ms at V = 152,064)
            a = _fz.top_k(q[0], 1, qmax)[1].reshape(1, 1)
        else:
            a = xp.argmax(q, axis=-1)[:, None]
        hq = bk.take_rows(q, a) / sq[:, None]
        return {"heavy": a, "hq": hq, "scale": 1.0 / sq, "sq": sq, "heavy_ties": False}

    def stats(self, q, ctx, heavy_flags=None):
        xp = bk.namespace(q)
        if heavy_flags is None:
            qz = bk.put(xp.asarray(q, copy=True), ctx["heavy"], 0.0)
        else:
            qz = xp.where(heavy_flags, xp.zeros_like(q), q)
        w = ctx["sq"][:, None] - qz
        if isinstance(w, np.ndarray):
            return [qz, np.divide(qz, w, out=w)]  # q/(1-q) in normalised units, in place
        return [qz, qz / w]

    def histograms(self, ids, q, ctx, nbins, Hq=None):
        if _fz.one_row(q):  # q off the heavy token, and q / (sum q - q), in one loop
            return _fused_powers(ids, q, (1.0, 1.0), ctx["heavy"], 2, nbins, float(ctx["sq"][0]))
        return super().histograms(ids, q, ctx, nbins)

    def Q(self, ctx, L, seg, qc, lam, cnt, depth):
        c = L[0] * ctx["scale"][:, None]  # q(H minus a)
        S = L[1]
        delta = (ctx["L_total"][0] * ctx["scale"])[:, None]  # 1 - q(a), to relative accuracy
        out = c * S - S + c
        return out + (seg > 0) * ctx["hq"] * (c / delta + S), 0.0


class ConditionalPoisson(Chain):
    r"""Conditional Poisson: :math:`e_n(H)/e_n(\Sigma)`, n heavy tokens exact, Newton on the rest."""

    kernel = "conditional-poisson"
    dense_fraction = 0.25  # its survivors cost the most per token (Newton at every point)
    fused_sub_bits = 6

    def setup(self, p, q, sq, xp, qmax=None):
        if q.dtype != xp.float64:  # the law in float64 whatever the rows' dtype, as the series:
            # in float32, Newton's identities on a light part beside a heavy token lose every
            # digit (α* off by 0.13 at V = 4,096, n = 8), and the bound counts float64 roundings
            q, sq, qmax = xp.astype(q, xp.float64), xp.astype(sq, xp.float64), None
        if isinstance(q, np.ndarray) and q.shape[0] == 1:
            return self._setup_row(p, q, sq, qmax)
        n = self.n
        h = min(n, q.shape[-1])
        vals, idx = _top(q, h)
        light = vals.shape[-1] > h
        tau = vals[:, h] if light else xp.zeros_like(sq)
        tau = xp.where(tau > 0, tau, xp.ones_like(tau))  # no light mass: stats are all 0
        ctx: dict[str, Any] = {}
        heavy = _heavy_in_chain_order(idx[:, :h], p, q, ctx)
        hq = bk.take_rows(q, heavy) / sq[:, None]
        # E_s(z) = prod over the first s heavy tokens (chain order) of (1 + z q), degree <= n
        E0 = xp.zeros((q.shape[0], n + 1), dtype=q.dtype, device=getattr(q, "device", None))
        E = [xp.concat([xp.ones_like(E0[:, :1]), E0[:, 1:]], axis=-1)]
        for i in range(h):
            prev = E[-1]
            shifted = xp.concat([xp.zeros_like(prev[:, :1]), prev[:, :-1]], axis=-1)
            E.append(prev + hq[:, i : i + 1] * shifted)
        ctx.update(heavy=heavy, hq=hq, tau=tau, scale=tau / sq, EA=xp.stack(E, axis=1))
        ctx["V"] = q.shape[-1]
        return ctx  # EA: (B, h + 1, n + 1)

    def _setup_row(self, p, q, sq, qmax=None):
        """:meth:`setup` of one numpy row in Python scalars (the same operations on the h + 1
        largest masses; numpy's per-call cost dominates arrays of a few entries)."""
        n = self.n
        h = min(n, q.shape[-1])
        vals, idx = _top(q, h, qmax)
        v, ix = vals[0].tolist(), idx[0].tolist()
        t = v[h] if len(v) > h else 0.0
        tau = t if t > 0 else 1.0  # no light mass: stats are all 0
        row_p, row_q = p[0], q[0]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # an overflowed
            keys = {i: float(row_p[i] / row_q[i]) for i in ix[:h]}  # ratio: the row is sorted
        heavy = sorted(ix[:h], key=lambda i: (keys[i], i))  # chain order: (p/q, index)
        ks = [keys[i] for i in heavy]
        s_q = float(sq[0])
        hq = [float(row_q[i]) / s_q for i in heavy]
        E = [[1.0] + [0.0] * n]
        for a in hq:  # E_s(z) = prod over the first s heavy tokens of (1 + z q), degree <= n
            prev = E[-1]
            E.append([prev[0] + a * 0.0] + [prev[d] + a * prev[d - 1] for d in range(1, n + 1)])
        return {
            "heavy": np.array([heavy], dtype=np.int64).reshape(1, h),
            "hq": np.array([hq], dtype=q.dtype).reshape(1, h),
            "tau": np.array([tau], dtype=q.dtype),
            "scale": np.array([tau], dtype=q.dtype) / sq,
            "EA": np.array([E], dtype=q.dtype),
            "heavy_ties": any(a == b for a, b in zip(ks, ks[1:], strict=False)),
            "V": q.shape[-1],
        }

    def _u(self, q, ctx, heavy_flags):
        xp = bk.namespace(q)
        q = xp.astype(q, xp.float64, copy=False)  # float32 rows: the law in float64 (setup)
        with np.errstate(over="ignore"):  # only heavy tokens exceed tau; they are zeroed next
            u = q / ctx["tau"][:, None]
        if heavy_flags is None:
            return bk.put(u, ctx["heavy"], 0.0)
        return xp.where(heavy_flags, xp.zeros_like(u), u)

    def stats(self, q, ctx, heavy_flags=None):
        return _powers(self._u(q, ctx, heavy_flags), self.n)

    def histograms(self, ids, q, ctx, nbins, Hq=None):
        if _fz.one_row(q) and q.dtype == np.float64:  # u = q / tau off the heavy tokens, and
            # its powers, in one loop (other dtypes: the array route, in float64 by _u)
            tau = (float(ctx["tau"][0]), 1.0)
            return _fused_powers(ids, q, tau, ctx["heavy"], self.n, nbins)
        return _power_histograms(self._u(q, ctx, None), self.n, ids, nbins)

    def _light(self, L, t, xp, absolute: bool = False):
        """e_j (j = 0..n) of the light set in units of q / sum(q), from its power sums by
        Newton's identities; with ``absolute`` also h_j (the same recursion, all signs +)."""
        n = self.n
        pi = [None, *L]  # pi_i = sum of u^i
        e, hh = [None] * (n + 1), [None] * (n + 1)
        e[0] = hh[0] = 1.0
        for j in range(1, n + 1):
            acc = e[j - 1] * pi[1]
            pos = hh[j - 1] * pi[1] if absolute else None
            for i in range(2, j + 1):
                term = e[j - i] * pi[i]
                acc = acc + term if i % 2 else acc - term
                if absolute:
                    pos = pos + hh[j - i] * pi[i]
            e[j] = acc / j
            if absolute:
                hh[j] = pos / j
        tj = 1.0
        for j in range(1, n + 1):
            tj = tj * t
            e[j] = e[j] * tj
            if absolute:
                hh[j] = hh[j] * tj
        return e, hh

    def _totals(self, ctx, depth, xp):
        """e_n of the whole row and the error bound (cached per call of the driver)."""
        EA = ctx["EA"]
        if "Nt" not in ctx and isinstance(EA, np.ndarray) and EA.shape[0] == 1:
            if EA.dtype == np.float64:  # one float64 row: Python floats, the same bits
                self._totals_row(ctx)
        if "Nt" not in ctx:
            n, Ah = self.n, ctx["EA"][:, -1, :]  # (B, n+1): every heavy token
            Lt = [x[:, None] for x in ctx["L_total"]]
            et, ht = self._light(Lt, ctx["scale"][:, None], xp, absolute=True)
            Nt = sum(Ah[:, n - j : n - j + 1] * et[j] for j in range(n + 1))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # refused below
                kappa = sum(Ah[:, n - j : n - j + 1] * ht[j] for j in range(n + 1)) / Nt
                log_under = self._log2_underflow(xp.log2(1.0 + Lt[0]), EA.shape[1] - 1, ctx["V"])
                fine = log_under <= xp.log2(Nt) - UNDERFLOW_BITS
            ok = xp.isfinite(kappa) & (Nt > 0) & (kappa <= KAPPA_MAX) & fine
            ctx["Nt"] = xp.where(Nt > 0, Nt, xp.ones_like(Nt))
            ctx["kappa"] = xp.where(ok, kappa, xp.full_like(kappa, math.inf))[:, 0]
        return ctx["Nt"], gamma(float(depth + 8 * self.n + 9)) * 1.01 * ctx["kappa"]

    def _log2_underflow(self, log2_pi1: Any, h: int, V: int) -> Any:
        r""":math:`\log_2` of a bound on what underflow can cost :math:`e_n` (and every
        numerator): each of the :math:`(n + 1)(n + h + 3)` products and powers of the light
        scale t and of the h heavy masses, and each of the V terms of a light power sum, that
        leaves the normal range loses at most :math:`2^{-1074}`, amplified
        by at most :math:`(1 + \pi_1)^n` (:math:`\pi_1 = \sum u`, :math:`e_j(u) \le h_j(u) \le
        \pi_1^j`, every other factor in [0, 1])."""
        n = self.n
        return log2_pi1 * n + (math.log2((n + 1) * (n + h + 3) * (V + 1)) - 1074)

    def _totals_row(self, ctx):
        """:meth:`_totals` of one numpy row in Python floats: the same operations in the same
        order on (1, 1) arrays cost a microsecond each, here about 60 of them."""
        n, Ah = self.n, ctx["EA"][0, -1, :].tolist()
        Lt = [float(x.reshape(-1)[0]) for x in ctx["L_total"]]
        et, ht = self._light(Lt, float(ctx["scale"][0]), None, absolute=True)
        Nt = sum(Ah[n - j] * et[j] for j in range(n + 1))
        num = sum(Ah[n - j] * ht[j] for j in range(n + 1))
        kappa = num / Nt if Nt > 0 else math.nan  # Nt = 0 (or NaN): refused just below
        ok = math.isfinite(kappa) and Nt > 0 and kappa <= KAPPA_MAX
        if ok:  # and an Nt that underflow could have moved (masses near the bottom of the range)
            under = self._log2_underflow(math.log2(1.0 + Lt[0]), ctx["EA"].shape[1] - 1, ctx["V"])
            ok = under <= math.log2(Nt) - UNDERFLOW_BITS
        ctx["Nt"] = np.array([[Nt if Nt > 0 else 1.0]])
        ctx["kappa"] = np.array([kappa if ok else math.inf])

    def Q(self, ctx, L, seg, qc, lam, cnt, depth):
        xp = bk.namespace(L[0])
        n, EA = self.n, ctx["EA"]
        e, _ = self._light(L, ctx["scale"][:, None], xp)
        Nt, err = self._totals(ctx, depth, xp)
        # heavy polynomial at each point (EA[b, seg, n - j], one 2-D gather per degree)
        N = bk.take_rows(EA[:, :, n], seg)
        for j in range(1, n + 1):
            N = N + bk.take_rows(EA[:, :, n - j], seg) * e[j]
        return bk.clip(N / Nt, 0.0, 1.0), err


class WithoutSeries(Chain):
    """Sequential without replacement, n >= 3: the certified series at the chain points."""

    kernel = "without"
    uses = frozenset({"L", "seg", "lam", "cnt"})
    dense_fraction = 0.6  # the sorting path evaluates the series at every token anyway
    fused_sub_bits = 5  # the series at a point costs the most: fewer boundaries

    def setup(self, p, q, sq, xp, qmax=None):
        qn = xp.astype(q, xp.float64, copy=False) / xp.astype(sq, xp.float64, copy=False)[:, None]
        m_plan, K = PLANS[self.n]
        m = min(m_plan, q.shape[-1])
        ties: dict[str, Any] = {}
        order = lambda idx: _heavy_in_chain_order(idx, p, q, ties)  # noqa: E731
        if qmax is not None and isinstance(qn, np.ndarray) and qn.shape[0] == 1:
            # the block maxima of q / sum(q): the rounding of a division by a positive
            # number is monotone, so each block's largest quotient is its largest q divided
            qmax = (qmax.view(np.float64) / float(sq[0])).view(np.int64)
        else:
            qmax = None
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # as series() does:
            # a row with subnormal masses may overflow its unused moments (refused, sorted)
            ctx = series_setup(qn, self.n, xp, m, K, order=order, inplace=True, qmax=qmax)
        ctx.update(ties)
        hq = xp.astype(bk.take_rows(q, ctx["heavy"]), xp.float64) / ctx_sq(sq, xp)[:, None]
        ctx.update(hq=hq, scale=ctx["tau"], sq=ctx_sq(sq, xp))
        return ctx

    def stats(self, q, ctx, heavy_flags=None):
        xp = bk.namespace(q)
        qn = xp.astype(q, xp.float64, copy=False) / ctx["sq"][:, None]
        u = xp.where(heavy_flags, xp.zeros_like(qn), qn) / ctx["tau"][:, None]
        return _powers(u, ctx["K"])

    def histograms(self, ids, q, ctx, nbins, Hq=None):
        # the normalised row with the heavy masses zeroed, divided by tau (in place on numpy)
        return _power_histograms(ctx.pop("qlight"), ctx["K"], ids, nbins, div=ctx["tau"])

    def Q(self, ctx, L, seg, qc, lam, cnt, depth):
        xp = bk.namespace(L[0])
        pi = xp.stack([xp.zeros_like(L[0])] + list(L), axis=1)  # (B, K+1, N)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # refused rows
            Q, Bc = series_eval(ctx, pi, seg, lam, cnt, depth, xp)
        err = xp.max(Bc, axis=-1)
        # no bound (inf, as series() reports it, never NaN) on a row whose mass beyond the n - 1
        # largest is tiny (series_setup's "refuse"): the caller sorts it, and the sorting path
        # runs the series on the row scaled (series())
        none = ctx["refuse"] | xp.isnan(err)
        return Q, xp.where(none, xp.full_like(err, math.inf), err)


def _without(n: int) -> Chain:
    return Without2(n) if n == 2 else WithoutSeries(n)


#: Chain evaluators by kernel name: ``CHAINS[kernel](n)``.
CHAINS: dict[str, Any] = {
    "with": With,
    "without": _without,
    "conditional-poisson": ConditionalPoisson,
}


def chain_for(kernel: str, n: int) -> Chain:
    """The chain evaluator of a prefix kernel with n drafts.

    Examples
    --------
    >>> type(chain_for("without", 2)).__name__, type(chain_for("without", 3)).__name__
    ('Without2', 'WithoutSeries')
    """
    return CHAINS[kernel](n)
