"""Choosing the engine: the argument, the fallback, and what the result says."""

from __future__ import annotations

import asyncio

import pytest

import sykit as sy

HOST = sy.SimHost(
    {"m": sy.ModelProfile(latency=sy.Latency(ttft=1.0, tokens_per_s=1.0), output_tokens=1)}
)


async def plain(request, driver):
    return sy.answered("m", await driver.call_model(request, ["m"]))


async def with_asyncio(request, driver):
    task = asyncio.ensure_future(driver.call_model(request, ["m"]))
    return sy.answered("m", await task)


def test_the_kernel_runs_sykit_only_algorithms_and_says_so():
    result = sy.run(plain, ["a", "b"], host=HOST)
    assert result.engine == "kernel"
    assert result.requests["end_s"].tolist() == [2.0, 2.0]


def test_an_algorithm_using_asyncio_falls_back_with_the_same_records():
    fallback = sy.run(with_asyncio, ["a", "b"], host=HOST)
    assert fallback.engine == "asyncio"
    direct = sy.run(with_asyncio, ["a", "b"], host=HOST, engine="asyncio")
    assert direct.engine == "asyncio"
    assert fallback.requests.equals(direct.requests) and fallback.attempts.equals(direct.attempts)


def test_the_kernel_only_engine_refuses_asyncio_with_a_way_out():
    with pytest.raises(sy.ArgumentError, match="engine='asyncio'"):
        sy.run(with_asyncio, ["a"], host=HOST, engine="kernel")


@pytest.mark.parametrize("engine", ["fast", None, 3])
def test_an_unknown_engine_is_refused(engine):
    with pytest.raises(sy.ArgumentError, match="engine must be one of"):
        sy.run(plain, ["a"], host=HOST, engine=engine)


def test_a_real_host_cannot_run_on_the_kernel():
    host = sy.HttpHost("http://127.0.0.1:9/v1", api_key="sk-x", models={"m": sy.ModelProfile()})
    with pytest.raises(sy.ArgumentError, match="real host"):
        sy.run(plain, ["a"], host=host, engine="kernel")
