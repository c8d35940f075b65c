"""What the driver offers an algorithm that runs its own candidate loop (as litellm_like does):
``max_retries`` on both kinds of model call, and ``record_fallback`` / ``record_skip`` so that its
attempt log reads like the host's candidate loop's."""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest

import sykit as sy
from tests.helpers import constant_profile

REQUEST = [sy.Request("hello", id=0)]


def host(**faults: sy.Faults) -> sy.SimHost:
    models = {name: constant_profile(0.25, 10, 100.0, faults=f) for name, f in faults.items()}
    models["ok"] = constant_profile(0.25, 10, 100.0)
    return sy.SimHost(models, policy=sy.HostPolicy(max_retries=2, cooldown_s=0))


def reasons(result: sy.Result) -> list[str | None]:
    return [None if pd.isna(r) else str(r) for r in result.attempts["fallback_reason"]]


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
@pytest.mark.parametrize(("max_retries", "calls"), [(None, 3), (0, 1), (1, 2)])
def test_stream_model_max_retries_replaces_the_policys_for_one_call(engine, max_retries, calls):
    async def algorithm(request, driver):
        with contextlib.suppress(sy.ModelError):
            async with driver.stream_model(request, ["a"], max_retries=max_retries) as stream:
                async for _ in stream:
                    pass
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    h = host(a=sy.Faults(unavailable=1.0))
    result = sy.run(algorithm, REQUEST, host=h, engine=engine)
    assert result.attempts["model"].tolist() == ["a"] * calls + ["ok"]


def test_stream_model_refuses_a_bad_max_retries():
    async def algorithm(request, driver):
        for bad in (-1, 11):
            with pytest.raises(sy.ArgumentError, match="max_retries must be in"):
                driver.stream_model(request, ["ok"], max_retries=bad)
        for bad in (True, 1.0, "1"):
            with pytest.raises(sy.ArgumentTypeError, match="max_retries must be an int"):
                driver.stream_model(request, ["ok"], max_retries=bad)
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    assert sy.run(algorithm, REQUEST, host=host()).requests["status"].tolist() == ["ok"]


def moving_on(first: str, *, own_error: bool = False):
    """Call ``first`` once; on its error, record the fallback and serve from ``ok``."""

    async def algorithm(request, driver):
        try:
            return sy.answered(first, await driver.call_model(request, [first], max_retries=0))
        except sy.ModelError as error:
            driver.record_fallback(sy.ModelError("mine", model=first) if own_error else error)
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    return algorithm


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
@pytest.mark.parametrize(
    ("faults", "reason"),
    [
        (sy.Faults(rate_limit=1.0), "rate_limit"),
        (sy.Faults(unavailable=1.0), "unavailable"),
        (sy.Faults(errors=[sy.faults.ErrorFault.capability(1.0)]), "capability"),
        (sy.Faults(errors=[sy.faults.ErrorFault.context_window(1.0)]), "context_window"),
        (sy.Faults(policy=1.0), "policy"),
        (sy.Faults(errors=[sy.faults.ErrorFault(401, 1.0)]), None),  # not a listed reason
    ],
)
def test_record_fallback_marks_the_failed_attempt_and_counts_it(engine, faults, reason):
    result = sy.run(moving_on("a"), REQUEST, host=host(a=faults), engine=engine)
    assert result.attempts["model"].tolist() == ["a", "ok"]
    assert reasons(result) == [reason, None]
    assert result.requests["n_fallbacks"].tolist() == [1]
    assert result.requests["served_model"].tolist() == ["ok"]


def test_a_timeout_counts_as_a_fallback_without_a_reason():
    h = host(a=sy.Faults(timeout=1.0))
    result = sy.run(moving_on("a"), REQUEST, host=h)
    assert result.attempts["error_kind"].tolist()[0] == "timeout"
    assert reasons(result) == [None, None]
    assert result.requests["n_fallbacks"].tolist() == [1]


