"""How a run's attempt records are held: 63 bytes an attempt, nothing derivable stored.

The layout is private (``sykit._run.attempt_log.AttemptLog``); these tests pin what it promises:
the size, that codes narrowed to 8 or 16 bits still number everything a run can produce, and that
a request past the 16-bit limits fails by name instead of writing wrong records.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy
from sykit._run.attempt_log import AttemptLog
from sykit._run.records import PER_REQUEST_LIMIT, decoded


def held_bytes(log: AttemptLog) -> int:
    arrays = [log.f, log.i, log.h, log.b] + ([log.cache] if log.cache is not None else [])
    return sum(a.itemsize * len(a) for a in arrays)


def test_an_attempt_holds_at_most_64_bytes_and_cache_counts_only_once_used():
    log = AttemptLog(["a", "b"])
    for k in range(1000):
        row = log.begin(k, 0, 1, 0, k % 2, 0, 0, -1, float(k))
        if k % 3:
            log.ok(row, k + 1.0, 0.25)
            log.bill(row, 100, 20, 0.01)
        else:
            log.fail(row, k + 0.5, "rate_limit", "slow down", 429)
    assert log.cache is None
    assert held_bytes(log) / 1000 <= 64
    assert held_bytes(log) == 63 * 1000

    log.bill(999, 100, 20, 0.01, cached=64, written=36)
    raw = decoded(log.raw())
    assert raw["cached_input_tokens"][-1] == 64 and raw["cache_write_tokens"][-1] == 36
    assert not raw["cached_input_tokens"][:-1].any()  # earlier attempts read as zero
    assert raw["status"].tolist()[:3] == [1, 0, 0]  # error, ok, ok (the enum's order)
    assert raw["phase"].tolist()[:2] == [1, 1] and not raw["kind"].any()


def test_error_kinds_and_messages_are_not_limited_by_the_narrow_codes():
    """An error's kind and message are one 32-bit code of the pair: 300 kinds and 40,000
    messages (a real server's messages often differ each time) all come back."""
    log = AttemptLog(["a"])
    n = 40_000
    for k in range(n):
        row = log.begin(k, 0, 1, 0, 0, 0, 0, -1, 0.0)
        log.fail(row, 1.0, f"kind-{k % 300}", f"message {k}", 500)
    frame = log.frame("s", list(range(n)))
    assert frame["error_kind"].tolist() == [f"kind-{k % 300}" for k in range(n)]
    assert frame["error_message"].tolist() == [f"message {k}" for k in range(n)]
    assert (frame["http_status"] == 500).all()


def test_frame_dtypes_are_those_of_the_wider_records():
    host = sy.SimHost({"m": constant_profile(0.1, 10, 100.0, faults=sy.Faults(rate_limit=0.5))})
    result = sy.run(
        sy.strategies.single("m"),
        [sy.Request("q", id=i) for i in range(20)],
        host=host,
        progress=False,
    )
    dtypes = result.attempts.dtypes.astype(str).to_dict()
    assert dtypes["call_id"] == "int32" and dtypes["retry_index"] == "int16"
    assert dtypes["candidate_index"] == "int16" and dtypes["http_status"] == "Int16"
    assert dtypes["input_tokens"] == "int32" and dtypes["cached_input_tokens"] == "int32"
    assert dtypes["quality"] == "float64" and dtypes["retried"] == "bool"
    assert result.attempts["retried"].any()


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_a_request_past_the_call_limit_fails_by_name_and_others_are_recorded(engine):
    host = sy.SimHost({"m": constant_profile(0.0, 1, 1e9, price_in=0.0, price_out=0.0)})

    async def many_calls(request, driver):
        calls = PER_REQUEST_LIMIT + 1 if request.id == 0 else 2
        for _ in range(calls):
            response = await driver.call_model(request, ["m"])
        return sy.answered(response.model, response)

    result = sy.run(
        many_calls,
        [sy.Request("q", id=i) for i in range(2)],
        host=host,
        engine=engine,
        progress=False,
    )
    first, second = result.requests.itertuples()
    assert first.status == "failed" and "32,767 calls" in first.error_message
    assert first.error_kind == "algorithm_error"
    assert second.status == "ok"
    # every call made is recorded, numbered 0 .. 32,766 within its request
    calls = result.attempts[result.attempts["request_id"] == 0]["call_id"]
    assert len(calls) == PER_REQUEST_LIMIT and calls.max() == PER_REQUEST_LIMIT - 1
    assert np.array_equal(calls.to_numpy(), np.arange(PER_REQUEST_LIMIT))


def test_the_attempts_frame_is_built_when_first_used_and_then_kept():
    host = sy.SimHost({"m": constant_profile(0.1, 10, 100.0, faults=sy.Faults(rate_limit=0.3))})
    requests = [sy.Request("q", id=i) for i in range(30)]
    result = sy.run(sy.strategies.single("m"), requests, host=host, progress=False)
    assert not isinstance(result.__dict__["_attempts"], pd.DataFrame)
    rows = result.__dict__["_attempts"].rows
    assert f"attempts={rows}" in repr(result)  # counted without building the frame
    assert not isinstance(result.__dict__["_attempts"], pd.DataFrame)
    frame = result.attempts
    assert len(frame) == rows > 30 and result.attempts is frame
    eager = sy.run(sy.strategies.single("m"), requests, host=host, progress=False, engine="kernel")
    pd.testing.assert_frame_equal(frame, eager.attempts)


def test_a_cross_fits_pooled_attempts_are_joined_only_when_read():
    ds = sy.datasets.load("routellm").filter(benchmark="gsm8k").sample(80, seed=0)
    weak, strong = "mixtral-8x7b-instruct-v0.1", "gpt-4-1106-preview"
    cv = sy.learn.cross_fit(
        sy.learn.CategoryPrior(), ds, weak=weak, strong=strong, folds=2, resamples=100
    )
    pooled = cv.comparison.results[0]
    lazy = pooled.__dict__["_attempts"]
    assert not isinstance(lazy, pd.DataFrame) and lazy.rows >= 80
    assert len(pooled.attempts) == lazy.rows
    assert pooled.attempts["request_id"].nunique() == 80


def test_columns_no_attempt_uses_take_no_memory_until_the_frame_is_built():
    """Without prompt caches or grades, the cache counts and grades of a result's unread
    attempts are zeros and NaNs of no size; the frame gets real columns of them."""
    host = sy.SimHost({"m": constant_profile(0.1, 10, 100.0)})
    result = sy.run(
        sy.strategies.single("m"), [sy.Request("q", id=i) for i in range(50)], host=host,
        progress=False,
    )  # fmt: skip
    raw = result.__dict__["_attempts"].raw
    for name in ("cached_input_tokens", "cache_write_tokens", "quality"):
        assert raw[name].strides == (0,) and raw[name].shape == (50,)
    frame = result.attempts
    assert (frame["cached_input_tokens"] == 0).all() and frame["quality"].isna().all()
    assert frame["quality"].to_numpy().strides == (8,)  # a column of its own
