"""Benchmark the optimal verifier (issue 11): the chain constructions at real vocabularies.

Prints, measured in this run on this machine (say how loaded it is when you quote the figures):

1. per position at V = 152,064 (synthetic family, T = 1, noise 1), n = 2 and 4, for the i.i.d.,
   sequential and conditional-Poisson laws: the time of *setup + one draw*
   (``build_plan`` + ``sample_plan`` of one draft tuple; "pooled": the same through
   ``draw_rows`` on one row, whose plans reuse per-thread buffers) divided by the time of one
   ``np.argsort`` of V float64 values (issue target: <= 3), with the construction, the certified
   shortfall ε = α* − acceptance and the law's error bound.  Each tree is measured twice, in
   fresh worker processes: as started ("fresh allocator") and after one free of a 32 MB block
   ("warm allocator").  glibc's malloc raises its mmap and trim thresholds the first time a
   large block is freed; until then every freed V-size array of a plan goes back to the kernel
   and the next position pays page faults for it (about 1,400 per position at V = 152,064,
   several microseconds each on this virtual machine).  A serving process that has loaded a
   model or freed one batch of logits is in the warm state.  With ``--baseline REV`` the same
   is measured for the chain package of git revision REV (extracted to a temporary directory and
   run in alternating subprocesses, so that old and new see the same machine load);
2. batched positions, B = 64, i.i.d. n = 2: the per-row cost of ``draw_rows`` (one plan in
   memory at a time; what ``ChainOptimal.sample_rows`` calls) and of ``build_plans`` +
   ``sample_plans`` (all B plans kept) divided by the cost of ``build_plan`` + ``sample_plan``
   row by row on the
   *same* 64 rows (target <= 1), and divided by the cost of one row that stays in cache;
2b. the array route, ``verify_rows`` (all rows at once, numpy and CPU torch; i.i.d. n = 2 with
   B = 64, conditional Poisson n = 4 (``cp-pair``) with B = 16): per-row cost against
   ``draw_rows`` and one ``np.argsort`` of V (medians of the calls, the fastest argsort of the
   run);
3. the set-reduced construction (a max-flow over the draft sets) against the chain at V = 500
   and 2,000, i.i.d. drafts, n = 2;
4. (``--accuracy``) the certified ε, the law's error bound, the fixed-point iterations and the
   setup time of the swap constructions (sequential n = 2, 3, 4; conditional Poisson n = 3, 4)
   at V = 2,000 and 152,064 and temperatures 0.5, 1, 2;
5. (``--seq2 SEEDS``) the ``seq2`` construction (two sequential drafts, the default for them):
   ε = α* − acceptance, its shortfall Σ(s − T)^+, the region rounds, how often it falls back to
   ``seq-swap``, the law's error bound and the setup time, over SEEDS seeds and noise 0.5, 1, 2
   of the synthetic family at V = 2,000 and 152,064 and temperatures 0.5, 1, 2;
6. (``--peaked``) peaked rows: the built-in demo's 64 real-text rows (V = 256), sequential
   n = 3 and 4, ``seq-swap`` alone against the default ``seq-best`` (rows with ε > 1e-6, the
   largest ε, the plan taken, the time of the 64 plans), and rows of the synthetic family whose
   heaviest draft token is set to q = 0.8 (p = 0.6) and the second to q = 0.1 (V = 2,000 seeds
   0-4, V = 152,064 seed 0; n = 3, 4; conditional Poisson and sequential): ε, the retries of
   the design (``info["retry"]``: the run kept, first, scaled, unscaled or damped, and the
   shortfall of each other run), the laws of the run kept and the setup time; then two sweeps,
   (c) 30 such rows at V = 2,000 (heaviest q 0.6 or 0.8, its p 0.3, 0.6 or 0.95, seeds 0-4)
   (d) the synthetic family at T = 0.3 (V = 152,064; ``--quick``: 2,000; seeds 0-5) and (e) at
   V = 300 (T = 0.3 and 0.5, seeds 0-11), each at n = 3 and 4 for both laws: rows with ε > 1e-6, the largest ε, the laws computed in all
   (retries included) and the runs kept.

7. (``--point-mass``) drafts almost sure of one token: 1 - q_max = 1e-8 ... 1e-300 spread at
   random over the other tokens (V = 2,000), sequential and conditional Poisson, n = 3 and 4:
   the construction, ε, the law's bound and the setup time.
8. (``--pair``) the ``cp-pair`` design alone (conditional Poisson, n = 3, 4, 8): on the demo's
   real-text rows and the synthetic family (V = 2,000 and 152,064, T = 0.3-2) the rows where
   it fits (and how many of those plans have no relay), the rows where its scaled hand-overs
   are not a rule (those get ``cp-swap``), the largest ε and law bound and the median design
   time.
9. (``--seq-pair``) a study, not a construction: the separable design of section 8 on the
   *sequential* kernel M(y, x) = Pr[top(S) = y, x in S], formed densely from V runs of the
   fast solver (O(V^2); proofs/optimal_verifier.md §12), on the demo's rows (V = 256) and the
   synthetic family at V = 150 (T = 0.3-2, 4 seeds), n = 3, 4, 6: the rows where it fits, why
   the others do not, the largest ε where it fits.
10. (``--confident``) a confident target against a heavy draft token: the draft puts mass
   q_top on one token and the target more, p_top > q_top (q_top / p_top = 0.7 / 0.8, 0.9 /
   0.95, 0.99 / 0.995; the rest log-normal, the target's a noisy copy of the draft's), the
   shape of a small draft model against a large one, at V = 152,064, conditional Poisson
   n = 3 and 4, seeds 1-2: the plan with relays (the heaviest receiver also hands over;
   proofs/optimal_verifier.md §11) and without (the ``cp-pair`` design before relays (2026-12-07),
   so ``cp-swap`` where it is not a rule), each with its ε and setup + one draw in argsorts.
11. (``--seq-pair-fits``) the ``seq-pair`` design alone (sequential drafts, n = 3, 4, 8; the
   thinned pair rule, proofs/optimal_verifier.md §12): section 8's table on the same rows,
   the time including the certified sequential Q on every prefix.

Timing: the argsort and the measured call alternate; the ratio is the median of the
per-repetition ratios of wall-clock times (CPU-time ratios too, less sensitive to a shared,
loaded machine); the minima are printed as well.

Usage::

    python benchmarks/optimal_verifier.py                  # sections 1-3
    python benchmarks/optimal_verifier.py --baseline f2d6bc5 --accuracy
    python benchmarks/optimal_verifier.py --quick          # fewer repetitions, V = 500 reduced only
    python benchmarks/optimal_verifier.py --seq2 10        # sections 1-3 and 5
    python benchmarks/optimal_verifier.py --peaked --only  # section 6 alone
    python benchmarks/optimal_verifier.py --point-mass --only  # section 7 alone
    python benchmarks/optimal_verifier.py --pair --only        # section 8 alone
    python benchmarks/optimal_verifier.py --seq-pair --only    # section 9 alone
    python benchmarks/optimal_verifier.py --confident --only   # section 10 alone
    python benchmarks/optimal_verifier.py --seq-pair-fits --only  # section 11 alone
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

V_BIG = 152_064
ROOT = Path(__file__).resolve().parents[1]


def _paired(f, reps: int, x: np.ndarray) -> dict[str, float]:
    """Median wall and CPU ratios f / argsort, alternating the two calls; minima in ms."""
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
    return {"ratio": float(np.median(ratios)), "cpu": float(np.median(cpu)),
            "ms": min(tf) * 1e3, "argsort_ms": min(ts) * 1e3}  # fmt: skip


def worker(reps: int, warm: bool) -> list[dict]:
    """Section 1 in this process's ``mdsd_ot`` (the current tree or a baseline); ``warm``: free
    one 32 MB block first (glibc then keeps freed V-size arrays instead of unmapping them)."""
    if warm:
        block = np.empty(4_000_000)  # 32 MB: above the initial mmap threshold, below its cap
        del block
    from mdsd_ot import drafts as D
    from mdsd_ot.fast import alpha_star
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers._draws import sample_drafts
    from mdsd_ot.verifiers.chain import build_plan, construction_for
    from mdsd_ot.verifiers.chain.sample import sample_plan

    x = np.random.default_rng(0).random(V_BIG)
    p, q = synthetic_pair(V_BIG, 1.0, np.random.default_rng(1), noise=1.0)
    g = np.random.default_rng(2)
    out = []
    for n in (2, 4):
        for cls in (D.WithReplacement, D.WithoutReplacement, D.ConditionalPoisson):
            law = cls(q, n)
            con = construction_for(law)
            t = sample_drafts(law, g, 1)
            # one full call first: it loads (or compiles) the plan's and the draw's kernels,
            # which a single timed repetition would otherwise include
            sample_plan(build_plan(p, law.q, n, con), t, g)
            t0 = time.perf_counter()
            plan = build_plan(p, law.q, n, con)
            once = time.perf_counter() - t0
            r = max(1, reps if once < 0.5 else 1)

            def run(law=law, con=con, t=t, n=n):
                sample_plan(build_plan(p, law.q, n, con), t, g)

            res = _paired(run, r, x)
            try:  # draw_rows (pooled plans) exists from this change on; a baseline may lack it
                from mdsd_ot.verifiers.chain import draw_rows

                def pooled(P1=p[None, :], Q1=law.q[None, :], con=con, t=t, n=n):
                    draw_rows(P1, Q1, n, con, t, g)

                res["pooled"] = _paired(pooled, r, x)["ratio"]
            except ImportError:
                res["pooled"] = float("nan")
            a = float(alpha_star(p, law.q, n=n, scheme=law.scheme))
            res.update(law=cls.__name__, n=n, construction=plan.construction,
                       eps=max(0.0, a - plan.acceptance), law_error=float(plan.law_error))  # fmt: skip
            out.append(res)
    return out


def _baseline_tree(rev: str) -> str:
    tmp = tempfile.mkdtemp(prefix="mdsd_base_")
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "mdsd_ot"], check=True,
                          capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
    return tmp


def _run_worker(path: str, reps: int, warm: bool) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": path}
    cmd = [sys.executable, __file__, "--worker", "--reps", str(reps)] + (["--warm"] if warm else [])
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def per_position(reps: int, baseline: str | None, rounds: int) -> None:
    print(f"\n1. per position, V = {V_BIG}: setup + one draw / one np.argsort (target <= 3)")
    trees = [("new", str(ROOT))] + (
        [("old " + baseline, _baseline_tree(baseline))] if baseline else []
    )
    trees = [
        (f"{name}, {state} allocator", path, state == "warm")
        for name, path in trees
        for state in ("fresh", "warm")
    ]
    runs: dict[str, list[list[dict]]] = {name: [] for name, _, _ in trees}
    for _ in range(rounds):  # alternate old and new: the same machine load for both
        for name, path, warm in trees:
            runs[name].append(_run_worker(path, reps, warm))
    for name, _, _ in trees:
        print(f"  [{name}]")
        for k, row in enumerate(runs[name][0]):
            ratio = float(np.median([r[k]["ratio"] for r in runs[name]]))
            cpu = float(np.median([r[k]["cpu"] for r in runs[name]]))
            ms = min(r[k]["ms"] for r in runs[name])
            sort_ms = min(r[k]["argsort_ms"] for r in runs[name])
            pooled = float(np.median([r[k]["pooled"] for r in runs[name]]))
            print(f"  n={row['n']} {row['law']:19s} {row['construction']:8s} ratio {ratio:7.2f} "
                  f"pooled {pooled:7.2f} "
                  f"(cpu {cpu:7.2f}; min {ms:9.1f} ms vs argsort {sort_ms:5.1f} ms)  "
                  f"eps {row['eps']:.1e}  law error <= {row['law_error']:.1e}")  # fmt: skip


def batched(reps: int) -> None:
    from mdsd_ot.synthetic import synthetic_batch
    from mdsd_ot.verifiers.chain import build_plan, build_plans, draw_rows
    from mdsd_ot.verifiers.chain.sample import sample_plan, sample_plans

    print("\n2. batched B = 64, V = 152,064, i.i.d. n = 2: per-row cost (target <= 1)")
    B, n = 64, 2
    P, Q = synthetic_batch(B, V_BIG, 1.0, np.random.default_rng(3), noise=1.0)
    g = np.random.default_rng(4)
    from mdsd_ot import drafts as D

    t = np.stack([D.WithReplacement(Q[b], n).sample(g, 1)[0] for b in range(B)])
    rows, batch, kept, hot = [], [], [], []
    for _ in range(max(1, reps // 3)):
        t0 = time.perf_counter()
        for b in range(B):  # the same 64 rows, one call each
            sample_plan(build_plan(P[b], Q[b], n, "relabel"), t[b : b + 1], g)
        t1 = time.perf_counter()
        draw_rows(P, Q, n, "relabel", t, g)
        t2 = time.perf_counter()
        sample_plans(build_plans(P, Q, n, "relabel"), t, g)
        t3 = time.perf_counter()
        for _ in range(4):  # one row kept in cache
            sample_plan(build_plan(P[0], Q[0], n, "relabel"), t[:1], g)
        t4 = time.perf_counter()
        rows.append((t1 - t0) / B)
        batch.append((t2 - t1) / B)
        kept.append((t3 - t2) / B)
        hot.append((t4 - t3) / 4)
    r = float(np.median(np.array(batch) / np.array(rows)))
    rk = float(np.median(np.array(kept) / np.array(rows)))
    rh = float(np.median(np.array(batch) / np.array(hot)))
    print(f"  per row: draw_rows {min(batch) * 1e3:.1f} ms, build_plans + sample_plans "
          f"{min(kept) * 1e3:.1f} ms, the same rows one by one {min(rows) * 1e3:.1f} ms, one "
          f"cached row {min(hot) * 1e3:.1f} ms; draw_rows / one by one {r:.2f}, all plans kept / "
          f"one by one {rk:.2f}, draw_rows / cached row {rh:.2f} (medians)")  # fmt: skip


def batched_array(reps: int) -> None:
    """Section 2b: the array route (``verify_rows``) on numpy and on CPU torch against the
    numpy route (``draw_rows``): i.i.d. n = 2 (``relabel``, B = 64) and conditional Poisson
    n = 4 (``cp-pair``, B = 16)."""
    from mdsd_ot import drafts as D
    from mdsd_ot.synthetic import synthetic_batch
    from mdsd_ot.verifiers.chain import draw_rows
    from mdsd_ot.verifiers.chain.batched import verify_rows

    try:
        import torch
    except ImportError:
        torch = None
    x = np.random.default_rng(0).random(V_BIG)
    for con, n, law, B in (("relabel", 2, D.WithReplacement, 64),
                           ("cp-pair", 4, D.ConditionalPoisson, 16)):  # fmt: skip
        print(f"\n2b. the array route (verify_rows: all rows at once), {con}, n = {n}, B = {B}, "
              f"V = {V_BIG:,}")  # fmt: skip
        P, Q = synthetic_batch(B, V_BIG, 1.0, np.random.default_rng(3), noise=1.0)
        g = np.random.default_rng(4)
        t = np.stack([law(Q[b], n).sample(g, 1)[0] for b in range(B)])
        fns = {
            "numpy": lambda P=P, Q=Q, t=t, n=n, c=con, g=g: verify_rows(P, Q, n, t, g, c),
            "draw_rows": lambda P=P, Q=Q, t=t, n=n, c=con, g=g: draw_rows(P, Q, n, c, t, g),
        }
        if torch is not None:
            Pt, Qt, tt = torch.tensor(P), torch.tensor(Q), torch.tensor(t)
            gen = torch.Generator().manual_seed(0)
            fns["torch (CPU)"] = lambda Pt=Pt, Qt=Qt, tt=tt, n=n, c=con, gen=gen: verify_rows(
                Pt, Qt, n, tt, gen, c
            )
            print(f"  torch {torch.__version__}, {torch.get_num_threads()} threads")
        else:
            print("  (torch not installed: numpy only)")
        times = {k: [] for k in fns}
        sorts = []
        for f in fns.values():
            f()
        for _ in range(max(2, reps // 3)):
            for k, f in fns.items():
                t0 = time.perf_counter()
                np.argsort(x)
                sorts.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                f()
                times[k].append((time.perf_counter() - t0) / B)
        # the fastest argsort of the run: one right after a (B, V) call finds the caches cold,
        # and after torch its idle threads may still spin on the two cores
        s = float(np.min(sorts))
        for k, v in times.items():
            m = float(np.median(v))
            print(f"  {k:>12}: {m * 1e3:.2f} ms per row = {m / s:.2f}x one np.argsort of V "
                  f"({s * 1e3:.2f} ms)")  # fmt: skip


def reduced(sizes: tuple[int, ...]) -> None:
    from mdsd_ot import drafts as D
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers import get
    from mdsd_ot.verifiers._draws import sample_drafts
    from mdsd_ot.verifiers.chain import ChainOptimal

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
        acc = ChainOptimal(law).plan(p).acceptance
        print(f"  V={V:5d}: reduced {out['reduced']:8.3f} s, chain {out['chain'] * 1e3:7.2f} ms "
              f"(x{out['reduced'] / out['chain']:.0f}); chain acceptance {acc:.9f}")  # fmt: skip


def accuracy(sizes: tuple[int, ...]) -> None:
    from mdsd_ot.fast import alpha_star
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers.chain import build_plan

    print("\n4. certified shortfall of the swap constructions (synthetic family, noise 1, seed 1)")
    cases = [("seq-swap", "without", n) for n in (2, 3, 4)]
    cases += [("cp-swap", "conditional-poisson", n) for n in (3, 4)]
    for V in sizes:
        for T in (0.5, 1.0, 2.0):
            p, q = synthetic_pair(V, T, np.random.default_rng(1), noise=1.0)
            for con, scheme, n in cases:
                t0 = time.perf_counter()
                plan = build_plan(p, q, n, con)
                dt = time.perf_counter() - t0
                eps = float(alpha_star(p, q, n=n, scheme=scheme)) - plan.acceptance
                print(f"  V={V:6d} T={T:3.1f} {con:8s} n={n}: eps {max(eps, 0.0):.1e}  law error "
                      f"<= {plan.law_error:.1e}  iterations {plan.info['iterations']:2d}  "
                      f"setup {dt:7.2f} s", flush=True)  # fmt: skip


def seq2_accuracy(sizes: tuple[int, ...], seeds: int) -> None:
    """Section 5: the seq2 construction (two sequential drafts) on the synthetic family."""
    from mdsd_ot.fast import alpha_star
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers.chain import build_plan

    print("\n5. seq2 (sequential n = 2): eps = alpha* - acceptance, region rounds, fallback")
    for V in sizes:
        for T in (0.5, 1.0, 2.0):
            eps, rounds, short, falls, ms, err = [], [], [], 0, [], []
            for seed in range(1, seeds + 1):
                for noise in (0.5, 1.0, 2.0):
                    p, q = synthetic_pair(V, T, np.random.default_rng(seed), noise=noise)
                    t0 = time.perf_counter()
                    plan = build_plan(p, q, 2, "seq2")
                    ms.append((time.perf_counter() - t0) * 1e3)
                    a = float(alpha_star(p, q, n=2, scheme="without"))
                    eps.append(max(0.0, a - plan.acceptance))
                    err.append(plan.law_error)
                    if plan.construction != "seq2":
                        falls += 1
                        rounds.append(plan.info["fallback"]["rounds"])
                        short.append(plan.info["fallback"]["shortfall"])
                    else:
                        rounds.append(plan.info["rounds"])
                        short.append(plan.info["shortfall"])
            print(f"  V={V:6d} T={T:3.1f}: {len(eps)} positions (seeds 1-{seeds}, noise 0.5/1/2)"
                  f"  eps max {max(eps):.1e} median {np.median(eps):.1e}  shortfall max "
                  f"{max(short):.1e}  rounds <= {max(rounds)}  fallback {falls}  law error <= "
                  f"{max(err):.1e}  setup median {np.median(ms):.1f} ms", flush=True)  # fmt: skip


def _heavy_row(
    V: int, seed: int, top: float = 0.8, p_top: float = 0.6
) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic row with its heaviest draft token at q = ``top`` (p = ``p_top``), the second
    at q = 0.1."""
    from mdsd_ot.synthetic import synthetic_pair

    p, q = synthetic_pair(V, 1.0, np.random.default_rng(seed), noise=1.0)
    i, j = np.argsort(q)[::-1][:2]
    q = q * round(1.0 - top - 0.1, 12) / (q.sum() - q[i] - q[j])  # rounded: 0.1, not 0.1 - 2^-56
    q[i], q[j] = top, 0.1
    p = p * round(1.0 - p_top, 12) / (p.sum() - p[i])
    p[i] = p_top
    return p / p.sum(), q / q.sum()


