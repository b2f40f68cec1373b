r"""A documented synthetic family of target/draft pairs, so gap reports and benchmarks run anywhere.

The family
----------
For a vocabulary of ``V`` tokens, one *position* is drawn as follows (all randomness from ``rng``):

1. a random ranking :math:`\pi` of the tokens (a permutation of ``0..V-1``);
2. Zipf-like target logits :math:`\ell_i = -s \log(1 + \pi(i))` (``zipf = s``), so the token of
   rank ``k`` has weight :math:`(1 + k)^{-s/T}` at temperature ``T``;
3. draft logits, a noisy copy: :math:`\ell'_i = \ell_i + \sigma \varepsilon_i`,
   :math:`\varepsilon_i \sim N(0, 1)` i.i.d. (``noise = σ``).

At temperature ``T`` the target is :math:`p = \mathrm{softmax}(\ell / T)` and the draft model's
distribution is :math:`q = \mathrm{softmax}(\ell' / T)` (both models sample at the same temperature,
as in speculative decoding).  ``noise = 0`` gives ``q = p``; larger noise or a larger temperature
moves ``q`` away from ``p`` in total variation (at fixed logits, as ``T`` grows the noise matters
less per token but the tail carries more mass).

The logits are drawn once per position and then tempered, so a sweep over temperatures
(:func:`synthetic_logits` then :func:`tempered`) compares the same positions at every ``T``.

Examples
--------
>>> import numpy as np
>>> p, q = synthetic_pair(8, 1.0, np.random.default_rng(0), noise=0.5)
>>> p.shape, bool(abs(p.sum() - 1) < 1e-12), bool(abs(q.sum() - 1) < 1e-12)
((8,), True, True)
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DEFAULT_NOISE",
    "DEFAULT_ZIPF",
    "softmax",
    "tempered",
    "synthetic_logits",
    "synthetic_pair",
    "synthetic_batch",
]

#: Default standard deviation of the Gaussian noise added to the target logits for the draft.
DEFAULT_NOISE: float = 1.0
#: Default Zipf exponent ``s`` of the target logits.
DEFAULT_ZIPF: float = 1.0


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def _check_temperature(temperature: float) -> float:
    t = float(temperature)
    if not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature: must be a finite number > 0, got {temperature!r}")
    return t


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    r"""Row-wise softmax of ``logits / temperature`` (float64, stable).

    .. math:: \mathrm{softmax}(\ell / T)_i = e^{\ell_i / T} / \sum_j e^{\ell_j / T}

    Examples
    --------
    >>> softmax(np.array([0.0, np.log(3.0)])).round(6)
    array([0.25, 0.75])
    """
    t = _check_temperature(temperature)
    z = np.asarray(logits, dtype=np.float64) / t
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


tempered = softmax  # the name used when sweeping temperatures over fixed logits


def synthetic_logits(
    V: int,
    rng: np.random.Generator | int | None,
    *,
    noise: float = DEFAULT_NOISE,
    zipf: float = DEFAULT_ZIPF,
    size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Target and draft logits of the synthetic family (see the module docstring).

    Parameters
    ----------
    V : int
        Vocabulary size (>= 2).
    rng : Generator or int or None
        The randomness (seeded for reproducibility).
    noise : float
        σ, the standard deviation of the draft's logit noise (>= 0).
    zipf : float
        s, the Zipf exponent of the target logits (> 0).
    size : int, optional
        Number of positions; ``None`` for a single position of shape ``(V,)``.

    Returns
    -------
    target, draft : ndarray
        Logits of shape ``(V,)`` or ``(size, V)``.

    Examples
    --------
    >>> t, d = synthetic_logits(5, 0, noise=0.0)
    >>> bool(np.array_equal(t, d)), sorted(np.exp(-t).round(6).tolist())
    (True, [1.0, 2.0, 3.0, 4.0, 5.0])
    """
    if isinstance(V, bool) or not isinstance(V, int | np.integer) or V < 2:
        raise ValueError(f"V: the vocabulary size must be an integer >= 2, got {V!r}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: must be a finite number >= 0, got {noise!r}")
    if not np.isfinite(zipf) or zipf <= 0:
        raise ValueError(f"zipf: must be a finite number > 0, got {zipf!r}")
    g = _rng(rng)
    m = 1 if size is None else int(size)
    if m < 1:
        raise ValueError(f"size: the number of positions must be >= 1, got {size!r}")
    ranks = np.argsort(g.random((m, int(V))), axis=1)  # a uniform random permutation per row
    target = -float(zipf) * np.log1p(ranks.astype(np.float64))
    draft = target + float(noise) * g.standard_normal((m, int(V)))
    if size is None:
        return target[0], draft[0]
    return target, draft


def synthetic_pair(
    V: int,
    temperature: float,
    rng: np.random.Generator | int | None,
    *,
    noise: float = DEFAULT_NOISE,
    zipf: float = DEFAULT_ZIPF,
) -> tuple[np.ndarray, np.ndarray]:
    r"""One synthetic position: ``(p, q)``, each of shape ``(V,)``, at ``temperature``.

    .. math:: p = \mathrm{softmax}(\ell / T), \quad q = \mathrm{softmax}((\ell + \sigma\varepsilon) / T)

    Examples
    --------
    >>> p, q = synthetic_pair(4, 0.5, 1, noise=0.0)
    >>> bool(np.allclose(p, q))
    True
    """
    t, d = synthetic_logits(V, rng, noise=noise, zipf=zipf)
    return softmax(t, temperature), softmax(d, temperature)


def synthetic_batch(
    size: int,
    V: int,
    temperature: float,
    rng: np.random.Generator | int | None,
    *,
    noise: float = DEFAULT_NOISE,
    zipf: float = DEFAULT_ZIPF,
) -> tuple[np.ndarray, np.ndarray]:
    """``size`` synthetic positions: ``(P, Q)`` of shape ``(size, V)`` (rows are distributions).

    Examples
    --------
    >>> P, Q = synthetic_batch(3, 10, 1.0, 0)
    >>> P.shape, bool(np.allclose(Q.sum(axis=1), 1))
    ((3, 10), True)
    """
    t, d = synthetic_logits(V, rng, noise=noise, zipf=zipf, size=size)
    return softmax(t, temperature), softmax(d, temperature)
