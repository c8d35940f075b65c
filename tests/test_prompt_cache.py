"""Prompt caching: per model and session, TTL, minimum length; priced reads and writes; prefill
time on the uncached part only; attempt columns."""

from __future__ import annotations

import pytest

import sykit as sy
from sykit._hosts._openai_wire import _usage

CACHE = sy.profiles.PromptCache(read_price=0.3, write_price=3.75, ttl_s=300.0, min_tokens=1024)


def _profile(cache=CACHE, prefill=None):
    latency = sy.Latency(
        ttft=sy.dists.Constant(0.5), tokens_per_s=10.0, prefill_tokens_per_s=prefill
    )
    return sy.ModelProfile(
        latency=latency, output_tokens=10, price_in=3.0, price_out=15.0, cache=cache
    )


def _host(**kwargs) -> sy.SimHost:
    return sy.SimHost({"a": _profile(**kwargs), "b": _profile(**kwargs)})


def _session(tokens, gap=1.0, sid="s"):
    return sy.sessions.Session(
        [
            sy.sessions.Turn(sy.Request(f"turn {k}", input_tokens=n), gap_s=gap)
            for k, n in enumerate(tokens)
        ],
        id=sid,
    )


def _route(models):
    async def algorithm(request, driver):
        return sy.route_to(models[request.metadata["turn"]], request)

    return algorithm


def _cache_columns(result):
    a = result.attempts
    return list(
        zip(a["input_tokens"], a["cached_input_tokens"], a["cache_write_tokens"], strict=True)
    )


def test_a_session_reads_its_earlier_prompt_and_writes_the_rest():
    result = sy.run(_route("aaa"), [_session([2000, 3000, 4500])], host=_host(), progress=False)
    assert _cache_columns(result) == [(2000, 0, 2000), (3000, 2000, 1000), (4500, 3000, 1500)]
    costs = result.attempts["cost_usd"].tolist()
    out = 10 * 15.0
    assert costs == pytest.approx(
        [
            (2000 * 3.75 + out) / 1e6,
            (2000 * 0.3 + 1000 * 3.75 + out) / 1e6,
            (3000 * 0.3 + 1500 * 3.75 + out) / 1e6,
        ]
    )


def test_switching_models_pays_the_cold_prefix_again():
    result = sy.run(_route("aba"), [_session([2000, 3000, 4500])], host=_host(), progress=False)
    # b has never seen the session; back on a, the cache holds turn 0's prompt
    assert _cache_columns(result) == [(2000, 0, 2000), (3000, 0, 3000), (4500, 2000, 2500)]


def test_the_cache_expires_after_its_ttl_and_each_session_has_its_own():
    short = sy.profiles.PromptCache(read_price=0.3, ttl_s=5.0, min_tokens=1024)
    late = sy.run(
        _route("aa"), [_session([2000, 3000], gap=10.0)], host=_host(cache=short), progress=False
    )
    assert _cache_columns(late)[1] == (3000, 0, 3000)
    soon = sy.run(
        _route("aa"), [_session([2000, 3000], gap=2.0)], host=_host(cache=short), progress=False
    )
    assert _cache_columns(soon)[1] == (3000, 2000, 1000)
    two = sy.run(
        _route("aa"),
        [_session([2000, 3000], sid="x"), _session([2500, 3500], sid="y")],
        host=_host(),
        progress=False,
        concurrency=2,
    )
    by_request = {
        (rid): (cached, written)
        for rid, cached, written in zip(
            two.attempts["request_id"],
            two.attempts["cached_input_tokens"],
            two.attempts["cache_write_tokens"],
            strict=True,
        )
    }
    assert by_request["x#1"] == (2000, 1000) and by_request["y#1"] == (2500, 1000)


def test_short_prompts_and_compacted_histories_miss():
    result = sy.run(
        _route("aaaa"), [_session([500, 900, 3000, 1500])], host=_host(), progress=False
    )
    # below 1,024 tokens nothing is written; a prompt shorter than the cached one misses
    assert _cache_columns(result) == [(500, 0, 0), (900, 0, 0), (3000, 0, 3000), (1500, 0, 1500)]