def _laws(plan) -> int:
    """Laws computed for a swap plan: its own run's and those of the retries it records."""
    retry = plan.info.get("retry") or {}
    rest = sum(v["iterations"] for k, v in retry.items() if k != "kept")
    return int(plan.info.get("iterations") or 0) + rest


def _sweep(rows, label: str) -> None:
    """ε = α* − acceptance of cp-swap and seq-best (n = 3, 4) over ``rows``: how many are above
    1e-6, the largest, the laws in all (retries included) and the runs kept."""
    from collections import Counter

    from mdsd_ot.fast import alpha_star
    from mdsd_ot.verifiers.chain import build_plan

    for con, scheme in (("cp-swap", "conditional-poisson"), ("seq-best", "without")):
        eps, laws, kept, t0 = [], 0, Counter(), time.perf_counter()
        for p, q in rows:
            for n in (3, 4):
                plan = build_plan(p, q, n, con)
                eps.append(max(0.0, float(alpha_star(p, q, n=n, scheme=scheme)) - plan.acceptance))
                laws += _laws(plan)
                kept[(plan.info.get("retry") or {}).get("kept", "no retry")] += 1
        dt = time.perf_counter() - t0
        print(f"  {label} {con:8s}: eps > 1e-6 on {sum(e > 1e-6 for e in eps)}/{len(eps)}, "
              f"largest {max(eps):.1e}; {laws} laws; runs kept {dict(kept)}; {dt:.1f} s",
              flush=True)  # fmt: skip


