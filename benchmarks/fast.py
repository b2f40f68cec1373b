"""Cost of the fast solver as ratios to one ``np.argsort`` of V float64 ratios, one run: new vs old.

Run: ``python benchmarks/fast.py [--quick] [--repeats R] [--shard PATH] [--max-rows M]``.

"new" is the public ``mdsd_ot.fast.alpha_star(p, q, n=..., scheme=...)`` as shipped (``path="auto"``:
bucket-and-bound for with, without and conditional Poisson, :mod:`mdsd_ot.fast.bucket`); "old" is
the same call with ``path="sort"`` (the sorting path of T7).  Both include input validation (the
figure that counts, issue 14); "core" columns time ``solve_rows`` on validated rows; "numpy"
is "new" with the fused loops of :mod:`mdsd_ot.fast._fused` off (what runs without numba).  Every
timing is taken in the same rounds as the ``np.argsort`` baseline (interleaved, median of the
per-round ratios), because the machine may be shared.  Printed:

1. the synthetic family (:mod:`mdsd_ot.synthetic`, V = 152,064) at temperatures 0.5, 0.7, 1.0
   and 1.5: new and old, public and core, against the issue's targets.  In these rounds the
   five candidates alternate with the baseline, so each call finds its inputs evicted from the
   caches by the other candidates (the baseline's keys are read twice per candidate and stay
   warm); "alone" times the new public call in rounds of its own (baseline, call, baseline),
   where its inputs are as warm as the baseline's.  Both are printed;
2. the adversarial inputs (all ratios equal, ratios over 600 octaves, zeros in p and q, 1e-300
   masses, ties, a near point mass, one bucket holding 60% or 80% of the tokens and the
   optimum: scanned, or sorted after the bucketing pass): new / old (must stay <= 1.2);
3. several laws of one row at once (``alpha_star_laws``: with, without and conditional Poisson,
   n = 2; issue 12's target <= 2x one argsort);
4. batched B = 64: cost per row of the new public call; 4b. the same with row 0 crowded (35% of
   its tokens survive the bounds), new against phase 2 as wide as that row (before
   ``bucket.phase2_capacity``) and the sorting path, numpy and CPU torch;
5. real-text rows, batched (one call per law): ``path="auto"`` (what ships), ``"bucket"`` (forced)
   and ``"sort"`` in ms per row, bucket / sort and the largest difference of α*.  ``--shard PATH`` reads a shard or a directory of shards (either
   container of docs/shards.md, through :func:`mdsd_ot.io.read_shards`, at most ``--max-rows``
   rows); without it, the built-in real-text study (byte n-grams built in seconds from the
   Python standard library's docs, :mod:`mdsd_ot.reports.demo`; V = 256, so these ratios say
   how the paths compare on real, peaked rows, not what they cost at V = 152,064).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mdsd_ot.fast import _fused, alpha_star, alpha_star_laws, solve_rows
from mdsd_ot.fast.solver import BUCKET_MIN_V
from mdsd_ot.synthetic import synthetic_batch, synthetic_pair

V_BIG = 152_064

#: (scheme, n, target ratio of the new public call to np.argsort) from issue 14.
CASES = [
    ("with", 2, 0.4),
    ("with", 4, 0.4),
    ("with", 8, 0.4),
    ("without", 2, 0.5),
    ("conditional-poisson", 2, 0.6),
    ("conditional-poisson", 4, 0.6),
    ("without", 3, 1.5),
    ("without", 4, 3.0),
]


def _time(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def ratios(fns: dict, baseline, repeats: int) -> dict:
    """Median over rounds of time(f) / time(baseline), the baseline timed in the same round."""
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


def adversarial(V: int, seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The issue's adversarial rows (seeded): (p, q) float64, each summing to 1."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.full(V, 0.5))
    out = {"equal ratios": (q.copy(), q)}
    p = q * np.exp2(rng.uniform(-300, 300, V))
    out["600 octaves"] = (p / p.sum(), q)
    p, qz = rng.dirichlet(np.ones(V)), q.copy()
    p[rng.random(V) < 0.3] = 0.0
    qz[rng.random(V) < 0.3] = 0.0
    out["zeros in p and q"] = (p / p.sum(), qz / qz.sum())
    p, qt = rng.dirichlet(np.ones(V)), q.copy()
    p[rng.random(V) < 0.2] = 1e-300
    qt[rng.random(V) < 0.2] = 1e-300
    out["1e-300 masses"] = (p / p.sum(), qt / qt.sum())
    p = q * rng.choice([0.25, 1.0, 4.0], V)
    out["ties (3 ratios)"] = (p / p.sum(), q)
    qa = np.full(V, 1e-12 / V)
    qa[0] = 1.0
    out["near point mass"] = (rng.dirichlet(np.ones(V)), qa / qa.sum())
    for share, name in ((0.35, "dense bucket, scanned"), (0.6, "dense bucket, sorted")):
        out[name] = dense_bucket(V, share, rng)
    return out


def dense_bucket(V: int, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A share of the tokens in one bucket (ratios near 0.8, q mass 0.02) holding the optimum
    of with replacement, n = 2 (p/q crosses 2 q(H) there); the rest before (ratio ~0, q mass
    0.39) and after (ratios 1.5..1.85).  Above MAX_FRACTION the row is sorted instead."""
    inner = int(share * V)
    outer = (V - inner) // 2
    sizes = (outer, inner, V - inner - outer)
    blocks = [(0.39, 1e-6, 2e-6), (0.02, 0.79, 0.81), (0.59, 1.5, 1.85)]
    qs, ps = [], []
    for size, (mass, lo, hi) in zip(sizes, blocks, strict=True):
        qb = rng.dirichlet(np.ones(size)) * mass
        qs.append(qb)
        ps.append(qb * rng.uniform(lo, hi, size))
    perm = rng.permutation(V)
    q, p = np.concatenate(qs)[perm], np.concatenate(ps)[perm]
    return p / p.sum(), q / q.sum()


