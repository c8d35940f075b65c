"""Requests start in order and none is lost, however fast they end."""

from __future__ import annotations

import warnings

import pytest

import sykit as sy


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_requests_that_end_without_waiting_are_all_recorded(engine):
    async def broken(request, driver):
        raise KeyError("category")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        result = sy.run(
            broken,
            [f"q{i}" for i in range(3000)],
            host=sy.SimHost({"m": sy.ModelProfile()}),
            engine=engine,
        )
    assert result.requests["request_id"].tolist() == list(range(3000))
    assert (result.requests["error_kind"] == "algorithm_error").all()


def test_a_fixed_chain_rejected_at_once_records_every_request():
    host = sy.SimHost({"m": sy.ModelProfile(reject_delay_s=0)})  # a capability 400 in no time
    requests = [sy.Request(f"q{i}", images=["https://example.com/a.png"]) for i in range(3000)]
    result = sy.run(sy.strategies.single("m"), requests, host=host, concurrency=8)
    assert len(result.requests) == 3000 and (result.requests["error_kind"] == "capability").all()
    assert (result.requests["end_s"] == 0.0).all()


def test_a_closed_loop_starts_requests_in_order_as_slots_free_up():
    latency = sy.Latency(ttft=1.0, tokens_per_s=1.0)  # one token: every answer takes 2.0 s
    host = sy.SimHost({"m": sy.ModelProfile(latency=latency, output_tokens=1)})
    result = sy.run(
        sy.strategies.single("m"), [f"q{i}" for i in range(10)], host=host, concurrency=3
    )
    starts = result.requests.set_index("request_id")["start_s"].to_dict()
    assert starts == {i: 2.0 * (i // 3) for i in range(10)}
    assert result.requests["queue_s"].eq(0).all()  # closed loop: a request arrives with its slot
    assert (result.requests["arrival_s"] == result.requests["start_s"]).all()