def peaked(quick: bool) -> None:
    """Section 6: peaked rows (real text; a heavy demand token)."""
    from collections import Counter

    from mdsd_ot.fast import alpha_star
    from mdsd_ot.reports.demo import demo_rows
    from mdsd_ot.verifiers.chain import build_plan

    print("\n6. peaked rows. (a) the demo's 64 real-text rows (V = 256), sequential drafts")
    rows = demo_rows(64)
    for n in (3, 4):
        for con in ("seq-swap", "seq-best"):
            eps, taken, t0 = [], Counter(), time.perf_counter()
            for r in range(64):
                p, q = rows["p"][r] / rows["p"][r].sum(), rows["q"][r] / rows["q"][r].sum()
                plan = build_plan(p, q, n, con)
                eps.append(
                    max(0.0, float(alpha_star(p, q, n=n, scheme="without")) - plan.acceptance)
                )
                taken[plan.construction] += 1
            dt = time.perf_counter() - t0
            print(f"  n={n} {con:8s}: eps > 1e-6 on {sum(e > 1e-6 for e in eps):2d}/64, largest "
                  f"{max(eps):.1e}; plans {dict(taken)}; {dt:.1f} s", flush=True)  # fmt: skip
    print("   (b) heaviest draft token q = 0.8 (p = 0.6), the second q = 0.1")
    cases = [(2000, s) for s in range(5)] + ([] if quick else [(V_BIG, 0)])
    for V, seed in cases:
        p, q = _heavy_row(V, seed)
        for n in (3, 4):
            for con, scheme in (("cp-swap", "conditional-poisson"), ("seq-best", "without")):
                t0 = time.perf_counter()
                plan = build_plan(p, q, n, con)
                dt = time.perf_counter() - t0
                eps = max(0.0, float(alpha_star(p, q, n=n, scheme=scheme)) - plan.acceptance)
                retry = plan.info.get("retry")
                if retry is None:
                    how = "no retry"
                else:  # the run kept, and the shortfall of each other run
                    rest = ", ".join(
                        f"{k} {v['shortfall']:.1e} ({v['iterations']} laws)"
                        for k, v in retry.items()
                        if k != "kept"
                    )
                    how = f"kept {retry['kept']} (other runs: {rest})"
                print(f"  V={V:6d} seed {seed} n={n} {con:8s} ({plan.construction}): eps "
                      f"{eps:.1e}; {how}; {plan.info.get('iterations')} laws; {dt:.2f} s",
                      flush=True)  # fmt: skip
    from mdsd_ot.synthetic import synthetic_pair

    print("   (c) 30 rows at V = 2,000: heaviest q 0.6 or 0.8 with p 0.3, 0.6 or 0.95, the second")
    print("       q 0.1, seeds 0-4 (n = 3 and 4: 60 plans per law)")
    rows = [_heavy_row(2000, s, top, pt) for top in (0.6, 0.8) for pt in (0.3, 0.6, 0.95)
            for s in range(5)]  # fmt: skip
    _sweep(rows, "V=  2000")
    V = 2000 if quick else V_BIG
    print(
        f"   (d) the synthetic family at T = 0.3 (the heaviest q up to 0.999), V = {V:,}, seeds 0-5"
    )
    rows = [synthetic_pair(V, 0.3, np.random.default_rng(s), noise=1.0) for s in range(6)]
    _sweep(rows, f"V={V:6d}")
    print("   (e) the synthetic family at V = 300, T = 0.3 and 0.5, seeds 0-11")
    rows = [synthetic_pair(300, T, np.random.default_rng(s), noise=1.0) for T in (0.3, 0.5)
            for s in range(12)]  # fmt: skip
    _sweep(rows, "V=   300")


