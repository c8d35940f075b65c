"""Plots: asserted on the artists they draw (positions, colours, hatches, labels), never on pixels."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest
from helpers import constant_profile
from matplotlib.colors import to_hex

import sykit as sy
from sykit._results.metrics import pareto_frontier
from sykit._viz import (
    CAUSE_HATCHES,
    STATUS_COLORS,
    outcome_categories,
    plot_cost_quality,
    plot_cost_quality_curve,
    plot_latency_cdf,
    strategy_colors,
)
from sykit._viz.latency_cdf import _label, _percent, percentile_over_all
from sykit._viz.style import text_color

REQUESTS = [sy.Request(f"question {i}", id=i) for i in range(6)]
# one request in five carries an image: a text-only model answers it with a fast 400
WITH_IMAGES = [
    sy.Request(f"question {i}", id=i, images=["cat.png"] if i % 5 == 0 else ()) for i in range(10)
]


@pytest.fixture(autouse=True)
def agg_backend():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


async def race_two(request, driver):
    _, result = await sy.first(
        driver.call_model(request, ["fast"]), driver.call_model(request, ["strong"])
    )
    if isinstance(result, Exception):
        raise result
    return sy.answered(result.model, result)


async def fast_only(request, driver):
    return sy.answered("fast", await driver.call_model(request, ["fast"]))


async def judged(request, driver):
    """A decision under a 0.25 s timeout (cancelled: timeout), then strong."""
    question = sy.DecisionRequest({"easy": sy.Boolean("Is this easy?", oracle=True)})
    await sy.timeout(0.25, driver.call_decision(question, "judge"))
    return sy.route_to("strong", request)


async def abandons(request, driver):
    asyncio.ensure_future(driver.call_model(request, ["strong"]))  # noqa: RUF006
    return sy.answered("fast", await driver.call_model(request, ["fast"]))


@pytest.fixture
def vision_host() -> sy.SimHost:
    """text answers in 0.5 s but rejects images; vision answers everything in 3.0 s."""
    return sy.SimHost(
        {
            "text": constant_profile(0.25, 1, 4.0, price_in=1.0, price_out=2.0, quality=0.5),
            "vision": constant_profile(
                1.0, 100, 50.0, price_in=10.0, price_out=30.0, quality=0.9, vision=True
            ),
        }
    )


@pytest.fixture
def failing_race(vision_host):
    """A race whose text model's 400 wins on the image requests (20 % fail), over two seeds,
    next to the vision model alone and the oracle (a bound)."""
    lineup = {
        "race": sy.strategies.race(["text", "vision"]),
        "vision": sy.strategies.single("vision"),
        "oracle": sy.strategies.oracle(["text", "vision"]),
    }
    return sy.compare(lineup, WITH_IMAGES, host=vision_host, seeds=[0, 1])


@pytest.fixture
def comparison(host):
    lineup = {"fast": fast_only, "race": race_two, "strong": sy.strategies.single("strong")}
    return sy.compare(lineup, REQUESTS, host=host, concurrency=2)


def attempt_bars(ax):
    return [p for p in ax.patches if p.get_gid() == "attempt"]


def texts(ax, gid):
    return [t.get_text() for t in ax.texts if t.get_gid() == gid]


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def point_labels(ax):
    """The names written beside the points of a cost–quality plot, in drawing order."""
    return [t.get_text() for t in ax.texts if str(t.get_gid()).startswith("label:")]


# -- timeline -------------------------------------------------------------------------------------


def test_timeline_bars_span_each_attempt_coloured_by_status_hatched_by_cause(host):
    res = sy.run(race_two, REQUESTS[:1], host=host)
    ax = res.plot.timeline(0)
    bars = attempt_bars(ax)
    attempts = res.attempts.sort_values("model")  # fast, strong: also the drawing order (call ids)
    assert [b.get_x() for b in bars] == attempts["start_s"].tolist() == [0.0, 0.0]
    assert [b.get_width() for b in bars] == (attempts["end_s"] - attempts["start_s"]).tolist()
    assert [b.get_y() + b.get_height() / 2 for b in bars] == [0, 1]
    assert to_hex(bars[0].get_facecolor()) == STATUS_COLORS["ok"]
    assert to_hex(bars[1].get_facecolor()) == STATUS_COLORS["cancelled"]
    assert bars[0].get_hatch() is None
    assert bars[1].get_hatch() == CAUSE_HATCHES["lost_race"]
    labels = texts(ax, "attempt_label")
    assert labels[0].startswith("ok") and labels[1].startswith("cancelled: lost race")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fast · routing", "strong · routing"]
    assert ax.get_xlabel() == "run clock (s)"


def test_timeline_shades_the_race_and_stars_the_served_attempt(host):
    res = sy.run(race_two, REQUESTS[:1], host=host)
    ax = res.plot.timeline(0)
    (race,) = [p for p in ax.patches if str(p.get_gid()).startswith("race:")]
    assert (race.get_y(), race.get_y() + race.get_height()) == pytest.approx((-0.45, 1.45))
    # the band spans the race, from its first start to its last end, not the whole axis
    attempts = res.attempts
    assert (race.get_x(), race.get_x() + race.get_width()) == pytest.approx(
        (attempts["start_s"].min(), attempts["end_s"].max())
    )
    (star,) = [line for line in ax.lines if line.get_gid() == "outcome"]
    assert (list(star.get_xdata()), list(star.get_ydata())) == ([1.0], [0])
    assert star.get_marker() == "*" and star.get_label() == "served by fast"
    assert "served by fast" in ax.get_title(loc="left") and "served by fast" in legend_texts(ax)


def test_timeline_labels_timeouts_abandoned_calls_and_fallbacks(host, profiles):
    res = sy.run(judged, REQUESTS[:1], host=host)
    ax = res.plot.timeline(0)
    decision, answer = attempt_bars(ax)
    assert decision.get_hatch() == CAUSE_HATCHES["timeout"]
    assert (decision.get_x(), decision.get_width()) == (0.0, 0.25)
    assert answer.get_x() == 0.25
    assert "judge · routing · decision" in [t.get_text() for t in ax.get_yticklabels()]

    res = sy.run(abandons, REQUESTS[:1], host=host)
    ax = res.plot.timeline(0)
    hatches = {b.get_hatch() for b in attempt_bars(ax)}
    assert CAUSE_HATCHES["abandoned"] in hatches
    assert any(t.startswith("cancelled: abandoned") for t in texts(ax, "attempt_label"))

    tiny = sy.SimHost({**profiles, "fast": profiles["fast"].replace(context_window=1)})
    fallback = sy.run(sy.strategies.fallback_chain(["fast", "strong"]), REQUESTS[:1], host=tiny)
    ax = fallback.plot.timeline(0)
    bars = attempt_bars(ax)
    assert [to_hex(b.get_facecolor()) for b in bars] == [
        STATUS_COLORS["error"],
        STATUS_COLORS["ok"],
    ]
    assert texts(ax, "attempt_label")[0] == "400 context_window · fell back: context_window"


def test_timeline_marks_a_failed_request(profiles):
    host = sy.SimHost({"fast": profiles["fast"].replace(faults=sy.Faults(unavailable=1.0))})
    res = sy.run(fast_only, REQUESTS[:1], host=host)
    ax = res.plot.timeline(0)
    (cross,) = [line for line in ax.lines if line.get_gid() == "outcome"]
    assert cross.get_label() == "request failed: unavailable"
    assert list(cross.get_xdata()) == [res.requests["end_s"].iloc[0]]
    labels = texts(ax, "attempt_label")
    assert labels[:-1] == ["503 unavailable · retried"] * 2
    assert labels[-1] == "503 unavailable · failed"


def test_timeline_defaults_to_the_request_with_most_attempts(profiles):
    flaky = profiles["fast"].replace(faults=sy.Faults(fail_first=2, retry_after_s=0.5))
    host = sy.SimHost({"fast": flaky})
    res = sy.run(fast_only, REQUESTS[:3], host=host, concurrency=1)
    ax = res.plot.timeline()
    assert len(attempt_bars(ax)) == 3
    assert "request 0" in ax.get_title(loc="left")


def test_timeline_names_a_bad_request_id_or_strategy(comparison):
    with pytest.raises(ValueError, match="request_id 99"):
        comparison["fast"].plot.timeline(99)
    with pytest.raises(ValueError, match="strategy 'nope'"):
        comparison.plot.timeline("nope")
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        comparison["fast"].plot.timeline(0, ax="left")
    ax = comparison.plot.timeline("race", 3)
    assert ax.get_title(loc="left").startswith("race · request 3")


# -- cost vs quality ------------------------------------------------------------------------------


def test_cost_quality_draws_each_strategy_and_the_pareto_frontier(comparison):
    ax = comparison.plot.cost_quality()
    summary = comparison.summary()
    frontier = pareto_frontier(summary)
    (line,) = [line for line in ax.lines if line.get_gid() == "pareto"]
    assert list(line.get_xdata()) == frontier["cost_per_request_usd"].tolist()
    assert list(line.get_ydata()) == frontier["mean_quality"].tolist()
    for row in summary.itertuples():
        (point,) = [line for line in ax.lines if line.get_gid() == f"point:{row.strategy}"]
        assert list(point.get_xdata()) == [row.cost_per_request_usd]
        assert list(point.get_ydata()) == [row.mean_quality]
        assert point.get_marker() == "o"
    assert point_labels(ax) == comparison.strategies
    assert legend_texts(ax) == ["Pareto frontier"]
    assert ax.get_xlabel() == "cost per 1k requests (USD)"
    assert "quality" in ax.get_ylabel()


def test_cost_quality_without_quality_says_why(host):
    no_quality = sy.compare({"judge": sy.strategies.single("judge")}, REQUESTS[:2], host=host)
    with pytest.raises(ValueError, match="quality"):
        no_quality.plot.cost_quality()


def test_cost_quality_uses_the_summary_quality_with_failures_as_zero_and_its_ci(failing_race):
    ax = failing_race.plot.cost_quality()
    summary = failing_race.summary().set_index("strategy")
    for name in ("race", "vision"):
        row = summary.loc[name]
        (point,) = [line for line in ax.lines if line.get_gid() == f"point:{name}"]
        assert list(point.get_ydata()) == [row["mean_quality"]]
        (ci,) = [c for c in ax.collections if c.get_gid() == f"ci:{name}"]
        x = row["cost_per_request_usd"]
        assert [s.tolist() for s in ci.get_segments()] == [
            [[x, row["quality_ci_low"]], [x, row["quality_ci_high"]]]
        ]
    # the race's failures pull its point down: served answers alone would flatter it
    race = failing_race.requests.query("strategy == 'race'")
    assert summary.loc["race", "success_rate"] == 0.8
    assert summary.loc["race", "mean_quality"] < race["quality"].mean()
    assert "95 % CI" in ax.get_title(loc="left")


def test_cost_quality_draws_bounds_apart_and_off_the_pareto_frontier(failing_race):
    ax = failing_race.plot.cost_quality()
    summary = failing_race.summary()
    assert summary.set_index("strategy")["realizable"].to_dict() == {
        "race": True,
        "vision": True,
        "oracle": False,
    }
    # the oracle would be on the frontier if it counted: as good as vision and cheaper
    assert "oracle" in pareto_frontier(summary.drop(columns="realizable"))["strategy"].tolist()
    (bound,) = [line for line in ax.lines if line.get_gid() == "bound:oracle"]
    oracle = summary.set_index("strategy").loc["oracle"]
    assert list(bound.get_xdata()) == [oracle["cost_per_request_usd"]]
    assert list(bound.get_ydata()) == [oracle["mean_quality"]]
    assert bound.get_marker() == "*" and bound.get_label() == "oracle (reads the truth)"
    assert not [line for line in ax.lines if line.get_gid() == "point:oracle"]
    (line,) = [line for line in ax.lines if line.get_gid() == "pareto"]
    realizable = pareto_frontier(summary[summary["realizable"]])
    assert realizable["strategy"].tolist() == ["race", "vision"]
    assert list(line.get_xdata()) == realizable["cost_per_request_usd"].tolist()
    assert list(line.get_ydata()) == realizable["mean_quality"].tolist()
    assert point_labels(ax) == ["race", "vision", "oracle (reads the truth)"]
    assert legend_texts(ax) == ["Pareto frontier"]


def test_cost_quality_with_only_bounds_draws_no_frontier(failing_race):
    summary = failing_race.summary().query("strategy == 'oracle'")
    ax = plot_cost_quality(summary)
    assert not [line for line in ax.lines if line.get_gid() == "pareto"]
    assert point_labels(ax) == ["oracle (reads the truth)"]
    assert ax.get_legend() is None


def test_cost_quality_curve_with_references(comparison):
    curve = pd.DataFrame(
        {
            "threshold": [1.0, 0.0, 0.5],
            "cost_per_request_usd": [0.003, 0.001, 0.002],
            "mean_quality": [0.9, 0.5, 0.8],
        }
    )
    refs = {"weak": (0.001, 0.5), "strong": (0.003, 0.9), "oracle": (0.0012, 0.95)}
    ax = plot_cost_quality_curve(curve, references=refs)
    (line,) = [line for line in ax.lines if line.get_gid() == "curve:sweep"]
    assert list(line.get_xdata()) == [0.001, 0.002, 0.003]
    assert list(line.get_ydata()) == [0.5, 0.8, 0.9]
    kinds = {"weak": "reference", "strong": "reference", "oracle": "bound"}
    for label, (cost, quality) in refs.items():
        (point,) = [line for line in ax.lines if line.get_gid() == f"{kinds[label]}:{label}"]
        assert (list(point.get_xdata()), list(point.get_ydata())) == ([cost], [quality])
    assert legend_texts(ax) == ["sweep", "random mix", "weak", "strong", "oracle (bound)"]
    assert sorted(texts(ax, "setting")) == ["0", "0.5", "1"]
    assert ax.get_xlabel() == "cost per 1k requests (USD)"


def test_cost_quality_curve_draws_each_named_bound_apart():
    curve = pd.DataFrame(
        {"value": [0.2, 0.8], "cost_per_request_usd": [0.001, 0.002], "mean_quality": [0.6, 0.7]}
    )
    refs = {
        "weak": (0.001, 0.5),
        "strong": (0.003, 0.9),
        "oracle": (0.0012, 0.95),
        "router score": (0.0015, 0.92),
    }
    ax = plot_cost_quality_curve(curve, references=refs, bounds=["oracle", "router score"])
    marks = {}
    for label in ("oracle", "router score"):
        (point,) = [line for line in ax.lines if line.get_gid() == f"bound:{label}"]
        assert (point.get_xdata()[0], point.get_ydata()[0]) == refs[label]
        marks[label] = (point.get_marker(), to_hex(point.get_color()))
    assert len(set(marks.values())) == 2
    assert legend_texts(ax) == [
        "sweep",
        "random mix",
        "weak",
        "strong",
        "oracle (bound)",
        "router score (bound)",
    ]
    # the setting column may be called value as well as threshold
    assert sorted(texts(ax, "setting")) == ["0.2", "0.8"]
    assert ax.get_title(loc="left").endswith("(points labelled with their value)")
    ax = plot_cost_quality_curve(curve, references=refs, bounds=[])
    assert [line.get_gid() for line in ax.lines if "oracle" in str(line.get_gid())] == [
        "reference:oracle"
    ]
    with pytest.raises(ValueError, match=r"bounds \['best'\] are not labels of references"):
        plot_cost_quality_curve(curve, references=refs, bounds=["best"])
    with pytest.raises(TypeError, match="bounds must be a list of reference labels"):
        plot_cost_quality_curve(curve, references=refs, bounds="oracle")


def test_sweep_plot_draws_its_oracle_as_a_bound(host):
    result = sy.sweep(
        lambda p: sy.strategies.weighted_random({"fast": 1 - p, "strong": p}),
        [0.5],
        REQUESTS,
        host=host,
        weak="fast",
        strong="strong",
    )
    ax = result.plot()
    (bound,) = [line for line in ax.lines if line.get_gid() == "bound:oracle"]
    assert bound.get_label() == "oracle (bound)"
    assert (bound.get_xdata()[0], bound.get_ydata()[0]) == result.references["oracle"]
    assert "oracle (bound)" in legend_texts(ax)


def test_cost_quality_curve_one_line_per_label_and_clear_errors():
    curve = pd.DataFrame(
        {
            "label": ["a", "a", "b", "b"],
            "cost_per_request_usd": [1.0, 2.0, 1.5, 2.5],
            "mean_quality": [0.1, 0.2, 0.3, 0.4],
        }
    )
    ax = plot_cost_quality_curve(curve)
    colors = strategy_colors(["a", "b"])
    for label in "ab":
        (line,) = [line for line in ax.lines if line.get_gid() == f"curve:{label}"]
        assert to_hex(line.get_color()) == colors[label]
    with pytest.raises(ValueError, match=r"curve lacks the column\(s\) \['mean_quality'\]"):
        plot_cost_quality_curve(curve.drop(columns="mean_quality"))
    with pytest.raises(ValueError, match=r"references\['weak'\]"):
        plot_cost_quality_curve(curve, references={"weak": 0.5})
    with pytest.raises(TypeError, match="curve must be a pandas DataFrame"):
        plot_cost_quality_curve([1, 2])


# -- latency CDF ----------------------------------------------------------------------------------


def test_latency_cdf_plots_sorted_latencies_with_p50_and_p99(comparison):
    ax = comparison.plot.latency_cdf()
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "latency (s, log scale)"
    summary = comparison.summary().set_index("strategy")
    for name in comparison.strategies:
        (line,) = [line for line in ax.lines if line.get_gid() == f"cdf:{name}"]
        expected = np.sort(comparison[name].requests["latency_s"].to_numpy())
        assert list(line.get_xdata()) == expected.tolist()
        assert list(line.get_ydata()) == (np.arange(1, 7) / 6).tolist()
    # the race always serves the fast answer: one curve, one entry; p50 and p99 as the summary's
    assert [tuple(summary.loc[n, ["latency_p50_s", "latency_p99_s"]]) for n in summary.index] == [
        (1.0, 1.0),
        (1.0, 1.0),
        (3.0, 3.0),
    ]
    assert legend_texts(ax) == [
        "fast = race (100 % ok; p50 1.0 · p99 1.0 s)",
        "strong (100 % ok; p50 3.0 · p99 3.0 s)",
    ]
    assert not [line for line in ax.lines if line.get_marker() not in ("None", "", None)]


def test_latency_cdf_counts_failed_requests_as_never_served(failing_race):
    ax = failing_race.plot.latency_cdf()
    requests = failing_race.requests
    summary = failing_race.summary().set_index("strategy")
    race = requests[requests["strategy"] == "race"]  # both seeds pooled
    assert len(race) == 20 and (race["status"] == "failed").sum() == 4
    # the failed requests are the fastest: they must not make the race look quick
    assert race.loc[race["status"] == "failed", "latency_s"].max() < 0.5
    (line,) = [line for line in ax.lines if line.get_gid() == "cdf:race"]
    served = np.sort(race.loc[race["status"] == "ok", "latency_s"].to_numpy())
    assert list(line.get_xdata()) == served.tolist() == [0.5] * 16
    assert list(line.get_ydata()) == (np.arange(1, 17) / 20).tolist()
    assert line.get_ydata()[-1] == summary.loc["race", "success_rate"] == 0.8
    (plateau,) = [line for line in ax.lines if line.get_gid() == "plateau:race"]
    assert list(plateau.get_ydata()) == [0.8, 0.8]
    assert list(plateau.get_xdata()) == [0.5, ax.get_xlim()[1]]
    (vision,) = [line for line in ax.lines if line.get_gid() == "plateau:vision"]
    assert list(vision.get_ydata()) == [1.0, 1.0]
    # p99 over all 20 requests falls among the failures; p50 and p99 of the answered ones are
    # the summary's (oracle's p99 3.0405 reads 3.0, as the tables print it)
    assert summary.loc["oracle", "latency_p99_s"] == pytest.approx(3.0405)
    assert legend_texts(ax) == [
        "race (80 % ok; p99 not reached; answered: p50 0.5 · p99 0.5 s)",
        "vision (100 % ok; p50 3.0 · p99 3.0 s)",
        "oracle (100 % ok; p50 3.0 · p99 3.0 s)",
    ]
    assert ax.get_ylabel() == "share of all requests served"


def test_latency_cdf_of_a_mostly_failing_strategy(vision_host):
    mostly_images = [sy.Request(f"q {i}", id=i, images=["cat.png"] if i else ()) for i in range(4)]
    res = sy.run(sy.strategies.single("text"), mostly_images, host=vision_host)
    ax = res.plot.latency_cdf()
    (line,) = [line for line in ax.lines if line.get_gid() == "cdf:single(text)"]
    assert (list(line.get_xdata()), list(line.get_ydata())) == ([0.5], [0.25])
    assert legend_texts(ax) == [
        "single(text) (25 % ok; p50, p99 not reached; answered: p50 0.5 · p99 0.5 s)"
    ]
    images_only = [sy.Request("q", id=0, images=["cat.png"])]
    res = sy.run(sy.strategies.single("text"), images_only, host=vision_host)
    ax = plot_latency_cdf(res.requests)
    (line,) = [line for line in ax.lines if line.get_gid() == "cdf:single(text)"]
    assert len(line.get_xdata()) == 0
    (plateau,) = [line for line in ax.lines if line.get_gid() == "plateau:single(text)"]
    assert list(plateau.get_ydata()) == [0.0, 0.0]
    assert legend_texts(ax) == ["single(text) (0 % ok; p50, p99 not reached)"]


def test_percentiles_over_all_requests_put_failures_at_infinity():
    served = np.array([1.0, 2.0, 3.0])
    assert percentile_over_all(served, 3, 0.5) == np.quantile(served, 0.5) == 2.0
    assert percentile_over_all(served, 3, 0.99) == np.quantile(served, 0.99)
    # a fourth request failed: the median lies between 2 and 3, the p99 among the failures
    assert percentile_over_all(served, 4, 0.5) == 2.5
    assert percentile_over_all(served, 4, 0.99) == np.inf
    assert percentile_over_all(served, 4, 2 / 3) == 3.0  # exactly the last served one
    assert percentile_over_all(np.array([]), 2, 0.5) == np.inf
    assert np.isnan(percentile_over_all(np.array([]), 0, 0.5))


def test_success_shares_round_down_and_never_to_all_or_nothing():
    assert [_percent(*p) for p in [(4, 5), (2, 3), (1999, 2000), (1, 2000), (0, 7), (7, 7)]] == [
        "80",
        "66.6",
        "99.9",
        "0.05",
        "0",
        "100",
    ]
    assert _label("x", 0, 0, []) == "x (no requests)"


def test_one_colour_per_strategy_across_plots(comparison):
    colors = comparison.plot.colors
    assert colors == strategy_colors(["fast", "race", "strong"])
    assert len(set(colors.values())) == 3
    cdf = comparison.plot.latency_cdf()
    scatter = comparison.plot.cost_quality()
    for name, color in colors.items():
        (line,) = [line for line in cdf.lines if line.get_gid() == f"cdf:{name}"]
        (point,) = [line for line in scatter.lines if line.get_gid() == f"point:{name}"]
        (ci,) = [c for c in scatter.collections if c.get_gid() == f"ci:{name}"]
        assert to_hex(line.get_color()) == to_hex(point.get_color()) == color
        assert to_hex(ci.get_color()[0]) == color
    fig = comparison.plot.outcomes()
    ticks = fig.axes[0].get_xticklabels()
    assert [to_hex(t.get_color()) for t in ticks] == [text_color(c) for c in colors.values()]
    with pytest.raises(ValueError, match="repeated"):
        strategy_colors(["a", "a"])


# -- outcomes -------------------------------------------------------------------------------------


def test_outcomes_stack_attempts_per_request_by_outcome(comparison):
    fig = comparison.plot.outcomes()
    counts, wasted = fig.axes[:2]
    assert counts.get_ylabel() == "attempts per request"
    assert wasted.get_ylabel() == "wasted spend per request (USD)"
    # per strategy: ok attempts 1 per request; race adds one lost race per request
    ok = [p for p in counts.patches if p.get_gid() == "outcome:ok"]
    lost = [p for p in counts.patches if p.get_gid() == "outcome:cancelled: lost race"]
    assert [p.get_height() for p in ok] == [1.0, 1.0, 1.0]
    assert [p.get_height() for p in lost] == [0.0, 1.0, 0.0]
    assert [p.get_y() for p in lost] == [1.0, 1.0, 1.0]
    assert lost[1].get_hatch() == CAUSE_HATCHES["lost_race"]
    assert [t.get_text() for t in counts.get_xticklabels()] == comparison.strategies
    summary = comparison.summary()
    tops = np.zeros(3)
    for patch in wasted.patches:
        if str(patch.get_gid()).startswith("wasted:"):
            tops[round(patch.get_x() + patch.get_width() / 2)] += patch.get_height()
    assert tops.tolist() == pytest.approx((summary["wasted_usd"] / summary["requests"]).tolist())
    assert "cancelled: lost race" in legend_texts(wasted)


def test_outcome_categories_name_reason_cause_and_retries(profiles):
    flaky = profiles["fast"].replace(faults=sy.Faults(fail_first=1, retry_after_s=0.5))
    host = sy.SimHost({**profiles, "fast": flaky})
    res = sy.run(race_two, REQUESTS[:1], host=host)
    assert sorted(outcome_categories(res.attempts)) == ["cancelled: lost race", "ok", "retried"]


def test_outcomes_accepts_given_axes_and_names_bad_ones(comparison):
    import matplotlib.pyplot as plt

    fig, pair = plt.subplots(1, 2)
    assert comparison.plot.outcomes(ax=pair) is fig
    fig, one = plt.subplots()
    assert comparison.plot.outcomes(ax=one, wasted=False) is fig
    with pytest.raises(TypeError, match="two Axes"):
        comparison.plot.outcomes(ax=one)
    fig = comparison["race"].plot.outcomes()
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["race"]


def test_result_plots_work_alone(comparison):
    res = comparison["race"]
    ax = res.plot.latency_cdf(log=False)
    assert ax.get_xscale() == "linear"
    assert legend_texts(ax) == ["race (100 % ok; p50 1.0 · p99 1.0 s)"]


def test_importing_sykit_does_not_load_matplotlib_or_ipywidgets():
    code = (
        "import sys, sykit, sykit._viz, sykit.widgets\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib'\n"
        "assert 'ipywidgets' not in sys.modules, 'ipywidgets'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- readable plots: colours, labels, ticks, tails ---------------------------------------------------


def lab(color):
    """CIELAB of a colour (D65), to measure how far apart two colours look."""
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(color))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ linear / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def boxes_overlap(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def overlapping_pairs(artists):
    """Pairs of texts whose boxes overlap (the text alone: an annotation's leader line may cross)."""
    from matplotlib.text import Text

    renderer = artists[0].figure.canvas.get_renderer()
    boxes = [(a.get_text(), Text.get_window_extent(a, renderer)) for a in artists]
    return [
        (p, q) for i, (p, a) in enumerate(boxes) for q, b in boxes[i + 1 :] if boxes_overlap(a, b)
    ]


def shown_ticklabels(axis):
    """The major tick labels matplotlib draws (inside the view, with text)."""
    low, high = sorted(axis.get_view_interval())
    ticks = axis.get_major_ticks()
    return [
        t.label1
        for t, x in zip(ticks, axis.get_majorticklocs(), strict=False)
        if low * (1 - 1e-9) <= x <= high * (1 + 1e-9) and t.label1.get_text()
    ]


def test_twenty_strategies_get_twenty_colours_far_apart_and_readable_as_text():
    from sykit._viz.style import contrast_on_white

    names = [f"s{i}" for i in range(20)]
    colors = list(strategy_colors(names).values())
    assert len(set(colors)) == 20
    # 11 strategies (the CLI's line-up with the oracle last) used to give two blues
    distances = [
        np.linalg.norm(lab(a) - lab(b)) for i, a in enumerate(colors) for b in colors[i + 1 :]
    ]
    assert min(distances) > 20
    for color in colors:
        shade = text_color(color)
        assert contrast_on_white(shade) >= 4.5, (color, shade)
        assert (
            np.linalg.norm(lab(shade)[1:] - lab(color)[1:] * (lab(shade)[0] / lab(color)[0])) < 40
        )
    # dark colours stay as they are
    assert text_color("#1f77b4") == "#1f77b4"


@pytest.fixture
def twins(host):
    """Two strategies with the very same cost and quality (``fast again`` is ``fast``)."""
    lineup = {
        "fast": fast_only,
        "race": race_two,
        "fast again": fast_only,
        "strong": sy.strategies.single("strong"),
        "oracle": sy.strategies.oracle(["fast", "strong"]),
    }
    return sy.compare(lineup, REQUESTS, host=host, concurrency=2)


def test_cost_quality_labels_points_directly_and_keeps_equal_points_visible(twins):
    summary = twins.summary().set_index("strategy")
    assert summary.loc["fast", ["cost_per_request_usd", "mean_quality"]].tolist() == (
        summary.loc["fast again", ["cost_per_request_usd", "mean_quality"]].tolist()
    )
    ax = twins.plot.cost_quality()
    # one label names both (on one line, or one name per line where that fits better)
    assert [" ".join(text.split()) for text in point_labels(ax)] == [
        "fast = fast again",
        "race",
        "strong",
        "oracle (reads the truth)",
    ]
    assert ax.get_legend() is not None and legend_texts(ax) == ["Pareto frontier"]
    (first,) = [line for line in ax.lines if line.get_gid() == "point:fast"]
    (second,) = [line for line in ax.lines if line.get_gid() == "point:fast again"]
    # the same place, but the earlier one is a wider hollow ring around the later one
    assert list(first.get_xdata()) == list(second.get_xdata())
    assert first.get_markersize() > second.get_markersize()
    assert first.get_markerfacecolor() == "none"
    assert to_hex(first.get_markeredgecolor()) == twins.plot.colors["fast"]
    # labels in their strategy's readable colour, none on top of another
    ax.figure.canvas.draw()
    labels = [t for t in ax.texts if str(t.get_gid()).startswith("label:")]
    assert overlapping_pairs(labels) == []
    for label in labels:
        name = label.get_gid().removeprefix("label:")
        assert to_hex(label.get_color()) == text_color(twins.plot.colors[name])
    assert ax.bbox.contains(*labels[0].get_window_extent().p0)


def test_cost_quality_labels_do_not_collide_when_many_points_crowd():
    names = [f"strategy number {i}" for i in range(10)]
    summary = pd.DataFrame(
        {
            "strategy": names,
            "cost_per_request_usd": [0.001 + 0.00001 * i for i in range(10)],
            "mean_quality": [0.5 + 0.002 * (i % 3) for i in range(10)],
        }
    )
    summary.loc[9, ["cost_per_request_usd", "mean_quality"]] = [0.01, 0.9]
    ax = plot_cost_quality(summary)
    ax.figure.canvas.draw()
    labels = [t for t in ax.texts if str(t.get_gid()).startswith("label:")]
    assert len(labels) == 10
    assert overlapping_pairs(labels) == []


def test_a_subset_keeps_each_strategys_colour(twins):
    colors = twins.plot.colors
    full = twins.plot.cost_quality()
    part = twins.plot.cost_quality(strategies=["oracle", "strong"])
    for name in ("oracle", "strong"):
        gid = ("bound:" if name == "oracle" else "point:") + name
        (a,) = [line for line in full.lines if line.get_gid() == gid]
        (b,) = [line for line in part.lines if line.get_gid() == gid]
        assert to_hex(a.get_color()) == to_hex(b.get_color()) == colors[name]
    assert point_labels(part) == ["oracle (reads the truth)", "strong"]
    # without the accessor, colours still follow the whole summary's order
    alone = plot_cost_quality(twins.summary(), strategies=["strong"])
    (point,) = [line for line in alone.lines if line.get_gid() == "point:strong"]
    assert to_hex(point.get_color()) == colors["strong"]
    cdf = twins.plot.latency_cdf(strategies=["strong"])
    (line,) = [line for line in cdf.lines if line.get_gid() == "cdf:strong"]
    assert to_hex(line.get_color()) == colors["strong"]
    fig = twins.plot.outcomes(strategies=["race", "strong"])
    ticks = fig.axes[0].get_xticklabels()
    assert [t.get_text() for t in ticks] == ["race", "strong"]
    assert [to_hex(t.get_color()) for t in ticks] == [
        text_color(colors["race"]),
        text_color(colors["strong"]),
    ]
    with pytest.raises(ValueError, match=r"strategies \['nope'\] are not in this comparison"):
        twins.plot.cost_quality(strategies=["nope"])
    with pytest.raises(TypeError, match="not one string"):
        twins.plot.latency_cdf(strategies="strong")


@pytest.mark.parametrize("width", [3.0, 5.0, 7.5, 12.0])
@pytest.mark.parametrize("log_cost", [True, False])
def test_currency_tick_labels_never_overlap(width, log_cost):
    # costs from $0.00005 to $0.02 per request: 2.6 decades, the span that used to collide
    costs = [0.00005, 0.0001, 0.0003, 0.002, 0.02]
    summary = pd.DataFrame(
        {
            "strategy": list("abcde"),
            "cost_per_request_usd": costs,
            "mean_quality": [0.6, 0.62, 0.7, 0.8, 0.85],
        }
    )
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(width, 3.5), layout="constrained")
    plot_cost_quality(summary, log_cost=log_cost, ax=ax)
    ax.figure.canvas.draw()
    labels = shown_ticklabels(ax.xaxis)
    assert len(labels) >= 2
    assert overlapping_pairs(labels) == []
    assert all(t.get_text().startswith("$") for t in labels)
    assert ax.get_xlabel() == "cost per 1k requests (USD)"
    assert max(len(t.get_text()) for t in labels) <= 5  # $0.05, $20: no $0.00005


