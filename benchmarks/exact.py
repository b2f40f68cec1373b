"""Benchmark every registered exact method (mdsd_ot.exact.METHODS) on with-replacement instances.

Prints, measured in this run on this machine:

- the machine (platform, CPU count, Python, numpy, highspy);
- seconds for V = 8, n = 3 and V = 16, n = 3 for every method;
- the targets of issue 2: "primal" at V = 16, n = 3 (16^4 = 65,536 LP variables) under 1 s,
  "maxflow-scipy" at V = 32, n = 3 under 50 ms, the exact certificate
  (``mdsd_ot.exact.certificate.certify``, where present) at V = 8, n = 3 under 2 s;
- for n = 2, 3, 4 the largest V each method solves within the time limit (10 s), growing V
  (doubling while a solve takes under limit/50, then x1.25) until a solve exceeds the limit,
  the method refuses the size, or the next step is predicted (from the last two) to exceed
  the limit; each (method, n) cell gets an equal share of what is left of the time budget.

Every solve runs in a forked child process, killed at the limit, so one slow solve cannot stall
the run; the time printed is measured inside the child around ``mdsd_ot.solve``, after an
untimed warm-up solve of a tiny instance (lazy imports, solver start-up).  Instances:
p and q drawn from a Dirichlet(1) with a fixed seed per V.

Usage::

    python benchmarks/exact.py            # full run (~10 minutes at most, see --budget)
    python benchmarks/exact.py --quick    # 1 s limit, n = 2, 3, a few methods' worth of time
"""

from __future__ import annotations

import argparse
import importlib
import math
import multiprocessing as mp
import os
import platform
import sys
import time
from fractions import Fraction

import numpy as np

import mdsd_ot
from mdsd_ot import drafts as D
from mdsd_ot.exact import METHODS

#: Largest vocabulary the sweep tries (V doubles while solves are fast, then grows x1.25).
V_CAP = 65536


def instance(V: int, n: int, seed: int = 0):
    """Seeded Dirichlet(1) p and q, with-replacement drafts."""
    rng = np.random.default_rng([seed, V])
    return rng.dirichlet(np.ones(V)), D.WithReplacement(rng.dirichlet(np.ones(V)), n)


def rational_instance(V: int, n: int, seed: int = 0):
    """The same instance rounded to rationals (denominators <= 10^6) summing to exactly 1."""

    def rat(x):
        fr = [Fraction(float(v)).limit_denominator(10**6) for v in x]
        fr[int(np.argmax(x))] += 1 - sum(fr)
        return fr

    p, law = instance(V, n, seed)
    return rat(p), D.WithReplacement(rat(law.q), n)


def _child(conn, method: str, V: int, n: int) -> None:
    try:
        p, law = instance(V, n)
        # warm-up: lazy imports (cvxpy, POT, networkx, ...) and solver start-up stay untimed
        mdsd_ot.solve(*instance(3, min(n, 2)), method=method)
        conn.send(("ready", 0.0, None))
        t0 = time.perf_counter()
        r = mdsd_ot.solve(p, law, method=method)
        conn.send(("ok", time.perf_counter() - t0, r.alpha))
    except ValueError as exc:
        conn.send(("refused", 0.0, str(exc)))
    except Exception as exc:  # report, do not crash the benchmark
        conn.send(("error", 0.0, repr(exc)))


