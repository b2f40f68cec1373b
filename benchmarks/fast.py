"""Cost of the fast solver (T7) as ratios to one ``np.argsort`` of V float64 ratios, one run.

Run: ``python benchmarks/fast.py [--quick] [--repeats R]``.

Inputs are realistic next-token distributions: target ``p = softmax(z / 0.7)`` with Zipf-like
logits ``z = -log(rank)`` (a random token order per row), draft ``q = softmax((z + N(0, 1)) / 0.7)``,
so α* lies between about 0.5 and 0.95.  Every timing is taken in the same rounds as the
``np.argsort`` baseline (interleaved, median of the per-round ratios), because the machine may
be shared.  Printed:

1. per scheme, the public ``alpha_star`` (with validation) and the solver core ``solve_rows``
   as multiples of the argsort, V = 152,064, against the issue's targets;
2. batched B = 64: core cost per row divided by the single-row cost;
3. peak memory of a B = 64 solve (tracemalloc) in units of one (B, V) float64 array;
4. the T12 side-by-side: sequential (without replacement) α* against the e_n
   (conditional-Poisson) value at V = 32,000 and 152,064, n = 2..4.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from mdsd_ot.fast import alpha_star, solve_rows

V_BIG = 152_064


#: (scheme, n, target ratio to np.argsort) from the issue.
CASES = [
    ("with", 2, 1.5),
    ("with", 4, 1.5),
    ("without", 2, 2.0),
    ("conditional-poisson", 2, 2.0),
    ("conditional-poisson", 4, 2.0),
    ("greedy", 2, 1.5),
    ("greedy", 4, 1.5),
    ("single", 1, None),
    ("without", 3, 25.0),
    ("without", 4, 40.0),
]


def realistic(
    B: int, V: int, seed: int = 0, temperature: float = 0.7, noise: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(B, V) target and draft rows: softmax of Zipf-like logits at ``temperature``, plus noise."""
    rng = np.random.default_rng(seed)
    z = -np.log(np.arange(1, V + 1, dtype=np.float64))
    Z = np.stack([rng.permutation(z) for _ in range(B)])

    def softmax(x):
        x = x - x.max(axis=-1, keepdims=True)
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)

    return softmax(Z / temperature), softmax((Z + rng.normal(0.0, noise, Z.shape)) / temperature)


def _time(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def ratios(fns: dict, baseline, repeats: int) -> dict:
    """Median over rounds of time(f) / time(baseline), baseline timed in the same round."""
    out = {k: [] for k in fns}
    for f in [baseline, *fns.values()]:  # warm-up
        f()
    for _ in range(repeats):
        for k, f in fns.items():
            b = _time(baseline)
            t = _time(f)
            b = min(b, _time(baseline))
            out[k].append(t / b)
    return {k: float(np.median(v)) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and rows")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args()
    R = args.repeats or (5 if args.quick else 15)
    cases = CASES

    P, Q = realistic(64, V_BIG, seed=1)
    p, q = P[0].copy(), Q[0].copy()
    key = p / q
    base = lambda: np.argsort(key)  # noqa: E731
    t_sort = min(_time(base) for _ in range(R))
    print(f"V = {V_BIG:,}; np.argsort of V float64 ratios: {t_sort * 1e3:.2f} ms (best of {R})")
    print("alpha* of these inputs (64 rows, mean [min, max]):")
    for s, n, _ in cases[:7]:
        a = alpha_star(P, Q, n=n, scheme=s)
        print(f"  {s:>20} n={n}: {a.mean():.3f} [{a.min():.3f}, {a.max():.3f}]")

    print("\n1. cost / np.argsort, single row (median of per-round ratios):")
    print(f"  {'scheme':>20} {'n':>2} {'public':>8} {'core':>8} {'target':>7}")
    P1, Q1 = p[None, :], q[None, :]
    for s, n, target in cases:
        r = ratios(
            {
                "public": lambda s=s, n=n: alpha_star(p, q, n=n, scheme=s),
                "core": lambda s=s, n=n: solve_rows(P1, Q1, n, s),
            },
            base,
            R,
        )
        tgt = "-" if target is None else f"{target:g}x"
        ok = "" if target is None else ("  ok" if r["core"] <= target else "  OVER")
        print(f"  {s:>20} {n:>2} {r['public']:>7.2f}x {r['core']:>7.2f}x {tgt:>7}{ok}")

    B = 64
    print(f"\n2. batched B = {B}: core cost per row / single-row core cost (target <= 1):")
    reps = max(2, R // 3)
    for s, n, _ in cases[:8]:
        t1 = min(_time(lambda s=s, n=n: solve_rows(P1, Q1, n, s)) for _ in range(reps))
        tB = min(_time(lambda s=s, n=n: solve_rows(P, Q, n, s)) for _ in range(reps))
        print(f"  {s:>20} n={n}: {tB / B / t1:.2f}  ({tB / B * 1e3:.2f} vs {t1 * 1e3:.2f} ms/row)")

    print(f"\n3. peak memory, B = {B} (tracemalloc), in units of one (B, V) float64 array:")
    unit = B * V_BIG * 8
    for s, n, _ in cases[:7]:
        tracemalloc.start()
        solve_rows(P, Q, n, s, return_set=True)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"  {s:>20} n={n}: {peak / unit:.1f} x B*V*8 bytes ({peak / 2**20:.0f} MiB)")

    print("\n4. T12: sequential (without) alpha* vs the e_n (conditional-Poisson) value:")
    rows = 8 if args.quick else 32
    for V in (32_000, V_BIG):
        Pv, Qv = realistic(rows, V, seed=2)
        for n in (2, 3, 4):
            cp = alpha_star(Pv, Qv, n=n, scheme="conditional-poisson")
            wo = alpha_star(Pv, Qv, n=n, scheme="without")
            d = cp - wo
            print(
                f"  V={V:>7,} n={n}: without {wo.mean():.4f}, e_n {cp.mean():.4f}, "
                f"e_n - without: mean {d.mean():+.2e}, max {d.max():+.2e}, min {d.min():+.2e}"
            )


if __name__ == "__main__":
    main()
