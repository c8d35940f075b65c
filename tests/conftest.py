"""Shared fixtures: small hosts with constant latencies, so tests can assert exact virtual times."""

from __future__ import annotations

import signal

import pytest
from helpers import constant_profile

import sykit as sy


@pytest.fixture
def profiles() -> dict[str, sy.ModelProfile]:
    """fast answers in 1.0 s, strong in 3.0 s, judge decides in 0.5 s, slow_judge in 5.25 s
    (binary-exact numbers, so sums of times are exact)."""
    return {
        # 0.5 s to the first token, 50 tokens at 100 tokens/s: done at 1.0 s
        "fast": constant_profile(0.5, 50, 100.0, price_in=1.0, price_out=2.0, quality=0.5),
        # 1.0 s to the first token, 100 tokens at 50 tokens/s: done at 3.0 s
        "strong": constant_profile(1.0, 100, 50.0, price_in=10.0, price_out=30.0, quality=0.9),
        # decisions: 0.25 s + 5 tokens at 20 tokens/s = 0.5 s
        "judge": constant_profile(0.25, 5, 20.0, price_in=0.5, price_out=1.0),
        "slow_judge": constant_profile(5.0, 5, 20.0, price_in=0.5, price_out=1.0),
    }


@pytest.fixture
def host(profiles) -> sy.SimHost:
    return sy.SimHost(profiles, judge=sy.Judge(accuracy=1.0))


@pytest.fixture(params=["kernel", "asyncio"])
def engine(request) -> str:
    """The engine a simulation runs on: a test that takes this fixture runs on sykit's kernel and
    on the asyncio engine, and expects the same records from both."""
    return request.param


@pytest.fixture
def run_asyncio_only(engine):
    """``sy.run`` for an algorithm that awaits asyncio primitives (``asyncio.ensure_future``,
    ``asyncio.wait``, an anyio scope), which only the asyncio engine can run. Under ``"kernel"`` it
    checks that ``engine="kernel"`` refuses the algorithm with a clear error and that
    ``engine="auto"`` falls back to asyncio; under ``"asyncio"`` it runs there directly."""

    def run(algorithm, requests, **kwargs) -> sy.Result:
        if engine == "kernel":
            with pytest.raises(sy.ArgumentError, match=r"kernel cannot run; use engine='asyncio'"):
                sy.run(algorithm, requests, engine="kernel", **kwargs)
            result = sy.run(algorithm, requests, engine="auto", **kwargs)
        else:
            result = sy.run(algorithm, requests, engine="asyncio", **kwargs)
        assert result.engine == "asyncio"
        return result

    return run


@pytest.fixture
def sigint_raises():
    """Ctrl-C (SIGINT) raises KeyboardInterrupt in this test, even where the test run was started
    with SIGINT ignored (as a shell starts a background job)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
