"""Model profiles from real prices and measured latencies.

    host = sy.SimHost(sy.profiles.from_catalog(["gpt-4o", "claude-3-5-haiku"]))
    host = sy.SimHost(sy.profiles.from_catalog(sy.datasets.load("routellm").models))
    sy.profiles.describe(["gpt-4-1106-preview", "llama-2-70b"])   # where every number came from
    sy.profiles.search("mixtral")                                  # catalogue names containing a text
    sy.profiles.fit(result.attempts)                               # profiles from a measured run
    sy.profiles.fit_capacity(host, "my-model")                     # slots and slowdown, measured
    sy.ModelProfile(cache=sy.profiles.PromptCache(read_price=0.3))  # a prompt cache's prices

Prices (USD per 1M tokens), context window, vision and tool support come from the shipped LiteLLM
price tables. Latency is fitted from two public benchmarks, LLMPerf and TheFastest.ai, when the
model (or its family: a base model's chat version, Llama 3.1 for Llama 3) was measured at that
provider, else from every measured provider of the family, else a default typical of all measured
endpoints. docs/datasets.md explains each source and its biases.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._fitting.capacity import CapacityFit as CapacityFit
from sykit._fitting.capacity import fit_capacity as fit_capacity
from sykit._fitting.profile import compare_quantiles as compare_quantiles
from sykit._fitting.profile import fit as fit
from sykit._world import catalog as _catalog
from sykit._world.config import Latency, ModelProfile, PromptCache, check_profiles
from sykit._world.faults import Faults

__all__ = [
    "CapacityFit",
    "PromptCache",
    "compare_quantiles",
    "describe",
    "fit",
    "fit_capacity",
    "fit_latency",
    "from_catalog",
    "measurements",
    "names",
    "search",
    "with_faults",
]

_MODES = ("auto", "llmperf", "thefastest", "default")
#: The minimum cacheable prompt where the price table gives none (OpenAI's and Anthropic's).
DEFAULT_CACHE_MIN_TOKENS = 1024


def names() -> tuple[str, ...]:
    """Every name :func:`from_catalog` accepts: the dataset model names first, then the price
    table's keys (undated names such as ``claude-3-5-haiku`` also work: they pick the newest
    dated key)."""
    return _catalog.names()


def search(text: str, *, limit: int | None = 50) -> list[str]:
    """Catalogue names containing ``text`` (case-insensitive), shortest first."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"search text must be a string, got {type(text).__name__}")
    if limit is not None:
        check_int(limit, "limit", low=0, expected="an int ≥ 0, or None for every match")
    needle = text.lower()
    found = sorted((n for n in _catalog.names() if needle in n.lower()), key=lambda n: (len(n), n))
    return found if limit is None else found[:limit]


def from_catalog(
    names: Iterable[str] | Mapping[str, str] | str,
    *,
    latency: str | Latency = "auto",
) -> dict[str, ModelProfile]:
    """``ModelProfile`` objects for catalogue models, keyed by the names you gave.

        sy.profiles.from_catalog(["gpt-4-1106-preview", "mixtral-8x7b-instruct-v0.1"])
        sy.profiles.from_catalog({"strong": "gpt-4o", "weak": "gpt-4o-mini"})   # your host names
        sy.profiles.from_catalog(ds.models, latency="thefastest")

    ``latency`` is ``"auto"`` (LLMPerf, then TheFastest.ai, then the default), ``"llmperf"`` or
    ``"thefastest"`` (one source, else the default), ``"default"``, or a ``sy.Latency`` used for
    every model. A model the table marks as caching prompts gets a ``sy.profiles.PromptCache`` with
    its cache-read, 5-minute and 1-hour cache-write prices and minimum cacheable prompt (1,024
    tokens where the table gives none), after the documented corrections of
    ``sykit._world.cache_prices`` (``describe`` shows each in ``cache_note``). Quality and output
    length stay at ``ModelProfile``'s defaults: datasets bring their own; change them with
    ``profile.replace(quality=0.8)``. An unknown name raises ``ValueError`` listing close names.
    """
    pairs = _pairs(names)
    if isinstance(latency, str):
        if latency not in _MODES:
            raise ArgumentError(
                f"latency must be one of {', '.join(map(repr, _MODES))} or a sy.Latency, "
                f"got {latency!r}"
            )
    elif not isinstance(latency, Latency):
        raise ArgumentTypeError(
            f"latency must be a mode string or a sy.Latency, got {type(latency).__name__}"
        )
    profiles = {}
    for key, name in pairs:
        entry = _catalog.resolve(name)
        if isinstance(latency, Latency):
            fitted = latency
        else:
            fitted = _catalog.fit_for(entry.provider, entry.family, latency).latency
        options: dict[str, Any] = {}
        if entry.context_window is not None:
            options["context_window"] = entry.context_window
        if entry.cache_read is not None:
            options["cache"] = PromptCache(
                read_price=entry.cache_read,
                write_price=entry.cache_write,
                write_price_1h=entry.cache_write_1h,
                min_tokens=entry.cache_min_tokens or DEFAULT_CACHE_MIN_TOKENS,
            )
        profiles[key] = ModelProfile(
            price_in=entry.price_in,
            price_out=entry.price_out,
            vision=entry.vision,
            tools=entry.tools,
            latency=fitted,
            **options,
        )
    return profiles


