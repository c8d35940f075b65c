"""The catalogue behind :mod:`sykit.profiles`: prices and limits per model name, and latency
measurements per provider and model family.

Prices come from the shipped LiteLLM-format tables (the current LiteLLM snapshot first, the
Aug-2025 tokencost copy for models it has dropped). Latency comes from two public benchmarks,
tidied into one table: LLMPerf (Llama-2 on 8 providers, single streamed requests, Dec 2023) and
TheFastest.ai (about 50 endpoints, daily, Apr-May 2024). A catalogue name resolves to a price row
and, when the model was measured, a ``(provider, family)`` pair to fit latency from.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError
from sykit._base.files import read_table
from sykit._world import cache_prices as _cache_prices
from sykit._world.config import Latency
from sykit._world.dists import LogNormal

__all__ = [
    "ALIASES",
    "SNAPSHOTS",
    "Alias",
    "Entry",
    "LatencyFit",
    "fit_for",
    "fit_samples",
    "measurements",
    "names",
    "resolve",
]

#: Price snapshots, preferred first.
SNAPSHOTS = ("litellm-1.110.2", "tokencost-0.1.26")
#: Fewest measurements a latency fit uses.
MIN_SAMPLES = 10
_Z95 = 1.6448536269514722


@dataclass(frozen=True)
class Alias:
    """A catalogue name that is not a price-table key as it stands: the listing it is priced as,
    where its latency was measured, and why."""

    price_key: str
    latency: tuple[str, str] | None = None
    context_window: int | None = None
    note: str = ""


_BASE = "base model: priced and timed as its chat/instruct version"
_TIER = "no listing; priced at Together AI's rate for open models of its size"

#: Dataset model names (RouteLLM, MMLU-Pro) → the listing each is priced and timed as.
ALIASES: dict[str, Alias] = {
    # RouteLLM's weak model, served by Groq (the strong one, gpt-4-1106-preview, is a price key).
    "mixtral-8x7b-instruct-v0.1": Alias(
        "groq/mixtral-8x7b-32768", ("groq", "mixtral-8x7b"), note="served by Groq"
    ),
    # MMLU-Pro's models without a price key of their own name.
    "c4ai-command-r-v01": Alias(
        "command-r", ("cohere", "command-r"), note="open weights of Cohere's command-r API model"
    ),
    "deepseek-coder-v2": Alias(
        "deepseek-coder", note="DeepSeek's API model deepseek-coder (DeepSeek-Coder-V2)"
    ),
    "gemma-7b": Alias("fireworks_ai/accounts/fireworks/models/gemma-7b"),
    "llama-2-7b": Alias(
        "anyscale/meta-llama/Llama-2-7b-chat-hf", ("anyscale", "llama-2-7b"), note=_BASE
    ),
    "llama-2-13b": Alias(
        "anyscale/meta-llama/Llama-2-13b-chat-hf", ("anyscale", "llama-2-13b"), note=_BASE
    ),
    "llama-2-70b": Alias(
        "anyscale/meta-llama/Llama-2-70b-chat-hf", ("anyscale", "llama-2-70b"), note=_BASE
    ),
    "mathstral-7b": Alias("together-ai-4.1b-8b", context_window=32_768, note=_TIER),
    "meta-llama-3-8b": Alias(
        "fireworks_ai/accounts/fireworks/models/llama-v3-8b", ("fireworks", "llama-3-8b")
    ),
    "meta-llama-3-70b": Alias(
        "fireworks_ai/accounts/fireworks/models/llama-v3-70b-instruct",
        ("fireworks", "llama-3-70b"),
        note=_BASE,
    ),
    "meta-llama-3.1-8b": Alias(
        "fireworks_ai/accounts/fireworks/models/llama-v3p1-8b-instruct",
        ("fireworks", "llama-3-8b"),
        note="base model: priced as the instruct version; timed as Llama 3 8B (same architecture)",
    ),
    "meta-llama-3.1-8b-instruct": Alias(
        "fireworks_ai/accounts/fireworks/models/llama-v3p1-8b-instruct",
        ("fireworks", "llama-3-8b"),
        note="timed as Llama 3 8B (same architecture)",
    ),
    "meta-llama-3.1-70b": Alias(
        "fireworks_ai/accounts/fireworks/models/llama-v3p1-70b-instruct",
        ("fireworks", "llama-3-70b"),
        note="base model: priced as the instruct version; timed as Llama 3 70B (same architecture)",
    ),
    "meta-llama-3.1-70b-instruct": Alias(
        "fireworks_ai/accounts/fireworks/models/llama-v3p1-70b-instruct",
        ("fireworks", "llama-3-70b"),
        note="timed as Llama 3 70B (same architecture)",
    ),
    "mistral-7b-instruct-v0.1": Alias("anyscale/mistralai/Mistral-7B-Instruct-v0.1"),
    "mistral-7b-instruct-v0.2": Alias(
        "mistral/open-mistral-7b", note="Mistral AI's API name for Mistral 7B Instruct"
    ),
    "mistral-7b-v0.1": Alias("replicate/mistralai/mistral-7b-v0.1"),
    "mistral-7b-v0.2": Alias("fireworks_ai/accounts/fireworks/models/mistral-7b-v0p2"),
    "mixtral-8x7b-v0.1": Alias(
        "fireworks_ai/accounts/fireworks/models/mixtral-8x7b",
        ("fireworks", "mixtral-8x7b"),
        note="base model: timed as the instruct version",
    ),
    "phi-3-mini-4k-instruct": Alias("azure_ai/Phi-3-mini-4k-instruct"),
    "qwen1.5-7b-chat": Alias("together-ai-4.1b-8b", context_window=32_768, note=_TIER),
    "qwen1.5-72b-chat": Alias("fireworks_ai/accounts/fireworks/models/qwen1p5-72b-chat"),
    "qwen1.5-110b": Alias("together-ai-81.1b-110b", context_window=32_768, note=_TIER),
    "yi-6b": Alias("fireworks_ai/accounts/fireworks/models/yi-6b"),
    "yi-6b-chat": Alias(
        "fireworks_ai/accounts/fireworks/models/yi-6b",
        note="no chat listing: priced as the base model",
    ),
    "yi-34b": Alias("fireworks_ai/accounts/fireworks/models/yi-34b"),
}

# LiteLLM's provider names → the provider names of the latency measurements.
_PRICE_PROVIDERS = {
    "anthropic": "anthropic",
    "anyscale": "anyscale",
    "azure": "azure",
    "bedrock": "bedrock",
    "cloudflare": "cloudflare",
    "cohere": "cohere",
    "cohere_chat": "cohere",
    "databricks": "databricks",
    "fireworks_ai": "fireworks",
    "gemini": "google",
    "groq": "groq",
    "openai": "openai",
    "perplexity": "perplexity",
    "replicate": "replicate",
    "together_ai": "together",
    "vertex_ai-language-models": "google",
}

# Model families: a price key or a measured model name → the family its latency is pooled under.
# Llama 3.1 shares Llama 3's architecture and sizes, so it is timed as Llama 3.
_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), family)
    for pattern, family in (
        (r"gpt-4-1106-preview", "gpt-4-1106-preview"),
        (r"gpt-4-0125-preview|^gpt-4-turbo-preview$", "gpt-4-0125-preview"),
        (r"^gpt-4-turbo(-2024-04-09)?$", "gpt-4-turbo"),
        (r"^gpt-3\.5-turbo-0125$|^gpt-35-turbo-0125$", "gpt-3.5-turbo-0125"),
        (r"^gpt-3\.5-turbo-1106$|^gpt-35-turbo-1106$", "gpt-3.5-turbo-1106"),
        (r"^gpt-3\.5-turbo$|^gpt-35-turbo$", "gpt-3.5-turbo"),
        (r"claude-3-opus", "claude-3-opus"),
        (r"claude-3-sonnet", "claude-3-sonnet"),
        (r"claude-3-haiku", "claude-3-haiku"),
        (r"claude-2\.1|claude-v2:1", "claude-2.1"),
        (r"claude-instant", "claude-instant-1"),
        (r"^command-r-plus$", "command-r-plus"),
        (r"^command-r$", "command-r"),
        (r"^command-light$", "command-light"),
        (r"gemini-1\.5-pro", "gemini-1.5-pro"),
        (r"^gemini-(1\.0-)?pro$", "gemini-1.0-pro"),
        (r"llama-?v?2-7b", "llama-2-7b"),
        (r"llama-?v?2-13b", "llama-2-13b"),
        (r"llama-?v?2-70b", "llama-2-70b"),
        (r"llama-?v?3(\.1|p1)?-8b", "llama-3-8b"),
        (r"llama-?v?3(\.1|p1)?-70b", "llama-3-70b"),
        (r"mixtral-8x7b", "mixtral-8x7b"),
        (r"^phi-2", "phi-2"),
    )
)

# TheFastest.ai's provider spellings (they changed on 2024-04-19) → one name per provider.
_TF_PROVIDERS = {
    "@cf/meta": "cloudflare",
    "cloudflare": "cloudflare",
    "cloudflare.com": "cloudflare",
    "anyscale.com": "anyscale",
    "api.fireworks.ai": "fireworks",
    "fireworks.ai": "fireworks",
    "api.groq.com": "groq",
    "groq.com": "groq",
    "api.perplexity.ai": "perplexity",
    "perplexity.ai": "perplexity",
    "text.octoai.run": "octoai",
    "octoai.run": "octoai",
    "octo.ai": "octoai",
    "togethercomputer": "together",
    "together.xyz": "together",
    "together.ai": "together",
    "databricks.com": "databricks",
    "azuredatabricks.net": "databricks",
    "anthropic": "anthropic",
    "openai": "openai",
    "cohere": "cohere",
    "google": "google",
}

#: Providers whose TheFastest tokens/s is not a decoding speed: Google's stream reports the token
#: count only at the end, so the benchmark counted most tokens as arriving at once.
TPS_UNRELIABLE = frozenset({"google"})


def family_of(name: str) -> str | None:
    """The model family a price key or measured model name belongs to, if sykit times it."""
    tail = name.rsplit("/", 1)[-1].lower()
    for pattern, family in _FAMILIES:
        if pattern.search(tail):
            return family
    return None


# -- prices ------------------------------------------------------------------------------------


@functools.cache
def _price_rows() -> dict[str, dict]:
    table = read_table("prices/llm_prices_chat.csv")
    rows: dict[str, dict] = {}
    for snapshot in reversed(SNAPSHOTS):  # the preferred snapshot overwrites the older one
        part = table[table["snapshot"] == snapshot]
        for row in part.to_dict("records"):
            rows[row["model_key"]] = row
    return rows


@functools.cache
def _lower_keys() -> dict[str, str]:
    lower: dict[str, str] = {}
    for key in sorted(_price_rows()):
        lower.setdefault(key.lower(), key)
    return lower


@functools.cache
def names() -> tuple[str, ...]:
    """Every name :func:`resolve` accepts, aliases first."""
    return tuple(ALIASES) + tuple(sorted(k for k in _price_rows() if k not in ALIASES))


_DATED = re.compile(r"^(?P<base>.+?)[-@](?P<date>\d{8}|\d{4}-\d{2}-\d{2})(?:-v\d+:\d+)?$")


@functools.cache
def _dated() -> dict[str, str]:
    """Undated name → its newest dated price key (``claude-3-5-haiku`` → ``…-20241022``)."""
    newest: dict[str, tuple[str, str]] = {}
    for key in _price_rows():
        match = _DATED.match(key)
        if match:
            base, date = match["base"], match["date"].replace("-", "")
            if base not in newest or date > newest[base][0]:
                newest[base] = (date, key)
    return {base: key for base, (_, key) in newest.items()}


@dataclass(frozen=True)
class Entry:
    """A resolved catalogue name."""

    name: str
    price_key: str
    snapshot: str
    price_in: float
    price_out: float
    context_window: int | None
    vision: bool
    tools: bool
    provider: str | None
    family: str | None
    note: str
    # prompt caching (USD per 1M tokens; None where the table gives none)
    cache_read: float | None = None
    cache_write: float | None = None
    cache_min_tokens: int | None = None
    cache_write_1h: float | None = None
    #: the corrections :mod:`sykit._world.cache_prices` made to the row's cache prices, with sources
    cache_note: str = ""


def resolve(name: str) -> Entry:
    """The price row and latency target of a catalogue name; ValueError with close names if
    unknown."""
    alias = _alias(name)
    key = alias.price_key if alias else _find_key(name)
    row = _price_rows()[key]
    provider = _PRICE_PROVIDERS.get(str(row["provider"]))
    family = family_of(key)
    if alias and alias.latency:
        provider, family = alias.latency
    elif alias:
        provider, family = None, None
    window = alias.context_window if alias and alias.context_window else row["max_input_tokens"]
    note = alias.note if alias else ("" if key == name else f"resolved to {key}")
    price_in = float(row["input_usd_per_1m"]) if _known(row["input_usd_per_1m"]) else 0.0
    cache = _cache_prices.corrected(
        key,
        str(row["provider"]),
        price_in,
        _cache_prices.CachePrices(
            read=_price(row.get("cache_read_usd_per_1m"))
            if row.get("supports_prompt_caching") == 1
            else None,
            write=_price(row.get("cache_write_5m_usd_per_1m")),
            write_1h=_price(row.get("cache_write_1h_usd_per_1m")),
            min_tokens=int(row["prompt_cache_min_tokens"])
            if _known(row.get("prompt_cache_min_tokens"))
            else None,
        ),
    )
    return Entry(
        name=name,
        price_key=key,
        snapshot=str(row["snapshot"]),
        price_in=price_in,
        price_out=float(row["output_usd_per_1m"]) if _known(row["output_usd_per_1m"]) else 0.0,
        context_window=int(window) if _known(window) and window > 0 else None,
        vision=bool(row["supports_vision"]),
        tools=bool(row["supports_function_calling"]),
        provider=provider,
        family=family,
        note=note,
        cache_read=cache.read,
        cache_write=cache.write,
        cache_min_tokens=cache.min_tokens,
        cache_write_1h=cache.write_1h,
        cache_note=cache.note,
    )


def _price(value: Any) -> float | None:  # a catalogue cell: a number, NaN or None
    return float(value) if _known(value) else None


def _known(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _alias(name: str) -> Alias | None:
    """The dataset name ``name`` stands for, in any case (``Mixtral-8x7B-Instruct-v0.1``, as
    Hugging Face spells it), unless it is a price key in some case of its own."""
    alias = ALIASES.get(name)
    if alias is None and name.lower() not in _lower_keys():
        alias = ALIASES.get(name.lower())
    return alias


@functools.cache
def _lower_dated() -> dict[str, str]:
    """:func:`_dated` with lower-case names: undated names resolve in any case, as keys do."""
    return {base.lower(): key for base, key in _dated().items()}


def _find_key(name: str) -> str:
    rows = _price_rows()
    if name in rows:
        return name
    lower = _lower_keys().get(name.lower())
    if lower is not None:
        return lower
    dated = _dated().get(name) or _lower_dated().get(name.lower())
    if dated is not None:
        return dated
    raise ArgumentError(unknown_message([name]))


def _known_name(name: str) -> bool:
    try:
        resolve(name)
    except ArgumentError:
        return False
    return True


def unknown_message(unknown: list[str]) -> str:
    import difflib

    lowered = {n.lower(): n for n in names()}
    parts = []
    for name in unknown:
        stripped = name.strip()
        if stripped != name and stripped and _known_name(stripped):
            parts.append(f"{name!r} (remove the whitespace around it: {stripped!r})")
            continue
        close = difflib.get_close_matches(name.lower(), list(lowered), n=5, cutoff=0.6)
        hint = (
            f"close names: {', '.join(repr(lowered[c]) for c in close)}"
            if close
            else "no close names"
        )
        parts.append(f"{name!r} ({hint})")
    return (
        f"unknown model name{'s' if len(unknown) > 1 else ''} in the catalogue: "
        + "; ".join(parts)
        + ". sy.profiles.search('part of a name') lists the names that contain it."
    )


# -- latency measurements ----------------------------------------------------------------------


@functools.cache
def measurements() -> pd.DataFrame:
    """LLMPerf and TheFastest.ai as one tidy table, one row per measured request."""
    return pd.concat([_llmperf(), _thefastest()], ignore_index=True)


def _llmperf() -> pd.DataFrame:
    raw = read_table("latency/llmperf_requests.csv")
    code = raw["error_code"]
    # -100 is LLMPerf's own "output too few tokens" check: the request was answered, so its
    # timings count. 429 and -1 are failed requests with no timings.
    excluded = np.where(
        code.isna() | (code == -100), None, "error " + code.fillna(0).astype(int).astype(str)
    )
    runs = read_table("latency/llmperf_summary.csv")
    run_date = {
        (p, size): pd.Timestamp(t, unit="s").strftime("%Y-%m-%d")
        for p, size, t in zip(runs["provider"], runs["model_size"], runs["timestamp"], strict=True)
    }
    dates = [run_date.get(k) for k in zip(raw["provider"], raw["model_size"], strict=True)]
    decode_s = raw["end_to_end_latency_s"] - raw["ttft_s"]
    tps = np.where(decode_s > 0, raw["output_tokens"] / decode_s.where(decode_s > 0), np.nan)
    return pd.DataFrame(
        {
            "source": "llmperf",
            "provider": raw["provider"],
            "family": "llama-2-" + raw["model_size"],
            "model": "llama-2-" + raw["model_size"] + "-chat",
            "endpoint": raw["provider"] + "/llama-2-" + raw["model_size"] + "-chat",
            "date": dates,
            "region": "aws-us-west-2",
            "ttft_s": raw["ttft_s"],
            "tokens_per_s": tps,
            "input_tokens": raw["input_tokens"],
            "output_tokens": raw["output_tokens"],
            "used": pd.isna(excluded),
            "excluded": excluded,
        }
    )


def _tf_provider(provider: object, model: str) -> str:
    if isinstance(provider, str) and provider:
        if provider in _TF_PROVIDERS:
            return _TF_PROVIDERS[provider]
        if "azure" in provider or provider == "eastus2":
            return "azure"
        return provider
    if model.startswith("gpt-"):
        return "openai"
    if model.startswith("claude-"):
        return "anthropic"
    if model.startswith("command"):
        return "cohere"
    if "azure" in model:
        return "azure"
    return model.lower()


def _thefastest() -> pd.DataFrame:
    raw = read_table("latency/thefastest_runs.csv")
    models = raw["model"].tolist()
    providers = [_tf_provider(p, m) for p, m in zip(raw["provider"].tolist(), models, strict=True)]
    families = [family_of(m) or m.lower() for m in models]
    suspect = raw["suspect"].astype(bool)
    return pd.DataFrame(
        {
            "source": "thefastest",
            "provider": providers,
            "family": families,
            "model": models,
            "endpoint": raw["endpoint"],
            "date": raw["date"],
            "region": raw["region"],
            "ttft_s": raw["ttft_s"],
            "tokens_per_s": raw["tps"],
            "input_tokens": 1000,
            "output_tokens": raw["num_tokens"],
            "used": ~suspect,
            "excluded": np.where(suspect, "suspect", np.array(None, dtype=object)),
        }
    )


# -- fitting -----------------------------------------------------------------------------------


def fit_samples(ttft_s: np.ndarray, tokens_per_s: np.ndarray | None) -> tuple[Latency, dict]:
    """Log-normal TTFT through the samples' median and 95th percentile; log-normal tokens/s through
    their median and 5th percentile (the slow tail is the one that hurts). ``tokens_per_s=None``
    keeps sykit's default speed."""
    ttft = _clean(ttft_s, "ttft_s")
    stats = {
        "ttft_median_s": float(np.median(ttft)),
        "ttft_p95_s": float(np.quantile(ttft, 0.95)),
    }
    ttft_dist = LogNormal.through(ttft, tail="upper")
    if tokens_per_s is None:
        tps_dist = default_fit().latency.tokens_per_s
        stats |= {"tokens_per_s_median": math.nan, "tokens_per_s_p05": math.nan}
    else:
        tps = _clean(tokens_per_s, "tokens_per_s")
        median, p05 = float(np.median(tps)), float(np.quantile(tps, 0.05))
        stats |= {"tokens_per_s_median": median, "tokens_per_s_p05": p05}
        tps_dist = LogNormal.through(tps, tail="lower")
    return Latency(ttft=ttft_dist, tokens_per_s=tps_dist), stats