def point_mass(quick: bool) -> None:
    """Section 7: drafts almost sure of one token (1 - q_max = 1e-8 ... 1e-300)."""
    from mdsd_ot import drafts as D
    from mdsd_ot.fast import alpha_star
    from mdsd_ot.verifiers.chain import build_plan, construction_for

    V = 2000
    print(
        f"\n7. drafts almost sure of one token (V = {V:,}, p flat Dirichlet, seed 0): the rest"
        " 1 - q_max spread at random; ε = α* - certified acceptance, the law's bound, time"
    )
    print("   1 - q_max | law | n | construction | ε | law bound | setup")
    for rest in (1e-8, 1e-12, 1e-16, 1e-20, 1e-30, 1e-300)[: 3 if quick else None]:
        for cls, n in ((D.WithoutReplacement, 3), (D.WithoutReplacement, 4),
                       (D.ConditionalPoisson, 3), (D.ConditionalPoisson, 4)):  # fmt: skip
            g = np.random.default_rng(0)
            q = g.random(V)
            q[0] = 0.0
            q = q / q.sum() * rest
            q[0] = 1.0 - q.sum()
            p = g.dirichlet(np.ones(V))
            law = cls(q, n)
            a = float(alpha_star(p, law))
            t0 = time.perf_counter()
            try:
                plan = build_plan(p, law.q, n, construction_for(law))
            except Exception as e:  # noqa: BLE001 - a benchmark reports every failure
                print(f"   {rest:.0e} | {cls.__name__} | {n} | error: {type(e).__name__}: {e}")
                continue
            dt = time.perf_counter() - t0
            print(f"   {rest:.0e} | {cls.__name__} | {n} | {plan.construction} | "
                  f"{a - plan.acceptance:.1e} | {plan.law_error:.1e} | {dt * 1e3:.0f} ms")  # fmt: skip


