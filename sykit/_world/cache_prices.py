"""Corrections to the shipped price tables' prompt-cache prices, each with its rule and source.

The shipped tables (``datasets/prices/llm_prices_chat.csv``) are LiteLLM's, kept as upstream wrote
them. A few of their cache cells disagree with what the provider bills, in ways that change a
simulated bill:

* the August-2025 ``tokencost`` rows carry no cache-write prices, so Anthropic's Claude 3.x, 4 and
  4.1 models wrote their cache at the plain input price instead of Anthropic's 1.25× (5-minute)
  and 2× (1-hour), and carry no minimum cacheable prompt (Haiku 3 and 3.5 need 2,048 tokens);
* implicit caches (DeepSeek, Z.ai, and resellers of them) list a write price of 0, LiteLLM's "no
  separate write charge"; sykit bills written tokens at the write price, so those prompts' cold
  parts came out free instead of at the input (cache-miss) price;
* one read price was not the provider's published one.

Every correction names its rule and source; :func:`corrected` applies them where the catalogue
reads a row (:func:`sykit._world.catalog.resolve`), and ``sy.profiles.describe`` shows the note. Rows
not listed here are used as shipped: a cache price that merely looks unusual (Claude Opus 5.5 and
Fable 5.1's cheaper reads, GPT-6's write price) was checked against the provider's own page and
is right.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

__all__ = ["FIXES", "CacheFix", "CachePrices", "corrected"]

ANTHROPIC_PRICING = "Anthropic, Prompt caching and Pricing docs (platform.claude.com)"
ANTHROPIC_SONNET_5_5 = "Anthropic, Claude Sonnet 5.5 model page (platform.claude.com)"
DEEPSEEK_PRICING = "DeepSeek, Models & Pricing (api-docs.deepseek.com)"

#: Anthropic's published multipliers of the base input price.
ANTHROPIC_READ = 0.1
ANTHROPIC_WRITE_5M = 1.25
ANTHROPIC_WRITE_1H = 2.0


@dataclass(frozen=True)
class CachePrices:
    """A catalogue row's prompt-cache figures (USD per 1M tokens; None where there are none)."""

    read: float | None
    write: float | None
    write_1h: float | None
    min_tokens: int | None
    note: str = ""


@dataclass(frozen=True)
class CacheFix:
    """One correction: the keys it applies to (a regular expression on the price key, within
    ``provider``), how it changes their cache prices, and the rule and source that say so."""

    keys: str
    provider: str
    fix: Callable[[str, float, CachePrices], CachePrices]
    rule: str
    source: str

    def matches(self, key: str, provider: str) -> bool:
        return provider == self.provider and re.fullmatch(self.keys, key) is not None


# Anthropic's first-party keys of the Claude 3.x, 4 and 4.1 models (the rows that lack writes).
_OLD_CLAUDE = (
    r"(anthropic/)?claude-(3-haiku|3-opus|3-5-sonnet|3-5-haiku|3-7-sonnet|opus-4|sonnet-4|4-opus"
    r"|4-sonnet|opus-4-1)(-\d{8}|-latest)?"
)
_HAIKU_3 = r"(anthropic/)?claude-3-haiku(-\d{8}|-latest)?"
_HAIKU_3_OR_3_5 = r"(anthropic/)?claude-3(-5)?-haiku(-\d{8}|-latest)?"


def _anthropic_writes(key: str, price_in: float, p: CachePrices) -> CachePrices:
    write = round(ANTHROPIC_WRITE_5M * price_in, 6) if p.write is None else p.write
    write_1h = round(ANTHROPIC_WRITE_1H * price_in, 6) if p.write_1h is None else p.write_1h
    return replace(p, write=write, write_1h=write_1h)


def _haiku_3_writes(key: str, price_in: float, p: CachePrices) -> CachePrices:
    return replace(p, write=0.30, write_1h=0.50)


def _anthropic_minimum(key: str, price_in: float, p: CachePrices) -> CachePrices:
    if p.min_tokens is not None:
        return p
    return replace(p, min_tokens=2048 if re.fullmatch(_HAIKU_3_OR_3_5, key) else 1024)


def _anthropic_read(key: str, price_in: float, p: CachePrices) -> CachePrices:
    return replace(p, read=round(ANTHROPIC_READ * price_in, 6))


def _no_write_premium(key: str, price_in: float, p: CachePrices) -> CachePrices:
    if p.write != 0.0:
        return p
    return replace(p, write=None, write_1h=None if p.write_1h == 0.0 else p.write_1h)


_IMPLICIT = (
    "no write price: an implicit cache bills uncached tokens at the input price (the row lists "
    "a write price of 0, LiteLLM's 'no separate charge', which sykit would bill as free)"
)

#: The corrections, in the order they apply.
FIXES: tuple[CacheFix, ...] = (
    CacheFix(
        _OLD_CLAUDE,
        "anthropic",
        _anthropic_writes,
        "5-minute write 1.25x and 1-hour write 2x the input price (the row has no write prices)",
        ANTHROPIC_PRICING,
    ),
    CacheFix(
        _HAIKU_3,
        "anthropic",
        _haiku_3_writes,
        "Claude Haiku 3's published write prices: $0.30 (5-minute) and $0.50 (1-hour)",
        ANTHROPIC_PRICING,
    ),
    CacheFix(
        _OLD_CLAUDE,
        "anthropic",
        _anthropic_minimum,
        "minimum cacheable prompt: 2,048 tokens for Haiku 3 and 3.5, 1,024 for the other "
        "Claude 3.x, 4 and 4.1 models (the row gives none)",
        ANTHROPIC_PRICING,
    ),
    CacheFix(
        r"claude-sonnet-5-5",
        "anthropic",
        _anthropic_read,
        "cache read $0.20 per 1M tokens, 0.1x the input price (the row has $0.10)",
        ANTHROPIC_SONNET_5_5,
    ),
    CacheFix(r".*", "deepseek", _no_write_premium, _IMPLICIT, DEEPSEEK_PRICING),
    CacheFix(r".*", "zai", _no_write_premium, _IMPLICIT, "Z.ai, Pricing (docs.z.ai)"),
    CacheFix(
        r".*",
        "tencent",
        _no_write_premium,
        _IMPLICIT,
        "Tencent Cloud, model pricing (DeepSeek, GLM, Kimi and MiniMax models it resells)",
    ),
)


def corrected(key: str, provider: str, price_in: float, shipped: CachePrices) -> CachePrices:
    """A row's cache prices after the corrections that apply to it; ``note`` names each one
    that changed something."""
    prices = shipped
    notes: list[str] = []
    for fix in FIXES:
        if fix.matches(key, provider):
            changed = fix.fix(key, price_in, prices)
            if changed != prices:
                notes.append(f"cache corrected: {fix.rule} [{fix.source}]")
            prices = changed
    return replace(prices, note="; ".join(notes))