def test_prefill_time_counts_only_the_uncached_tokens():
    result = sy.run(
        _route("aa"), [_session([2000, 3000])], host=_host(prefill=1000.0), progress=False
    )
    ttft = result.attempts["ttft_s"].tolist()
    assert ttft == pytest.approx([0.5 + 2000 / 1000, 0.5 + 1000 / 1000])


def test_no_caching_without_a_session_or_a_cache():
    plain = sy.run(
        sy.strategies.single("a"),
        [sy.Request("x", input_tokens=5000)] * 1,
        host=_host(),
        progress=False,
    )
    assert _cache_columns(plain) == [(5000, 0, 0)]
    uncached = sy.run(
        _route("aa"), [_session([2000, 3000])], host=_host(cache=None), progress=False
    )
    assert _cache_columns(uncached) == [(2000, 0, 0), (3000, 0, 0)]
    assert uncached.attempts["cost_usd"].tolist() == pytest.approx(
        [(2000 * 3 + 150) / 1e6, (3000 * 3 + 150) / 1e6]
    )


def test_a_write_price_of_none_is_the_input_price():
    profile = _profile(cache=sy.profiles.PromptCache(read_price=0.3))
    assert profile.cost_usd(3000, 10, cached=2000, written=1000) == pytest.approx(
        (2000 * 0.3 + 1000 * 3.0 + 150) / 1e6
    )


def test_catalog_profiles_carry_the_table_cache_prices():
    profile = sy.profiles.from_catalog(["gpt-4o"])["gpt-4o"]
    assert profile.cache is not None
    assert profile.cache.read_price == pytest.approx(profile.price_in / 2)
    assert sy.profiles.from_catalog(["gpt-4-1106-preview"])["gpt-4-1106-preview"].cache is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {
                "prompt_tokens": 3000,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 2048},
            },
            (2048, 0),
        ),
        (
            {
                "prompt_tokens": 3000,
                "completion_tokens": 5,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 2000,
            },
            (1000, 2000),
        ),
        (
            {
                "prompt_tokens": 3000,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 99_999},
            },
            (3000, 0),
        ),
        (
            {
                "prompt_tokens": 3000,
                "completion_tokens": 5,
                "cache_read_input_tokens": -4,
                "cache_creation_input_tokens": "many",
            },
            (0, 0),
        ),
        ({"prompt_tokens": 3000, "completion_tokens": 5}, (0, 0)),
    ],
)
def test_reported_cache_usage_is_read_and_kept_within_the_prompt(raw, expected):
    usage = _usage(raw, 100, None)
    assert (usage.cached_input_tokens, usage.cache_write_tokens) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # Anthropic's own usage: input_tokens leaves out the cache reads and writes
        (
            {
                "input_tokens": 2,
                "output_tokens": 1,
                "cache_read_input_tokens": 14265,
                "cache_creation_input_tokens": 10408,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 0,
                    "ephemeral_1h_input_tokens": 10408,
                },
            },
            (24675, 14265, 10408, 10408),
        ),
        # a split without the total: the total is its sum
        (
            {
                "input_tokens": 10,
                "output_tokens": 1,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 300,
                    "ephemeral_1h_input_tokens": 200,
                },
            },
            (510, 0, 500, 200),
        ),
        # a gateway's OpenAI shape with Anthropic's fields: prompt_tokens is the whole prompt
        (
            {
                "prompt_tokens": 3000,
                "completion_tokens": 5,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 2000,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 1500,
                    "ephemeral_1h_input_tokens": 500,
                },
            },
            (3000, 1000, 2000, 500),
        ),
        # OpenAI's responses shape: input_tokens is the whole prompt
        (
            {
                "input_tokens": 3000,
                "output_tokens": 5,
                "input_tokens_details": {"cached_tokens": 1024},
            },
            (3000, 1024, 0, 0),
        ),
        # a 1-hour count larger than the writes, or not a count, is kept within them
        (
            {
                "prompt_tokens": 3000,
                "completion_tokens": 5,
                "cache_creation_input_tokens": 100,
                "cache_creation": {"ephemeral_1h_input_tokens": 900},
            },
            (3000, 0, 100, 100),
        ),
        (
            {
                "prompt_tokens": 3000,
                "completion_tokens": 5,
                "cache_creation_input_tokens": 100,
                "cache_creation": {"ephemeral_1h_input_tokens": "lots"},
            },
            (3000, 0, 100, 0),
        ),
    ],
)
def test_every_usage_shape_gives_the_whole_prompt_and_its_cache_parts(raw, expected):
    usage = _usage(raw, 100, None)
    got = (
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.cache_write_tokens,
        usage.cache_write_1h_tokens,
    )
    assert got == expected