def test_cost_unit_keeps_labels_short():
    from sykit._viz.style import cost_unit

    assert cost_unit([0.5, 2.0]) == (1.0, "request")
    assert cost_unit([0.00005, 0.007]) == (1e3, "1k requests")
    assert cost_unit([1e-8, 5e-7]) == (1e6, "1M requests")
    assert cost_unit([]) == (1.0, "request")


def test_latency_survival_draws_the_tail_on_a_log_axis(failing_race):
    ax = failing_race.plot.latency_cdf(survival=True)
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    requests = failing_race.requests
    race = requests[requests["strategy"] == "race"]
    (line,) = [line for line in ax.lines if line.get_gid() == "survival:race"]
    assert list(line.get_xdata()) == [0.5] * 16
    assert list(line.get_ydata()) == pytest.approx((1 - np.arange(1, 17) / 20).tolist())
    # the failed fifth never arrives: the tail levels off at 20 % still waiting
    (plateau,) = [line for line in ax.lines if line.get_gid() == "plateau:race"]
    assert list(plateau.get_ydata()) == pytest.approx([0.2, 0.2])
    assert len(race) == 20
    # the legend gives p99.9 too, and the axis goes down far enough to show it
    assert ax.get_ylim()[0] < 0.001
    assert legend_texts(ax)[:2] == [
        "race (80 % ok; p99, p99.9 not reached; answered: p50 0.5 · p99 0.5 · p99.9 0.5 s)",
        "vision (100 % ok; p50 3.0 · p99 3.0 · p99.9 3.0 s)",
    ]
    assert "1 − CDF" in ax.get_title(loc="left")
    # the default stays the CDF
    assert failing_race.plot.latency_cdf().get_yscale() == "linear"


