"""A broken algorithm does not pass for a bad router: it is refused before the run, or the run warns
(raises under strict) and the reprs show what failed."""

from __future__ import annotations

import asyncio
import functools
import re
import warnings

import anyio
import pandas as pd
import pytest

import sykit as sy
from sykit._results.health import AlgorithmError, AlgorithmWarning, check_algorithms, top_errors

REQUESTS = [sy.Request(f"question {i}") for i in range(6)]


@pytest.fixture
def host() -> sy.SimHost:
    def quick(**kwargs):
        return sy.ModelProfile(
            latency=sy.Latency(ttft=0.5, tokens_per_s=100), output_tokens=50, **kwargs
        )

    return sy.SimHost(
        {"fast": quick(), "strong": quick(), "refuses": quick(faults=sy.Faults(policy=1.0))}
    )


async def fast_only(request, driver):
    return sy.answered("fast", await driver.call_model(request, ["fast"]))


def run_warning(algorithm, host, requests=REQUESTS, **kwargs) -> tuple[sy.Result, str]:
    with pytest.warns(AlgorithmWarning) as caught:
        res = sy.run(algorithm, requests, host=host, **kwargs)
    messages = [str(w.message) for w in caught if issubclass(w.category, AlgorithmWarning)]
    assert len(messages) == 1
    return res, messages[0]


def run_quietly(algorithm, host, requests=REQUESTS, **kwargs) -> sy.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("error", AlgorithmWarning)
        return sy.run(algorithm, requests, host=host, **kwargs)


# -- plain functions are refused before the run --------------------------------------------------


def plain(request, driver):
    return sy.route_to("fast", request)


class PlainRoute:
    name = "plain_route"

    def route(self, request, driver):
        return sy.route_to("fast", request)


class PlainCall:
    def __call__(self, request, driver):
        return sy.route_to("fast", request)


async def yields(request, driver):
    yield sy.route_to("fast", request)


@pytest.mark.parametrize(
    ("algorithm", "phrase"),
    [
        (plain, r"'plain' is a plain function .*`async def plain\(request, driver\): \.\.\.`"),
        (functools.partial(plain), "'plain' is a plain function"),
        (PlainRoute(), r"plain `def route` method.*`async def route\(self, request, driver\)"),
        (PlainCall(), r"PlainCall object whose `__call__` is a plain `def`"),
        (yields, "async generator"),
    ],
)
def test_a_plain_def_algorithm_is_refused_before_the_run(host, algorithm, phrase):
    with pytest.raises(sy.ArgumentTypeError, match=phrase):
        sy.run(algorithm, REQUESTS, host=host)
    with pytest.raises(sy.ArgumentTypeError, match=phrase):
        sy.compare({"x": algorithm}, REQUESTS, host=host)


def test_a_strategy_class_instead_of_an_instance_says_so(host):
    class RoundRobin:
        async def route(self, request, driver):
            return sy.route_to("fast", request)

    with pytest.raises(sy.ArgumentTypeError, match=r"the class RoundRobin; pass an instance"):
        sy.run(RoundRobin, REQUESTS, host=host)
    assert run_quietly(RoundRobin(), host).requests["status"].eq("ok").all()


async def routes_to(request, driver, model):
    return sy.route_to(model, request)


class AsyncCall:
    async def __call__(self, request, driver):
        return sy.route_to("fast", request)


def async_wrapper(fn):
    @functools.wraps(fn)
    def wrapper(request, driver):
        return fn(request, driver)  # a sync wrapper that hands back fn's coroutine

    return wrapper


@pytest.mark.parametrize(
    "algorithm",
    [
        functools.partial(routes_to, model="fast"),
        AsyncCall(),
        lambda request, driver: routes_to(request, driver, "fast"),
        async_wrapper(fast_only),
    ],
    ids=["partial", "async __call__", "lambda", "wraps"],
)
def test_async_callables_of_every_shape_run(host, algorithm):
    res = run_quietly(algorithm, host)
    assert (res.requests["status"] == "ok").all()