def test_one_hour_writes_reported_over_http_are_billed_at_the_one_hour_price():
    profile = sy.ModelProfile(
        price_in=3.0,
        price_out=15.0,
        cache=sy.profiles.PromptCache(read_price=0.3, write_price=3.75, write_price_1h=6.0),
    )
    usage = _usage(
        {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_creation_input_tokens": 1000,
            "cache_creation": {"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 600},
        },
        0,
        None,
    )
    cost = profile.cost_usd(
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_input_tokens,
        usage.cache_write_tokens,
        usage.cache_write_1h_tokens,
    )
    assert cost == pytest.approx((100 * 3.0 + 400 * 3.75 + 600 * 6.0 + 10 * 15.0) / 1e6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"read_price": -1}, "read_price"),
        ({"read_price": 0.1, "ttl_s": 0}, "ttl_s"),
        ({"read_price": 0.1, "ttl_s": float("inf")}, "ttl_s"),
        ({"read_price": 0.1, "min_tokens": -5}, "min_tokens"),
    ],
)
def test_bad_cache_settings_are_refused(kwargs, match):
    with pytest.raises(sy.ArgumentError, match=match):
        sy.profiles.PromptCache(**kwargs)
    with pytest.raises(sy.ArgumentTypeError, match="PromptCache"):
        sy.ModelProfile(cache={"read_price": 0.1})


# -- the 1-hour tier ------------------------------------------------------------------------------

HOUR = sy.profiles.PromptCache(
    read_price=0.3, write_price=3.75, write_price_1h=6.0, min_tokens=1024
)


def _costs_and_columns(result):
    return result.attempts["cost_usd"].tolist(), _cache_columns(result)


def test_a_one_hour_cache_writes_at_its_price_and_outlives_five_minutes():
    hourly = HOUR.replace(tier="1h")
    late = sy.run(
        _route("aa"), [_session([2000, 3000], gap=1000.0)], host=_host(cache=hourly), progress=False
    )
    costs, columns = _costs_and_columns(late)
    assert columns == [(2000, 0, 2000), (3000, 2000, 1000)]  # 1,000 s later: still cached
    out = 10 * 15.0
    assert costs == pytest.approx([(2000 * 6.0 + out) / 1e6, (2000 * 0.3 + 1000 * 6.0 + out) / 1e6])
    five = sy.run(
        _route("aa"), [_session([2000, 3000], gap=1000.0)], host=_host(cache=HOUR), progress=False
    )
    assert _cache_columns(five)[1] == (3000, 0, 3000)  # the 5-minute entry has expired