def pair_fits(quick: bool, law: str = "conditional-poisson") -> None:
    """Section 8: where the ``cp-pair`` design fits (conditional Poisson, n >= 3); with
    ``law="without"``, section 11: where the ``seq-pair`` design fits (sequential drafts)."""
    from collections import Counter

    from mdsd_ot.fast import alpha_star
    from mdsd_ot.reports.demo import demo_rows
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers.chain.pairs import pair_plan
    from mdsd_ot.verifiers.chain.plan import chain_order, heavy_last, sort_keys
    from mdsd_ot.verifiers.chain.seqpair import seq_pair_plan

    design = pair_plan if law == "conditional-poisson" else seq_pair_plan
    what = (
        "8. the cp-pair design (pairs.pair_plan alone, no fallback)"
        if law == "conditional-poisson"
        else "11. the seq-pair design (seqpair.seq_pair_plan alone, no fallback; the time"
        " includes the certified sequential Q on every prefix)"
    )
    print(
        f"\n{what}: rows where it fits, why the others do not, the largest ε and law bound"
        " where it fits, its median time"
    )
    print("   rows | n | fits | of them without a relay | not a rule | other | max ε |"
          " max law bound | median time")  # fmt: skip

    def rows():
        d = demo_rows(16 if quick else 64)
        yield (
            "demo (V = 256)",
            [(r / r.sum(), s / s.sum()) for r, s in zip(d["p"], d["q"], strict=True)],
        )
        for V, seeds in ((2000, 4 if quick else 8), (V_BIG, 1 if quick else 4)):
            for T in (0.3, 0.5, 1.0, 2.0):
                yield (
                    f"synthetic V = {V:,}, T = {T}",
                    [
                        synthetic_pair(V, T, np.random.default_rng(sd), noise=1.0)
                        for sd in range(seeds)
                    ],
                )

    for name, pairs in rows():
        for n in (3, 4, 8):
            tally, eps, lerr, times = Counter(), 0.0, 0.0, []
            for p, q in pairs:
                key = sort_keys(p, q)
                order = heavy_last(chain_order(p, q), key, q)
                t0 = time.perf_counter()
                plan = design(p, q, n, order)
                dt = time.perf_counter() - t0
                if isinstance(plan, str):
                    tally["not a rule" if "not a rule" in plan else "other"] += 1
                    continue
                tally["fits"] += 1
                tally["plain"] += "relay" not in plan.info
                times.append(dt)
                a = float(alpha_star(p, q, n=n, scheme=law))
                eps, lerr = max(eps, a - plan.acceptance), max(lerr, plan.law_error)
            med = f"{np.median(times) * 1e3:.1f} ms" if times else "-"
            print(f"   {name} | {n} | {tally['fits']}/{len(pairs)} | {tally['plain']} | "
                  f"{tally['not a rule']} | {tally['other']} | {eps:.1e} | {lerr:.1e} | {med}")  # fmt: skip


