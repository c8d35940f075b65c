"""Seeded generators for sampling, splits and synthetic data: any int is a seed.

NumPy refuses negative seeds, but a user's seed may be any integer (``seed=-1`` is as good a key
as ``seed=1``). A seed ≥ 0 keys the generator NumPy would make of it, so existing samples and
splits stay the same; a negative seed keys a stream of its own, apart from every seed ≥ 0.
"""

from __future__ import annotations

import numpy as np

from sykit._base.checks import check_int

__all__ = ["seeded_rng"]

#: The spawn key that sets a negative seed's stream apart from the seed ≥ 0 of the same size.
_NEGATIVE = 1


def seeded_rng(seed: object, name: str = "seed") -> np.random.Generator:
    """The generator for ``seed`` (any int, NumPy's too; not a bool or float)."""
    value = check_int(seed, name)
    if value >= 0:
        return np.random.default_rng(value)
    return np.random.default_rng(np.random.SeedSequence(-value, spawn_key=(_NEGATIVE,)))