def _clean(values: np.ndarray, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array) & (array > 0)]
    if len(array) < 5:
        raise ArgumentError(
            f"fitting latency needs at least 5 positive {what} samples, got {len(array)}"
        )
    return array


@dataclass(frozen=True)
class LatencyFit:
    """A fitted latency and what it came from."""

    latency: Latency
    source: str
    samples: int
    stats: dict
    note: str = ""


def _group(source: str, provider: str | None, family: str) -> pd.DataFrame:
    table = measurements()
    rows = table[(table["source"] == source) & (table["family"] == family) & table["used"]]
    if provider is not None:
        rows = rows[rows["provider"] == provider]
    return rows


@functools.cache
def fit_for(provider: str | None, family: str | None, mode: str = "auto") -> LatencyFit:
    """The latency for a provider's model family: LLMPerf first (single requests, 150 output
    tokens), then TheFastest.ai for that provider, then TheFastest.ai pooled over every provider of
    the family, else the default. ``mode`` "llmperf" or "thefastest" keeps to one source."""
    if family is None or mode == "default":
        return default_fit()
    sources = ("llmperf", "thefastest") if mode == "auto" else (mode,)
    attempts: list[tuple[str, str | None]] = [
        (s, provider) for s in sources if provider is not None
    ]
    attempts += [(s, None) for s in sources if s == "thefastest" or mode == "llmperf"]
    for source, who in attempts:
        rows = _group(source, who, family)
        if len(rows) < MIN_SAMPLES:
            continue
        tps_ok = not (source == "thefastest" and set(rows["provider"]) & TPS_UNRELIABLE)
        latency, stats = fit_samples(
            rows["ttft_s"].to_numpy(), rows["tokens_per_s"].to_numpy() if tps_ok else None
        )
        where = f"{source}:{who or '*'}/{family}"
        note = "" if tps_ok else "tokens/s is the default: the stream reports tokens at the end"
        if source == "thefastest":
            note = "; ".join(filter(None, ["best of 3 concurrent requests (optimistic)", note]))
        return LatencyFit(latency, where, len(rows), stats, note)
    return default_fit()