def _seq_kernel(qs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Q on the prefixes and the dense kernel M(y, x) = Pr[top(S) = y, x in S], x < y, of
    sequential drafts in slot order (section 9): M(y, x) = D_y - [Q(H_y - x) - Q(H_{y-1} - x)],
    with Q(H - x) on every prefix from one run of the fast solver on the order that puts x
    last.  V runs of O(V) and a V x V array: a study at small V, not a construction."""
    from mdsd_ot.fast.without import prefix_Q_without

    V = len(qs)
    Q = np.asarray(prefix_Q_without(qs, n)[0]).ravel()
    D = Q[1:] - Q[:-1]
    M = np.zeros((V, V))
    for x in range(V):
        Rx = Q.copy()  # Rx[k] = Q(H_k - x): H_k itself for k <= x
        Rx[x + 1 :] = np.asarray(prefix_Q_without(np.r_[np.delete(qs, x), qs[x]], n)[0]).ravel()[
            x:V
        ]
        M[x + 1 :, x] = D[x + 1 :] - (Rx[x + 2 :] - Rx[x + 1 : V])
    return Q, D, M


def _seq_pair_design(p: np.ndarray, q: np.ndarray, n: int) -> tuple[str, float]:
    """The separable design of ``pairs.pair_plan`` (both target paths, the same scaling, rule
    check and tolerance) on the dense sequential kernel; ("fits" | "not a rule" | "stopped",
    the acceptance of the best design)."""
    from mdsd_ot.verifiers.chain import pairs as P
    from mdsd_ot.verifiers.chain.plan import _transfer, chain_order, heavy_last, sort_keys

    order = heavy_last(chain_order(p, q), sort_keys(p, q), q)
    qs, ps = q[order], p[order]
    V = len(qs)
    Q, D, M = _seq_kernel(qs, n)
    E = _transfer(ps, Q[1:])[0].copy()
    s = np.clip(D + E[1:] - E[:-1], 0.0, ps)
    tol, why, acc = P.PAIR_TOL + 1e-15 * V, "stopped", 0.0
    below = np.arange(V)[:, None] > np.arange(V)[None, :]
    for hold in P.HOLD_BACK:
        Ep = P._targets(E, hold)
        Ep[0] = Ep[-1] = 0.0
        blocks = P._blocks(Ep)
        ids = np.cumsum(Ep[:-1] == 0.0)
        Mb = np.where(below & (ids[:, None] == ids[None, :]), M, 0.0)
        d = Ep[:-1] - Ep[1:]
        noise = P._NOISE * float(Ep.max())
        sig, dem = np.where(d > noise, d, 0.0), np.where(d < -noise, -d, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            theta = np.where(sig > 0, sig / Mb.sum(axis=1), 0.0)
            best, hist = None, []
            for _ in range(P.PAIR_ITERATIONS):
                In = Mb.T @ theta
                g = np.where(In > 0, dem / In, 0.0)
                Out = Mb @ g
                T = D + g * In - theta * Out
                short = float(np.maximum(s - T, 0.0).sum())
                hist.append(short)
                if best is None or short < best[0]:
                    best = (short, theta, g, T)
                if short <= tol or (len(hist) > 3 and short > 0.5 * hist[-4]):
                    break
                theta = np.where(Out > 0, sig / Out, 0.0)
        short, theta, g, T = best
        acc = max(acc, float(np.minimum(s, T).clip(0.0).sum()))
        if short > tol:
            continue
        if P.set_sums(theta, g, qs, n, blocks) <= 1.0 - P.SET_MARGIN:
            return "fits", float(np.minimum(s, T).clip(0.0).sum())
        why = "not a rule"
    return why, acc


def seq_pair_study(quick: bool) -> None:
    """Section 9: the pair hand-over rule for *sequential* drafts, n >= 3 (proofs §12), on
    the dense kernel at small V: where the separable design of ``cp-pair`` would fit."""
    from collections import Counter

    from mdsd_ot.fast import alpha_star
    from mdsd_ot.reports.demo import demo_rows
    from mdsd_ot.synthetic import synthetic_pair

    print(
        "\n9. the pair rule for sequential drafts (a study: dense kernel, O(V^2); proofs §12):"
        " rows where the separable design fits, and the largest ε = α* - acceptance there"
    )
    print("   rows | n | fits | not a rule | scaling stopped | max ε where it fits | time")
    d = demo_rows(16 if quick else 64)
    sets = [
        (
            "demo (V = 256)",
            [(r / r.sum(), s / s.sum()) for r, s in zip(d["p"], d["q"], strict=True)],
        )
    ]
    V, seeds = (60, 2) if quick else (150, 4)
    for T in (0.3, 0.5, 1.0, 2.0):
        sets.append((f"synthetic V = {V}, T = {T}",
                     [synthetic_pair(V, T, np.random.default_rng(sd), noise=1.0)
                      for sd in range(seeds)]))  # fmt: skip
    for name, pairs in sets:
        for n in (3, 4) if quick else (3, 4, 6):
            tally, eps, t0 = Counter(), 0.0, time.perf_counter()
            for p, q in pairs:
                why, acc = _seq_pair_design(p, q, n)
                tally[why] += 1
                if why == "fits":
                    eps = max(eps, float(alpha_star(p, q, n=n, scheme="without")) - acc)
            dt = time.perf_counter() - t0
            print(f"   {name} | {n} | {tally['fits']}/{len(pairs)} | {tally['not a rule']} | "
                  f"{tally['stopped']} | {eps:.1e} | {dt:.1f} s")  # fmt: skip


def _confident_row(V: int, q_top: float, p_top: float, seed: int) -> tuple:
    """Section 10's row: one draft token of mass ``q_top``, the target's ``p_top``; the rest
    log-normal (sigma 2), the target's a noisy copy (sigma 1) of the draft's."""
    g = np.random.default_rng(seed)
    z = g.standard_normal(V) * 2.0
    rows = []
    for top, logits in ((q_top, z), (p_top, z + g.standard_normal(V))):
        x = np.exp(logits - logits.max())
        x[0] = 0.0
        x = x / x.sum() * (1.0 - top)
        x[0] = top
        rows.append(x)
    return rows[1], rows[0]


def confident(quick: bool) -> None:
    """Section 10: a confident target against a heavy draft token (heavy receivers)."""
    from mdsd_ot import drafts as D
    from mdsd_ot.fast import alpha_star
    from mdsd_ot.verifiers._draws import sample_drafts
    from mdsd_ot.verifiers.chain import build_plan, pairs
    from mdsd_ot.verifiers.chain.sample import sample_plan

    V = 20_000 if quick else V_BIG
    x = np.random.default_rng(0).random(V)
    print(
        f"\n10. a confident target against a heavy draft token (V = {V:,}, conditional Poisson):"
        " with relays / without (the design before them); ε = α* - certified acceptance,"
        " setup + one draw in argsorts (median of 3)"
    )
    print(
        "   q_top / p_top | n | seed | with relays: plan, ε, argsorts | without: plan, ε, argsorts"
    )
    plain = tuple(t for t in pairs.PAIR_TRIES if not t[1])
    for q_top, p_top in ((0.7, 0.8), (0.9, 0.95), (0.99, 0.995)):
        for n in (3, 4):
            for seed in (1,) if quick else (1, 2):
                p, q = _confident_row(V, q_top, p_top, seed)
                law = D.ConditionalPoisson(q, n)
                a = float(alpha_star(p, law))
                g = np.random.default_rng(seed)
                t = sample_drafts(law, g, 1)
                cells = []
                for relays in (True, False):
                    saved = pairs.PAIR_TRIES, pairs.PAIR_TRIES_HEAVY
                    if not relays:  # the design before relays: plain tries, in one order
                        pairs.PAIR_TRIES = pairs.PAIR_TRIES_HEAVY = plain
                    try:
                        sample_plan(build_plan(p, law.q, n, "cp-pair"), t, g)  # warm up

                        def run(p=p, law=law, t=t, n=n, g=g):
                            sample_plan(build_plan(p, law.q, n, "cp-pair"), t, g)

                        res = _paired(run, 3, x)
                        plan = build_plan(p, law.q, n, "cp-pair")
                    finally:
                        pairs.PAIR_TRIES, pairs.PAIR_TRIES_HEAVY = saved
                    name = plan.construction + (" (relay)" if "relay" in plan.info else "")
                    cells.append(f"{name}, {a - plan.acceptance:.1e}, {res['ratio']:.1f}")
                print(f"   {q_top} / {p_top} | {n} | {seed} | {cells[0]} | {cells[1]}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3, help="alternating old/new subprocess runs")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", default=None, help="git revision to compare with (section 1)")
    ap.add_argument("--accuracy", action="store_true", help="also run section 4")
    ap.add_argument("--seq2", type=int, default=0, metavar="SEEDS",
                    help="also run section 5 (seq2 on SEEDS seeds x 3 noise levels)")  # fmt: skip
    ap.add_argument("--peaked", action="store_true", help="also run section 6 (peaked rows)")
    ap.add_argument("--point-mass", action="store_true",
                    help="also run section 7 (drafts almost sure of one token)")  # fmt: skip
    ap.add_argument("--pair", action="store_true",
                    help="also run section 8 (where the cp-pair design fits)")  # fmt: skip
    ap.add_argument("--seq-pair", action="store_true",
                    help="also run section 9 (the pair rule for sequential drafts, small V)")  # fmt: skip
    ap.add_argument("--confident", action="store_true",
                    help="also run section 10 (a confident target: relays)")  # fmt: skip
    ap.add_argument("--seq-pair-fits", action="store_true",
                    help="also run section 11 (where the seq-pair design fits)")  # fmt: skip
    ap.add_argument("--only", action="store_true", help="skip sections 1-3")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    reps = 5 if a.quick else a.reps
    if a.worker:
        print(json.dumps(worker(reps, a.warm)))
        return
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}, numpy {np.__version__}"
    )
    if not a.only:
        per_position(reps, a.baseline, 1 if a.quick else a.rounds)
        batched(reps)
        batched_array(reps)
        reduced((500,) if a.quick else (500, 2000))
    if a.accuracy:
        accuracy((2000,) if a.quick else (2000, V_BIG))
    if a.seq2:
        seq2_accuracy((2000,) if a.quick else (2000, V_BIG), a.seq2)
    if a.peaked:
        peaked(a.quick)
    if a.point_mass:
        point_mass(a.quick)
    if a.pair:
        pair_fits(a.quick)
    if a.seq_pair:
        seq_pair_study(a.quick)
    if a.confident:
        confident(a.quick)
    if a.seq_pair_fits:
        pair_fits(a.quick, law="without")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
