"""The catalogue's prompt-cache prices: each documented correction of the shipped table, one test
per rule, and the rows checked against the provider's page and kept as shipped."""

from __future__ import annotations

import math

import pytest

import sykit as sy
from sykit._base.files import read_table
from sykit._world import cache_prices as _cache_prices
from sykit._world import catalog as _catalog

#: Anthropic's first-party keys whose shipped rows have no cache-write prices.
OLD_CLAUDE = {
    "anthropic/claude-3-5-sonnet-20241022": 3.0,
    "anthropic/claude-3-5-sonnet-latest": 3.0,
    "claude-3-5-haiku-20241022": 0.8,
    "claude-3-5-haiku-latest": 1.0,
    "claude-3-5-sonnet-20240620": 3.0,
    "claude-3-5-sonnet-20241022": 3.0,
    "claude-3-5-sonnet-latest": 3.0,
    "claude-3-7-sonnet-20250219": 3.0,
    "claude-3-7-sonnet-latest": 3.0,
    "claude-3-haiku-20240307": 0.25,
    "claude-3-haiku-latest": 0.25,
    "claude-3-opus-20240229": 15.0,
    "claude-3-opus-latest": 15.0,
    "claude-4-opus-20250514": 15.0,
    "claude-4-sonnet-20250514": 3.0,
    "claude-opus-4-1": 15.0,
    "claude-opus-4-1-20250805": 15.0,
    "claude-opus-4-20250514": 15.0,
    "claude-sonnet-4-20250514": 3.0,
}


def _cache(name: str) -> sy.profiles.PromptCache:
    cache = sy.profiles.from_catalog([name])[name].cache
    assert cache is not None
    return cache


def test_nineteen_claude_keys_lacked_write_prices_in_the_shipped_table():
    rows = _catalog._price_rows()
    lacking = {
        key
        for key, row in rows.items()
        if row["provider"] == "anthropic"
        and row["supports_prompt_caching"] == 1
        and not math.isnan(row["cache_read_usd_per_1m"])
        and math.isnan(row["cache_write_5m_usd_per_1m"])
    }
    assert lacking == set(OLD_CLAUDE)


@pytest.mark.parametrize(("key", "price_in"), sorted(OLD_CLAUDE.items()))
def test_anthropic_writes_cost_1_25x_for_5_minutes_and_2x_for_an_hour(key, price_in):
    cache = _cache(key)
    if "3-haiku" in key:  # Anthropic publishes Haiku 3's rounded prices
        assert (cache.write_price, cache.write_price_1h) == (0.30, 0.50)
    else:
        assert cache.write_price == pytest.approx(1.25 * price_in)
        assert cache.write_price_1h == pytest.approx(2.0 * price_in)
    assert cache.read_price == pytest.approx(0.1 * price_in, abs=0.0051)  # Haiku 3: $0.03


@pytest.mark.parametrize(
    ("name", "minimum"),
    [
        ("claude-3-haiku", 2048),
        ("claude-3-5-haiku", 2048),
        ("claude-3-5-haiku-latest", 2048),
        ("claude-3-5-sonnet", 1024),
        ("claude-3-opus", 1024),
        ("claude-sonnet-4", 1024),
        ("claude-opus-4-1", 1024),
        ("claude-haiku-4-5", 4096),  # the table's own figure, Anthropic's too
        ("claude-opus-4-5", 4096),
    ],
)
def test_the_minimum_cacheable_prompt_follows_anthropic_per_model(name, minimum):
    assert _cache(name).min_tokens == minimum


def test_sonnet_5_5_reads_at_its_published_price():
    assert _cache("claude-sonnet-5-5").read_price == pytest.approx(0.20)


