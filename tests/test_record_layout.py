"""How a run's attempt records are held: 63 bytes an attempt, nothing derivable stored.

The layout is private (``sykit._records.AttemptLog``); these tests pin what it promises: the
size, that codes narrowed to 8 or 16 bits still number everything a run can produce, and that
a request past the 16-bit limits fails by name instead of writing wrong records.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import constant_profile

import sykit as sy
from sykit._records import PER_REQUEST_LIMIT, AttemptLog


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
    raw = log.raw()
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
