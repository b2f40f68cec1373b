r"""Relabelling kernels: selection rules for i.i.d. drafts with an exactly linear law.

Slots are the tokens in a fixed chain order, slot k holding mass :math:`q_k`.  Each draw of token
i is *relabelled* to slot j with probability :math:`A_{ij}` (its own slot unless it is
paired), and the rule selects the draw with the highest slot (ties: uniformly at random).  For n
i.i.d. drafts the relabelled draws are i.i.d. with slot law :math:`\nu = q A`, so the highest
slot is j with probability :math:`C_j^n - C_{j-1}^n` (:math:`C` the cumulative of
:math:`\nu`), and given that slot the selected draw is token i with probability
:math:`q_i A_{ij} / \nu_j`.  The selection law is therefore linear in A
(proofs/optimal_verifier.md, §2):

.. math::

   T_i = q_i \sum_j A_{ij}\, d_j, \qquad
   d_j = \frac{C_j^n - C_{j-1}^n}{\nu_j} = \sum_{l=0}^{n-1} C_j^l\, C_{j-1}^{n-1-l} .

A kernel that realises a target sub-law t (with :math:`E_j = \sum_{i > j} (D_i - t_i) \ge 0`)
is built from *swaps*: every unit of transfer from a token y with :math:`D_y > t_y` (supply) to a
token x below it with :math:`D_x < t_x` (demand) is paired first-in first-out from the top of
the chain, and a pair :math:`(x, y, \tau)` exchanges mass :math:`m = \tau / (d_y - d_x)` between
the two slots (x is relabelled to slot y w.p. :math:`m/q_x`, y to slot x w.p. :math:`m/q_y`),
which keeps :math:`\nu = q` and moves exactly :math:`\tau` of selection probability from y to x.
The masses never exceed :math:`q_x, q_y` when t/q is ascending along the chain on the paired
tokens (the proof note).  Probabilities are rounded down to multiples of :math:`2^{-52}` so that
the sampler (integer uniforms) realises the kernel exactly; :func:`kernel_law` then computes the
law of the rounded kernel, recomputing :math:`\nu`.

Examples
--------
>>> import numpy as np
>>> qs = np.array([0.5, 0.5]); d = slot_rates(qs, 2)
>>> D, t = qs * d, np.array([0.4, 0.6])
>>> x, y, tau = fifo_pairs(np.maximum(D - t, 0), np.maximum(t - D, 0))
>>> x.tolist(), y.tolist(), tau.round(12).tolist()
([0], [1], [0.15])
>>> k = relabel_kernel(qs, d, x, y, tau)
>>> kernel_law(qs, 2, k).round(9).tolist()
[0.4, 0.6]
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "QUANT",
    "rate_gap_list",
    "Kernel",
    "slot_rates",
    "rates_from_cum",
    "fifo_pairs",
    "relabel_kernel",
    "kernel_law",
    "kernel_shift",
    "slot_rates_list",
    "fifo_pairs_list",
    "relabel_list",
]

#: Kernel probabilities are multiples of 1/QUANT (the sampler draws integers below QUANT).
QUANT: int = 2**52


@dataclass
class Kernel:
    """A relabelling kernel on slots 0..V-1 (chain order), in sparse form.

    ``owner[e] -> dest[e]`` with probability ``prob[e]`` (a multiple of 1/QUANT); entries of one
    owner are contiguous; slot k keeps its own slot with probability ``own(V)[k]``.
    """

    owner: np.ndarray
    dest: np.ndarray
    prob: np.ndarray
    excess: float = (
        0.0  #: max over slots of (mass given away) / q before the guard (<= 1: feasible)
    )

    def own(self, V: int) -> np.ndarray:
        """Probability of keeping the own slot, per slot (exact: entries are dyadic)."""
        return 1.0 - np.bincount(self.owner, self.prob, V)


def slot_rates(qs: np.ndarray, n: int) -> np.ndarray:
    r""":math:`d_k = \sum_{l<n} c_k^l c_{k-1}^{n-1-l}` (= :math:`(c_k^n - c_{k-1}^n)/q_k`), no cancellation.

    Examples
    --------
    >>> slot_rates(np.array([0.25, 0.75]), 2).tolist()
    [0.25, 1.25]
    """
    c = np.cumsum(qs, axis=-1)
    return rates_from_cum(c, c - qs, n)


def rates_from_cum(c: np.ndarray, cm: np.ndarray, n: int, work: tuple = ()) -> np.ndarray:
    r""":math:`\sum_{l<n} c^l\, c_m^{n-1-l}` from the cumulative masses c and :math:`c_m = c - q`.

    Overwrites ``cm`` with the result; ``work`` may give two scratch arrays of the same shape
    (used when n >= 3).
    """
    if n == 1:
        cm.fill(1.0)
        return cm
    if n == 2:
        return np.add(c, cm, out=cm)
    cp, tmp = work if work else (np.empty_like(c), np.empty_like(c))
    np.copyto(cp, c)  # Horner in cm: d = c^(n-1) + cm (c^(n-2) + ... + cm (c + cm))
    np.copyto(tmp, cm)
    d = cm
    d += c  # n = 2 level: c + cm
    for _ in range(3, n + 1):
        cp *= c  # c^(level-1)
        d *= tmp
        d += cp
    return d


def fifo_pairs(sup: np.ndarray, dem: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""First-in first-out pairing of the supply ``sup`` with the demand ``dem`` (chain order).

    Units are counted from the top of the chain; the u-th unit of demand is paired with the
    u-th unit of supply.  When :math:`E_j = \sum_{i>j} (\mathrm{sup}_i - \mathrm{dem}_i) \ge 0`
    for every j, every demand token is paired with supply tokens above it; pairs that rounding
    puts out of order (y <= x) are dropped, and demand beyond the total supply stays unpaired.

    Returns
    -------
    x, y : int ndarrays
        Demand and supply slots of each pair (pairs of one x, and of one y, are contiguous).
    tau : float ndarray
        Transfer of each pair.
    """
    V = len(sup)
    js, jd = np.flatnonzero(sup[::-1] > 0), np.flatnonzero(dem[::-1] > 0)
    ns, nd = js.size, jd.size
    if ns == 0 or nd == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0)
    ends = np.concatenate([np.cumsum(sup[::-1][js]), np.cumsum(dem[::-1][jd])])
    idx = np.argsort(ends, kind="stable")  # merge of two sorted runs (supply first on ties)
    b = ends[idx]
    is_s = idx < ns
    j = np.cumsum(is_s) - is_s  # supply interval that contains the segment ending at b
    k = np.cumsum(~is_s) - ~is_s  # demand interval that contains it
    tau = np.diff(b, prepend=0.0)
    keep = (j < ns) & (k < nd) & (tau > 0)
    x, y, tau = V - 1 - jd[k[keep]], V - 1 - js[j[keep]], tau[keep]
    keep = y > x
    return x[keep], y[keep], tau[keep]


