"""Keyed randomness: every draw is a pure function of what it is for, never of execution order.

A draw for "attempt 2 of request 17 at model 'small' in the run with seed 0" comes from hashing that
key, so two strategies that make the same attempt see the same latency and the same fault (common
random numbers), and nothing depends on which coroutine happened to run first.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from hashlib import blake2b
from typing import Any

__all__ = ["HALF", "SLOT", "attempt_words", "first_uniform", "uniforms", "unit", "units"]

_UNPACK = struct.Struct("<8Q").unpack
_HALF = 2.0**-54
HALF = _HALF  # unit(w) == ((w >> 10) | 1) * HALF, for hot loops that inline it


class SLOT:
    """Which of the eight uniforms of an attempt's key feeds which decision (fixed, so meanings stay put)."""

    FAULT = 0
    TTFT = 1
    TOKENS_PER_S = 2
    OUTPUT_TOKENS = 3
    SPIKE = 4
    DETAIL = 5  # which rejection phrase, which Retry-After
    JUDGE = 6
    STALL = 7


def uniforms(*key: object) -> list[float]:
    """Eight independent uniforms in (0, 1), determined by ``key`` alone.

    Each is ``(k + 1/2) / 2**53`` for the top 53 bits ``k`` of a 64-bit word of the key's
    BLAKE2b digest, computed as one rounding of ``(2k + 1) / 2**54``."""
    digest = blake2b("|".join(map(str, key)).encode(), digest_size=64).digest()
    return units(_UNPACK(digest))


def first_uniform(*key: object) -> float:
    """``uniforms(*key)[0]``, without turning the other seven words (a routing choice needs
    one draw)."""
    digest = blake2b("|".join(map(str, key)).encode(), digest_size=64).digest()
    return ((int.from_bytes(digest[:8], "little") >> 10) | 1) * _HALF


def attempt_words(seed: int, request_id: object, model: str, n: int) -> tuple[int, ...]:
    """The eight 64-bit words behind ``uniforms(seed, request_id, model, n)``: the draws of one
    attempt, for a caller that turns only the words it needs into uniforms (:func:`unit`).

    The seed's part of the key is hashed once per seed: each attempt's digest continues a copy
    of it (the same digest as hashing the whole key; a copy costs less than a new hasher)."""
    seeded = _SEEDED.get(seed)
    if seeded is None:
        seeded = _seeded(seed)
    hasher = seeded()
    hasher.update(f"{request_id}|{model}|{n}".encode())
    return _UNPACK(hasher.digest())


#: Per seed, the ``copy`` of a hasher that has read ``f"{seed}|"`` (the latest few seeds).
_SEEDED: dict[int, Callable[[], Any]] = {}


def _seeded(seed: int) -> Callable[[], Any]:
    if len(_SEEDED) >= 64:
        _SEEDED.clear()
    copy = _SEEDED[seed] = blake2b(f"{seed}|".encode(), digest_size=64).copy
    return copy


def unit(word: int) -> float:
    """The uniform in (0, 1) that :func:`uniforms` makes of one word."""
    return ((word >> 10) | 1) * _HALF


def units(words: Sequence[int]) -> list[float]:
    """:func:`unit` of each word, in one comprehension (not a call per word: the simulated host
    turns the eight words of every faulty attempt)."""
    return [((word >> 10) | 1) * _HALF for word in words]
