"""Benchmark the optimal verifier (issue 11): the chain construction at real vocabularies.

Prints, measured in this run on this machine (say how loaded it is when you quote the figures):

1. per position at V = 152,064 (synthetic family, T = 1, noise 1), n = 2 and 4, for the i.i.d.,
   sequential and conditional-Poisson laws: the time of *setup + one draw*
   (``build_plan`` + ``sample_plan`` of one draft tuple) divided by the time of one
   ``np.argsort`` of V float64 values (issue target: <= 3), with the construction, its acceptance,
   the fast α* and the certified shortfall ε;
2. batched positions, B = 64: per-row cost of ``build_plans`` + ``sample_plans`` (one batched
   argsort, one draw per row) divided by the single-row cost (target <= 1);
3. the set-reduced construction (``verifiers.get("optimal", law, method="reduced")``, a max-flow
   over the draft sets) against the chain at V = 500 and 2,000, i.i.d. drafts, n = 2.

Timing: the argsort and the measured call alternate, each repeated ``--reps`` times; the ratio is
the median of the per-repetition ratios of wall-clock times and of process CPU times (the
latter is less sensitive to a shared, loaded machine); the minima are printed too.  The set-reduced construction is timed once (it takes seconds).

Usage::

    python benchmarks/optimal_verifier.py            # full run (a minute or two)
    python benchmarks/optimal_verifier.py --quick    # fewer repetitions, V = 500 reduced only
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from mdsd_ot import drafts as D
from mdsd_ot.synthetic import synthetic_batch, synthetic_pair
from mdsd_ot.verifiers import get
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal, build_plan, build_plans, construction_for
from mdsd_ot.verifiers.chain.sample import sample_plan, sample_plans

V_BIG = 152_064
LAWS = (D.WithReplacement, D.WithoutReplacement, D.ConditionalPoisson)


def _paired(f, reps: int, x: np.ndarray) -> tuple[float, float, float, float]:
    """(median wall-clock ratio f/argsort, median CPU-time ratio, min f s, min argsort s),
    alternating the two calls."""
    ratios, cpu, tf, ts = [], [], [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        np.argsort(x)
        t1, c1 = time.perf_counter(), time.process_time()
        f()
        t2, c2 = time.perf_counter(), time.process_time()
        ts.append(t1 - t0)
        tf.append(t2 - t1)
        ratios.append((t2 - t1) / (t1 - t0))
        cpu.append((c2 - c1) / max(c1 - c0, 1e-9))
    return float(np.median(ratios)), float(np.median(cpu)), min(tf), min(ts)


def per_position(reps: int) -> None:
    print(f"\n1. per position, V = {V_BIG}: setup + one draw / one np.argsort (target <= 3)")
    x = np.random.default_rng(0).random(V_BIG)
    p, q = synthetic_pair(V_BIG, 1.0, np.random.default_rng(1), noise=1.0)
    g = np.random.default_rng(2)
    for n in (2, 4):
        for cls in LAWS:
            law = cls(q, n)
            con = construction_for(law)
            t = sample_drafts(law, g, 1)

            def run(law=law, con=con, t=t, n=n):
                sample_plan(build_plan(p, law.q, n, con), t, g)

            ratio, cpu, tf, ts = _paired(run, reps, x)
            cert = ChainOptimal(law).certificate(p)
            print(
                f"  n={n} {cls.__name__:19s} {con:8s} ratio {ratio:5.2f} (cpu {cpu:4.2f}; "
                f"min {tf * 1e3:6.1f} ms vs argsort {ts * 1e3:5.1f} ms)  "
                f"acceptance {cert['acceptance']:.9f}  alpha* {cert['alpha_star']:.9f}  "
                f"eps {cert['eps']:.2e}  law error <= {cert['law_error']:.1e}"
            )


def batched(reps: int) -> None:
    print("\n2. batched B = 64, V = 152,064, i.i.d. n = 2: per-row cost / single-row (target <= 1)")
    B, n = 64, 2
    P, Q = synthetic_batch(B, V_BIG, 1.0, np.random.default_rng(3), noise=1.0)
    g = np.random.default_rng(4)
    t = np.stack([D.WithReplacement(Q[b], n).sample(g, 1)[0] for b in range(B)])
    single, batch = [], []
    for _ in range(max(1, reps // 3)):
        t0 = time.perf_counter()
        for b in range(4):
            sample_plan(build_plan(P[b], Q[b], n, "relabel"), t[b : b + 1], g)
        t1 = time.perf_counter()
        sample_plans(build_plans(P, Q, n, "relabel"), t, g)
        t2 = time.perf_counter()
        single.append((t1 - t0) / 4)
        batch.append((t2 - t1) / B)
    r = float(np.median(np.array(batch) / np.array(single)))
    print(
        f"  per row: batched {min(batch) * 1e3:.1f} ms, single {min(single) * 1e3:.1f} ms (min); "
        f"ratio {r:.2f} (median)"
    )


def reduced(sizes: tuple[int, ...]) -> None:
    print("\n3. set-reduced (max-flow over draft sets) vs chain, i.i.d. n = 2: setup + 1000 draws")
    for V in sizes:
        p, q = synthetic_pair(V, 1.0, np.random.default_rng(5), noise=1.0)
        law = D.WithReplacement(q, 2)
        g = np.random.default_rng(6)
        t = sample_drafts(law, g, 1000)
        out = {}
        for method in ("chain", "reduced"):
            v = get("optimal", law, method=method)
            t0 = time.perf_counter()
            v.sample(p, t, g)
            out[method] = time.perf_counter() - t0
        acc_chain = ChainOptimal(law).plan(p).acceptance
        print(
            f"  V={V:5d}: reduced {out['reduced']:8.3f} s, chain {out['chain'] * 1e3:7.2f} ms "
            f"(x{out['reduced'] / out['chain']:.0f}); chain acceptance {acc_chain:.9f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    reps = 5 if a.quick else a.reps
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}, numpy {np.__version__}"
    )
    per_position(reps)
    batched(reps)
    reduced((500,) if a.quick else (500, 2000))


if __name__ == "__main__":
    main()