def test_one_call_asks_for_the_one_hour_tier_in_its_metadata():
    turns = [
        sy.sessions.Turn(
            sy.Request("t0", input_tokens=2000, metadata={"cache_ttl": "1h"}), gap_s=1.0
        ),
        sy.sessions.Turn(sy.Request("t1", input_tokens=3000), gap_s=1000.0),
        sy.sessions.Turn(sy.Request("t2", input_tokens=4000), gap_s=1000.0),
    ]
    result = sy.run(
        _route("aaa"), [sy.sessions.Session(turns, id="s")], host=_host(cache=HOUR), progress=False
    )
    costs, columns = _costs_and_columns(result)
    # turn 0's hour-long entry serves turn 1; turn 1 wrote for 5 minutes, gone by turn 2
    assert columns == [(2000, 0, 2000), (3000, 2000, 1000), (4000, 0, 4000)]
    out = 10 * 15.0
    assert costs == pytest.approx(
        [
            (2000 * 6.0 + out) / 1e6,
            (2000 * 0.3 + 1000 * 3.75 + out) / 1e6,
            (4000 * 3.75 + out) / 1e6,
        ]
    )


def test_a_model_without_a_one_hour_tier_writes_at_its_own():
    turns = [sy.sessions.Turn(sy.Request("t0", input_tokens=2000, metadata={"cache_ttl": "1h"}))]
    result = sy.run(_route("a"), [sy.sessions.Session(turns, id="s")], host=_host(), progress=False)
    assert result.attempts["cost_usd"].tolist() == pytest.approx([(2000 * 3.75 + 150) / 1e6])


def test_catalog_profiles_carry_the_one_hour_price():
    cache = sy.profiles.from_catalog(["claude-sonnet-4-5"])["claude-sonnet-4-5"].cache
    assert cache is not None
    assert (cache.write_price, cache.write_price_1h, cache.ttl_1h_s) == (3.75, 6.0, 3600.0)
    assert cache.replace(tier="1h").write_price_for("1h") == 6.0


def test_cost_usd_prices_one_hour_writes_apart():
    profile = _profile(cache=HOUR)
    assert profile.cost_usd(5000, 10, cached=1000, written=3000, written_1h=2000) == (
        pytest.approx((1000 * 3.0 + 1000 * 0.3 + 1000 * 3.75 + 2000 * 6.0 + 150) / 1e6)
    )


def test_bad_tiers_are_refused():
    with pytest.raises(sy.ArgumentError, match="write_price_1h"):
        sy.profiles.PromptCache(read_price=0.1, tier="1h")
    with pytest.raises(sy.ArgumentError, match="tier"):
        sy.profiles.PromptCache(read_price=0.1, tier="1d")
    with pytest.raises(sy.ArgumentError, match="ttl_1h_s"):
        sy.profiles.PromptCache(read_price=0.1, ttl_1h_s=0)
    with pytest.raises(sy.ArgumentError, match="cache_ttl"):
        sy.DecisionRequest({"q": sy.Boolean("ok?")}, cache_ttl="10m")
    turns = [
        sy.sessions.Turn(sy.Request("t0", input_tokens=2000, metadata={"cache_ttl": "forever"}))
    ]
    with pytest.raises(sy.ArgumentError, match="cache_ttl"):
        sy.run(_route("a"), [sy.sessions.Session(turns, id="s")], host=_host(), progress=False)


# -- decisions ------------------------------------------------------------------------------------

QUESTION = {"ok": sy.Boolean("Is the step done?")}


def _deciding(prefix: int, total: int, *, session: bool = True, ttl=None):
    """An algorithm that asks judge ``j`` one question per turn, then routes to ``a``."""

    async def algorithm(request, driver):
        sid = request.metadata.get("session_id") if session else None
        ask = sy.DecisionRequest(
            QUESTION,
            {"turn": request.metadata["turn"]},
            input_tokens=total + 100 * request.metadata["turn"],
            cache_prefix_tokens=prefix,
            session_id=sid,
            cache_ttl=ttl,
        )
        await driver.call_decision(ask, "j")
        return sy.route_to("a", request)

    return algorithm


def _judge_host(cache=CACHE):
    return sy.SimHost({"a": _profile(), "j": _profile(cache=cache)}, judge=sy.Judge(accuracy=1.0))


def _decisions(result):
    a = result.attempts
    d = a[a["kind"] == "decision"]
    return list(
        zip(d["input_tokens"], d["cached_input_tokens"], d["cache_write_tokens"], strict=True)
    ), d["cost_usd"].tolist()