def test_a_lambda_that_returns_no_awaitable_stops_the_whole_run(host):
    with pytest.raises(sy.ArgumentTypeError) as caught:
        sy.run(lambda request, driver: sy.route_to("fast", request), REQUESTS, host=host)
    assert str(caught.value) == (
        "algorithm '<lambda>' returned Outcome instead of an awaitable (it returned its outcome "
        "directly: only an `async def` function may do that); sykit awaits every algorithm, so "
        "define it with `async def algorithm(request, driver): ...` (a lambda cannot be async: "
        "use a named `async def`)"
    )
    with pytest.raises(sy.ArgumentTypeError, match="'quick' returned NoneType instead"):
        sy.compare({"ok": fast_only, "quick": lambda r, d: None}, REQUESTS, host=host)


# -- most requests failing on the algorithm's side warn -------------------------------------------


def test_a_misspelt_model_warns_naming_it_and_the_models_meant(host):
    async def misspelt(request, driver):
        return sy.route_to("fsat", request)

    res, message = run_warning(misspelt, host)
    assert message == (
        "strategy 'misspelt': 6 of 6 requests failed with unknown_model — the algorithm is "
        "broken, not the models; the first: unknown model 'fsat' in the algorithm's outcome; the "
        "host has: 'fast', 'strong', 'refuses' (did you mean 'fast'?) (strict=True raises instead)"
    )
    assert res.summary()["success_rate"].iloc[0] == 0.0


def test_a_forgotten_await_warns_with_a_hint(host):
    async def no_await(request, driver):
        response = driver.call_model(request, ["fast"])
        return sy.answered("fast", response)

    _, message = run_warning(no_await, host)
    assert "6 of 6 requests failed with algorithm_error" in message
    # the un-awaited call is a coroutine on asyncio, a sykit Call on the kernel
    assert re.search(r"got (coroutine|Call) \(did you forget `await`\?", message)
    assert message.count("forget `await`") == 1


def test_an_attribute_of_an_unawaited_call_gets_the_await_hint(host):
    async def no_await(request, driver):
        response = driver.call_model(request, ["fast"])
        try:
            return sy.answered("fast", response.text)
        finally:
            response.close()

    res, message = run_warning(no_await, host)
    assert re.search(r"AttributeError: '(coroutine|Call)' object has no attribute 'text'", message)
    assert "(did you forget `await`?" in message
    first = res.requests["error_message"].iloc[0]
    assert first.endswith(
        "(did you forget `await`? e.g. `response = await driver.call_model(...)`)"
    )


def test_an_unawaited_outcome_is_an_invalid_outcome_with_the_hint(host):
    async def returns_call(request, driver):
        return fast_only(request, driver)  # the coroutine itself, not its outcome

    _, message = run_warning(returns_call, host)
    assert "failed with invalid_outcome" in message
    assert "the algorithm returned coroutine" in message and "forget `await`" in message


def test_a_response_returned_as_is_says_to_wrap_it(host):
    async def returns_response(request, driver):
        return await driver.call_model(request, ["fast"])

    _, message = run_warning(returns_response, host)
    assert "sy.answered(response.model, response)" in message


def test_a_judge_missing_from_the_host_warns(host):
    async def judged(request, driver):
        response = await driver.call_model(request, ["fast"])
        await driver.call_decision(sy.ask_good_enough(request, response), "judge")
        return sy.answered("fast", response)

    _, message = run_warning(judged, host)
    assert "failed with unknown_model" in message and "unknown model 'judge'" in message


def test_half_the_requests_failing_is_not_a_broken_algorithm(host):
    async def half(request, driver):
        if request.id % 2:
            raise ValueError("odd")
        return await fast_only(request, driver)

    async def most(request, driver):
        if request.id % 3:
            raise ValueError("not a multiple of 3")
        return await fast_only(request, driver)

    assert (run_quietly(half, host).requests["status"] == "failed").sum() == 3
    _, message = run_warning(most, host)
    assert message.startswith("strategy 'most': 4 of 6 requests failed with algorithm_error")


def test_model_failures_are_not_the_algorithms_fault(host):
    async def refused(request, driver):
        return sy.route_to("refuses", request)

    res = run_quietly(refused, host)
    assert set(res.requests["error_kind"]) == {"policy"}


