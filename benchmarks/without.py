"""Cost of Q on every prefix for sequential sampling without replacement, as ratios to one sort.

Realistic input (the issue's): V = 152,064, draft q = softmax of Zipf-like logits with noise at
temperature 0.7 (:mod:`mdsd_ot.synthetic`), permuted into the p/q order.  For each n the script
prints the best-of-r time of :func:`mdsd_ot.fast.without.prefix_Q_without`, its ratio to
``np.argsort`` of V float64 ratios measured in the same run, the certified error bound, and the
plan (heavy tokens m, Taylor order K).  Budgets from the issue: n = 3 <= 25x, n = 4 <= 40x.

Run: ``python benchmarks/without.py [--V 152064] [--repeat 5] [--batch 0]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mdsd_ot.fast import without as W
from mdsd_ot.synthetic import synthetic_batch, synthetic_pair

BUDGET = {3: 25.0, 4: 40.0}


def best_of(f, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--V", type=int, default=152_064)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=0, help="also time a (B, V) batch, per row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, nargs="*", default=[2, 3, 4, 5, 6, 7, 8])
    args = ap.parse_args()

    p, q = synthetic_pair(args.V, 0.7, args.seed, noise=1.0)
    ratio = p / q
    t_sort, perm = best_of(lambda: np.argsort(ratio), args.repeat)
    qs = q[perm]
    print(f"V = {args.V:,}   np.argsort of V float64: {1e3 * t_sort:.1f} ms")
    print(f"{'n':>2} {'ms':>9} {'x argsort':>10} {'budget':>7} {'err bound':>10} {'m, K':>9}")
    for n in args.n:
        rep = args.repeat if n <= 5 else max(1, args.repeat // 3)
        t, (Q, err) = best_of(lambda n=n: W.prefix_Q_without(qs, n), rep)
        plan = "closed" if n <= 2 else _plan(qs, n)
        budget = f"{BUDGET[n]:.0f}x" if n in BUDGET else "-"
        print(f"{n:>2} {1e3 * t:9.1f} {t / t_sort:10.2f} {budget:>7} {err:10.2e} {plan:>9}")
    if args.batch:
        P, Qd = synthetic_batch(args.batch, args.V, 0.7, args.seed + 1, noise=1.0)
        Qs = np.take_along_axis(Qd, np.argsort(P / Qd, axis=1), axis=1)
        for n in (3, 4):
            t, (_, errs) = best_of(lambda n=n: W.prefix_Q_without(Qs, n), 1)
            print(
                f"batch B={args.batch}, n={n}: {1e3 * t / args.batch:.1f} ms per row "
                f"({t / args.batch / t_sort:.2f} x argsort), max bound {errs.max():.2e}"
            )


def _plan(qs: np.ndarray, n: int) -> str:
    m, K = W.PLANS[n]  # fixed per n (data-independent, so the torch path never syncs)
    return f"{m}, {K}"


if __name__ == "__main__":
    main()
