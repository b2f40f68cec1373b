"""Draw ``fast_buckets.png``: the objective along the chain, the bucket bounds, the survivors.

Run from the repository root: ``python docs/figures/make_fast_buckets.py`` (needs matplotlib,
``pip install 'mdsd-ot[plot]'``).  One row of the synthetic family (:mod:`mdsd_ot.synthetic`,
V = 152,064, temperature 0.7), with replacement, n = 2.  Left: :math:`f = P - Q` along the
whole chain (tokens by increasing p/q) against :math:`q(H)`, the bucket boundaries marked.
Right: near the optimum, each bucket's lower bound :math:`LB_b` (a bar over the bucket), the
best boundary value UB (dashed), and the surviving bucket shaded: only its tokens are sorted.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mdsd_ot.fast import bucket  # noqa: E402
from mdsd_ot.fast.chain import chain_for  # noqa: E402
from mdsd_ot.synthetic import synthetic_pair  # noqa: E402

OUT = Path(__file__).resolve().parent / "fast_buckets.png"


def main() -> None:
    p, q = synthetic_pair(152_064, 0.7, 1, noise=1.0)
    n = 2
    order = np.argsort(p / q, kind="stable")
    s = np.concatenate([[0.0], np.cumsum(q[order])])
    f = np.concatenate([[0.0], np.cumsum(p[order])]) - s**n
    one = np.ones(1)
    st = bucket._phase1(p[None].copy(), q[None].copy(), one, one, chain_for("with", n), np)
    qb, fb = st["qc_b"][0], st["f_b"][0]
    LB, surv, UB = st["LB"][0], st["survive"][0], float(st["UB"][0])
    k = int(np.argmin(f))

    fig, (a0, a1) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=130)
    a0.plot(s, f, lw=1.0, color="0.2", label="$f = P - Q$ along the chain")
    a0.plot(qb, fb, "o", ms=2.5, color="tab:blue", label="bucket boundaries (exact)")
    a0.plot(s[k], f[k], "*", ms=11, color="tab:red", label=r"optimum: $\alpha^* - 1$")
    a0.set_xlabel("$q(H)$ along the chain (tokens by increasing $p/q$)")
    a0.set_ylabel("$P(H) - Q(H)$")
    a0.set_title(f"with replacement, n = {n}, V = 152,064, T = 0.7")
    a0.legend(fontsize=8, loc="lower left")

    lo, hi = s[k] - 0.025, s[k] + 0.025
    view = (qb[:-1] < hi) & (qb[1:] > lo)
    a1.plot(s, f, lw=1.0, color="0.2")
    for j in np.flatnonzero(view):
        color = "tab:orange" if surv[j] else "tab:green"
        a1.hlines(LB[j], qb[j], qb[j + 1], colors=color, lw=2.2)
        if surv[j]:
            a1.axvspan(qb[j], qb[j + 1], color="tab:orange", alpha=0.18, lw=0)
    for j in np.flatnonzero(surv):  # a survivor is narrow in q: mark it where it is
        mid = 0.5 * (qb[j] + qb[j + 1])
        a1.annotate(
            f"survivor: {qb[j + 1] - qb[j]:.1e} of q,\nits tokens sorted and scanned",
            xy=(mid, LB[j]), xytext=(mid + 0.004, UB - 0.001), fontsize=8, color="tab:orange",
            arrowprops=dict(arrowstyle="->", color="tab:orange", lw=1.2),
        )  # fmt: skip
        a1.plot([mid], [LB[j]], "v", ms=7, color="tab:orange")
    a1.plot(qb, fb, "o", ms=3, color="tab:blue")
    a1.axhline(UB, ls="--", lw=1, color="tab:blue", label="UB = best boundary value")
    a1.plot(s[k], f[k], "*", ms=11, color="tab:red")
    a1.plot([], [], color="tab:green", lw=2.2, label="$LB_b \\geq UB$: pruned")
    a1.plot([], [], color="tab:orange", lw=2.2, label="$LB_b < UB$: sorted (survivor)")
    a1.set_xlim(lo, hi)
    a1.set_ylim(UB - 0.0015, UB + 0.006)
    a1.set_xlabel("$q(H)$ (near the optimum)")
    a1.set_title(f"bounds per bucket: {int(surv.sum())} of {surv.size} buckets survive")
    a1.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    tmp = OUT.with_name(OUT.stem + ".tmp.png")
    fig.savefig(tmp)
    tmp.replace(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