def test_compare_and_arun_warn_once_per_broken_strategy(host):
    async def misspelt(request, driver):
        return sy.route_to("strnog", request)

    with pytest.warns(AlgorithmWarning) as caught:
        sy.compare({"ok": fast_only, "typo": misspelt}, REQUESTS, host=host, seeds=[0, 1])
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1
    assert messages[0].startswith("strategy 'typo': 12 of 12 requests failed with unknown_model")
    assert "did you mean 'strong'?" in messages[0]

    async def cell():
        return await sy.arun(misspelt, REQUESTS, host=host)

    with pytest.warns(AlgorithmWarning, match="strategy 'misspelt': 6 of 6"):
        asyncio.run(cell())


def test_the_warning_points_at_the_callers_line(host):
    async def misspelt(request, driver):
        return sy.route_to("fsat", request)

    with pytest.warns(AlgorithmWarning) as caught:
        sy.run(misspelt, REQUESTS, host=host)
    assert caught[0].filename == __file__


def test_the_fault_catalogue_warns_once_for_a_broken_router():
    async def misspelt(request, driver):
        return sy.route_to("primry", request)

    with pytest.warns(AlgorithmWarning) as caught:
        report = sy.failoverbench.run_catalogue(misspelt, ids=["S01", "S03", "S04"])
    assert not report["passed"].any()
    assert len(caught) == 1
    assert str(caught[0].message).startswith(
        "the router failed on the algorithm's side in 3 of 3 scenarios (S01, S03, S04)"
    )
    assert "did you mean 'primary'?" in str(caught[0].message)


def test_strict_raises_algorithm_error_for_a_broken_strategy():
    frame = pd.DataFrame(
        {
            "status": ["failed", "failed", "ok"],
            "error_kind": ["unknown_model", "unknown_model", None],
            "error_message": ["unknown model 'x'", "unknown model 'x'", None],
        }
    )
    with pytest.raises(AlgorithmError, match="strategy 's': 2 of 3 requests failed"):
        check_algorithms([("s", frame)], strict=True)
    with pytest.warns(AlgorithmWarning, match="strict=True raises instead"):
        check_algorithms([("s", frame)], strict=False)
    assert isinstance(AlgorithmError("x"), sy.SykitError)


# -- strict mode names what is wrong ------------------------------------------------------------------


def test_strict_names_the_misspelt_fallback_not_the_first_model(host):
    async def typo(request, driver):
        return sy.route_to("fast", request, fallbacks=["strnog"])

    with pytest.raises(sy.UnknownModel) as caught:
        sy.run(typo, REQUESTS, host=host, strict=True)
    assert caught.value.model == "strnog"
    assert str(caught.value).startswith("unknown model 'strnog' in the algorithm's outcome")
    assert "did you mean 'strong'?" in caught.value.__notes__


def test_strict_adds_the_await_hint_to_the_raised_error(host):
    async def no_await(request, driver):
        response = driver.call_model(request, ["fast"])
        try:
            return sy.answered("fast", response.text)
        finally:
            response.close()

    with pytest.raises(AttributeError) as caught:
        sy.run(no_await, REQUESTS, host=host, strict=True)
    assert any("did you forget `await`?" in note for note in caught.value.__notes__)


def test_strict_invalid_outcome_is_a_type_error_with_the_hint(host):
    async def returns_call(request, driver):
        return fast_only(request, driver)

    with pytest.raises(sy.ArgumentTypeError, match=r"returned coroutine.*forget `await`"):
        sy.run(returns_call, REQUESTS, host=host, strict=True)


# -- errors inside a task group speak for themselves ------------------------------------------------


def test_an_error_in_an_asyncio_task_group_is_reported_as_itself(host):
    async def grouped(request, driver):
        async with asyncio.TaskGroup() as group:
            group.create_task(driver.call_model(request, ["fast"]))
            raise KeyError("missing")
        return sy.route_to("fast", request)

    res, _ = run_warning(grouped, host)
    row = res.requests.iloc[0]
    assert (row["error_kind"], row["error_message"]) == ("algorithm_error", "KeyError: 'missing'")


