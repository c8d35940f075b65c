"""Bad configuration and run arguments fail where they are written, with a message naming them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sykit as sy

INF, NAN = math.inf, math.nan


async def to_a(request, driver):
    return sy.route_to("a", request)


@pytest.fixture
def host() -> sy.SimHost:
    quick = sy.ModelProfile(latency=sy.Latency(ttft=0.5, tokens_per_s=100), output_tokens=50)
    return sy.SimHost({"a": quick, "b": quick})


# -- non-finite numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: sy.ModelProfile(price_in=INF), "price_in"),
        (lambda: sy.ModelProfile(price_out=INF), "price_out"),
        (lambda: sy.ModelProfile(price_in=-INF), "price_in"),
        (lambda: sy.ModelProfile(output_tokens=INF), "output_tokens"),
        (lambda: sy.ModelProfile(reject_delay_s=INF), "reject_delay_s"),
        (lambda: sy.dists.LogNormal(1, p95=INF), "p95"),
        (lambda: sy.dists.LogNormal(INF), "median"),
        (lambda: sy.dists.LogNormal(1, sigma=INF), "sigma"),
        (lambda: sy.dists.LogNormal(1, sigma=NAN), "sigma"),
        (lambda: sy.dists.LogNormal(1, sigma=200), "LogNormal"),  # its upper draws overflow
        (lambda: sy.dists.Empirical([1, INF]), r"samples\[1\]"),
        (lambda: sy.dists.Empirical([NAN, 1]), r"samples\[0\]"),
        (lambda: sy.dists.Uniform(0, INF), "high"),
        (lambda: sy.dists.Constant(INF), "value"),
        (lambda: sy.dists.Exponential(INF), "mean"),
        (lambda: sy.traffic.Poisson(INF), "rate_per_s"),
        (lambda: sy.traffic.Poisson(NAN), "rate_per_s"),
        (lambda: sy.traffic.Poisson(0), "rate_per_s"),
        (lambda: sy.Latency(ttft=INF), "ttft"),
        (lambda: sy.Latency(tokens_per_s=INF), "tokens_per_s"),
        (lambda: sy.Faults(retry_after_s=INF), "retry_after_s"),
        (lambda: sy.Faults(spike_factor=INF), "spike_factor"),
        (lambda: sy.Faults(outages=[(INF, INF)]), r"outages\[0\] start"),
        (lambda: sy.Faults(outages=[(0, NAN)]), r"outages\[0\] end"),
        (lambda: sy.faults.Flapping(up_s=INF, down_s=1), "up_s"),
        (lambda: sy.faults.Flapping(up_s=1, down_s=1, start_s=INF), "start_s"),
        (lambda: sy.HostPolicy(timeout_s=INF), "timeout_s"),
        (lambda: sy.HostPolicy(backoff_initial_s=INF), "backoff_initial_s"),
        (lambda: sy.HostPolicy(backoff_max_s=INF), "backoff_max_s"),
        (lambda: sy.HostPolicy(retry_after_cap_s=INF), "retry_after_cap_s"),
        (lambda: sy.HostPolicy(cooldown_s=INF), "cooldown_s"),
        (lambda: sy.faults.RateLimit(requests_per_min=INF), "requests_per_min"),
        (lambda: sy.faults.RateLimit(tokens_per_min=INF), "tokens_per_min"),
    ],
)
def test_non_finite_numbers_are_refused_and_named(build, name):
    with pytest.raises(sy.ArgumentError, match=name):
        build()


def test_infinity_is_kept_where_it_means_forever():
    assert sy.faults.Flapping(up_s=1, down_s=1).until_s == INF  # flaps for the whole run
    assert sy.Faults(outages=[(60, INF)]).in_outage(1e9)  # an outage that never ends


def test_an_infinite_price_message_says_finite():
    with pytest.raises(sy.ArgumentError, match=r"price_in must be ≥ 0 and finite, got inf"):
        sy.ModelProfile(price_in=INF)


def test_tokens_per_s_must_be_positive_at_every_draw():
    with pytest.raises(sy.ArgumentError, match="tokens_per_s must be > 0 at every draw"):
        sy.Latency(
            tokens_per_s=sy.dists.Empirical([0, 0, 50])
        )  # the slowest draws would divide by 0
    assert sy.Latency(tokens_per_s=sy.dists.Uniform(20, 60)).tokens_per_s.quantile(0.5) == 40


def test_a_custom_distribution_with_infinite_draws_is_refused():
    class Unbounded:
        def quantile(self, u):
            return 1 / (1 - u) if u < 1 else INF

        @property
        def mean(self):
            return INF

    with pytest.raises(sy.ArgumentError, match=r"ttft = .* not finite"):
        sy.Latency(ttft=Unbounded())


# -- wrong types -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: sy.Faults(unavailable_status="503"), r"unavailable_status must be an int HTTP"),
        (lambda: sy.Faults(unavailable_status=503.0), "unavailable_status"),
        (lambda: sy.Faults(unavailable_status=True), "unavailable_status"),
        (lambda: sy.Faults(fail_first_status=500.0), "fail_first_status"),
        (lambda: sy.Faults(fail_first=1.0), "fail_first"),
        (lambda: sy.Faults(fail_first=True), "fail_first"),
        (lambda: sy.Faults(outages=5), "outages must be a list"),
        (lambda: sy.Faults(outages="0,10"), "outages must be a list"),
        (lambda: sy.Faults(outages=["ab"]), r"outages\[0\]"),
        (lambda: sy.Faults(rate_limit="0.1"), "rate_limit"),
        (lambda: sy.faults.Flapping(up_s=1, down_s=1, status="503"), "status"),
        (lambda: sy.ModelProfile(price_in="1"), "price_in"),
        (lambda: sy.ModelProfile(price_in=True), "price_in"),
        (lambda: sy.ModelProfile(context_window=1e5), "context_window"),
        (lambda: sy.ModelProfile(context_window="128k"), "context_window"),
        (lambda: sy.ModelProfile(tools=1), "tools"),
        (lambda: sy.ModelProfile(quality=True), "quality"),
        (lambda: sy.Judge(output_tokens=True), "output_tokens"),
        (lambda: sy.Judge(output_tokens=5.0), "output_tokens"),
        (lambda: sy.Judge(accuracy="high"), "accuracy"),
        (lambda: sy.HostPolicy(max_retries=True), "max_retries"),
        (lambda: sy.HostPolicy(max_retries=2.0), "max_retries"),
        (lambda: sy.HostPolicy(fallback_reasons=5), "fallback_reasons must be a list"),
        (lambda: sy.HostPolicy(cooldown_s="5"), "cooldown_s"),
        (lambda: sy.HostPolicy(recover_errors=None), "recover_errors"),
        (lambda: sy.HostPolicy(bill_cancelled=["full"]), "bill_cancelled"),
        (lambda: sy.traffic.Poisson("2"), "rate_per_s"),
        (lambda: sy.faults.RateLimit(requests_per_min="60"), "requests_per_min"),
        (lambda: sy.dists.LogNormal("1"), "median"),
        (lambda: sy.dists.Uniform(0, "1"), "high"),
        (lambda: sy.dists.Empirical("123"), "Empirical samples must be a list"),
        (lambda: sy.dists.Empirical(["1", 2]), r"samples\[0\]"),
        (lambda: sy.dists.Empirical([True, 2]), r"samples\[0\]"),
        (lambda: sy.Latency(ttft="0.5"), "ttft"),
    ],
)
def test_wrong_types_are_refused_and_named(build, name):
    with pytest.raises(sy.SykitError, match=name):
        build()


def test_an_http_status_given_as_a_string_says_what_it_must_be():
    with pytest.raises(sy.ArgumentTypeError) as caught:
        sy.Faults(unavailable_status="503")
    assert str(caught.value) == (
        "unavailable_status must be an int HTTP status (5xx, 403 or 408), got str '503'"
    )
    with pytest.raises(sy.ArgumentError, match=r"status \(429, 403, 408 or 5xx\), got 200"):
        sy.faults.Flapping(up_s=1, down_s=1, status=200)


def test_numpy_numbers_are_numbers():
    profile = sy.ModelProfile(price_in=np.float64(0.5), price_out=np.int64(2))
    assert profile.cost_usd(1_000_000, 1_000_000) == 2.5
    assert sy.dists.Empirical(np.array([3, 1, 2])).samples == (1.0, 2.0, 3.0)


def test_one_fallback_reason_may_be_a_single_string():
    assert sy.HostPolicy(fallback_reasons="capability").fallback_reasons == (
        sy.errors.FallbackReason.CAPABILITY,
    )


def test_an_unknown_fallback_reason_lists_the_valid_ones():
    with pytest.raises(sy.ArgumentError) as caught:
        sy.HostPolicy(fallback_reasons=["rate_limit", "capabilty"])
    assert str(caught.value) == (
        "fallback_reasons: unknown reason 'capabilty'; valid reasons: 'context_window', "
        "'capability', 'unavailable', 'rate_limit', 'policy'"
    )


# -- every constructor either builds or raises a SykitError --------------------------------------

_SPECIAL = st.sampled_from([INF, -INF, NAN, 0, 0.0, -1, 1e308, 1e-300, 503, "1", True, b"1"])
_ANYTHING = st.one_of(
    _SPECIAL,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=3),
    st.tuples(st.floats(), st.floats()),
    st.sampled_from([sy.dists.Constant(1.0), sy.dists.LogNormal(1, p95=2), sy.dists.Uniform(0, 1)]),
)

_FIELDS = {
    sy.ModelProfile: (
        "price_in",
        "price_out",
        "context_window",
        "vision",
        "tools",
        "output_tokens",
        "quality",
        "reject_delay_s",
        "latency",
        "faults",
        "rate_limit",
    ),
    sy.Latency: ("ttft", "tokens_per_s"),
    sy.Faults: (
        "rate_limit",
        "retry_after_s",
        "unavailable",
        "unavailable_status",
        "timeout",
        "spike_p",
        "spike_factor",
        "outages",
        "fail_first",
        "fail_first_status",
        "flapping",
    ),
    sy.HostPolicy: (
        "max_retries",
        "backoff_initial_s",
        "backoff_max_s",
        "retry_after_cap_s",
        "timeout_s",
        "fallback_reasons",
        "allow_policy_fallback",
        "cooldown_s",
        "routing_fallback",
        "recover_errors",
        "bill_cancelled",
    ),
    sy.Judge: ("accuracy", "output_tokens"),
    sy.faults.Flapping: ("up_s", "down_s", "start_s", "until_s", "status"),
    sy.faults.RateLimit: ("requests_per_min", "tokens_per_min"),
}


def _is_finite_number(value) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and not math.isnan(value)
    )


def _check_built(obj) -> None:
    """Every number a built object holds is finite (infinity only where it means forever)."""
    for name, value in vars(obj).items():
        if name in ("until_s",):
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            assert math.isfinite(value), (type(obj).__name__, name, value)
        elif hasattr(value, "quantile"):
            assert math.isfinite(value.quantile(0.999)) and value.quantile(0.001) >= 0, name


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cls=st.sampled_from(list(_FIELDS)),
    data=st.data(),
)
def test_configuration_builds_a_valid_object_or_raises_a_sykit_error(cls, data):
    fields = data.draw(st.lists(st.sampled_from(_FIELDS[cls]), min_size=1, max_size=3, unique=True))
    kwargs = {name: data.draw(_ANYTHING, label=name) for name in fields}
    if cls is sy.faults.RateLimit and all(kwargs.get(k) is None for k in _FIELDS[cls]):
        kwargs["requests_per_min"] = 60
    if cls is sy.faults.Flapping:
        kwargs = {"up_s": 1.0, "down_s": 1.0, **kwargs}
    try:
        obj = cls(**kwargs)
    except sy.SykitError:
        return
    _check_built(obj)


@settings(max_examples=300, deadline=None)
@given(
    cls=st.sampled_from(
        [
            sy.dists.Constant,
            sy.dists.Exponential,
            sy.traffic.Poisson,
            sy.dists.LogNormal,
            sy.dists.Uniform,
        ]
    ),
    args=st.lists(_ANYTHING, min_size=1, max_size=2),
)
def test_distributions_build_or_raise_a_sykit_error(cls, args):
    try:
        dist = cls(*args)
    except sy.SykitError:
        return
    except TypeError as error:  # too many positional arguments: Python's own error
        assert "positional argument" in str(error)
        return
    if isinstance(dist, sy.traffic.Poisson):
        assert math.isfinite(dist.rate_per_s) and dist.rate_per_s > 0
        return
    for u in (2.0**-54, 0.5, 1 - 2.0**-53):
        assert math.isfinite(dist.quantile(u)) and dist.quantile(u) >= 0
    assert math.isfinite(dist.mean)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ANYTHING.filter(lambda v: not isinstance(v, list | tuple)), max_size=4))
def test_empirical_builds_or_raises_a_sykit_error(samples):
    try:
        dist = sy.dists.Empirical(samples)
    except sy.SykitError:
        return
    assert all(_is_finite_number(x) and x >= 0 for x in dist.samples)


# -- run arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arrivals", "error", "phrase"),
    [
        ([0.0, NAN], sy.ArgumentError, r"arrivals\[1\] must be ≥ 0 and finite, got nan"),
        ([0.0, INF], sy.ArgumentError, r"arrivals\[1\]"),
        ([-1.0, 0.0], sy.ArgumentError, r"arrivals\[0\]"),
        ([1.0, 0.5], sy.ArgumentError, r"arrivals\[1\] = 0.5 comes before arrivals\[0\] = 1"),
        (["0", "1"], sy.ArgumentTypeError, r"arrivals\[0\] must be a number, got str"),
        ([0, True], sy.ArgumentTypeError, r"arrivals\[1\] must be a number, got bool"),
        ("01", sy.ArgumentTypeError, "arrivals must be sy.traffic.Poisson.*got str '01'"),
        (b"01", sy.ArgumentTypeError, "arrivals must be sy.traffic.Poisson"),
        ({0.0, 1.0}, sy.ArgumentTypeError, "arrivals must be sy.traffic.Poisson"),
        ([0.0], sy.ArgumentError, "arrivals has 1 times for 2 requests"),
    ],
)
def test_bad_arrivals_are_refused_before_the_run(host, arrivals, error, phrase):
    with pytest.raises(error, match=phrase):
        sy.run(to_a, ["x", "y"], host=host, arrivals=arrivals)


def test_arrivals_may_be_a_numpy_array_or_a_series(host):
    for arrivals in (np.array([0.0, 2.0]), pd.Series([0.0, 2.0]), (t for t in (0.0, 2.0))):
        res = sy.run(to_a, ["x", "y"], host=host, arrivals=arrivals)
        assert res.requests["arrival_s"].tolist() == [0.0, 2.0]
    cmp = sy.compare([to_a], ["x", "y"], host=host, arrivals=iter([0.0, 2.0]), seeds=[0, 1])
    assert cmp.requests["arrival_s"].tolist() == [0.0, 2.0, 0.0, 2.0]  # read once, used twice


def test_ids_equal_as_text_are_refused_naming_both(host):
    with pytest.raises(sy.ArgumentError) as caught:
        sy.run(to_a, [sy.Request("x", id=1), sy.Request("y", id="1")], host=host)
    message = str(caught.value)
    assert "requests[0] (id 1) and requests[1] (id '1')" in message
    assert "same as text" in message
    with pytest.raises(sy.ArgumentError, match=r"requests\[0\] \(no id, so its position 0\)"):
        sy.run(to_a, ["x", sy.Request("y", id="0")], host=host)


def test_different_ids_of_mixed_types_still_run(host):
    res = sy.run(to_a, [sy.Request("x", id=1), sy.Request("y", id="2")], host=host)
    assert res.requests["request_id"].tolist() == ["1", "2"]


def test_compare_refuses_a_repeated_seed(host):
    with pytest.raises(sy.ArgumentError, match=r"seeds must be distinct; repeated: \[0\]"):
        sy.compare([to_a], ["x"], host=host, seeds=[0, 1, 0])


@pytest.mark.parametrize("seed", [2**63, -(2**63) - 1, 2**70])
def test_a_seed_past_64_bits_is_refused_before_the_run(host, seed):
    """A comparison's frames hold the seed as a 64-bit int: a larger one is refused up front,
    not when the frame is read."""
    with pytest.raises(sy.ArgumentError, match="seed must be an int from -2"):
        sy.compare([to_a], ["x"], host=host, seeds=[seed])
    with pytest.raises(sy.ArgumentError, match="seed must be an int from -2"):
        sy.run(to_a, ["x"], host=host, seed=seed)


def test_the_largest_seeds_reach_the_frames(host):
    cmp = sy.compare([to_a], ["x"], host=host, seeds=[2**63 - 1, -(2**63)])
    assert cmp.requests["seed"].tolist() == [2**63 - 1, -(2**63)]


def test_list_metadata_reaches_the_requests_table(host):
    reqs = [
        sy.Request("x", metadata={"tags": ["math", "easy"], "source": {"set": "gsm8k"}}),
        sy.Request("y", metadata={"tags": []}),
    ]
    frame = sy.run(to_a, reqs, host=host).requests
    assert frame["tags"].dtype == object
    assert frame["tags"].tolist() == [["math", "easy"], []]
    assert frame["source"].tolist() == [{"set": "gsm8k"}, None]


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"a": True, "b": 1}, "weight of 'a' must be a number ≥ 0, got bool"),
        ({"a": "x"}, "weight of 'a' must be a number ≥ 0, got str"),
        ({5: 1.0}, "needs at least 1 model name"),
    ],
)
def test_weighted_random_refuses_weights_that_are_not_numbers(weights, message):
    with pytest.raises((sy.ArgumentError, sy.ArgumentTypeError), match=message):
        sy.strategies.weighted_random(weights)


def test_an_empty_image_is_refused():
    with pytest.raises(sy.ArgumentError, match="images holds an empty string"):
        sy.Request("look", images=["data:image/png;base64,AAAA", " "])
