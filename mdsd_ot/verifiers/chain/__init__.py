r"""The optimal verifier along the p/q chain, at any vocabulary size (proofs/optimal_verifier.md).

Modules: :mod:`.sublaw` (the optimal accepted sub-law s and the transfer path E),
:mod:`.relabel` (relabelling kernels with an exactly linear law), :mod:`.plan` (one position:
sort, sub-law, pairs, kernel, thinning), :mod:`.sample` (vectorised sampling), :mod:`.exact` (the
same construction in Fractions, and the rule for one tuple) and :mod:`.verifier` (the
:class:`ChainOptimal` verifier behind ``verifiers.get("optimal", draft)`` for q laws); for laws
of distinct drafts (sequential, conditional Poisson with n >= 3) the swap constructions:
:mod:`.pieces` (piece kernels and their fixed-point design), :mod:`.cutlaw` (their exact laws),
:mod:`.seqseries` (the certified series for sequential drafts, n >= 3), :mod:`.seqsingle` (the
law when the most drawn tokens pick once, ``seq-swap-h``) and :mod:`.swap` (plans); the pair
hand-over rule, O(nV) where its design fits: :mod:`.pairs` (``cp-pair``, conditional Poisson)
and :mod:`.seqpair` (``seq-pair``, sequential drafts, the hand-overs thinned per draft set);
for two sequential drafts :mod:`.seq2` (two relabelling kernels through the product law, α*
wherever its design fits, ``seq-swap`` otherwise; the pairing and the design in
:mod:`.seq2_design`, the kernels and their exact law in :mod:`.seq2_kernel`, the construction
in Fractions in :mod:`.seq2_exact`); for many positions at once on numpy or torch
:mod:`.batched` (:func:`~.batched.verify_rows`; the plans in :mod:`.batched_plans`, the draws
in :mod:`.batched_draws`).

Examples
--------
>>> import numpy as np
>>> from mdsd_ot.drafts import WithReplacement
>>> from mdsd_ot.synthetic import synthetic_pair
>>> p, q = synthetic_pair(2000, 1.0, 0)
>>> v = ChainOptimal(WithReplacement(q, 2))
>>> c = v.certificate(p)
>>> c["construction"], c["eps"] < 1e-12
('relabel', True)
"""

from .plan import CONSTRUCTIONS, Plan, build_plan, build_plans
from .sample import draw_rows, sample_plan, sample_plans, stream_to_iid
from .sublaw import optimal_sublaw
from .verifier import ChainOptimal, construction_for

__all__ = [
    "CONSTRUCTIONS",
    "ChainOptimal",
    "Plan",
    "build_plan",
    "build_plans",
    "construction_for",
    "draw_rows",
    "optimal_sublaw",
    "sample_plan",
    "sample_plans",
    "stream_to_iid",
]