def test_outcomes_say_failed_attempts_and_failed_requests_apart(failing_race):
    fig = failing_race.plot.outcomes()
    counts, wasted = fig.axes[:2]
    assert "failed attempt (no retry, no fallback)" in legend_texts(wasted)
    assert "failed" not in legend_texts(wasted)
    assert texts(counts, "failed_requests") == ["20 %", "0 %", "0 %"]
    assert "share of requests failed" in counts.get_title(loc="left")
    # side by side over the same strategies: one x axis
    assert counts.get_shared_x_axes().joined(counts, wasted)


def test_every_savefig_in_sykit_crops_to_a_tight_box():
    import pathlib
    import re

    root = pathlib.Path(sy.__file__).parent
    calls = []
    for path in root.rglob("*.py"):
        text = path.read_text()
        for match in re.finditer(r"\.savefig\(", text):
            depth, end = 0, match.end() - 1
            for end in range(match.end() - 1, len(text)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            calls.append((path.name, text[match.start() : end + 1]))
    assert calls
    assert [c for c in calls if 'bbox_inches="tight"' not in c[1]] == []


def test_the_cli_saves_its_figures_with_their_titles_inside(host, tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from sykit._cli import writers
    from sykit._playground.figures import figure_output as _figure_output

    saved = []
    original = Figure.savefig

    def spy(self, fname, *args, **kwargs):
        self.canvas.draw()
        box = self.get_tightbbox()
        titles = [
            t.get_window_extent().transformed(self.dpi_scale_trans.inverted())
            for ax in self.axes
            for t in (ax.title, ax._left_title)
            if t.get_text()
        ]
        saved.append((kwargs.get("bbox_inches"), box, titles))
        return original(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    lineup = {"race weak|strong": race_two, "fast": fast_only}
    cmp = sy.compare(lineup, REQUESTS, host=host, concurrency=2)
    writers.write_comparisons(tmp_path, cmp, cmp.summary(), cmp, cmp.summary())
    result = sy.sweep(
        lambda p: sy.strategies.weighted_random({"fast": 1 - p, "strong": p}),
        [0.5],
        REQUESTS,
        host=host,
        weak="fast",
        strong="strong",
        value_name="target_share",
    )
    writers.write_sweeps(tmp_path, result, result)
    _figure_output(cmp.plot.cost_quality().figure)
    assert len(saved) == 6
    for bbox_inches, box, titles in saved:
        assert bbox_inches == "tight"
        assert titles
        for title in titles:
            assert box.x0 <= title.x0 and title.x1 <= box.x1 and title.y1 <= box.y1
    assert "target_share" in pd.read_csv(tmp_path / "sweeps.csv").columns


def test_a_timeline_names_the_wrong_type_of_request_id(host):
    res = sy.run(fast_only, [sy.Request("q", id=3)], host=host)
    with pytest.raises(
        sy.ArgumentError,
        match=r"request_id '3' is a str, but this run's request ids are int.*use 3",
    ):
        res.plot.timeline("3")
    with pytest.raises(sy.ArgumentError, match="no attempts in this run"):
        res.plot.timeline(4)


def test_timeline_labels_end_inside_the_axes():
    long_name = "a-model-with-a-very-long-name-indeed-2026-11-preview"
    slow = sy.ModelProfile(
        latency=sy.Latency(ttft=0.5, tokens_per_s=100.0), output_tokens=50, price_out=10.0
    )
    fast = slow.replace(latency=sy.Latency(ttft=0.25, tokens_per_s=100.0))
    host = sy.SimHost({long_name: slow, "b": fast}, policy=sy.HostPolicy(cooldown_s=0))
    res = sy.run(sy.strategies.race([long_name, "b"]), ["q"], host=host)
    from matplotlib import pyplot as plt

    _, narrow = plt.subplots(figsize=(3.5, 2.0))
    ax = res.plot.timeline(ax=narrow)
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    right = ax.get_window_extent(renderer).x1
    labels = [t for t in ax.texts if t.get_gid() == "attempt_label"]
    assert labels and all(t.get_window_extent(renderer).x1 <= right + 1 for t in labels)


# -- latency CDF: coinciding curves, and p50 / p99 in the legend ---------------------------------


def marked_lines(ax):
    """The lines that draw markers (percentile markers piled where tails end together)."""
    return [line for line in ax.lines if line.get_marker() not in ("None", "", None)]


def cdf_lines(ax):
    return {
        str(line.get_gid()).split(":", 1)[1]: line
        for line in ax.lines
        if str(line.get_gid()).startswith("cdf:")
    }


def lognormal_requests(names, *, failed=0, spread=0.6, seed=0, n=400):
    """``n`` requests per strategy, latencies from one lognormal scaled a little per strategy
    (similar tails), the first ``failed`` of each strategy failed."""
    rng = np.random.default_rng(seed)
    frames = []
    for i, name in enumerate(names):
        latency = np.exp(rng.normal(0.0, spread, n)) * (1 + 0.3 * i)
        status = np.where(np.arange(n) < failed, "failed", "ok")
        frames.append(pd.DataFrame({"strategy": name, "status": status, "latency_s": latency}))
    return pd.concat(frames, ignore_index=True)


def test_identical_latency_curves_share_one_legend_entry_and_interleave_their_colours(twins):
    ax = twins.plot.latency_cdf()
    colors = twins.plot.colors
    # fast, race (always won by fast) and fast again have the very same latencies
    assert legend_texts(ax) == [
        "fast = race = fast again (100 % ok; p50 1.0 · p99 1.0 s)",
        "strong (100 % ok; p50 3.0 · p99 3.0 s)",
        "oracle (100 % ok; p50 1.0 · p99 3.0 s)",
    ]
    lines = cdf_lines(ax)
    shared = [lines[name] for name in ("fast", "race", "fast again")]
    assert [list(line.get_xdata()) for line in shared] == [list(shared[0].get_xdata())] * 3
    # one dash pattern, three offsets: each colour takes its turn along the shared path
    offsets = [line._unscaled_dash_pattern[0] for line in shared]
    patterns = {tuple(line._unscaled_dash_pattern[1]) for line in shared}
    assert len(set(offsets)) == 3 and len(patterns) == 1
    (on, off) = patterns.pop()
    assert off == 2 * on and sorted(offsets) == [0, on, 2 * on]
    assert [to_hex(line.get_color()) for line in shared] == [
        colors[n] for n in ("fast", "race", "fast again")
    ]
    for name in ("strong", "oracle"):
        assert lines[name].get_linestyle() == "-"
    # the shared entry's handle draws all three lines, as on the plot
    handles = ax.get_legend().legend_handles
    assert len(handles) == 3


def test_curves_a_hair_apart_with_different_numbers_keep_their_entries_and_both_show():
    from sykit._viz.latency_cdf import COINCIDE, _curve, _gap

    latency = np.linspace(1.0, 10.0, 400)
    nudged = latency + 0.06  # 60 ms later: never more than 3 requests of 400 apart
    requests = pd.concat(
        [
            pd.DataFrame({"strategy": "a", "status": "ok", "latency_s": latency}),
            pd.DataFrame({"strategy": "b", "status": "ok", "latency_s": nudged}),
            pd.DataFrame({"strategy": "c", "status": "ok", "latency_s": latency * 1.2}),
        ]
    )
    gap = _gap(_curve(requests, "a"), _curve(requests, "b"), True)
    assert gap == pytest.approx(3 / 400) and gap < COINCIDE
    ax = plot_latency_cdf(requests)
    assert legend_texts(ax) == [
        "a (100 % ok; p50 5.5 · p99 9.9 s)",
        "b (100 % ok; p50 5.6 · p99 10.0 s)",
        "c (100 % ok; p50 6.6 · p99 11.9 s)",
    ]
    lines = cdf_lines(ax)
    assert lines["a"]._unscaled_dash_pattern[0] != lines["b"]._unscaled_dash_pattern[0]
    assert lines["a"].get_linestyle() == lines["b"].get_linestyle() == "--"
    assert lines["c"].get_linestyle() == "-"  # 0.2 apart somewhere: a curve of its own


def test_the_survival_plot_interleaves_identical_curves_only():
    latency = np.linspace(1.0, 10.0, 400)
    nudged = latency.copy()
    nudged[-1] = 30.0  # one request in 400: on a log y axis the tail parts visibly
    requests = pd.concat(
        [
            pd.DataFrame({"strategy": name, "status": "ok", "latency_s": values})
            for name, values in (("a", latency), ("a twin", latency), ("b", nudged))
        ]
    )
    lines = {
        str(line.get_gid()).split(":", 1)[1]: line
        for line in plot_latency_cdf(requests, survival=True).lines
        if str(line.get_gid()).startswith("survival:")
    }
    assert lines["a"].get_linestyle() == lines["a twin"].get_linestyle() == "--"
    assert lines["b"].get_linestyle() == "-"


def test_twelve_strategies_pile_no_markers_and_read_p50_and_p99_in_the_legend():
    names = [f"strategy {i} with a long name" for i in range(12)]
    requests = lognormal_requests(names, spread=1.2)
    ax = plot_latency_cdf(requests)
    ax.figure.canvas.draw()
    assert marked_lines(ax) == []
    texts = ax.get_legend().get_texts()
    assert len(texts) == 12
    assert overlapping_pairs(list(texts)) == []
    for name, text in zip(names, texts, strict=True):
        mine = requests.loc[requests["strategy"] == name, "latency_s"]
        p50, p99 = (np.quantile(mine, q) for q in (0.5, 0.99))
        assert text.get_text() == f"{name} (100 % ok; p50 {p50:.1f} · p99 {p99:.1f} s)"
    # the figure grew to fit the legend rather than squeezing the curves
    assert ax.get_window_extent().width / ax.figure.dpi >= 4.5


def test_legend_percentiles_are_the_tables_to_the_digit(failing_race):
    from sykit._cli.layout import fmt_answered, fmt_number

    summary = failing_race.summary().set_index("strategy")
    texts = legend_texts(failing_race.plot.latency_cdf())
    for name, text in zip(failing_race.strategies, texts, strict=True):
        row = summary.loc[name]
        ok = fmt_answered(row["success_rate"]).removesuffix("%")
        p50, p99 = fmt_number(row["latency_p50_s"], 1), fmt_number(row["latency_p99_s"], 1)
        assert text.startswith(f"{name} ({ok} % ok;")
        assert text.endswith(f"p50 {p50} · p99 {p99} s)")


def test_legend_percentiles_of_the_answered_requests_when_some_failed():
    from sykit._cli.layout import fmt_number

    requests = pd.concat(
        [lognormal_requests(["flaky"], failed=8), lognormal_requests(["steady"], seed=1)]
    )
    texts = legend_texts(plot_latency_cdf(requests))
    flaky = requests[(requests["strategy"] == "flaky") & (requests["status"] == "ok")]
    p50, p99 = (fmt_number(np.quantile(flaky["latency_s"], q), 1) for q in (0.5, 0.99))
    # 98 % served: the curve never reaches 99 %, and the numbers say whose they are
    assert texts[0] == f"flaky (98 % ok; p99 not reached; answered: p50 {p50} · p99 {p99} s)"
    assert "answered" not in texts[1]


def test_seconds_read_as_the_tables_print_them():
    from sykit._cli.layout import fmt_number
    from sykit._viz.latency_cdf import seconds_text

    for value in (0.05, 0.0849, 0.86, 0.95, 1.25, 6.204, 57.06, 67.81, 123.45, 1e4):
        assert seconds_text(value) == fmt_number(value, 1)
    # one decimal would read 0.0 s: two significant figures instead
    assert [seconds_text(v) for v in (0.032, 0.0049, 0.0)] == ["0.032", "0.0049", "0.0"]


# -- cost vs quality: labels that collide with nothing ----------------------------------------------

#: The README job's routing summary (12 strategies): three on one spot, two on another, two a
#: hair apart (strong only, hedge strong @p95), two that read the truth.
README_JOB = [
    ("weak only", 7.17007e-05, 0.68621, 0.671333, 0.701573, True),
    ("strong only", 0.00759323, 0.823278, 0.81086, 0.834737, True),
    ("random 30% strong", 0.00242085, 0.72041, 0.705506, 0.734524, True),
    ("fallback weak>strong", 7.17007e-05, 0.68621, 0.671333, 0.701573, True),
    ("cascade (judge)", 0.00304612, 0.845229, 0.833636, 0.856048, True),
    ("threshold 30% strong", 0.00234889, 0.739735, 0.724977, 0.753957, False),
    ("speculative (judge)", 0.00338131, 0.839681, 0.82794, 0.851542, True),
    ("race weak|strong", 0.00179905, 0.702265, 0.687828, 0.717814, True),
    ("race (first ok)", 0.00179905, 0.702265, 0.687828, 0.717814, True),
    ("hedge strong @p95", 0.00759903, 0.823278, 0.81086, 0.834737, True),
    ("litellm-like", 7.17007e-05, 0.68621, 0.671333, 0.701573, True),
    ("oracle", 0.00156327, 0.886157, 0.876105, 0.895823, False),
]


def cq_summary(rows):
    """A summary from (strategy, cost, quality, ci low, ci high, realizable) rows."""
    columns = ["strategy", "cost_per_request_usd", "mean_quality", "quality_ci_low"]
    return pd.DataFrame(rows, columns=[*columns, "quality_ci_high", "realizable"])


def cq_crowd():
    """15 strategies: long names, three spots shared by two or three of them, a cluster of four
    points a hair apart, one that reads the truth."""
    names = [f"strategy {i} with a rather long name" if i % 4 == 0 else f"s{i}" for i in range(15)]
    costs = [0.001, 0.001, 0.001, 0.002, 0.002, 0.0021, 0.00205, 0.00207, 0.00203]
    costs += [0.01, 0.01, 0.0003, 0.0003, 0.0003, 0.005]
    quality = [0.6, 0.6, 0.6, 0.7, 0.7, 0.705, 0.702, 0.708, 0.71, 0.9, 0.9, 0.5, 0.5, 0.5, 0.8]
    rows = [
        (n, c, q, q - 0.015, q + 0.015, i != 14)
        for i, (n, c, q) in enumerate(zip(names, costs, quality, strict=True))
    ]
    return cq_summary(rows)


def cq_labels(ax):
    """The shown point labels and their text's extent (display pixels), after a draw."""
    from matplotlib.text import Text

    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    labels = [t for t in ax.texts if str(t.get_gid()).startswith("label:") and t.get_visible()]
    return [(t, Text.get_window_extent(t, renderer)) for t in labels]


def cq_leaders(ax):
    """The leader lines drawn (display pixels), by gid."""
    return {
        a.get_gid(): a.get_transform().transform(np.column_stack(a.get_data()))
        for a in ax.get_children()
        if str(a.get_gid()).startswith("leader:") and a.get_visible()
    }


def segments_cross(a, b, c, d):
    def turn(p, q, r):
        return np.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))

    return turn(a, b, c) != turn(a, b, d) and turn(c, d, a) != turn(c, d, b)


def segment_enters(segment, box):
    """Whether a segment passes through the inside of a Bbox (checked at 200 points)."""
    x, y = (segment[0] + np.linspace(0, 1, 200)[:, None] * (segment[1] - segment[0])).T
    inside = (box.x0 + 0.5 < x) & (x < box.x1 - 0.5) & (box.y0 + 0.5 < y) & (y < box.y1 - 0.5)
    return bool(inside.any())


def cq_collisions(ax):
    """Everything a cost–quality plot's labels hide or leave: labels on labels, on markers, on
    error bars, outside the Axes; leader lines crossing each other or a label."""
    from matplotlib.transforms import Bbox

    labels = cq_labels(ax)
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    markers = [
        (m.get_gid(), m.get_window_extent(renderer))
        for m in ax.lines
        if str(m.get_gid()).startswith(("point:", "bound:"))
    ]
    bars = []
    for bar in ax.collections:
        if str(bar.get_gid()).startswith("ci:"):
            half = bar.get_linewidth()[0] * ax.figure.dpi / 72 / 2
            for segment in bar.get_segments():
                box = Bbox(ax.transData.transform(segment))
                bars.append(
                    (bar.get_gid(), Bbox.from_extents(box.x0 - half, box.y0, box.x1 + half, box.y1))
                )
    problems = []
    for i, (text, box) in enumerate(labels):
        name = text.get_text()
        if not (
            frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        ):
            problems.append(("outside the axes", name))
        problems += [
            (name, other.get_text()) for other, b in labels[i + 1 :] if boxes_overlap(box, b)
        ]
        problems += [(name, gid) for gid, b in [*markers, *bars] if boxes_overlap(box, b)]
    leaders = cq_leaders(ax)
    gids = list(leaders)
    for i, gid in enumerate(gids):
        a, b = leaders[gid]
        problems += [
            (gid, other) for other in gids[i + 1 :] if segments_cross(a, b, *leaders[other])
        ]
        own = "label:" + gid.removeprefix("leader:")
        problems += [
            (gid, text.get_text())
            for text, box in labels
            if text.get_gid() != own and segment_enters(leaders[gid], box)
        ]
    return problems


def cq_named(ax):
    """What the labels say, one string per label (line breaks as spaces); a label shown as a
    number says what its legend line spells out."""
    spelled = {}
    if ax.get_legend() is not None:
        for entry in legend_texts(ax):
            number, _, names = entry.partition("  ")
            spelled[number] = " ".join(names.split())
    return [spelled.get(t.get_text(), " ".join(t.get_text().split())) for t, _ in cq_labels(ax)]


def test_cost_quality_labels_of_the_readme_job_collide_with_nothing():
    from sykit._cli.writers import _titled

    ax = plot_cost_quality(cq_summary(README_JOB))
    assert cq_collisions(ax) == []
    assert cq_named(ax) == [
        "weak only = fallback weak>strong = litellm-like",
        "strong only",
        "hedge strong @p95",
        "random 30% strong",
        "cascade (judge)",
        "threshold 30% strong (reads the truth)",
        "speculative (judge)",
        "race weak|strong = race (first ok)",
        "oracle (reads the truth)",
    ]
    assert not [t for t in point_labels(ax) if "(=" in t]
    # the job then titles it with its run and saves it at 110 dpi: the labels follow
    _titled(ax.figure, "part 1: no faults injected")
    assert cq_collisions(ax) == []
    ax.figure.set_dpi(110)
    assert cq_collisions(ax) == []


def test_cost_quality_names_the_strategies_on_one_spot_in_one_label():
    rows = [
        ("weak only", 0.0001, 0.6, 0.58, 0.62, True),
        ("fallback weak>strong", 0.0001, 0.6, 0.58, 0.62, True),
        ("litellm-like with a long name", 0.0001, 0.6, 0.58, 0.62, True),
        ("strong", 0.01, 0.8, 0.78, 0.82, True),
        ("router", 0.002, 0.75, 0.73, 0.77, True),
        ("oracle", 0.002, 0.75, 0.73, 0.77, False),
    ]
    ax = plot_cost_quality(cq_summary(rows))
    assert cq_collisions(ax) == []
    assert cq_named(ax) == [
        "weak only = fallback weak>strong = litellm-like with a long name",
        "strong",
        "router = oracle (reads the truth)",
    ]
    (weak,) = [t for t, _ in cq_labels(ax) if t.get_gid() == "label:weak only"]
    # too long for one line: wrapped between names
    assert weak.get_text().count("\n") >= 1
    assert all(line.startswith(("weak only", "= ")) for line in weak.get_text().splitlines())
    # every strategy keeps its marker and colour; the spot's first is the label's colour
    for name, *_ in rows:
        assert [line for line in ax.lines if line.get_gid().endswith(f":{name}")]
    assert to_hex(weak.get_color()) == text_color(
        strategy_colors([r[0] for r in rows])["weak only"]
    )


def test_cost_quality_labels_collide_with_nothing_in_a_hostile_crowd():
    summary = cq_crowd()
    ax = plot_cost_quality(summary)
    assert cq_collisions(ax) == []
    named = [
        n for label in cq_named(ax) for n in label.removesuffix(" (reads the truth)").split(" = ")
    ]
    assert sorted(named) == sorted(summary["strategy"])
    assert ax.get_title(loc="left").startswith("Cost vs quality")
    assert [line for line in ax.lines if line.get_gid() == "pareto"]


def test_cost_quality_labels_that_fit_nowhere_become_numbers_in_the_legend():
    import matplotlib.pyplot as plt

    summary = cq_crowd()
    _, ax = plt.subplots(figsize=(5.0, 3.5), layout="constrained")
    plot_cost_quality(summary, ax=ax)
    assert cq_collisions(ax) == []
    numbers = [t.get_text() for t, _ in cq_labels(ax) if t.get_text().isdigit()]
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)] and numbers
    assert legend_texts(ax)[0] == "Pareto frontier"
    assert [entry.split("  ")[0] for entry in legend_texts(ax)[1:]] == numbers
    named = [
        n for label in cq_named(ax) for n in label.removesuffix(" (reads the truth)").split(" = ")
    ]
    assert sorted(named) == sorted(summary["strategy"])


