"""Plots called the way a new user might: odd arguments get a clear error naming them, and odd but
legal results (free models, ungraded answers, names that look like numbers, very long names) draw
every strategy where it belongs."""

from __future__ import annotations

import math

import matplotlib
import pytest
from helpers import constant_profile

import sykit as sy

REQUESTS = [sy.Request(f"question {i}", id=i) for i in range(8)]
LONG = "a strategy with a name far too long to fit on one line of any plot " * 3


@pytest.fixture(autouse=True)
def agg_backend():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


@pytest.fixture(scope="module")
def host() -> sy.SimHost:
    """fast and strong are graded and paid for; free costs nothing; ungraded has no quality."""
    return sy.SimHost(
        {
            "fast": constant_profile(0.5, 50, 100.0, price_in=1.0, price_out=2.0, quality=0.5),
            "strong": constant_profile(1.0, 100, 50.0, price_in=10.0, price_out=30.0, quality=0.9),
            "free": constant_profile(0.5, 50, 100.0, price_in=0.0, price_out=0.0, quality=0.7),
            "ungraded": constant_profile(0.5, 50, 100.0, price_in=1.0, price_out=1.0),
        }
    )


@pytest.fixture(scope="module")
def cmp(host) -> sy.Comparison:
    single = sy.strategies.single
    return sy.compare(
        {"fast": single("fast"), "strong": single("strong"), "free": single("free")},
        REQUESTS,
        host=host,
        progress=False,
    )


@pytest.fixture(scope="module")
def res(host) -> sy.Result:
    return sy.run(sy.strategies.single("fast"), REQUESTS, host=host, progress=False)


# -- the strategies to draw -----------------------------------------------------------------------

PLOTS = ["cost_quality", "latency_cdf", "outcomes", "load"]


@pytest.mark.parametrize("plot", PLOTS)
def test_an_empty_strategies_list_is_refused_by_name(cmp, plot):
    with pytest.raises(sy.ArgumentError, match=r"strategies is empty: name at least one of"):
        getattr(cmp.plot, plot)(strategies=[])


@pytest.mark.parametrize("plot", PLOTS)
def test_a_strategy_named_twice_is_refused(cmp, plot):
    with pytest.raises(sy.ArgumentError, match=r"strategies repeats \['fast'\]"):
        getattr(cmp.plot, plot)(strategies=["fast", "strong", "fast"])


def test_strategies_that_is_no_list_is_refused(cmp):
    with pytest.raises(sy.ArgumentTypeError, match=r"strategies must be a list .* got int"):
        cmp.plot.latency_cdf(strategies=3)


# -- on/off options ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plot", "option"),
    [
        ("latency_cdf", "log"),
        ("latency_cdf", "survival"),
        ("outcomes", "wasted"),
        ("cost_quality", "log_cost"),
        ("cost_quality", "direct_labels"),
    ],
)
def test_an_option_given_as_text_is_refused(cmp, plot, option):
    """``log="no"`` is a truthy string: it would silently turn the option on."""
    with pytest.raises(sy.ArgumentTypeError, match=rf"{option} must be True.* got 'no'"):
        getattr(cmp.plot, plot)(**{option: "no"})


# -- cost vs quality -------------------------------------------------------------------------------


def test_a_free_strategy_keeps_the_cost_axis_linear(cmp):
    """Paid costs spanning 20× would ask for a log axis, where a cost of 0 cannot be drawn."""
    summary = cmp.summary().set_index("strategy")
    assert summary.loc["free", "cost_per_request_usd"] == 0
    paid = summary.loc[["fast", "strong"], "cost_per_request_usd"]
    assert paid.max() / paid.min() >= 20
    ax = cmp.plot.cost_quality()
    assert ax.get_xscale() == "linear"
    left, right = ax.get_xlim()
    assert left < 0 < right


def test_log_cost_with_a_free_strategy_is_refused(cmp):
    with pytest.raises(sy.ArgumentError, match=r"log_cost=True cannot show .*\['free'\]"):
        cmp.plot.cost_quality(log_cost=True)
    ax = cmp.plot.cost_quality(log_cost=True, strategies=["fast", "strong"])
    assert ax.get_xscale() == "log"


@pytest.mark.filterwarnings("ignore::sykit.errors.UngradedWarning")
@pytest.mark.parametrize("direct_labels", [True, False])
def test_a_strategy_without_quality_is_named_not_dropped(host, direct_labels):
    single = sy.strategies.single
    both = sy.compare(
        {"fast": single("fast"), "ungraded": single("ungraded")},
        REQUESTS,
        host=host,
        progress=False,
    )
    ax = both.plot.cost_quality(direct_labels=direct_labels)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "not drawn (no quality): ungraded" in legend


def test_a_numbered_label_never_reads_as_a_strategy_named_with_a_number(host):
    """A long name that fits nowhere becomes a number; it must not be the name of another."""
    single = sy.strategies.single
    both = sy.compare(
        {"1": single("fast"), "x" * 200: single("strong")}, REQUESTS, host=host, progress=False
    )
    ax = both.plot.cost_quality()
    ax.figure.draw_without_rendering()
    labels = {t.get_gid(): t.get_text() for t in ax.texts if str(t.get_gid()).startswith("label:")}
    assert labels["label:1"] == "1"
    assert labels["label:" + "x" * 200] == "2"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(text.startswith("2  xxx") for text in legend)


# -- timeline and load -----------------------------------------------------------------------------


def test_timeline_of_several_request_ids_is_refused(res):
    with pytest.raises(sy.ArgumentTypeError, match=r"request_id must be one request's id"):
        res.plot.timeline(request_id=[0, 1])


def test_a_bin_too_small_to_draw_is_refused_with_one_that_fits():
    arrivals = [0.0, 30.0]
    host = sy.SimHost({"m": constant_profile(0.5, 10, 100.0, quality=0.5)})
    res = sy.run(
        sy.strategies.single("m"), REQUESTS[:2], host=host, arrivals=arrivals, progress=False
    )
    with pytest.raises(sy.ArgumentError, match=r"bin_s=1e-09 .* use bin_s=0\.00031 or more"):
        res.plot.load(1e-9)
    with pytest.raises(sy.ArgumentError, match=r"more than a table can hold"):
        sy.traffic.offered_load(res, 1e-9)
    assert math.floor(30.0 / 0.00031) + 1 <= 100_000  # the bin it names fits


# -- long names ------------------------------------------------------------------------------------


def test_a_long_name_is_wrapped_on_ticks_and_in_legends(host):
    single = sy.strategies.single
    both = sy.compare({"fast": single("fast"), LONG: single("strong")}, REQUESTS, host=host)
    longest = 0
    figure = both.plot.outcomes()
    for ax in figure.axes:
        longest = max(
            longest, *(len(line) for t in ax.get_xticklabels() for line in t.get_text().split("\n"))
        )
    figure = both.plot.load()
    legend = figure.axes[1].get_legend()
    longest = max(
        longest, *(len(line) for t in legend.get_texts() for line in t.get_text().split("\n"))
    )
    assert longest <= 30
    cdf = both.plot.latency_cdf()
    assert all(
        len(line) <= 30
        for t in cdf.get_legend().get_texts()
        for line in t.get_text().split("\n")[:-1]
    )
