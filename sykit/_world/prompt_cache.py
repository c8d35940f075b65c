"""The simulated prompt cache's rules, one place for model calls and decision calls.

A cache entry is keyed by model, session and what the prompt's cacheable prefix is: a model call's
whole prompt (the next turn of the conversation starts with it), or a decision's declared prefix
(``sy.DecisionRequest(cache_prefix_tokens=...)``: a judge's instructions and the task, which
repeat on every turn while the rest of its prompt changes). The same rules hold for both:

* a call reads the entry when it is younger than its TTL, at least the cache's ``min_tokens``
  long and no longer than this call's cacheable prefix (a shorter prefix, as after compaction,
  misses);
* an answered call whose cacheable prefix reaches ``min_tokens`` writes what it did not read, at
  its tier's write price (``"5m"`` or ``"1h"``: the call's own ``cache_ttl``, else the cache's
  ``tier``); the entry then lives the tier's TTL from the end of the answer (a hit refreshes it;
  an unchanged prefix keeps the longer of its old and new expiry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError

if TYPE_CHECKING:
    from sykit._world.config import PromptCache

__all__ = [
    "CACHE_TTL_KEY",
    "TIERS",
    "check_prefix",
    "check_ttl",
    "lookup",
    "metadata_tier",
    "tier_of",
    "write",
]

#: The request metadata key that asks one model call for a cache tier (``"5m"`` or ``"1h"``).
CACHE_TTL_KEY = "cache_ttl"
#: A prompt cache's write tiers: the 5-minute default and the 1-hour one.
TIERS = ("5m", "1h")

#: (tokens of the cached prefix, when the entry expires) per (model, session, prefix kind).
Store = dict[tuple[Any, ...], tuple[int, float]]


def check_ttl(value: Any, what: str = "cache_ttl") -> str | None:
    """``value`` if it names a cache tier (or is None: the cache's own), else a clear error."""
    if value is None or value in TIERS:
        return value
    raise ArgumentError(
        f"{what} must be one of {', '.join(map(repr, TIERS))} or None (the cache's own tier), "
        f"got {value!r}"
    )


def check_prefix(tokens: Any, input_tokens: int) -> int:
    """A decision's cacheable prefix: an int from 0 to its whole prompt."""
    tokens = check_int(tokens, "cache_prefix_tokens", low=0, type_error=ArgumentError)
    if tokens > input_tokens:
        raise ArgumentError(
            f"cache_prefix_tokens ({tokens}) must be at most the decision's input_tokens "
            f"({input_tokens}): the prefix is part of the prompt"
        )
    return tokens


def tier_of(cache: PromptCache, asked: Any) -> str:
    """The tier a call writes at: the one it asks for (``asked``), else the cache's. A model
    whose cache has no 1-hour tier writes at its own tier, as a provider ignores a cache option
    it does not offer."""
    asked = check_ttl(asked)
    if asked == "1h" and cache.write_price_1h is None:
        return cache.tier
    return cache.tier if asked is None else asked


def metadata_tier(cache: PromptCache, metadata: Mapping[str, Any]) -> str:
    """The tier a model call writes at, from its request's ``metadata["cache_ttl"]``."""
    return tier_of(cache, check_ttl(metadata.get(CACHE_TTL_KEY), 'metadata["cache_ttl"]'))


def lookup(
    store: Store, key: tuple[Any, ...], now: float, cacheable: int, cache: PromptCache
) -> int:
    """Tokens of this call's cacheable prefix read from the cache at ``now`` (0 on a miss)."""
    entry = store.get(key)
    if entry is not None and now <= entry[1] and cache.min_tokens <= entry[0] <= cacheable:
        return entry[0]
    return 0


def write(
    store: Store,
    key: tuple[Any, ...],
    cached: int,
    cacheable: int,
    cache: PromptCache,
    tier: str,
    end: float,
) -> tuple[int, int]:
    """Cache an answered call's prefix: (tokens written, of them at the 1-hour tier)."""
    if cacheable < cache.min_tokens:
        return 0, 0
    written = cacheable - cached
    expires = end + cache.ttl_for(tier)
    old = store.get(key)
    if old is not None and old[0] == cacheable and old[1] > expires:
        expires = old[1]  # a hit at a shorter tier does not cut a longer entry short
    store[key] = (cacheable, expires)
    return written, written if tier == "1h" else 0