def relabel_kernel(
    qs: np.ndarray, d: np.ndarray, x: np.ndarray, y: np.ndarray, tau: np.ndarray
) -> Kernel:
    r"""The swap kernel of the pairs: mass :math:`m = \tau/(d_y - d_x)` each way, rounded down.

    A pair's mass is capped so that no slot gives away more than its mass (a guard against
    rounding; the proof note shows the cap is inactive in exact arithmetic when the pairs come
    from a target whose ratio to q is ascending on paired tokens).  ``excess`` records the
    largest (given away) / q before the guard.
    """
    V = len(qs)
    ok = d[y] > d[x]  # always true in exact arithmetic for n >= 2 (d is increasing)
    x, y, tau = x[ok], y[ok], tau[ok]
    if x.size == 0:
        z = np.zeros(0, dtype=np.int64)
        return Kernel(owner=z, dest=z, prob=np.zeros(0), excess=0.0)
    qx, qy = qs[x], qs[y]
    m = tau / (d[y] - d[x])
    np.minimum(m, np.minimum(qx, qy), out=m)
    out = np.bincount(x, m, V) + np.bincount(y, m, V)
    live = out > 0
    ratio = np.divide(out, qs, out=np.zeros(V), where=live)
    excess = float(ratio.max())
    if excess > 1.0:
        scale = np.divide(1.0, ratio, out=np.ones(V), where=ratio > 1.0)
        m *= np.minimum(scale[x], scale[y])
    owner = np.concatenate([x, y])
    dest = np.concatenate([y, x])
    prob = np.concatenate([m / qx, m / qy])
    prob *= QUANT
    np.floor(prob, out=prob)
    prob /= QUANT
    tot = np.bincount(owner, prob, V)
    if (tot > 1.0).any():  # float rounding of the division: scale those owners down one step
        over = (tot > 1.0)[owner]
        prob[over] = np.floor(prob[over] * (1 - 2**-40) * QUANT) / QUANT
    return Kernel(owner=owner, dest=dest, prob=prob, excess=excess)


def kernel_law(qs: np.ndarray, n: int, k: Kernel) -> np.ndarray:
    r"""The selection law T of the kernel for n i.i.d. draws from q (slot order), exactly.

    .. math:: T_i = q_i \sum_j A_{ij} d_j, \quad
              d = \text{slot\_rates}(\nu), \ \nu_j = \sum_i q_i A_{ij}
    """
    V = len(qs)
    mass = qs[k.owner] * k.prob
    own = k.own(V)
    nu = qs * own + np.bincount(k.dest, mass, V)
    d = slot_rates(nu, n)
    return qs * own * d + np.bincount(k.owner, mass * d[k.dest], V)