def test_a_decision_reads_its_cached_prefix_on_later_turns():
    result = sy.run(
        _deciding(1500, 2000),
        [_session([100, 100, 100])],
        host=_judge_host(),
        progress=False,
    )
    columns, costs = _decisions(result)
    assert columns == [(2000, 0, 1500), (2100, 1500, 0), (2200, 1500, 0)]
    out = 5 * 15.0  # the judge's one answer: Judge().output_tokens
    assert costs == pytest.approx(
        [
            (1500 * 3.75 + 500 * 3.0 + out) / 1e6,
            (1500 * 0.3 + 600 * 3.0 + out) / 1e6,
            (1500 * 0.3 + 700 * 3.0 + out) / 1e6,
        ]
    )
    # each request's cost holds its decision's bill
    assert result.requests["cost_usd"].sum() == pytest.approx(result.attempts["cost_usd"].sum())


def test_a_decision_prefix_follows_the_cache_rules():
    short = sy.run(_deciding(800, 2000), [_session([100, 100])], host=_judge_host(), progress=False)
    assert _decisions(short)[0] == [(2000, 0, 0), (2100, 0, 0)]  # below min_tokens
    alone = sy.run(
        _deciding(1500, 2000, session=False),
        [_session([100, 100])],
        host=_judge_host(),
        progress=False,
    )
    assert _decisions(alone)[0] == [(2000, 0, 0), (2100, 0, 0)]  # no session: no cache
    late = sy.run(
        _deciding(1500, 2000),
        [_session([100, 100], gap=1000.0)],
        host=_judge_host(),
        progress=False,
    )
    assert _decisions(late)[0] == [(2000, 0, 1500), (2100, 0, 1500)]  # past the TTL
    hour = sy.run(
        _deciding(1500, 2000, ttl="1h"),
        [_session([100, 100], gap=1000.0)],
        host=_judge_host(HOUR),
        progress=False,
    )
    columns, costs = _decisions(hour)
    assert columns == [(2000, 0, 1500), (2100, 1500, 0)]
    assert costs[0] == pytest.approx((1500 * 6.0 + 500 * 3.0 + 75) / 1e6)


def test_decision_prefixes_and_model_prompts_are_cached_apart():
    async def algorithm(request, driver):
        ask = sy.DecisionRequest(
            QUESTION,
            input_tokens=2000,
            cache_prefix_tokens=1500,
            session_id=request.metadata["session_id"],
        )
        await driver.call_decision(ask, "j")
        return sy.route_to("j", request)

    result = sy.run(algorithm, [_session([3000, 4000])], host=_judge_host(), progress=False)
    a = result.attempts
    rows = list(
        zip(
            a["kind"],
            a["input_tokens"],
            a["cached_input_tokens"],
            a["cache_write_tokens"],
            strict=True,
        )
    )
    assert rows == [
        ("decision", 2000, 0, 1500),
        ("model", 3000, 0, 3000),
        ("decision", 2000, 1500, 0),
        ("model", 4000, 3000, 1000),
    ]


def test_a_decision_prefix_is_part_of_its_prompt():
    with pytest.raises(sy.ArgumentError, match="cache_prefix_tokens"):
        sy.DecisionRequest(QUESTION, input_tokens=100, cache_prefix_tokens=200)
    with pytest.raises(sy.ArgumentError, match="cache_prefix_tokens"):
        sy.DecisionRequest(QUESTION, input_tokens=100, cache_prefix_tokens=-1)


def test_session_prices_take_a_one_hour_cache_at_its_write_price():
    from sykit.sessions._summary import _check_prices

    prices = _check_prices(
        {"a": _profile(cache=HOUR.replace(tier="1h")), "b": _profile(cache=HOUR)}
    )
    assert prices is not None
    assert (prices["a"].cache_write, prices["b"].cache_write) == (6.0, 3.75)
