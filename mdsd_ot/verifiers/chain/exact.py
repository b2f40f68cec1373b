r"""The chain verifier in plain Python numbers: the definition, exact in Fractions (small V).

:func:`exact_plan` runs the same construction as :mod:`.plan` on lists (no rounding of the kernel,
Fractions stay exact), and :func:`given` returns the verifier's rule :math:`\pi(\cdot \mid \bar i)`
for one draft tuple by summing over every relabelling outcome, the uniform tie-break, the thinning
coin and the residual draw.  ``Verifier.exact`` sums it against the law's joint table, so the
output law and the acceptance are checked exactly (tests: law = p, acceptance = α*).

Examples
--------
>>> from fractions import Fraction as Fr
>>> plan = exact_plan([Fr(3, 5), Fr(2, 5)], [Fr(1, 2), Fr(1, 2)], 2, "relabel")
>>> {k: str(v) for k, v in sorted(given(plan, (0, 1)).items())}
{0: '7/10', 1: '3/10'}
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .relabel import fifo_pairs_list, relabel_list, slot_rates_list
from .seq2_exact import enumerate_law_list, select_pair, seq2_lists
from .sublaw import optimal_sublaw_list

__all__ = [
    "ExactPlan",
    "exact_plan",
    "exact_seq2_plan",
    "exact_swap_plan",
    "given",
    "select_law",
    "stream_tuples",
]


@dataclass
class ExactPlan:
    """The plan in lists: ``rows[k]`` is the kernel row of slot k ({slot: prob}, own included)."""

    construction: str
    n: int
    q: list
    rank: list[int]
    rows: list[dict[int, Any]]
    accept: list
    residual: list
    acceptance: Any
    selection: list  #: the selection law T by token id
    rows2: list | None = None  #: ``seq2``: the second draft's kernel rows (``rows`` = the first's)
    single: frozenset = frozenset()  #: ``seq-swap-h``: the token ids that pick once
    pair: Any = None  #: ``cp-pair``: the float plan's :class:`~.pairs.PairRule` (by slot)


def _order(p: list, q: list) -> list[int]:
    return sorted(range(len(p)), key=lambda i: (0, p[i] / q[i]) if q[i] > 0 else (1, 0))


def _cum0(x: list) -> list:
    out = [x[0] - x[0]]
    for v in x:
        out.append(out[-1] + v)
    return out


def _elementary_prefix(qs: list, m: int) -> list:
    """e_m of every prefix of qs (k = 0..V)."""
    zero = qs[0] - qs[0]
    e = [zero + 1] + [zero] * m
    out = [e[m]]
    for v in qs:
        for j in range(m, 0, -1):
            e[j] = e[j] + v * e[j - 1]
        out.append(e[m])
    return out


def _law_of_rows(qs: list, d: list, rows: list) -> list:
    return [
        qs[i] * sum((a * d[j] for j, a in rows[i].items()), qs[i] - qs[i]) for i in range(len(qs))
    ]


def _relabel_rows(qs: list, n: int, t: list) -> tuple[list, list]:
    d = slot_rates_list(qs, n)
    D = [a * b for a, b in zip(qs, d, strict=True)]
    rows = relabel_list(qs, d, fifo_pairs_list(D, t, [x > 0 for x in qs]), n)
    return rows, _law_of_rows(qs, d, rows)


def _cp2_rows(qs: list, gap: list, two_e2: Any) -> tuple[list, list, bool]:
    """Kernel rows for the i.i.d. demand ``gap`` = t - D_iid and the conditional-Poisson law."""
    zero = qs[0] - qs[0]
    cm = _cum0(qs)[:-1]
    d = [2 * a + b for a, b in zip(cm, qs, strict=True)]
    live = [x > 0 for x in qs]
    sup = [max(zero, -g) for g in gap]
    dem = [max(zero, g) for g in gap]
    D = [zero] * len(qs)  # fifo_pairs_list works on (D, t): use D = sup, t = dem
    pairs = fifo_pairs_list([a + b for a, b in zip(D, sup, strict=True)], dem, live)
    rows = relabel_list(qs, d, pairs, 2)  # d: the slot rates of n = 2
    rho = [g / qs[k] + d[k] if qs[k] > 0 else None for k, g in enumerate(gap)]
    fits = all(d[y] >= rho[x] and d[x] <= rho[y] for x, y, _ in pairs)  # as plan._fits

    def pair_rate(i: int, j: int) -> Any:  # 2 cm_j + q_j - q_i, no cancellation for j >= i
        if j == i:
            return 2 * cm[i]
        if j > i:  # 2 (q_{i+1} + .. + q_{j-1}) + 2 cm_i + q_i + q_j, every term >= 0
            return 2 * sum(qs[i + 1 : j], zero) + 2 * cm[i] + qs[i] + qs[j]
        return 2 * cm[j] + qs[j] - qs[i]

    T = [
        qs[i] * sum((a * pair_rate(i, j) for j, a in rows[i].items()), zero) / two_e2
        for i in range(len(qs))
    ]
    return rows, T, fits


def exact_plan(
    p: list, q: list, n: int, construction: str, Q_of: Callable[[list[int]], Any] | None = None
) -> ExactPlan:
    """The construction of :func:`mdsd_ot.verifiers.chain.plan.build_plan` on lists.

    ``Q_of(tokens)`` (the law's Q of a token set) is needed for ``top`` with n >= 2.
    """
    order = _order(p, q)
    ps, qs = [p[i] for i in order], [q[i] for i in order]
    zero = qs[0] - qs[0]
    if construction == "top" or n == 1:
        if n == 1:
            D = list(qs)
        else:
            pq = [Q_of(order[:k]) for k in range(len(qs) + 1)]
            D = [max(zero, pq[k + 1] - pq[k]) for k in range(len(qs))]
        s, T, rows = (
            [min(a, b) for a, b in zip(ps, D, strict=True)],
            D,
            [{k: zero + 1} for k in range(len(qs))],
        )
        construction = "top"
    elif construction == "cp2":  # through the i.i.d. kernel, in cancellation-free form
        cm = _cum0(qs)[:-1]
        e2 = sum((a * b for a, b in zip(qs, cm, strict=True)), zero)
        DC = [a * b / e2 for a, b in zip(qs, cm, strict=True)]
        _, s, _ = optimal_sublaw_list(_cum0(ps), _cum0(DC))
        two_e2 = 2 * e2
        rows, T, fits = _cp2_rows(
            qs, [two_e2 * (a - b) for a, b in zip(s, DC, strict=True)], two_e2
        )
        if not fits:  # the mass condition fails in p/q order: sort by t/q
            key = [
                (0, two_e2 * s[k] / qs[k] + qs[k]) if qs[k] > 0 else (1, 0) for k in range(len(qs))
            ]
            o2 = sorted(range(len(qs)), key=lambda k: key[k])
            order = [order[k] for k in o2]
            ps, qs, s = ([v[k] for k in o2] for v in (ps, qs, s))
            cm = _cum0(qs)[:-1]
            gap = [two_e2 * a - 2 * b * c for a, b, c in zip(s, qs, cm, strict=True)]
            rows, T, _ = _cp2_rows(qs, gap, two_e2)
    elif construction in ("relabel", "stream"):
        d = slot_rates_list(qs, n)
        D = [a * b for a, b in zip(qs, d, strict=True)]
        _, s, _ = optimal_sublaw_list(_cum0(ps), _cum0(D))
        rows, T = _relabel_rows(qs, n, s)
    else:
        raise ValueError(f"construction: unknown {construction!r}")
    sp = [max(zero, min(a, b, c)) for a, b, c in zip(s, T, ps, strict=True)]
    acc = [min(zero + 1, a / b) if b > 0 else zero for a, b in zip(sp, T, strict=True)]
    res = [max(zero, a - b) for a, b in zip(ps, sp, strict=True)]
    tot = sum(res, zero)
    res = [r / tot for r in res] if tot > 0 else [x / sum(ps, zero) for x in ps]
    V = len(p)
    rank = [0] * V
    for k, i in enumerate(order):
        rank[i] = k
    accept, residual, selection = [zero] * V, [zero] * V, [zero] * V
    for k, i in enumerate(order):
        accept[i], residual[i], selection[i] = acc[k], res[k], T[k]
    return ExactPlan(
        construction, n, list(q), rank, rows, accept, residual, sum(sp, zero), selection
    )


def stream_tuples(tup: tuple[int, ...], q: list) -> list[tuple[tuple[int, ...], Any]]:
    """The exact law of :func:`mdsd_ot.verifiers.chain.sample.stream_to_iid` for one tuple."""
    n = len(tup)
    one = q[0] - q[0] + 1
    out: list = []

    def rec(prefix: tuple[int, ...], m: int, pr: Any) -> None:
        if len(prefix) == n:
            out.append((prefix, pr))
            return
        w = sum((q[v] for v in tup[:m]), one - one)
        for v in tup[:m]:
            if q[v] > 0:
                rec(prefix + (v,), m, pr * q[v])
        if m < n and w < 1:
            rec(prefix + (tup[m],), m + 1, pr * (one - w))

    rec((tup[0],), 1, one)
    return out


def _pieces_select(plan: ExactPlan, tup: tuple[int, ...]) -> dict[int, Any]:
    r"""Selection law of a piece kernel for one tuple (levels are distinct: no ties).

    ``cp-swap``: each drafted token picks one piece, :math:`\Pr[\max \le c] = \prod_i b_i(c)`.
    ``seq-swap``: every draw of the stopped stream picks a piece; with
    :math:`r_m = \sum_{v \notin \{x_1..x_m\}} q_v` (:math:`= T - w_m`,
    :math:`w_m = q(x_1..x_m)`) and the geometric numbers of repeats
    (:func:`~mdsd_ot.verifiers.chain.sample.stream_select` has the proof),

    .. math:: \Pr[\max \le c \mid \bar x] = \prod_{i=1}^n b_i(c)
              \prod_{m=1}^{n-1} \frac{r_m}{r_m + \sum_{i \le m} q(x_i)\,(1 - \tilde b_i(c))} ,

    :math:`\tilde b_i = b_i`, except :math:`\tilde b_i = 1` for a token of ``plan.single``
    (``seq-swap-h``: its one pick is below c, so are its repeats).  Written with the unseen mass
    :math:`r_m` (summed directly) and the tails :math:`1 - b_i` (summed from the top), every
    factor is a ratio of non-negative sums: in floats there is no cancellation (the form
    :math:`(T - w_m)/(T - \sum q\, \tilde b)` divided 0 by 0 where :math:`q(x_1) = T` in
    floats, e.g. q entries of 1e-30 beside 1); in Fractions the two forms are equal.
    """
    zero = plan.q[0] - plan.q[0]
    one = zero + 1
    n = len(tup)
    events = sorted(
        (lev, i, pr) for i, x in enumerate(tup) for lev, pr in plan.rows[plan.rank[x]].items()
    )
    b = [zero] * n
    # tails[i][j]: the probability of the pieces of x_i above its j-th piece (summed from the top)
    mine = [[pr for lev, i2, pr in events if i2 == i] for i in range(n)]
    tails = []
    for prs in mine:
        tl = [zero] * len(prs)
        acc = zero
        for j in range(len(prs) - 1, -1, -1):
            tl[j] = acc
            acc = acc + prs[j]
        tails.append(tl)
    ub = [tl[0] + prs[0] if prs else one for tl, prs in zip(tails, mine, strict=True)]
    seen = [0] * n
    stream = plan.construction in ("seq-swap", "seq-swap-h")
    rest = []  # r_m, m = 1..n-1: the masses outside x_1..x_m, summed directly
    if stream:
        for m in range(1, n):
            drafted = set(tup[:m])
            rest.append(sum((v for j, v in enumerate(plan.q) if j not in drafted), zero))

    def G() -> Any:
        out = one
        for v in b:
            out = out * v
        if stream:
            over = zero
            for m in range(n - 1):
                if tup[m] not in plan.single:
                    over = over + plan.q[tup[m]] * ub[m]
                out = out * rest[m] / (rest[m] + over)
        return out

    out: dict[int, Any] = {}
    prev = G()
    for _, i, pr in events:
        b[i] = b[i] + pr
        ub[i] = tails[i][seen[i]]
        seen[i] += 1
        cur = G()
        if cur != prev:
            out[tup[i]] = out.get(tup[i], zero) + (cur - prev)
        prev = cur
    return out


def _winner_shares(plan: ExactPlan, tup: tuple[int, ...]) -> Iterator[tuple[int, Any]]:
    r"""(token, probability) for every outcome of the relabelling step of a slot kernel.

    Every drafted token (for ``stream``, every token of each i.i.d. tuple of
    :func:`stream_tuples`, with its probability) moves along its kernel row; the outcome
    (one entry per draw) has the product of the entries' probabilities, and the draws at the
    highest slot share it equally (the uniform tie-break).  Zero-probability outcomes are
    skipped; a token may be yielded many times (summed by the callers).
    """
    one = plan.q[0] - plan.q[0] + 1
    sources = stream_tuples(tup, plan.q) if plan.construction == "stream" else [(tup, one)]
    for t, w in sources:
        choices = [list(plan.rows[plan.rank[i]].items()) for i in t]
        for combo in itertools.product(*choices):
            pr = w
            for _, a in combo:
                pr = pr * a
            if pr == 0:
                continue
            top = max(sl for sl, _ in combo)
            tied = [t[j] for j, (sl, _) in enumerate(combo) if sl == top]
            for y in tied:
                yield y, pr / len(tied)


def _pair_select(plan: ExactPlan, tup: tuple[int, ...]) -> dict[int, Any]:
    r"""``cp-pair`` and ``seq-pair``: the highest drafted slot y hands over to each other draft
    x with probability :math:`\lambda(y, x)`, the float product :math:`\theta_y g_x` the
    sampler draws with (exact as a Fraction), times the set's thinning r(S) in exact numbers
    for ``seq-pair`` (:func:`~.seqpair.exact_factor`), and keeps the rest."""
    import numpy as np

    one = plan.q[0] - plan.q[0] + 1
    conv = type(one) if not isinstance(one, int) else float
    slots = [plan.rank[i] for i in tup]
    y = max(slots)
    lam = plan.pair.hand_over(np.full(len(slots), y), np.array(slots))
    r = one
    if plan.pair.thin is not None:  # seq-pair: the set's thinning r(S), in these numbers
        from .seqpair import exact_factor

        total = sum(plan.q, one - one)
        u = [conv(float(plan.pair.thin.u[sl])) for sl in slots]
        r = exact_factor([plan.q[i] / total for i in tup], u)
    out: dict[int, Any] = {}
    keep = one
    if any(la < 0 for la in lam.tolist()):  # a plan with negative factors is no rule
        raise ArithmeticError(f"pair plan: a negative hand-over on the draft set {tup}")
    for tok, sl, la in zip(tup, slots, lam.tolist(), strict=True):
        if sl != y and la > 0:
            out[tok] = out.get(tok, 0) + conv(la) * r
            keep = keep - conv(la) * r
    if keep < 0:
        raise ArithmeticError(f"seq-pair: the draft set {tup} hands over more than 1")
    top = tup[slots.index(y)]
    out[top] = out.get(top, 0) + keep
    return out


def select_law(plan: ExactPlan, tup: tuple[int, ...]) -> dict[int, Any]:
    """The selection step of the rule for one tuple: {token: probability} before thinning."""
    if plan.construction in ("cp-pair", "seq-pair"):
        return _pair_select(plan, tup)
    if plan.construction in ("cp-swap", "seq-swap", "seq-swap-h"):
        return _pieces_select(plan, tup)
    if plan.construction == "seq2":
        a, b = tup
        return select_pair(plan.rows[plan.rank[a]], plan.rows2[plan.rank[b]], a, b)
    out: dict[int, Any] = {}
    for y, share in _winner_shares(plan, tup):
        out[y] = out.get(y, 0) + share
    return out


def exact_swap_plan(
    p: list,
    q: list,
    n: int,
    construction: str,
    items: dict,
    Q_of: Callable[[list[int]], Any],
    fplan: Any = None,
) -> ExactPlan:
    """The swap construction in plain numbers: the kernel designed in floats (its probabilities
    are dyadic, so exact as Fractions), then s, the selection law (summed over the law's
    ``items`` {tuple: weight}) and the thinning in the numbers of ``p`` and ``q``.  ``fplan``:
    the float plan whose kernel (and tokens that pick once) to take, when the caller has it
    (``seq-best`` may have designed ``seq-swap-h`` with more such tokens than a plan asked for
    ``seq-swap-h`` would); otherwise it is built for ``construction``."""
    import numpy as np

    from .plan import build_plan

    zero = q[0] - q[0]
    conv = type(zero) if not isinstance(zero, int) else float
    if fplan is None:
        pf = np.array([float(x) for x in p])
        qf = np.array([float(x) for x in q])
        fplan = build_plan(pf / pf.sum(), qf / qf.sum(), n, construction)
    order = [int(i) for i in fplan.order]
    V = len(p)
    rows: list[dict[int, Any]] = [{} for _ in range(V)]
    if fplan.pieces is not None:
        for e, (k, pr) in enumerate(
            zip(fplan.pieces.tok.tolist(), fplan.pieces.prob.tolist(), strict=True)
        ):
            rows[k][e] = conv(pr)
    rank = [0] * V
    for k, i in enumerate(order):
        rank[i] = k
    ps = [p[i] for i in order]
    _, s, _ = optimal_sublaw_list(_cum0(ps), [Q_of(order[:k]) for k in range(V + 1)])
    plan = ExactPlan(construction, n, list(q), rank, rows, [], [], zero, [])
    if fplan.single is not None:
        plan.single = frozenset(int(i) for i in fplan.single)
    plan.pair = fplan.pair
    T = [zero] * V
    for tup, w in items.items():
        for tok, pr in select_law(plan, tuple(tup)).items():
            T[tok] = T[tok] + w * pr
    sp = [max(zero, min(s[k], T[order[k]], ps[k])) for k in range(V)]
    plan.accept = [zero] * V
    for k, i in enumerate(order):
        plan.accept[i] = sp[k] / T[i] if T[i] > 0 else zero
    res = [max(zero, p[order[k]] - sp[k]) for k in range(V)]
    tot = sum(res, zero)
    plan.residual = [zero] * V
    for k, i in enumerate(order):
        plan.residual[i] = res[k] / tot if tot > 0 else p[i] / sum(p, zero)
    plan.acceptance, plan.selection = sum(sp, zero), T
    return plan


def exact_seq2_plan(p: list, q: list) -> ExactPlan | None:
    r"""The ``seq2`` construction in plain numbers (:func:`~.seq2_exact.seq2_lists`,
    no rounding), its selection law by enumeration of the ordered pairs and the kernel rows
    (:func:`~.seq2_exact.enumerate_law_list`), and the thinning
    :math:`\min(s, T)/T`.  ``None`` when the design does not fit (some token would move more
    than its mass): the caller then uses the ``seq-swap`` plan.

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> plan = exact_seq2_plan([Fr(1, 10), Fr(2, 10), Fr(3, 10), Fr(4, 10)],
    ...                        [Fr(4, 10), Fr(3, 10), Fr(2, 10), Fr(1, 10)])
    >>> plan.construction, str(plan.acceptance)  # α* of the two drafts
    ('seq2', '701/840')
    """
    order = _order(p, q)
    ps, qs = [p[i] for i in order], [q[i] for i in order]
    zero = qs[0] - qs[0]
    out = seq2_lists(ps, qs)
    if not out["fits"]:
        return None
    T = enumerate_law_list(out["qn"], out["rows1"], out["rows2"])
    sp = [max(zero, min(a, b, c)) for a, b, c in zip(out["s"], T, ps, strict=True)]
    res = [max(zero, a - b) for a, b in zip(ps, sp, strict=True)]
    tot = sum(res, zero)
    res = [v / tot for v in res] if tot > 0 else [v / sum(ps, zero) for v in ps]
    V = len(p)
    rank, accept, residual, selection = [0] * V, [zero] * V, [zero] * V, [zero] * V
    for k, i in enumerate(order):
        rank[i] = k
        accept[i] = sp[k] / T[k] if T[k] > 0 else zero
        residual[i], selection[i] = res[k], T[k]
    return ExactPlan("seq2", 2, list(q), rank, out["rows1"], accept, residual, sum(sp, zero),
                     selection, rows2=out["rows2"])  # fmt: skip


def given(plan: ExactPlan, tup: tuple[int, ...]) -> dict[int, Any]:
    r"""The rule :math:`\pi(\cdot \mid \bar i)` of the plan for one draft tuple."""
    one = plan.q[0] - plan.q[0] + 1
    if plan.construction in ("cp-pair", "seq-pair", "cp-swap", "seq-swap", "seq-swap-h", "seq2"):
        shares: Iterable[tuple[int, Any]] = select_law(plan, tup).items()
    else:  # each share thinned before it is summed (select_law sums first)
        shares = _winner_shares(plan, tup)
    out: dict[int, Any] = {}
    rej = one - one
    for y, pr in shares:
        out[y] = out.get(y, 0) + pr * plan.accept[y]
        rej = rej + pr * (1 - plan.accept[y])
    if rej != 0:
        for z, r in enumerate(plan.residual):
            if r:
                out[z] = out.get(z, 0) + rej * r
    return {k: v for k, v in out.items() if v != 0}