def describe(
    names: Iterable[str] | Mapping[str, str] | str, *, latency: str = "auto"
) -> pd.DataFrame:
    """Where each number of :func:`from_catalog`'s profiles came from, one row per model.

    Columns: the price listing (``price_key``, ``snapshot``) and its prices, context window,
    vision and tools flags; the prompt cache's prices (``cache_read``, ``cache_write``,
    ``cache_write_1h``; NaN: none, a write then costs the input price), ``cache_min_tokens`` and
    ``cache_note`` (each correction made to the shipped cache prices, with its rule and
    source); the latency ``latency_source`` (``llmperf:<provider>/<family>``,
    ``thefastest:<provider>/<family>``, ``thefastest:*/<family>`` for all providers pooled, or
    ``default``), how many measurements it used, the measured TTFT median and p95 and tokens/s
    median and p5 the fit goes through, and a note on any stand-in.
    """
    if latency not in _MODES:
        raise ArgumentError(
            f"latency must be one of {', '.join(map(repr, _MODES))}, got {latency!r}"
        )
    rows = []
    for key, name in _pairs(names):
        entry = _catalog.resolve(name)
        fit = _catalog.fit_for(entry.provider, entry.family, latency)
        rows.append(
            {
                "name": key,
                "catalog_name": name,
                "price_key": entry.price_key,
                "snapshot": entry.snapshot,
                "price_in": entry.price_in,
                "price_out": entry.price_out,
                "context_window": entry.context_window or ModelProfile().context_window,
                "vision": entry.vision,
                "tools": entry.tools,
                "cache_read": entry.cache_read,
                "cache_write": entry.cache_write,
                "cache_write_1h": entry.cache_write_1h,
                "cache_min_tokens": entry.cache_min_tokens,
                "cache_note": entry.cache_note,
                "latency_source": fit.source,
                "latency_samples": fit.samples,
                **fit.stats,
                "note": "; ".join(filter(None, [entry.note, fit.note])),
            }
        )
    return pd.DataFrame(rows).set_index("name")


def measurements() -> pd.DataFrame:
    """The latency measurements behind the fits, one row per measured request: ``source``
    (llmperf or thefastest), ``provider``, ``family``, the upstream ``model`` and ``endpoint``,
    ``date``, client ``region``, ``ttft_s``, ``tokens_per_s``, token counts, and whether the row is
    ``used`` (else ``excluded`` says why: a failed request, or TheFastest's ``suspect`` flag)."""
    return _catalog.measurements().copy()


def fit_latency(ttft_s: Iterable[float], tokens_per_s: Iterable[float]) -> Latency:
    """A ``sy.Latency`` fitted to measured samples (seconds to first token; output tokens per
    second after it), the way :func:`from_catalog` fits the shipped measurements.

    TTFT: ``LogNormal`` through the samples' median and 95th percentile. Tokens/s: ``LogNormal``
    through their median and 5th percentile, the slow tail that makes answers late. Needs at least
    5 positive samples of each.
    """
    latency, _ = _catalog.fit_samples(
        _samples(ttft_s, "ttft_s"), _samples(tokens_per_s, "tokens_per_s")
    )
    return latency


def _samples(values: object, name: str) -> np.ndarray:
    """Measured samples as a float array: a list of numbers (a string or a table of rows is not
    one, even though numpy would read it); NaN and other unusable samples are left for the fit
    to drop, as a failed measurement is."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise ArgumentTypeError(
            f"{name} must be a list of numbers (seconds or tokens per second), got "
            f"{type(values).__name__} {values!r:.40}"
        )
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iuf":
        return values.astype(float)
    items = list(values)
    for i, value in enumerate(items):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ArgumentTypeError(
                f"{name}[{i}] must be a number, got {type(value).__name__} {value!r:.40}"
            )
    return np.array(items, dtype=float)


def _pairs(names: object) -> list[tuple[str, str]]:
    if isinstance(names, str):
        names = [names]
    if isinstance(names, Mapping):
        pairs = list(names.items())
    elif isinstance(names, Iterable):
        pairs = [(n, n) for n in names]
    else:
        raise ArgumentTypeError(
            f"names must be a list of catalogue names or a dict of host name → catalogue name, "
            f"got {type(names).__name__}"
        )
    if not pairs:
        raise ArgumentError("names is empty; give at least one catalogue name")
    for key, name in pairs:
        if not isinstance(key, str) or not isinstance(name, str) or not key or not name:
            raise ArgumentTypeError(
                f"model names must be non-empty strings, got {key!r} → {name!r}"
            )
    unknown = []
    for _, name in pairs:
        try:
            _catalog.resolve(name)
        except ValueError:
            unknown.append(name)
    if unknown:
        raise ArgumentError(_catalog.unknown_message(unknown))
    return pairs


def with_faults(profiles: Mapping[str, ModelProfile], faults: Faults) -> dict[str, ModelProfile]:
    """The same profiles, every one with ``faults``:
    ``sy.profiles.with_faults(sy.profiles.from_catalog(names), sy.Faults.realistic())``."""
    if not isinstance(faults, Faults):
        raise ArgumentTypeError(f"faults must be a sy.Faults, got {type(faults).__name__}")
    if isinstance(profiles, Mapping) and not profiles:
        return {}
    checked = check_profiles(profiles)
    return {name: profile.replace(faults=faults) for name, profile in checked.items()}


# Reprs, pickles and tracebacks say sykit.profiles.PromptCache.
for _obj in (CapacityFit, PromptCache, fit_capacity):
    _obj.__module__ = __name__
del _obj
