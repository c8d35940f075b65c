"""What the keyed draws cost, and what a vectorisable counter-based hash would cost instead.

Every draw in sykit is keyed by ``(seed, request_id, model, n)`` and hashed with BLAKE2b
(:mod:`sykit._base.rng`): one C call per attempt in the event engines, and one per attempt in the bulk
engine too (hashlib has no batch form). A counter-based hash (here SplitMix64's finaliser over a
per-request key, the model, the attempt number and the slot) can be computed for a whole column
of attempts at once with NumPy, and element for element the same in Python; this script prints
what each costs per attempt, measured in one run, so the choice can be made from numbers:

* the event engines' cost per attempt: BLAKE2b's eight words against the counter hash's three
  words an attempt usually needs (fault, TTFT, decode rate), in plain Python;
* the bulk engine's cost per attempt: BLAKE2b per attempt into a NumPy array against the counter
  hash over a column, at 3,759 attempts (the RouteLLM table) and 100,000;
* whether NumPy's ``log``, ``exp`` and ``log1p`` equal the ``math`` module's on this machine (the
  quantiles of a vectorised path must equal the scalar path's to the last bit): the share of
  arguments on which they differ.

    python benchmarks/draw_functions.py
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import numpy as np

from sykit._base.rng import attempt_words
from sykit._run.engines.bulk._draws import attempt_units

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
M1, M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def mix(z: int) -> int:
    """SplitMix64's finaliser on a Python int (64-bit arithmetic by masking)."""
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def counter_words(key: int, model: int, n: int, slots: tuple[int, ...]) -> list[int]:
    """The counter hash's words of one attempt: ``key`` is the request's (hashed once per
    request), ``model`` the model's code."""
    base = mix((key ^ (model * GOLDEN) ^ (n << 32)) & MASK)
    return [mix((base + (slot + 1) * GOLDEN) & MASK) for slot in slots]


def counter_columns(keys: np.ndarray, model: int, ns: np.ndarray, slots: int) -> np.ndarray:
    """The same words for a column of attempts, with NumPy's wrapping uint64 arithmetic."""
    u64 = np.uint64

    def vmix(z: np.ndarray) -> np.ndarray:
        z = (z ^ (z >> u64(30))) * u64(M1)
        z = (z ^ (z >> u64(27))) * u64(M2)
        return z ^ (z >> u64(31))

    with np.errstate(over="ignore"):
        base = vmix(keys ^ u64((model * GOLDEN) & MASK) ^ (ns.astype(np.uint64) << u64(32)))
        out = np.empty((len(keys), slots), dtype=np.uint64)
        for slot in range(slots):
            out[:, slot] = vmix(base + u64(((slot + 1) * GOLDEN) & MASK))
    return out


def best(fn: Callable[[], object], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    # the scalar path: one attempt at a time
    n = 30_000
    ids = list(range(n))
    keys = [mix(i) for i in ids]
    blake = best(lambda: [attempt_words(0, i, "mixtral", 0) for i in ids]) / n
    counter = best(lambda: [counter_words(k, 7, 0, (0, 1, 2)) for k in keys]) / n
    counter8 = best(lambda: [counter_words(k, 7, 0, tuple(range(8))) for k in keys]) / n
    assert [counter_words(k, 7, 0, (0, 1, 2)) for k in keys[:100]] == counter_columns(
        np.asarray(keys[:100], dtype=np.uint64), 7, np.zeros(100, dtype=np.int64), 3
    ).tolist()  # element for element the same in both paths
    print("event engines, per attempt (plain Python):")
    print(f"  BLAKE2b, 8 words        : {blake * 1e6:6.2f} µs")
    print(f"  counter hash, 3 words   : {counter * 1e6:6.2f} µs   ({counter / blake:.2f}x BLAKE2b)")
    print(
        f"  counter hash, 8 words   : {counter8 * 1e6:6.2f} µs   ({counter8 / blake:.2f}x BLAKE2b)"
    )

    print("bulk engine, per attempt (a column at once):")
    for m in (3_759, 100_000):
        column_ids = list(range(m))
        zeros = [0] * m
        key_array = np.asarray([mix(i) for i in column_ids], dtype=np.uint64)
        n_array = np.zeros(m, dtype=np.int64)
        blake_col = best(lambda: attempt_units(0, column_ids, "mixtral", zeros)) / m  # noqa: B023
        counter_col = best(lambda: counter_columns(key_array, 7, n_array, 3)) / m  # noqa: B023
        print(
            f"  {m:>7,} attempts: BLAKE2b {blake_col * 1e9:7.1f} ns   counter hash "
            f"{counter_col * 1e9:6.1f} ns   BLAKE2b / counter: {blake_col / counter_col:5.1f}x"
        )

    rng = np.random.default_rng(1)
    u = rng.random(1_000_000)
    z = rng.normal(0.0, 3.0, 1_000_000)
    shares = {
        "log": np.mean(np.log(u) != np.fromiter(map(math.log, u.tolist()), float, len(u))),
        "exp": np.mean(np.exp(z) != np.fromiter(map(math.exp, z.tolist()), float, len(z))),
        "log1p": np.mean(
            np.log1p(-u) != np.fromiter(map(math.log1p, (-u).tolist()), float, len(u))
        ),
    }
    print("NumPy against math on this machine (share of arguments where they differ):")
    print("  " + "   ".join(f"{name} {share:.2%}" for name, share in shares.items()))
    print(f"  (median of the three: {statistics.median(shares.values()):.2%})")


if __name__ == "__main__":
    main()