def _unfused(f, *args, **kwargs):
    """``f`` with the fused loops of the bucket path off (numpy's route)."""
    with _fused.disabled():
        return f(*args, **kwargs)


def _one_width(counts, fallback, V):
    """Phase 2 as wide as the most crowded row kept (before ``bucket.phase2_capacity``)."""
    fallback = np.asarray(fallback, dtype=bool)
    return int(counts[~fallback].max(initial=0)), fallback.copy()


def crowded(B: int, t_sort: float) -> None:
    """Section 4b: a batch whose row 0 is crowded (35% of its tokens survive the bounds)."""
    from mdsd_ot.fast import bucket

    P, Q = synthetic_batch(B, V_BIG, 0.7, 3)
    P[0], Q[0] = dense_bucket(V_BIG, 0.35, np.random.default_rng(5))
    backends = [("numpy", P, Q)]
    try:
        import torch

        backends.append(("torch CPU", torch.from_numpy(P), torch.from_numpy(Q)))
    except ImportError:
        pass
    print(f"\n4b. batched B = {B}, row 0 crowded (35% of its tokens survive the bounds): cost per")
    print("    row / np.argsort of one row; 'one width': phase 2 as wide as the most crowded row")
    print("    (numpy with numba solves the rows one by one, so it has no shared phase 2)")
    head = f"{'new':>6} {'one width':>10} {'sort':>6} {'new/width':>10}"
    print(f"  {'':>9} {'scheme':>20} {'n':>2} {head}")
    real = bucket.phase2_capacity
    runs = (("new", "auto", real), ("width", "auto", _one_width), ("sort", "sort", real))
    for name, Pb, Qb in backends:
        for s, n in (("with", 2), ("without", 3), ("conditional-poisson", 2)):

            def call(path, Pb=Pb, Qb=Qb, s=s, n=n):
                return alpha_star(Pb, Qb, n=n, scheme=s, path=path)

            t = {}
            for label, path, cap in runs:
                bucket.phase2_capacity = cap
                try:
                    t[label] = min(_time(lambda p=path: call(p)) for _ in range(2)) / B / t_sort
                finally:
                    bucket.phase2_capacity = real
            ratio = t["new"] / t["width"]
            cells = f"{t['new']:6.2f} {t['width']:10.2f} {t['sort']:6.2f} {ratio:10.2f}"
            print(f"  {name:>9} {s:>20} {n:>2} {cells}")


