r"""The optimal accepted sub-law along the p/q chain (proofs/optimal_verifier.md, §1).

Sort the tokens by :math:`\pi = p/q` ascending, :math:`t_1, \dots, t_V`, write
:math:`H_k = \{t_1..t_k\}`, :math:`F_k = P(H_k) - Q(H_k)` (:math:`F_0 = F_V = 0`) and
:math:`S_k = \min_{j \ge k} F_j` (suffix minimum).  For a q-convex draft law (T5),

.. math::

   E_j = \max(0,\ F_j - S_{j+1}) \ (0 \le j < V), \quad E_V = 0, \qquad
   s(t_k) = D_k + E_k - E_{k-1}, \quad D_k = Q(H_k) - Q(H_{k-1}),

is an *optimal accepted sub-law*: :math:`0 \le s \le p`, :math:`s` lies in the polymatroid of
the coverage function :math:`g(A) = 1 - Q(\Sigma \setminus A)`, and
:math:`\sum_k s(t_k) = 1 + \min_k F_k = \alpha^*`.  It equals :math:`p(t_k) -
\max(0, S_k - F_{k-1})`, the greedy vertex of the box-truncated polymatroid along the descending
chain.  :math:`E_j \ge 0` is the selection mass that a verifier realising :math:`s` must move
from the tokens above the cut :math:`j` to the tokens below it, compared with the deterministic
rule "select the draft of largest p/q", whose law is :math:`D`.

Examples
--------
>>> import numpy as np
>>> alpha, s, E = optimal_sublaw(np.array([0.0, 0.4, 1.0]), np.array([0.0, 0.25, 1.0]))
>>> round(float(alpha), 12), s.round(12).tolist(), E.round(12).tolist()
(1.0, [0.4, 0.6], [0.0, 0.15, 0.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["optimal_sublaw", "optimal_sublaw_list"]


def optimal_sublaw(P: np.ndarray, Q: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
    r"""α*, the sub-law s and the transfer path E from prefix sums (numpy, batched).

    .. math:: \alpha^* = 1 + \min_k F_k, \qquad s_k = D_k + E_k - E_{k-1}

    Parameters
    ----------
    P, Q : (..., V + 1) ndarray
        :math:`P(H_k)` and :math:`Q(H_k)` for k = 0..V along the chain (entry 0 is the empty
        prefix, 0; entry V is 1).

    Returns
    -------
    alpha : float or ndarray
        :math:`1 + \min_k F_k` per row.
    s : (..., V) ndarray
        The accepted sub-law in chain order (rounding may leave entries a few ulps outside
        :math:`[0, p]`; callers clip).
    E : (..., V + 1) ndarray
        The transfer path, :math:`E_j \ge 0`.

    Examples
    --------
    >>> P = np.array([[0.0, 0.2, 1.0]]); Q = np.array([[0.0, 0.36, 1.0]])
    >>> a, s, E = optimal_sublaw(P, Q)
    >>> a.round(12).tolist(), s.round(12).tolist()
    ([0.84], [[0.2, 0.64]])
    """
    F = P - Q
    S = np.minimum.accumulate(F[..., ::-1], axis=-1)[..., ::-1]
    E = np.zeros_like(F)
    np.maximum(F[..., :-1] - S[..., 1:], 0.0, out=E[..., :-1])
    D = np.diff(Q, axis=-1)
    s = D + E[..., 1:] - E[..., :-1]
    alpha = 1.0 + S[..., 0]
    return (float(alpha) if np.ndim(alpha) == 0 else alpha), s, E


def optimal_sublaw_list(P: Sequence[Any], Q: Sequence[Any]) -> tuple[Any, list, list]:
    r"""The same in plain Python numbers (Fractions stay exact).

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> a, s, E = optimal_sublaw_list([0, Fr(2, 5), 1], [0, Fr(1, 4), 1])
    >>> str(a), [str(x) for x in s], [str(x) for x in E]
    ('1', ['2/5', '3/5'], ['0', '3/20', '0'])
    """
    V = len(P) - 1
    F = [P[k] - Q[k] for k in range(V + 1)]
    S = list(F)
    for k in range(V - 1, -1, -1):
        S[k] = min(F[k], S[k + 1])
    zero = F[0] - F[0]
    E = [max(zero, F[j] - S[j + 1]) for j in range(V)] + [zero]
    s = [Q[k] - Q[k - 1] + E[k] - E[k - 1] for k in range(1, V + 1)]
    return 1 + S[0], s, E