def timed_solve(method: str, V: int, n: int, limit: float) -> tuple[str, float, object]:
    """Solve in a forked child; ("timeout", limit, None) when it runs past ``limit``."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, method, V, n))
    proc.start()
    out = recv.recv() if recv.poll(max(60.0, limit)) else ("timeout", limit, None)
    if out[0] == "ready":  # the clock starts after the warm-up
        out = recv.recv() if recv.poll(limit) else ("timeout", limit, None)
    proc.kill()
    proc.join()
    return out


def fmt_s(status: str, sec: float) -> str:
    if status == "ok":
        return f"{sec * 1e3:8.1f} ms" if sec < 1 else f"{sec:8.2f} s "
    return f"{status:>11}"


def machine() -> None:
    import highspy

    print("machine:", platform.platform(), "|", platform.processor() or platform.machine())
    print(
        f"cpus: {os.cpu_count()} | python {platform.python_version()} | numpy {np.__version__}"
        f" | highspy {highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}"
        f".{highspy.HIGHS_VERSION_PATCH}"
    )


def fixed_sizes(methods: list[str], limit: float) -> None:
    print(f"\nseconds per solve, with-replacement, n = 3 (limit {limit:g} s)")
    print(f"{'method':>16} {'V=8':>11} {'V=16':>11}  alpha(V=16)")
    for m in methods:
        s8 = timed_solve(m, 8, 3, limit)
        s16 = timed_solve(m, 16, 3, limit)
        a = f"{s16[2]:.12f}" if s16[0] == "ok" else ""
        print(f"{m:>16} {fmt_s(s8[0], s8[1])} {fmt_s(s16[0], s16[1])}  {a}")


def targets() -> None:
    print("\ntargets (issue 2)")
    if "primal" in METHODS:
        st, sec, _ = timed_solve("primal", 16, 3, 30.0)
        ok = st == "ok" and sec < 1.0
        print(
            f"  primal, V=16 n=3 (65,536 variables) < 1 s: {fmt_s(st, sec)}  {'PASS' if ok else 'FAIL'}"
        )
    if "maxflow-scipy" in METHODS:
        best = min(timed_solve("maxflow-scipy", 32, 3, 30.0)[1] for _ in range(3))
        ok = best < 0.05
        print(
            f"  maxflow-scipy, V=32 n=3 < 50 ms (best of 3): {best * 1e3:.1f} ms  {'PASS' if ok else 'FAIL'}"
        )
    else:
        print("  maxflow-scipy: not registered")
    try:
        from mdsd_ot.exact.certificate import certify
    except ImportError:
        print("  certify: mdsd_ot.exact.certificate not available")
        return
    p, law = rational_instance(8, 3)
    method = "maxflow" if "maxflow" in METHODS else "subset-exact"
    r = mdsd_ot.solve(p, law, method=method)
    t0 = time.perf_counter()
    out = certify(p, law, r.plan, r.H)
    sec = time.perf_counter() - t0
    print(
        f"  certify (exact, plan from {method!r}), V=8 n=3 < 2 s: {sec:.3f} s  "
        f"{'PASS' if sec < 2 else 'FAIL'}  -> {out!r:.80}"
    )


def largest_v(methods: list[str], ns: list[int], limit: float, budget: float) -> None:
    print(
        f"\nlargest V solved within {limit:g} s (with-replacement). Why growth stopped: "
        "timeout, refused, next (the next step is predicted over the limit from the last two), "
        "cap, budget (this cell's share of the time budget ran out; marked '>')"
    )
    print(f"{'method':>16} " + " ".join(f"{'n=' + str(n):>26}" for n in ns))
    start, cells_left = time.monotonic(), len(methods) * len(ns)
    for m in methods:
        cells = []
        for n in ns:
            share = (budget - (time.monotonic() - start)) / cells_left
            cells_left -= 1
            deadline = time.monotonic() + share
            best, best_t, why, prev, V = None, 0.0, "cap", None, 2
            while True:
                if time.monotonic() > deadline:
                    why = "budget"
                    break
                st, sec, _ = timed_solve(m, V, n, limit)
                if st != "ok":
                    why = st
                    break
                best, best_t = V, sec
                if V >= V_CAP:
                    break
                V_next = max(V + 1, round(V * (2.0 if sec < limit / 50 else 1.25)))
                if prev is not None and prev[1] > 0.02 and sec > prev[1]:
                    k = max(1.0, math.log(sec / prev[1]) / math.log(V / prev[0]))
                    if sec * (V_next / V) ** k > limit:
                        why = "next"
                        break
                prev, V = (V, sec), V_next
            mark = ">" if why == "budget" else ""
            cell = "-" if best is None else f"{mark}{best} ({best_t:.2g} s, {why})"
            cells.append(f"{cell:>26}")
        print(f"{m:>16} " + " ".join(cells), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 s limit, n = 2, 3")
    ap.add_argument("--limit", type=float, default=None, help="seconds per solve (default 10)")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the V sweep")
    ap.add_argument("--methods", default=None, help="comma list (default: every installed)")
    a = ap.parse_args(argv)
    limit = a.limit if a.limit is not None else (1.0 if a.quick else 10.0)
    budget = a.budget if a.budget is not None else (60.0 if a.quick else 450.0)
    ns = [2, 3] if a.quick else [2, 3, 4]
    methods = (
        a.methods.split(",")
        if a.methods
        else [m.name for m in METHODS.values() if m.is_installed()]
    )
    for mod in ("highspy", "cvxpy", "ot", "networkx", "scipy.sparse.csgraph"):
        try:  # imported once here, so the forked children do not each pay for it
            importlib.import_module(mod)
        except ImportError:
            pass
    machine()
    print("methods:", ", ".join(methods))
    t0 = time.monotonic()
    targets()
    fixed_sizes(methods, limit)
    largest_v(methods, ns, limit, budget)
    print(f"\ntotal {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
