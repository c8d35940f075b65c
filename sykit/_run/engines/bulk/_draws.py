"""The keyed draws of many attempts at once, equal bit for bit to the ones the simulated host
makes one attempt at a time (:mod:`sykit._base.rng`, :mod:`sykit._world.dists`).

The words come from the same BLAKE2b digests; a uniform is ``((w >> 10) | 1) * 2**-54`` in both
(one rounding of an integer to a float, the same in NumPy as in Python). Quantiles use NumPy for
arithmetic (elementwise IEEE operations give the same results as Python's) and the scalar
``math`` functions for the transcendental steps, so no ulp differs from the scalar path.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from hashlib import blake2b
from typing import Any

import numpy as np

from sykit._base.rng import HALF
from sykit._world.dists import (
    Constant,
    Exponential,
    LogNormal,
    Uniform,
    _inv_cdf,
    _normal_quantile,
)

__all__ = ["attempt_units", "quantiles"]


def attempt_units(
    seed: int, request_ids: Sequence[Any], model: str, ns: Sequence[int]
) -> np.ndarray:
    """The eight uniforms of each attempt ``(seed, request_ids[k], model, ns[k])``: an (m, 8)
    array equal to :func:`sykit._base.rng.uniforms` of each key."""
    suffix = f"|{model}|"
    # the seed's part of every key hashed once: each attempt's digest continues a copy of it
    # (cheaper than a new hasher's set-up per attempt; the same digests)
    copy = blake2b(f"{seed}|".encode(), digest_size=64).copy
    digests = []
    for rid, n in zip(request_ids, ns, strict=True):
        hasher = copy()
        hasher.update(f"{rid}{suffix}{n}".encode())
        digests.append(hasher.digest())
    digest = b"".join(digests)
    words = np.frombuffer(digest, dtype="<u8").reshape(-1, 8)
    return ((words >> np.uint64(10)) | np.uint64(1)).astype(np.float64) * HALF


def _standard_normal(u: np.ndarray) -> np.ndarray:
    """The standard normal's quantile of each uniform, by the function ``NormalDist`` calls
    (mapped in C: no Python frame per uniform); ``NormalDist``'s own, with its checks, where a
    uniform is not inside (0, 1)."""
    n = len(u)
    if n and u.min() > 0.0 and u.max() < 1.0:
        zero, one = itertools.repeat(0.0, n), itertools.repeat(1.0, n)
        return np.fromiter(map(_normal_quantile, u.tolist(), zero, one), np.float64, count=n)
    return np.fromiter(map(_inv_cdf, u.tolist()), dtype=np.float64, count=n)


def quantiles(dist: Any, u: np.ndarray) -> np.ndarray:
    """``dist.quantile`` of each uniform in ``u``, as the scalar path computes it."""
    kind = type(dist)
    if kind is Constant:
        return np.full(len(u), dist.value, dtype=np.float64)
    if kind is LogNormal:
        z = _standard_normal(u)
        exponent = dist._mu + dist.sigma * z
        return np.fromiter(map(math.exp, exponent.tolist()), dtype=np.float64, count=len(u))
    if kind is Uniform:
        return dist.low + (dist.high - dist.low) * u
    if kind is Exponential:
        logs = np.fromiter(map(math.log1p, (-u).tolist()), dtype=np.float64, count=len(u))
        return -dist.mean_value * logs
    quantile = dist.quantile
    return np.fromiter((float(quantile(x)) for x in u.tolist()), dtype=np.float64, count=len(u))