@pytest.mark.filterwarnings("ignore::sykit.AlgorithmWarning")
@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_an_error_the_algorithm_made_itself_is_refused(engine):
    h = host(a=sy.Faults(unavailable=1.0))
    result = sy.run(moving_on("a", own_error=True), REQUEST, host=h, engine=engine)
    assert result.requests["status"].tolist() == ["failed"]
    assert result.requests["error_kind"].tolist() == ["algorithm_error"]
    message = result.requests["error_message"].iloc[0]
    assert (
        "record_fallback: ModelError \"model_error from 'a': mine\" was not raised by a call of request 0"
        in message
    )
    assert result.requests["n_fallbacks"].tolist() == [0]
    assert reasons(result) == [None]


def test_an_error_of_another_request_is_refused():
    kept: list[sy.ModelError] = []
    refused: list[str] = []

    async def algorithm(request, driver):
        try:
            await driver.call_model(request, ["a"], max_retries=0)
        except sy.ModelError as error:
            if driver.request_id == 0:
                kept.append(error)
            else:
                with pytest.raises(
                    sy.ArgumentError, match="not raised by a call of request 1"
                ) as e:
                    driver.record_fallback(kept[0])  # request 0's error
                refused.append(str(e.value))
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    h = host(a=sy.Faults(unavailable=1.0))
    requests = [sy.Request("one", id=0), sy.Request("two", id=1)]
    result = sy.run(algorithm, requests, host=h, concurrency=1)
    assert len(refused) == 1
    assert result.attempts["model"].tolist() == ["a", "ok", "a", "ok"]
    # each request's move from a to ok is its own fallback (counted as the candidate loop counts
    # one); the refused record_fallback adds nothing to it
    assert reasons(result) == ["unavailable", None] * 2
    assert result.requests["n_fallbacks"].tolist() == [1, 1]


def test_record_fallback_refuses_what_is_not_an_exception():
    async def algorithm(request, driver):
        with pytest.raises(sy.ArgumentTypeError, match="error must be an exception"):
            driver.record_fallback("503")
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    assert sy.run(algorithm, REQUEST, host=host()).requests["n_fallbacks"].tolist() == [0]


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_record_skip_writes_a_skipped_row_at_this_instant(engine):
    async def algorithm(request, driver):
        await driver.sleep(1.5)
        driver.record_skip(request, "a", "held back by my own cooldown")
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    result = sy.run(algorithm, REQUEST, host=host(a=sy.Faults()), engine=engine)
    rows = result.attempts
    assert rows["model"].tolist() == ["a", "ok"]
    assert rows["status"].tolist() == ["skipped", "ok"]
    assert rows["error_kind"].tolist()[0] == "cooldown"
    assert rows["error_message"].tolist()[0] == "held back by my own cooldown"
    assert rows["start_s"].tolist()[0] == rows["end_s"].tolist()[0] == 1.5
    assert rows["cost_usd"].tolist()[0] == 0.0
    assert rows["call_id"].tolist() == [0, 1]
    assert result.requests["n_attempts"].tolist() == [1]  # a skip is not an attempt made


def test_record_skip_refuses_bad_arguments():
    async def algorithm(request, driver):
        with pytest.raises(sy.ArgumentTypeError, match="one model name"):
            driver.record_skip(request, ["ok"], "why")
        with pytest.raises(sy.ArgumentTypeError, match="message must be a str"):
            driver.record_skip(request, "ok", None)
        with pytest.raises(sy.ArgumentTypeError, match=r"sy\.Request"):
            driver.record_skip("hello", "ok", "why")
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    assert sy.run(algorithm, REQUEST, host=host()).requests["status"].tolist() == ["ok"]


def test_record_skip_of_an_unknown_model_fails_the_request_as_a_call_would():
    async def algorithm(request, driver):
        driver.record_skip(request, "nope", "why")
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    with pytest.warns(sy.AlgorithmWarning, match="unknown model 'nope' in record_skip"):
        result = sy.run(algorithm, REQUEST, host=host())
    assert result.requests["error_kind"].tolist() == ["unknown_model"]
