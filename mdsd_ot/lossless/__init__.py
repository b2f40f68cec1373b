r"""A losslessness test kit for anyone's multi-draft verifier: exact where possible, statistical
where not (docs/lossless.md).

- **Exact mode.**  A verifier is ``verify(p, q, drafts, coins) -> (token, accepted)`` whose
  randomness all goes through ``coins.bernoulli(prob)`` and ``coins.categorical(weights)``.
  :func:`exact_law` enumerates every draft tuple and every coin path (replay), returning the
  output law, the acceptance and the paths, in exact rationals for rational inputs;
  :func:`check_exact` runs a seeded family of instances (hard cases included) and reports the
  law error and the acceptance against α* per instance, with the worst as a JSON witness.
- **Statistical mode.**  A sampler ``sampler(p, q, drafts, rng) -> (token, accepted)`` is tested
  by :func:`check_sampler` (G-test with small counts pooled, acceptance above α*, a power
  statement) and :func:`check_sampler_family` (Holm across instances).
- **Controls.**  :mod:`mdsd_ot.lossless.controls`: adapters for the package's verifiers, correct
  coin-level verifiers and deliberately broken ones.

>>> from mdsd_ot.lossless import check_exact, controls
>>> check_exact(controls.rrs_without, "without", instances=7, vocab=3, n=2).passed
True
"""

from __future__ import annotations

from . import coins, controls, stats
from .exact import ExactLaw, exact_law
from .exact_check import ExactReport, InstanceCheck, check_exact, replay
from .family import Instance, instance_family
from .load import load_function
from .sampler import SamplerCheck, check_sampler
from .sampler_family import SamplerReport, check_sampler_family, replay_sampler
from .stats import PowerStatement, samples_needed

__all__ = [
    "coins",
    "controls",
    "stats",
    "exact_law",
    "check_exact",
    "replay",
    "ExactLaw",
    "ExactReport",
    "InstanceCheck",
    "Instance",
    "instance_family",
    "check_sampler",
    "check_sampler_family",
    "replay_sampler",
    "SamplerCheck",
    "SamplerReport",
    "PowerStatement",
    "samples_needed",
    "load_function",
]