def test_an_error_in_an_anyio_task_group_keeps_its_kind(host):
    async def grouped(request, driver):
        async with anyio.create_task_group() as group:
            group.start_soon(driver.call_model, request, ["gpt-9"])
        return sy.route_to("fast", request)

    res, _ = run_warning(grouped, host)
    assert res.requests["error_kind"].iloc[0] == "unknown_model"
    assert (
        res.requests["error_message"]
        .iloc[0]
        .startswith("unknown model 'gpt-9' in call_model(models=...)")
    )


def test_a_model_error_in_a_task_group_keeps_its_kind_even_under_strict(host):
    async def grouped(request, driver):
        async with asyncio.TaskGroup() as group:
            group.create_task(driver.call_model(request, ["refuses"]))
        return sy.route_to("fast", request)

    for strict in (False, True):
        res = run_quietly(grouped, host, strict=strict)
        assert set(res.requests["error_kind"]) == {"policy"}
        assert res.requests["error_message"].iloc[0].startswith("policy from 'refuses' (HTTP 400)")


def test_several_errors_in_a_group_are_each_named(host):
    async def grouped(request, driver):
        async def fail(message):
            raise ValueError(message)

        async with asyncio.TaskGroup() as group:
            group.create_task(fail("one"))
            group.create_task(fail("two"))
        return sy.route_to("fast", request)

    res, _ = run_warning(grouped, host)
    assert res.requests["error_message"].iloc[0] == (
        "ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions): "
        "ValueError: one; ValueError: two"
    )


# -- reprs show what failed ------------------------------------------------------------------------


def test_result_repr_lists_the_top_errors(host):
    async def mixed(request, driver):
        if request.id < 4:
            return sy.route_to("fsat", request)
        if request.id == 4:
            raise RuntimeError("x" * 500)
        return sy.route_to("refuses", request)

    res, _ = run_warning(mixed, host)
    lines = repr(res).splitlines()
    assert lines[0] == "<sykit.Result strategy='mixed' seed=0 requests=6 ok=0 attempts=1"
    assert lines[1].startswith("  failed 4× unknown_model: unknown model 'fsat' in the algorithm")
    assert lines[2].startswith("  failed 1× algorithm_error: RuntimeError: xxx")
    assert lines[2].endswith("…") and len(lines[2]) < 160
    assert lines[3].startswith("  failed 1× policy: policy from 'refuses'") and lines[3][-1] == ">"
    html = res._repr_html_()
    assert "Top errors" in html and "<code>unknown_model</code></td><td>4</td>" in html
    assert [(e.kind, e.count) for e in top_errors(res.requests)] == [
        ("unknown_model", 4),
        ("algorithm_error", 1),
        ("policy", 1),
    ]


def test_healthy_reprs_are_unchanged(host):
    res = run_quietly(fast_only, host)
    assert repr(res) == "<sykit.Result strategy='fast_only' seed=0 requests=6 ok=6 attempts=6>"
    assert "Top errors" not in res._repr_html_()
    cmp = sy.compare([fast_only], REQUESTS, host=host)
    assert repr(cmp) == "<sykit.Comparison strategies=['fast_only'] seeds=[0]>"
    assert "Failed requests" not in cmp._repr_html_()


def test_comparison_repr_names_the_failing_strategies_briefly(host):
    async def misspelt(request, driver):
        return sy.route_to("fsat", request)

    with pytest.warns(AlgorithmWarning):
        cmp = sy.compare({"ok": fast_only, "typo": misspelt}, REQUESTS, host=host, seeds=[0, 1])
    lines = repr(cmp).splitlines()
    assert lines[0] == "<sykit.Comparison strategies=['ok', 'typo'] seeds=[0, 1]"
    assert lines[1].startswith("  typo: 12 of 12 failed, most unknown_model (12): unknown model")
    assert len(lines) == 2 and lines[1].endswith("…>")
    assert "<li>typo: 12 of 12 failed" in cmp._repr_html_()
