"""The strategy library meets odd arguments: each is refused where the strategy is built, with the
argument's name, or handled as it says, never a bare error from inside a run or a silent change."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import sykit as sy
from sykit import strategies as st

NAN, INF = math.nan, math.inf


@pytest.fixture
def host():
    return sy.SimHost(
        {
            "small": sy.ModelProfile(price_in=0.15, price_out=0.60, quality=0.6),
            "large": sy.ModelProfile(price_in=2.5, price_out=10.0, quality=0.9, vision=True),
            "judge": sy.ModelProfile(price_in=0.15, price_out=0.60),
        }
    )


REQUESTS = [sy.Request(f"question {i}", id=i) for i in range(40)]


def served(result):
    return result.requests.set_index("request_id")["served_model"].astype(str)


# -- model names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: st.single(["small", "large"]),
        lambda: st.hedge(["small", "large"], after=1.0),
        lambda: st.hedge_first_token(["small", "large"], after=1.0),
        lambda: st.hedge_first_token("large", after=1.0, backup=["small", "large"]),
    ],
    ids=["single", "hedge", "hedge_first_token", "backup"],
)
def test_a_one_model_strategy_refuses_several_models(build):
    with pytest.raises(sy.ArgumentError, match="takes one model name"):
        build()


@pytest.mark.parametrize(
    "build",
    [
        lambda: st.single(str),
        lambda: st.fallback_chain(5),
        lambda: st.race(None),
        lambda: st.oracle(3.5),
        lambda: st.capability_aware(7, vision=set()),
        lambda: st.litellm_like(5),
        lambda: st.litellm_like(["small", "large"], fallbacks={"small": 5}),
    ],
    ids=["class", "int", "None", "float", "capability_aware", "litellm_like", "litellm_fallbacks"],
)
def test_models_that_are_no_names_are_refused_as_such(build):
    with pytest.raises(sy.ArgumentTypeError, match="a model name or a list of model names"):
        build()


# -- weighted_random ---------------------------------------------------------------------------------


def test_weighted_random_takes_a_numpy_seed(host):
    numpy_seeded = sy.run(
        st.weighted_random(["small", "large"], seed=np.int64(3)), REQUESTS, host=host
    )
    plain = sy.run(st.weighted_random(["small", "large"], seed=3), REQUESTS, host=host)
    assert served(numpy_seeded).equals(served(plain))


def test_weighted_random_with_huge_weights_splits_as_their_ratio(host):
    huge = st.weighted_random({"small": 1e308, "large": 1e308})
    even = st.weighted_random({"small": 1, "large": 1})
    assert huge.__name__ == even.__name__ == "random(small:0.5,large:0.5)"
    assert served(sy.run(huge, REQUESTS, host=host)).equals(
        served(sy.run(even, REQUESTS, host=host))
    )


# -- judges and scores -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"threshold": NAN}, sy.ArgumentError, "threshold must be a finite number"),
        ({"threshold": "0.5"}, sy.ArgumentTypeError, "threshold must be a number"),
        ({"threshold": True}, sy.ArgumentTypeError, "threshold must be a number"),
        ({"judge_timeout_s": -1}, sy.ArgumentError, "judge_timeout_s must be a finite number"),
        ({"judge_timeout_s": NAN}, sy.ArgumentError, "judge_timeout_s must be a finite number"),
        ({"judge_timeout_s": INF}, sy.ArgumentError, "judge_timeout_s must be a finite number"),
        ({"judge_timeout_s": "2"}, sy.ArgumentTypeError, "judge_timeout_s must be a number"),
    ],
)
def test_cascade_checks_its_settings_when_built(settings, error, message):
    with pytest.raises(error, match=message):
        st.cascade("small", "large", judge="judge", **settings)


def test_cascade_with_a_judge_timeout_runs(host):
    result = sy.run(
        st.cascade("small", "large", judge="judge", judge_timeout_s=np.float64(2.0)),
        REQUESTS,
        host=host,
    )
    assert (result.requests["status"] == "ok").all()


@pytest.mark.parametrize(
    ("threshold", "error"),
    [(NAN, sy.ArgumentError), (INF, sy.ArgumentError), ("0.5", sy.ArgumentTypeError)],
)
def test_speculative_checks_its_threshold_when_built(threshold, error):
    with pytest.raises(error, match="threshold must be"):
        st.speculative("small", "large", judge="judge", threshold=threshold)


@pytest.mark.parametrize(
    "score",
    [lambda: 0.5, lambda request, other: 0.5, st.SimulatedScore, st.simulated_score],
    ids=["no argument", "two arguments", "the class", "the factory"],
)
def test_threshold_router_refuses_a_score_it_cannot_call_with_the_request(score):
    with pytest.raises(sy.ArgumentTypeError, match="cannot be called with the request alone"):
        st.threshold_router("small", "large", score=score, threshold=0.5)


def test_threshold_router_takes_scores_of_one_argument(host):
    class Score:
        def __call__(self, request, scale=1.0):
            return scale * len(request.prompt) / 20

    async def later(request):
        return 0.9

    for score in (Score(), later, len, lambda request, *rest: 0.1):
        st.threshold_router("small", "large", score=score, threshold=0.5)


@pytest.mark.parametrize("engine", ["auto", "asyncio"])
def test_threshold_router_says_when_the_score_is_not_a_number(host, engine):
    router = st.threshold_router("small", "large", score=lambda request: None, threshold=0.5)
    with pytest.raises(sy.ArgumentTypeError, match="score function must return a number"):
        sy.run(router, REQUESTS[:5], host=host, strict=True, engine=engine)


# -- hedging -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"after": None}, sy.ArgumentTypeError, "after must be seconds or a quantile"),
        ({"after": True}, sy.ArgumentTypeError, "after must be seconds or a quantile"),
        ({"after": -1}, sy.ArgumentError, "after must be a finite number of seconds"),
        ({"after": NAN}, sy.ArgumentError, "after must be a finite number of seconds"),
        ({"after": INF}, sy.ArgumentError, "after must be a finite number of seconds"),
        ({"after": 1.0, "copies": 0}, sy.ArgumentError, "copies must be an int ≥ 1"),
        ({"after": 1.0, "copies": 2.5}, sy.ArgumentTypeError, "copies must be an int"),
        ({"after": "p95", "copies": "3"}, sy.ArgumentTypeError, "copies must be an int"),
        ({"after": "p95", "warmup": -1}, sy.ArgumentError, "warmup must be an int ≥ 0"),
        ({"after": "p95", "warmup": "5"}, sy.ArgumentTypeError, "warmup must be an int"),
        ({"after": "p95", "initial_after": NAN}, sy.ArgumentError, "initial_after must be"),
        ({"after": "p95", "initial_after": -1}, sy.ArgumentError, "initial_after must be"),
    ],
)
def test_hedge_checks_its_settings_when_built(settings, error, message):
    with pytest.raises(error, match=message):
        st.hedge("large", **settings)


def test_a_quantile_hedge_without_warmup_starts_from_its_initial_delay(host):
    router = st.hedge("large", after="p95", warmup=0, initial_after=0.5)
    result = sy.run(router, REQUESTS, host=host, strict=True)
    assert (result.requests["status"] == "ok").all()
    assert result.requests["evidence_hedge_after_s"].iloc[0] == 0.5


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"copies": 0}, sy.ArgumentError, "copies must be an int ≥ 1"),
        ({"copies": "2"}, sy.ArgumentTypeError, "copies must be an int"),
        ({"after": INF}, sy.ArgumentError, "after must be a finite number of seconds"),
    ],
)
def test_hedge_first_token_checks_its_settings_when_built(settings, error, message):
    with pytest.raises(error, match=message):
        st.hedge_first_token("large", **({"after": 1.0} | settings))


# -- capabilities ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "vision", ["large", lambda: (m for m in ["large"])], ids=["a name", "a generator"]
)
def test_capability_aware_reads_one_vision_name_as_one_model(host, vision):
    router = st.capability_aware(
        ["small", "large"], vision=vision() if callable(vision) else vision
    )
    pictures = [sy.Request(f"look {i}", id=i, images=["cat.png"]) for i in range(5)]
    frame = sy.run(router, pictures, host=host, strict=True).requests
    assert set(frame["selected_model"]) == {"large"}  # not "small" first, refused for the image
    assert (frame["n_attempts"] == 1).all()


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"vision": None}, sy.ArgumentTypeError, "vision must be a collection of model names"),
        ({"vision": [1]}, sy.ArgumentTypeError, "vision must be a collection of model names"),
        (
            {"context_windows": [("small", 10)]},
            sy.ArgumentTypeError,
            "context_windows must be a dict",
        ),
        (
            {"context_windows": {"small": "100"}},
            sy.ArgumentTypeError,
            "context_windows\\['small'\\]",
        ),
        ({"context_windows": {"small": NAN}}, sy.ArgumentError, "context_windows\\['small'\\]"),
        ({"context_windows": {"small": -5}}, sy.ArgumentError, "context_windows\\['small'\\]"),
    ],
)
def test_capability_aware_checks_its_settings_when_built(settings, error, message):
    with pytest.raises(error, match=message):
        st.capability_aware(["small", "large"], **({"vision": {"large"}} | settings))


def test_capability_aware_takes_an_unlimited_window(host):
    router = st.capability_aware(
        ["small", "large"], vision=set(), context_windows={"small": INF, "large": np.int64(10)}
    )
    assert set(served(sy.run(router, REQUESTS[:5], host=host, strict=True))) == {"small"}


# -- calibration -------------------------------------------------------------------------------------


def test_calibrating_a_simulated_score_on_ungraded_requests_warns(host):
    with pytest.warns(UserWarning, match="pure noise") as caught:
        st.calibrate(st.simulated_score("small", "large"), REQUESTS, 0.3)
    assert caught[0].filename == __file__  # pointed at the call, not inside sykit
    with pytest.warns(UserWarning, match="'tiny' and 'huge'"):
        st.calibrate(st.simulated_score("tiny", "huge"), REQUESTS, 0.3, host=host)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st.calibrate(st.simulated_score("small", "large"), REQUESTS, 0.3, host=host)


@pytest.mark.parametrize(
    ("route", "match"),
    [
        (lambda: "small", "cannot be called with the request alone"),
        (lambda request, other: "small", "cannot be called with the request alone"),
    ],
)
def test_static_refuses_a_route_it_cannot_call_with_the_request(route, match):
    """A route of no argument, or of two, failed every request of the run with a TypeError."""
    with pytest.raises(sy.ArgumentTypeError, match=match):
        st.static(route)


def test_static_refuses_an_async_route_that_does_not_take_the_driver():
    async def one(request):
        return sy.route_to("small", request)

    with pytest.raises(
        sy.ArgumentTypeError, match=r"'one' cannot be called with \(request, driver\)"
    ):
        st.static(one)


def test_static_takes_routes_with_defaults_and_builtins_it_cannot_read():
    assert callable(st.static(lambda request, spare=1: "small"))
    assert callable(st.static(len))  # no signature to read: the call says, per request


def test_affinity_refuses_a_latch_list_that_is_no_names():
    with pytest.raises(
        sy.ArgumentTypeError, match="latch_only takes a model name or a list of model names"
    ):
        st.affinity(st.single("small"), latch_only=5)