def test_cost_quality_labels_one_strategy_skip_unknown_quality_and_keep_edge_points_inside():
    import matplotlib.pyplot as plt

    alone = plot_cost_quality(cq_summary([("only one", 0.001, 0.7, 0.68, 0.72, True)]))
    assert cq_collisions(alone) == [] and cq_named(alone) == ["only one"]
    rows = [("a", 0.001, 0.6, 0.58, 0.62, True), ("b", 0.002, np.nan, np.nan, np.nan, True)]
    rows.append(("c", 0.003, 0.7, 0.68, 0.72, True))
    unknown = plot_cost_quality(cq_summary(rows))
    assert cq_collisions(unknown) == [] and cq_named(unknown) == ["a", "c"]
    # the caller's limits put the first and last points on the corners of the Axes
    rows = [
        (f"edge {i}", 0.001 * (i + 1), 0.5 + 0.05 * i, 0.49 + 0.05 * i, 0.51 + 0.05 * i, True)
        for i in range(8)
    ]
    _, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    ax.set_xlim(0.001, 0.008)
    ax.set_ylim(0.5, 0.85)
    plot_cost_quality(cq_summary(rows), log_cost=False, ax=ax)
    assert cq_collisions(ax) == []
    assert cq_named(ax) == [f"edge {i}" for i in range(8)]


def test_cost_quality_labels_land_on_the_same_spots_every_time():
    def spots():
        ax = plot_cost_quality(cq_crowd())
        return [(t.get_text(), tuple(np.round(b.extents, 3))) for t, b in cq_labels(ax)]

    first = spots()
    assert spots() == first
