"""Unlabelled traffic with a chosen shape: request sizes, images, long contexts and sessions.

Synthetic requests carry no ground truth, so the simulated host draws each answer's quality from
the profile's ``quality`` and its length from the profile's ``output_tokens``. What the generator
controls is the traffic's shape, the part that decides capability rejections, context-window
fallbacks and cost. Shares are exact (``round(n * share)`` requests), not random.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_probability, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.dists import Distribution, LogNormal
from sykit._world.models import IMAGE_TOKENS
from sykit.datasets._dataset import Dataset
from sykit.datasets._frame import from_frame
from sykit.datasets._random import seeded_rng

__all__ = ["LONG_CONTEXT", "SIZES", "synthetic"]

#: Built-in size classes: input tokens of the text part of a request.
SIZES: Mapping[str, Distribution] = {
    "short": LogNormal(60, p95=250),  # a chat question
    "medium": LogNormal(500, p95=2_000),  # a pasted paragraph or a code snippet
    "long": LogNormal(3_000, p95=12_000),  # a document to summarise
}
_DEFAULT_MIX = {"short": 0.6, "medium": 0.3, "long": 0.1}
#: Input tokens of a long-context request unless ``long_context_tokens`` says otherwise.
LONG_CONTEXT = LogNormal(30_000, p95=120_000)
#: The largest float: shares summing past it are scaled down first.
_LARGEST = sys.float_info.max
#: Tokens assumed for each earlier answer in a session's history.
_ANSWER_TOKENS = 200


def synthetic(
    n: int,
    *,
    seed: int = 0,
    sizes: Mapping[str, float | tuple[float, Distribution]] | None = None,
    image_share: float = 0.0,
    long_context_share: float = 0.0,
    long_context_tokens: Distribution = LONG_CONTEXT,
    sessions: int | None = None,
) -> Dataset:
    """``n`` unlabelled requests, the same ones for the same seed.

        sy.datasets.synthetic(1000, seed=0)                                  # 60/30/10 short/medium/long
        sy.datasets.synthetic(1000, sizes={"short": 0.9, "long": 0.1}, image_share=0.2)
        sy.datasets.synthetic(1000, sizes={"tiny": (1.0, sy.dists.LogNormal(20, p95=60))})
        sy.datasets.synthetic(500, long_context_share=0.05, sessions=50)

    ``sizes`` maps a size class to its share (built-in classes: :data:`SIZES`) or to
    ``(share, input-token distribution)``. ``image_share`` of the requests carry one image URL (and
    765 more input tokens, OpenAI's estimate for one image); ``long_context_share`` draw their input tokens from
    ``long_context_tokens`` instead (size ``"long_context"``). With ``sessions=k`` the requests
    belong to k conversations: ``session_id`` and ``turn`` go into metadata, and a later turn's
    input also counts the earlier turns plus 200 tokens for each earlier answer.
    """
    n = check_int(n, "n", low=1, expected="an int ≥ 1", type_error=ArgumentError)
    seed = check_int(seed, "seed")
    rng = seeded_rng(seed)
    classes = _size_classes(_DEFAULT_MIX if sizes is None else sizes)
    image_share = _share(image_share, "image_share")
    long_context_share = _share(long_context_share, "long_context_share")
    if not isinstance(long_context_tokens, Distribution):
        raise ArgumentTypeError(
            "long_context_tokens must be a distribution such as "
            "sy.dists.LogNormal(30_000, p95=120_000)"
        )
    if sessions is not None:
        sessions = check_int(
            sessions,
            "sessions",
            low=1,
            high=n,
            expected=f"an int from 1 to n ({n}) or None",
            type_error=ArgumentError,
        )

    labels = list(classes)
    counts = _apportion(n, [classes[c][0] for c in labels])
    size = np.array(labels, dtype=object).repeat(counts)[rng.permutation(n)]
    u_tokens = rng.random(n)
    has_image = _exact(rng, n, image_share)
    long_context = _exact(rng, n, long_context_share)

    tokens = np.empty(n, dtype=np.int64)
    for i in range(n):
        dist = long_context_tokens if long_context[i] else classes[size[i]][1]
        tokens[i] = max(1, round(dist.quantile(float(u_tokens[i]))))
    size[long_context] = "long_context"
    tokens += IMAGE_TOKENS * has_image

    frame = pd.DataFrame(
        {
            "id": [f"synthetic/{seed}/{i}" for i in range(n)],
            "prompt": [f"synthetic {s} request {i}" for i, s in enumerate(size)],
            "images": [
                [f"https://example.com/sykit/synthetic/{seed}/{i}.png"] if img else []
                for i, img in enumerate(has_image)
            ],
            "size": size.astype(str),
            "has_image": has_image,
            "long_context": long_context,
        }
    )
    if sessions is not None:
        # Every session gets at least one request; the rest are spread at random.
        session = np.concatenate([np.arange(sessions), rng.integers(sessions, size=n - sessions)])
        session = session[rng.permutation(n)]
        turn = np.zeros(n, dtype=np.int64)
        history = np.zeros(sessions, dtype=np.int64)
        seen = np.zeros(sessions, dtype=np.int64)
        own = tokens.copy()
        for i in range(n):
            s = session[i]
            seen[s] += 1
            turn[i] = seen[s]
            tokens[i] = own[i] + history[s]
            history[s] += own[i] + _ANSWER_TOKENS
        frame["session_id"] = [f"synthetic/{seed}/session/{s}" for s in session]
        frame["turn"] = turn
    frame["input_tokens"] = tokens
    descriptive = [c for c in frame.columns if c not in ("id", "prompt", "images", "input_tokens")]
    return from_frame(
        frame,
        prompt="prompt",
        id="id",
        images="images",
        input_tokens="input_tokens",
        metadata=descriptive,  # nothing here is ground truth: a router may read all of it
        name="synthetic",
    )


def _size_classes(
    sizes: Mapping[str, float | tuple[float, Distribution]],
) -> dict[str, tuple[float, Distribution]]:
    if not isinstance(sizes, Mapping) or not sizes:
        raise ArgumentError("sizes must be a non-empty dict of size class → share")
    classes = {}
    for label, spec in sizes.items():
        if isinstance(spec, tuple):
            if len(spec) != 2 or not isinstance(spec[1], Distribution):
                raise ArgumentTypeError(
                    f"sizes[{label!r}] must be a share or (share, distribution), got {spec!r}"
                )
            share, dist = spec
        else:
            if label not in SIZES:
                raise ArgumentError(
                    f"sizes: unknown size class {label!r}; built-in classes are "
                    f"{', '.join(map(repr, SIZES))}, or give (share, distribution)"
                )
            share, dist = spec, SIZES[label]
        share = check_real(
            share,
            f"sizes[{label!r}]: share",
            low=0,
            expected="a number ≥ 0",
            type_error=ArgumentError,
        )
        if str(label) in classes:
            raise ArgumentError(
                f"sizes: two size classes are named {str(label)!r}; give each class its own name"
            )
        classes[str(label)] = (share, dist)
    if sum(share for share, _ in classes.values()) <= 0:
        raise ArgumentError("sizes: the shares must not all be 0")
    return classes


def _share(value: object, name: str) -> float:
    return check_probability(value, name, expected="a number from 0 to 1", type_error=ArgumentError)


def _apportion(n: int, weights: list[float]) -> np.ndarray:
    """Split n into counts proportional to weights (largest remainders round)."""
    w = np.asarray(weights, dtype=float)
    if w.max() > _LARGEST / len(w):  # shares whose sum would overflow: only their ratios matter
        w = w / w.max()
    exact = n * w / w.sum()
    counts = np.floor(exact).astype(int)
    short = n - int(counts.sum())
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return counts


def _exact(rng: np.random.Generator, n: int, share: float) -> np.ndarray:
    """A boolean mask with exactly round(n * share) True values at random places."""
    flags = np.zeros(n, dtype=bool)
    flags[rng.permutation(n)[: math.floor(n * share + 0.5)]] = True
    return flags