def shard_rows(path: str | None, max_rows: int) -> tuple[str, np.ndarray, np.ndarray]:
    """(label, P, Q): the first ``max_rows`` rows of the shards at ``path`` (read and validated by
    :func:`mdsd_ot.io.read_shards`), or of the built-in real-text study when ``path`` is None."""
    from mdsd_ot.io import read_shards

    if max_rows < 1:
        raise SystemExit(f"--max-rows: must be >= 1, got {max_rows}")
    if path is None:
        from mdsd_ot.reports.demo import demo_rows

        rows = demo_rows(max_rows)
        label = "the built-in study (byte n-grams of the standard library's docs, V = 256)"
        return label, rows["p"], rows["q"]
    Ps, Qs, m = [], [], 0
    for shard in read_shards(path):  # errors name the file, the key and the row
        for _, block in shard.chunks():
            take = min(max_rows - m, len(block["p"]))
            Ps.append(np.asarray(block["p"][:take], np.float64))
            Qs.append(np.asarray(block["q"][:take], np.float64))
            m += take
            if m == max_rows:
                break
        if m == max_rows:
            break
    return f"shards at {path}", np.concatenate(Ps), np.concatenate(Qs)


def real_text(path: str | None, max_rows: int) -> None:
    """Section 5: the shipped path (``auto``), the bucket path forced (``bucket``) and the sorting
    path (``sort``) on real-text rows, batched, with the largest difference of α* from ``sort``
    (each law's rows in one call)."""
    label, Ps, Qs = shard_rows(path, max_rows)
    B, V = Ps.shape
    route = (
        "bucket-and-bound" if V >= BUCKET_MIN_V else f"the sort (V < BUCKET_MIN_V = {BUCKET_MIN_V})"
    )
    print(f"\n5. real-text rows: {label}: {B} rows, V = {V:,} (one call per law, all rows);")
    print(f"   'auto' takes {route}; ms per row; 'max |Δα*|': bucket against sort")
    print(f"  {'scheme':>20} {'n':>2} {'auto':>8} {'bucket':>8} {'sort':>8} {'bucket/sort':>12} "
          f"{'max |Δα*|':>10}")  # fmt: skip
    for s, n, _ in CASES:
        t, a = {}, {}
        for path_ in ("auto", "bucket", "sort"):
            call = lambda s=s, n=n, r=path_: alpha_star(Ps, Qs, n=n, scheme=s, path=r)  # noqa: E731
            t[path_] = min(_time(call) for _ in range(3)) / B * 1e3
            a[path_] = np.asarray(call())
        diff = float(np.max(np.abs(a["bucket"] - a["sort"])))
        flag = "" if diff <= 1e-12 else "  DIFF > 1e-12"
        print(
            f"  {s:>20} {n:>2} {t['auto']:>8.3f} {t['bucket']:>8.3f} {t['sort']:>8.3f} "
            f"{t['bucket'] / t['sort']:>12.2f} {diff:>10.1e}{flag}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, temperatures, cases")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument(
        "--shard",
        default=None,
        help="a shard (.safetensors or .npz, docs/shards.md) or a directory of them; default: "
        "the built-in real-text study (mdsd_ot.reports.demo)",
    )
    ap.add_argument("--max-rows", type=int, default=1024, help="rows read from --shard (1024)")
    args = ap.parse_args()
    R = args.repeats or (5 if args.quick else 11)
    temps = (0.7,) if args.quick else (0.5, 0.7, 1.0, 1.5)

    p0, q0 = synthetic_pair(V_BIG, 0.7, 1)
    key = p0 / q0
    base = lambda: np.argsort(key)  # noqa: E731
    t_sort = min(_time(base) for _ in range(R))
    print(f"V = {V_BIG:,}; np.argsort of V float64 ratios: {t_sort * 1e3:.2f} ms (best of {R})")
    print("ratios: median over rounds of time / np.argsort timed in the same round\n")

    jit = "numba: on" if _fused.enabled() else "numba: not installed or MDSD_OT_JIT=0"
    print("1. synthetic family, one row: new (bucket-and-bound) vs old (sort), public and core;")
    print(f"   'numpy': the new path with the fused loops off ({jit})")
    head = (
        f"  {'T':>4} {'scheme':>20} {'n':>2} {'new':>6} {'old':>6} {'core new':>9} {'core old':>9}"
    )
    print(head + f" {'numpy':>6} {'target':>7} {'':>4} {'alone':>7}")
    for T in temps:
        p, q = synthetic_pair(V_BIG, T, 1)
        P1, Q1 = p[None, :], q[None, :]
        for s, n, target in CASES:
            r = ratios(
                {
                    "new": lambda s=s, n=n, p=p, q=q: alpha_star(p, q, n=n, scheme=s),
                    "old": lambda s=s, n=n, p=p, q=q: alpha_star(p, q, n=n, scheme=s, path="sort"),
                    "core new": lambda s=s, n=n, P=P1, Q=Q1: solve_rows(P, Q, n, s),
                    "core old": lambda s=s, n=n, P=P1, Q=Q1: solve_rows(P, Q, n, s, path="sort"),
                    "numpy": lambda s=s, n=n, p=p, q=q: _unfused(alpha_star, p, q, n=n, scheme=s),
                },
                base,
                R if n <= 2 or not args.quick else 3,
            )
            alone = ratios(
                {"new": lambda s=s, n=n, p=p, q=q: alpha_star(p, q, n=n, scheme=s)},
                base,
                R if n <= 2 or not args.quick else 3,
            )["new"]
            ok = "ok" if r["new"] <= target else "OVER"
            ok_alone = "ok" if alone <= target else "OVER"
            print(
                f"  {T:>4} {s:>20} {n:>2} {r['new']:>5.2f}x {r['old']:>5.2f}x "
                f"{r['core new']:>8.2f}x {r['core old']:>8.2f}x {r['numpy']:>5.2f}x "
                f"{target:>6g}x {ok:>4} {alone:>6.2f}x {ok_alone}"
            )

    print("\n2. adversarial rows (V = 152,064): public new / old (worst case must stay <= 1.2)")
    print(f"  {'case':>22} {'scheme':>20} {'n':>2} {'new':>6} {'old':>6} {'new/old':>8}")
    adv = adversarial(V_BIG)
    names = list(adv)[:3] if args.quick else list(adv)
    for name in names:
        p, q = adv[name]
        for s, n in (("with", 2), ("without", 2), ("conditional-poisson", 2), ("without", 3)):
            r = ratios(
                {
                    "new": lambda s=s, n=n, p=p, q=q: alpha_star(p, q, n=n, scheme=s),
                    "old": lambda s=s, n=n, p=p, q=q: alpha_star(p, q, n=n, scheme=s, path="sort"),
                },
                base,
                R,
            )
            a_new = alpha_star(p, q, n=n, scheme=s)
            a_old = alpha_star(p, q, n=n, scheme=s, path="sort")
            same = "same α*" if abs(a_new - a_old) <= 1e-12 else f"DIFF {a_new - a_old:+.1e}"
            print(
                f"  {name:>22} {s:>20} {n:>2} {r['new']:>5.2f}x {r['old']:>5.2f}x "
                f"{r['new'] / r['old']:>7.2f}  {same}"
            )

    laws = [("with", 2), ("without", 2), ("conditional-poisson", 2)]
    print("\n3. three laws of one row at once (alpha_star_laws; issue 12 target <= 2x):")
    for T in temps[:2]:
        p, q = synthetic_pair(V_BIG, T, 1)
        r = ratios(
            {
                "new": lambda p=p, q=q: alpha_star_laws(p, q, laws),
                "old": lambda p=p, q=q: alpha_star_laws(p, q, laws, path="sort"),
            },
            base,
            R,
        )
        ok = "ok" if r["new"] <= 2.0 else "OVER"
        print(
            f"  T={T}: {', '.join(f'{s} n={n}' for s, n in laws)}: new {r['new']:.2f}x, "
            f"old {r['old']:.2f}x  {ok}"
        )

    B = 16 if args.quick else 64
    print(f"\n4. batched B = {B} (T = 0.7): public new, cost per row / np.argsort of one row")
    P, Q = synthetic_batch(B, V_BIG, 0.7, 2)
    for s, n, _ in CASES[:6]:
        t = min(_time(lambda s=s, n=n: alpha_star(P, Q, n=n, scheme=s)) for _ in range(2))
        print(f"  {s:>20} n={n}: {t / B / t_sort:.2f}x per row ({t / B * 1e3:.2f} ms)")

    crowded(B, t_sort)

    real_text(args.shard, args.max_rows)


if __name__ == "__main__":
    main()