def kernel_shift(qs: np.ndarray, d: np.ndarray, k: Kernel) -> np.ndarray:
    r""":math:`T - D` computed with the slot rates of q (not of :math:`\nu`), in O(entries + V).

    The rounded kernel moves :math:`|\nu - q| \le 2^{-52}` per entry, so this differs from
    :func:`kernel_law` by at most :math:`2 n\, 2^{-52}` per entry (added to the error bound).
    """
    mass = qs[k.owner] * k.prob
    return np.bincount(k.owner, mass * (d[k.dest] - d[k.owner]), len(qs))


# -- the same construction in plain Python numbers (Fractions stay exact; small V) ---------


def slot_rates_list(qs: list, n: int) -> list:
    """:func:`slot_rates` on a list."""
    out, c = [], qs[0] - qs[0]
    for q in qs:
        cm, c = c, c + q
        out.append(sum((c**l * cm ** (n - 1 - l) for l in range(n)), c - c))
    return out


def fifo_pairs_list(D: list, t: list, live: list) -> list[tuple[int, int, Any]]:
    """:func:`fifo_pairs` on lists: ``[(x, y, tau), ...]``."""
    zero = D[0] - D[0]
    V = len(D)
    sup = [(k, D[k] - t[k]) for k in range(V - 1, -1, -1) if live[k] and D[k] > t[k]]
    dem = [(k, t[k] - D[k]) for k in range(V - 1, -1, -1) if live[k] and t[k] > D[k]]
    pairs, a, b = [], 0, 0
    rs = [v for _, v in sup]
    rd = [v for _, v in dem]
    while a < len(sup) and b < len(dem):
        tau = min(rs[a], rd[b])
        if tau > zero and sup[a][0] > dem[b][0]:
            pairs.append((dem[b][0], sup[a][0], tau))
        rs[a] -= tau
        rd[b] -= tau
        if rs[a] <= zero:
            a += 1
        if rd[b] <= zero:
            b += 1
    return pairs


def rate_gap_list(qs: list, n: int, x: int, y: int) -> Any:
    r""":math:`d_y - d_x` of :func:`slot_rates_list` (x < y) as a sum of non-negative terms.

    With :math:`a = c_y, a' = c_x, b = c_{y-1}, b' = c_{x-1}` (cumulative q),
    :math:`d_y - d_x = \sum_{l<n} (a^l - a'^l) b^{n-1-l} + a'^l (b^{n-1-l} - b'^{n-1-l})` and
    :math:`a^l - a'^l = (a - a') \sum_{i<l} a^i a'^{l-1-i}`, where :math:`a - a'` and
    :math:`b - b'` are the masses between the slots, summed directly.  Equal to the difference
    in Fractions; in floats it keeps its relative accuracy where the difference cancels (masses
    of 1e-21 beside 1 made it 0.0, and the pair's rate 1/0).
    """
    zero = qs[0] - qs[0]
    a = b = ap = bp = zero
    for j, v in enumerate(qs[: y + 1]):
        a = a + v
        if j < y:
            b = b + v
        if j <= x:
            ap = ap + v
        if j < x:
            bp = bp + v
    da = sum((qs[j] for j in range(x + 1, y + 1)), zero)
    db = sum((qs[j] for j in range(x, y)), zero)

    def pw_gap(hi: Any, lo: Any, gap: Any, k: int) -> Any:
        return gap * sum((hi**i * lo ** (k - 1 - i) for i in range(k)), zero)

    return sum(
        (pw_gap(a, ap, da, l) * b ** (n - 1 - l) + ap**l * pw_gap(b, bp, db, n - 1 - l)
         for l in range(n)),
        zero,
    )  # fmt: skip


def relabel_list(qs: list, d: list, pairs: list, n: int | None = None) -> list[dict[int, Any]]:
    """The kernel rows ``A[i] = {slot: prob}`` (own slot included), exact for Fractions.

    With ``n`` (``d`` = :func:`slot_rates_list` of ``qs`` and n) the rate gap of a pair is
    :func:`rate_gap_list` (cancellation-free), else ``d[y] - d[x]``.
    """
    V = len(qs)
    rows: list[dict[int, Any]] = [{} for _ in range(V)]
    for x, y, tau in pairs:
        m = tau / (d[y] - d[x] if n is None else rate_gap_list(qs, n, x, y))
        rows[x][y] = rows[x].get(y, 0) + m / qs[x]
        rows[y][x] = rows[y].get(x, 0) + m / qs[y]
    for k in range(V):
        rows[k][k] = 1 - sum(rows[k].values(), Fraction(0) if isinstance(qs[k], Fraction) else 0.0)
    return rows