@pytest.mark.parametrize(
    ("name", "read", "write", "write_1h"),
    [
        # unusual ratios, but the provider's own pages list them: kept as shipped
        ("claude-opus-5-5", 0.20, 5.0, 8.0),
        ("claude-fable-5-1", 0.25, 12.5, 20.0),
        ("gpt-6.1-sol", 0.10, 2.5, None),
        ("gpt-4o", 1.25, None, None),
        ("gpt-4.1", 0.5, None, None),
        ("gpt-5", 0.125, None, None),
    ],
)
def test_checked_rows_keep_the_shipped_prices(name, read, write, write_1h):
    cache = _cache(name)
    assert (cache.read_price, cache.write_price, cache.write_price_1h) == (read, write, write_1h)
    assert _catalog.resolve(name).cache_note == ""


@pytest.mark.parametrize(
    "name", ["deepseek-v4-pro", "deepseek/deepseek-chat", "zai/glm-5", "tencent/kimi-k3"]
)
def test_implicit_caches_bill_the_uncached_prompt_at_the_input_price(name):
    profile = sy.profiles.from_catalog([name])[name]
    assert profile.cache is not None and profile.cache.write_price is None
    # the cold prompt of a session's first turn: 2,000 tokens written, at the input price
    assert profile.cost_usd(2000, 0, 0, 2000) == pytest.approx(2000 * profile.price_in / 1e6)
    assert profile.cost_usd(2000, 0, 0, 2000) > 0


def test_a_deepseek_session_pays_for_its_cold_prefix():
    profiles = sy.profiles.from_catalog({"ds": "deepseek-v4-pro"}, latency="default")
    session = sy.sessions.Session([sy.sessions.Turn(sy.Request("a", input_tokens=4000))], id="s")
    result = sy.run(
        sy.strategies.single("ds"), [session], host=sy.SimHost(profiles), progress=False
    )
    (row,) = result.attempts.to_dict("records")
    assert (row["cached_input_tokens"], row["cache_write_tokens"]) == (0, 4000)
    out = row["output_tokens"] * profiles["ds"].price_out
    assert row["cost_usd"] == pytest.approx((4000 * 1.32 + out) / 1e6)


def test_sonnet_4_and_4_5_bill_identical_sessions_alike():
    # the same list prices: with the 1.25x write, a cached session costs the same on both
    profiles = sy.profiles.from_catalog(
        {"s4": "claude-sonnet-4", "s45": "claude-sonnet-4-5"}, latency="default"
    )
    profiles = {k: p.replace(output_tokens=100) for k, p in profiles.items()}
    turns = [sy.sessions.Turn(sy.Request(f"t{k}", input_tokens=3000 + 1000 * k)) for k in range(4)]
    costs = {}
    for model in profiles:
        result = sy.run(
            sy.strategies.single(model),
            [sy.sessions.Session(turns, id="s")],
            host=sy.SimHost(profiles),
            progress=False,
        )
        costs[model] = result.attempts["cost_usd"].sum()
    assert costs["s4"] == pytest.approx(costs["s45"])


def test_the_shipped_table_is_left_as_upstream_wrote_it():
    table = read_table("prices/llm_prices_chat.csv")
    row = table[table["model_key"] == "claude-sonnet-4-20250514"].iloc[0]
    assert math.isnan(row["cache_write_5m_usd_per_1m"])
    assert _catalog.resolve("claude-sonnet-4").cache_write == 3.75


def test_describe_names_each_correction_and_its_source():
    table = sy.profiles.describe(["claude-3-haiku", "deepseek-v4-pro", "gpt-4o"])
    assert list(table["cache_write_1h"].fillna(-1)) == [0.5, -1, -1]
    haiku = table.loc["claude-3-haiku", "cache_note"]
    assert "Haiku 3" in haiku and "2,048" in haiku and _cache_prices.ANTHROPIC_PRICING in haiku
    assert _cache_prices.DEEPSEEK_PRICING in table.loc["deepseek-v4-pro", "cache_note"]
    assert table.loc["gpt-4o", "cache_note"] == ""


def test_every_correction_changes_some_catalogue_row():
    used = set()
    for key in _catalog._price_rows():
        note = _catalog.resolve(key).cache_note
        used |= {fix.rule for fix in _cache_prices.FIXES if fix.rule in note}
    assert used == {fix.rule for fix in _cache_prices.FIXES}