@functools.cache
def default_fit() -> LatencyFit:
    """A typical measured endpoint: the median, over every (source, provider, family) group with
    enough measurements, of each group's TTFT median and p95 and tokens/s median and p5."""
    table = measurements()
    used = table[table["used"]]
    stats = []
    for (source, provider, _family), rows in used.groupby(["source", "provider", "family"]):
        if len(rows) < MIN_SAMPLES:
            continue
        ttft = rows["ttft_s"].to_numpy()
        tps = rows["tokens_per_s"].to_numpy()
        good_tps = not (source == "thefastest" and provider in TPS_UNRELIABLE)
        stats.append(
            {
                "ttft_median_s": np.median(ttft),
                "ttft_p95_s": np.quantile(ttft, 0.95),
                "tokens_per_s_median": np.median(tps) if good_tps else np.nan,
                "tokens_per_s_p05": np.quantile(tps, 0.05) if good_tps else np.nan,
            }
        )
    typical = pd.DataFrame(stats).median()
    ttft = LogNormal(float(typical["ttft_median_s"]), p95=float(typical["ttft_p95_s"]))
    median, p05 = float(typical["tokens_per_s_median"]), float(typical["tokens_per_s_p05"])
    tps = LogNormal(median, sigma=math.log(median / p05) / _Z95)
    return LatencyFit(
        Latency(ttft=ttft, tokens_per_s=tps),
        "default",
        0,
        {k: float(v) for k, v in typical.items()},
        f"typical of {len(stats)} measured provider/model groups",
    )
