"""Helpers shared by the tests: constant-latency profiles and attempt-row filters."""

from __future__ import annotations

import warnings

import pandas.testing as pdt

import sykit as sy


def constant_profile(ttft: float, tokens: int, tps: float, **kwargs) -> sy.ModelProfile:
    """A profile whose every answer takes exactly ttft + tokens / tps seconds."""
    return sy.ModelProfile(
        latency=sy.Latency(ttft=ttft, tokens_per_s=tps), output_tokens=tokens, **kwargs
    )


def rows(result: sy.Result, **where) -> list[dict]:
    """Attempt rows matching column == value filters, as dicts in start order."""
    frame = result.attempts
    for column, value in where.items():
        frame = frame[frame[column] == value]
    return frame.to_dict("records")


def weak_strong_host() -> sy.SimHost:
    """A cheap, fast weak model and a dear, slow strong one that is rate limited 10 % of the time."""
    return sy.SimHost(
        {
            "weak": constant_profile(0.25, 50, 100.0, price_in=0.1, price_out=0.4, quality=0.4),
            "strong": constant_profile(
                1.0,
                100,
                50.0,
                price_in=5.0,
                price_out=15.0,
                quality=0.9,
                faults=sy.Faults(rate_limit=0.1, retry_after_s=0.5),
            ),
        }
    )


def run_both(algorithm, items, **kwargs) -> sy.Result:
    """Run on the kernel and on asyncio, check the frames are identical, return the kernel's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        kernel = sy.run(algorithm, items, engine="kernel", progress=False, **kwargs)
        on_asyncio = sy.run(algorithm, items, engine="asyncio", progress=False, **kwargs)
    assert (kernel.engine, on_asyncio.engine) == ("kernel", "asyncio")
    pdt.assert_frame_equal(kernel.attempts, on_asyncio.attempts)
    pdt.assert_frame_equal(kernel.requests, on_asyncio.requests)
    return kernel


def numbered_requests(n: int) -> list[sy.Request]:
    """``n`` requests with ids 0 to n - 1."""
    return [sy.Request(f"q{i}", id=i) for i in range(n)]


def load_script(path) -> object:
    """A script of the repository (a benchmark, a docs generator) imported as a module, for
    tests of its functions."""
    import importlib.util
    from pathlib import Path

    path = Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def finishes(work, seconds: float):
    """``work()``'s result, or a test failure if it has not returned after ``seconds`` of wall
    time (it runs in a daemon thread, so a run that spins fails the test instead of hanging it).
    An error of ``work()`` is raised here."""
    import threading

    import pytest

    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the caller below
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds:g} s of wall time: the run never ends")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]  # a BaseException, stored above
    return outcome["value"]
