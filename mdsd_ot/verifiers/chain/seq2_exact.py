r"""The ``seq2`` construction in plain Python numbers: exact for Fractions (small V, no rounding).

:func:`seq2_lists` makes the steps of :func:`~.seq2.seq2_plan` on lists in chain order, without
its rounding guards; :func:`linear_law_list` is the two-kernel linear law of kernel rows
(Lemma 12 of proofs/optimal_verifier.md, §9), :func:`enumerate_law_list` the same law by
enumeration of the ordered draft pairs, and :func:`select_pair` the rule's selection law for
one pair.  They are the reference of :func:`~.exact.exact_seq2_plan` and of the machine checks
(``check_seq2_*`` in proofs/optimal_checks.py).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from . import seq2

__all__ = ["seq2_lists", "linear_law_list", "select_pair", "enumerate_law_list"]


def _cum0(x: list) -> list:
    out = [x[0] - x[0]]
    for v in x:
        out.append(out[-1] + v)
    return out


def _round_up(x: Any, bits: int = 40) -> Any:
    r"""x rounded up to a multiple of 2**-bits (Fractions; floats are returned as they are).

    Rounding the next region width up keeps the iteration's invariant :math:`W(B) \le B`
    (W(B') <= W(B) = x <= B' whenever x <= B' <= B) and the Fractions small."""
    if not isinstance(x, Fraction):
        return x
    return Fraction(-((-x.numerator << bits) // x.denominator), 1 << bits)


def seq2_lists(ps: list, qs: list, max_rounds: int | None = None) -> dict[str, Any]:
    r"""The ``seq2`` construction on lists in chain order (exact for Fractions; no rounding).

    Returns a dict with ``D``, ``s`` (the sub-law), ``pairs`` (``[(x, y, tau), ...]``), ``B``,
    ``rows1`` / ``rows2`` (kernel rows ``{level: prob}`` of each slot for first and second
    draws, levels as in :class:`~.seq2_kernel.Seq2Kernel`), ``qn`` and ``r`` (the masses, q
    normalised by :math:`\sum q`), ``fits`` and ``rounds`` (at most ``max_rounds``, default
    :data:`~.seq2_design.MAX_ROUNDS`, read as ``seq2.MAX_ROUNDS``).  The same steps as
    :func:`~.seq2.seq2_plan` without the rounding guards: the iteration stops only when every
    token fits, when B no longer moves or after ``max_rounds``.

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> out = seq2_lists([Fr(1, 10), Fr(2, 10), Fr(3, 10), Fr(4, 10)],
    ...                  [Fr(4, 10), Fr(3, 10), Fr(2, 10), Fr(1, 10)])
    >>> T = linear_law_list(out["qn"], out["rows1"], out["rows2"])
    >>> out["fits"], all(t >= s for t, s in zip(T, out["s"])), str(sum(out["s"]))  # α* = 701/840
    (True, True, '701/840')
    """
    from .relabel import fifo_pairs_list
    from .sublaw import optimal_sublaw_list

    max_rounds = seq2.MAX_ROUNDS if max_rounds is None else max_rounds
    zero = qs[0] - qs[0]
    one = zero + 1
    V = len(qs)
    total = sum(qs, zero)
    qn = [v / total for v in qs]
    r = [v / (one - v) for v in qn]
    cq, cr = _cum0(qn), _cum0(r)
    D = [r[k] * cq[k] + qn[k] * cr[k] for k in range(V)]
    _, s, _ = optimal_sublaw_list(_cum0(ps), _cum0(D))
    s = [max(zero, min(a, b)) for a, b in zip(s, ps, strict=True)]
    pairs = fifo_pairs_list(D, s, [v > 0 for v in qn])
    side = [0] * V
    for x, y, _ in pairs:
        side[x], side[y] = -1, 1
    B = [one if side[k] else zero for k in range(V)]
    info = {"fits": True, "rounds": 0}
    ms: list = []
    last = max(1, max_rounds) - 1
    for rnd in range(last + 1):
        ms, Wt = [], [[zero] * V, [zero] * V]
        for x, y, tau in pairs:
            w1, w2 = min(r[x], r[y]), min(qn[x], qn[y])
            a = cq[y + 1] - cq[x] - (qn[x] * B[x] + qn[y] * B[y]) / 2
            b = cr[y + 1] - cr[x] - (r[x] * B[x] + r[y] * B[y]) / 2
            f = tau / (w1 * a + w2 * b)
            ms.append((f * w1, f * w2))
            for k in (x, y):
                Wt[0][k] += f * w1 / r[k]
                Wt[1][k] += f * w2 / qn[k]
        M = [max(Wt[0][k], Wt[1][k]) for k in range(V)]
        info["rounds"] = rnd + 1
        if all(v <= one for v in M):
            break
        nB = [min(B[k], _round_up(M[k])) if side[k] else zero for k in range(V)]
        if rnd == last or nB == B:
            info["fits"] = False
            sc = [min(one, one / M[k]) if M[k] > 0 else one for k in range(V)]
            ms = [
                (m1 * min(sc[x], sc[y]), m2 * min(sc[x], sc[y]))
                for (m1, m2), (x, y, _) in zip(ms, pairs, strict=True)
            ]
            break
        B = nB
    rows1: list[dict[int, Any]] = [{} for _ in range(V)]
    rows2: list[dict[int, Any]] = [{} for _ in range(V)]
    region = [2 * k + 1 if side[k] == 1 else 2 * k for k in range(V)]
    rest = [2 * k + 1 if side[k] == -1 else 2 * k for k in range(V)]
    for (m1, m2), (x, y, _) in zip(ms, pairs, strict=True):
        for rows, m, mass in ((rows1, m1, r), (rows2, m2, qn)):
            rows[x][region[y]] = rows[x].get(region[y], zero) + m / mass[x]
            rows[y][region[x]] = rows[y].get(region[x], zero) + m / mass[y]
    for rows in (rows1, rows2):
        for k in range(V):
            moved = sum(rows[k].values(), zero)
            rows[k][rest[k]] = rows[k].get(rest[k], zero) + one - B[k]
            rows[k][region[k]] = rows[k].get(region[k], zero) + B[k] - moved
            rows[k] = {lev: pr for lev, pr in rows[k].items() if pr != 0}
    return {"qn": qn, "r": r, "D": D, "s": s, "pairs": pairs, "B": B, "rows1": rows1,
            "rows2": rows2, **info}  # fmt: skip


def linear_law_list(qn: list, rows1: list, rows2: list) -> list:
    r"""The two-kernel linear law :math:`T^{seq}` of kernel rows on levels (lists, exact).

    :math:`T_i = r_i \sum_l A_{1,il} (\varphi_2(l) - q_i/2) + q_i \sum_l A_{2,il}
    (\varphi_1(l) - r_i/2)`, with :math:`\nu_1 = r A_1`, :math:`\nu_2 = q A_2` the level masses
    (q normalised) and :math:`\varphi_t(l) = \nu_t(< l) + \nu_t(l)/2` (Lemma 12 of the note;
    any kernels, the level masses need not be kept).

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> q = [Fr(1, 2), Fr(1, 3), Fr(1, 6)]
    >>> ident = [{0: Fr(1)}, {2: Fr(1)}, {4: Fr(1)}]  # select the draft in the higher slot
    >>> [str(t) for t in linear_law_list(q, ident, ident)]
    ['0', '7/12', '5/12']
    >>> linear_law_list(q, ident, ident) == enumerate_law_list(q, ident, ident)
    True
    """
    zero = qn[0] - qn[0]
    r = [v / (1 - v) for v in qn]
    levels = sorted({lev for rows in (rows1, rows2) for row in rows for lev in row})
    nu1 = {lev: zero for lev in levels}
    nu2 = dict(nu1)
    for k in range(len(qn)):
        for lev, a in rows1[k].items():
            nu1[lev] += r[k] * a
        for lev, a in rows2[k].items():
            nu2[lev] += qn[k] * a
    phi1, phi2, c1, c2 = {}, {}, zero, zero
    for lev in levels:
        phi1[lev], phi2[lev] = c1 + nu1[lev] / 2, c2 + nu2[lev] / 2
        c1, c2 = c1 + nu1[lev], c2 + nu2[lev]
    return [
        sum((r[k] * a * (phi2[lev] - qn[k] / 2) for lev, a in rows1[k].items()), zero)
        + sum((qn[k] * a * (phi1[lev] - r[k] / 2) for lev, a in rows2[k].items()), zero)
        for k in range(len(qn))
    ]


def select_pair(row1: dict, row2: dict, a: int, b: int) -> dict[int, Any]:
    """The selection law of the rule for the ordered drafts (a, b): a relabelled by ``row1``,
    b by ``row2``, the higher level wins, a tie is a fair coin.

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> out = select_pair({0: Fr(1, 2), 3: Fr(1, 2)}, {3: Fr(1)}, 5, 7)
    >>> str(out[5]), str(out[7])  # level 3 ties half the time
    ('1/4', '3/4')
    """
    out: dict[int, Any] = {}
    for l1, p1 in row1.items():
        for l2, p2 in row2.items():
            w = p1 * p2
            if l1 > l2:
                out[a] = out.get(a, 0) + w
            elif l2 > l1:
                out[b] = out.get(b, 0) + w
            else:
                out[a] = out.get(a, 0) + w / 2
                out[b] = out.get(b, 0) + w / 2
    return out


def enumerate_law_list(qn: list, rows1: list, rows2: list) -> list:
    r"""The sequential selection law by enumeration of the ordered pairs (a, b), a != b, of
    weight :math:`q_a q_b / (1 - q_a)` and of the kernel rows' entries (lists, exact).

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> q = [Fr(1, 2), Fr(1, 2)]
    >>> first_wins = [{0: Fr(1)}, {0: Fr(1)}], [{-1: Fr(1)}, {-1: Fr(1)}]
    >>> [str(t) for t in enumerate_law_list(q, *first_wins)]  # the first draft: 1/2 each
    ['1/2', '1/2']
    """
    zero = qn[0] - qn[0]
    T = [zero] * len(qn)
    for a, qa in enumerate(qn):
        for b, qb in enumerate(qn):
            if a == b or qa == 0 or qb == 0:
                continue
            w = qa * qb / (1 - qa)
            for tok, pr in select_pair(rows1[a], rows2[b], a, b).items():
                T[tok] += w * pr
    return T
