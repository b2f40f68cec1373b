"""Scale of the set-reduced flow, the scipy max-flow and the exact certificate (issue 2).

Prints, for n = 2, 3, 4 and the with / without-replacement laws (seeded Dirichlet p and q), the
largest V the set-reduced flow ("reduced", float route) solves within the budget (60 s by
default), with wall and CPU (process) time; then the fixed-size figures: "maxflow-scipy" at
V = 32, n = 3 (target < 50 ms), "maxflow" (exact) and the exact certificate at V = 8, n = 3
(target < 2 s) and V = 16, n = 3.  Figures are from one run on this machine; on a shared
machine CPU time is the steadier number.

Usage: python benchmarks/reduced.py [--budget 60] [--clock wall|cpu] [--ns 2,3,4]
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

import mdsd_ot
from mdsd_ot import drafts
from mdsd_ot.exact.certificate import certify
from mdsd_ot.exact.plans import optimal_plan
from mdsd_ot.exact.reduced import largest_v_within


def _timed(fn, repeat=3):
    best_w, best_c, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best_w = min(best_w, time.perf_counter() - t0)
        best_c = min(best_c, time.process_time() - c0)
    return out, best_w, best_c


def _rational(rng, V, total=997):
    c = rng.multinomial(total, rng.dirichlet(np.ones(V))) + 1
    return [Fraction(int(x), int(c.sum())) for x in c]


def fixed_sizes() -> None:
    rng = np.random.default_rng(0)
    print("fixed sizes (best of 3; wall / cpu seconds)")
    for scheme in ("with", "without"):
        p, q = rng.dirichlet(np.ones(32)), rng.dirichlet(np.ones(32))
        law = drafts.make(scheme, q, 3)
        r, w, c = _timed(lambda law=law, p=p: mdsd_ot.solve(p, law, method="maxflow-scipy"))
        print(
            f"  maxflow-scipy  V=32 n=3 {scheme:8s} {w:8.3f} / {c:.3f} s  "
            f"passes={r.info['passes']} accuracy={r.accuracy:.1e}"
        )
    for V in (8, 16):
        for scheme in ("with", "without"):
            p, q = _rational(rng, V), _rational(rng, V)
            law = drafts.make(scheme, q, 3)
            _, w1, c1 = _timed(lambda law=law, p=p: mdsd_ot.solve(p, law, method="maxflow"), 1)
            (C, H, a), w2, c2 = _timed(lambda law=law, p=p: optimal_plan(p, law), 1)
            cert, w3, c3 = _timed(lambda law=law, p=p, C=C, H=H: certify(p, law, C, H), 1)
            assert cert.ok and cert.exact
            print(
                f"  exact V={V:2d} n=3 {scheme:8s} maxflow {w1:6.3f} / {c1:.3f} s   "
                f"optimal_plan {w2:6.3f} / {c2:.3f} s   certify {w3:6.3f} / {c3:.3f} s"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--ns", default="2,3,4")
    ap.add_argument("--schemes", default="with,without")
    ap.add_argument("--skip-fixed", action="store_true")
    args = ap.parse_args()
    if not args.skip_fixed:
        fixed_sizes()
    print(f"set-reduced flow: largest V within {args.budget:g} s ({args.clock} clock)")
    summary = []
    for n in (int(x) for x in args.ns.split(",")):
        for scheme in args.schemes.split(","):
            V, t, trace = largest_v_within(
                n, scheme, args.budget, clock=args.clock, growth=1.25, verbose=True
            )
            row = next((r for r in trace if r["V"] == V), None)
            sets = row["sets"] if row else 0
            summary.append(
                (n, scheme, V, sets, row["wall"] if row else 0, row["cpu"] if row else 0)
            )
    print("summary: n scheme  V_max  sets  wall_s  cpu_s")
    for n, scheme, V, sets, w, c in summary:
        print(f"  {n} {scheme:8s} {V:6d} {sets:>11,d} {w:7.2f} {c:7.2f}")


if __name__ == "__main__":
    main()
