"""The figures of the first run: readable with eleven strategies, percentiles in the legend, labels
beside their own points, bands and stars that do not bury each other. Asserted on the artists
(positions, texts, window extents on an Agg canvas), never on pixels."""

from __future__ import annotations

import itertools

import matplotlib
import numpy as np
import pandas as pd
import pytest

from sykit._viz import plot_cost_quality_curve, plot_latency_cdf, plot_outcomes
from sykit._viz.facets import plot_grid_lines
from sykit._viz.latency_cdf import _percent, percentile_over_all

REQUESTS_PER_STRATEGY = 3731
#: Failed requests of each of eleven strategies: none, one in 3,731 (0.027 %), …, all but one.
FAILED = (0, 1, 2, 37, 373, 5, 1, 0, 12, 3730, 100)


@pytest.fixture(autouse=True)
def agg_backend():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def eleven_strategies() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Attempts and requests of eleven strategies with long names, one attempt per request."""
    names = [f"strategy number {i}" for i in range(len(FAILED))]
    n = REQUESTS_PER_STRATEGY
    strategy = np.repeat(names, n)
    status = np.concatenate([np.where(np.arange(n) < lost, "error", "ok") for lost in FAILED])
    wasted = np.repeat([0.0001 * (k % 3) for k in range(len(names))], n)
    requests = pd.DataFrame(
        {"strategy": strategy, "status": status, "cost_usd": 0.001, "wasted_usd": wasted}
    )
    attempts = pd.DataFrame(
        {
            "strategy": strategy,
            "status": status,
            "fallback_reason": None,
            "cancel_cause": None,
            "retried": False,
            "kind": "model",
            "cost_usd": 0.001,
        }
    )
    return attempts, requests


def notes(ax, gid):
    return [t for t in ax.texts if t.get_gid() == gid]


def overlapping(extents) -> list[tuple[int, int]]:
    return [
        (i, j) for (i, a), (j, b) in itertools.combinations(enumerate(extents), 2) if a.overlaps(b)
    ]


# -- outcomes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("figsize", [None, (11.0, 3.8)])
def test_failed_shares_on_top_of_eleven_bars_never_overlap(figsize):
    import matplotlib.pyplot as plt

    attempts, requests = eleven_strategies()
    if figsize is None:
        figure = plot_outcomes(attempts, requests)
    else:  # a narrow figure: the notes turn upright
        figure, pair = plt.subplots(1, 2, figsize=figsize, layout="constrained")
        plot_outcomes(attempts, requests, ax=pair)
    figure.canvas.draw()
    counts, wasted = figure.axes[:2]
    for ax, gid in ((counts, "failed_requests"), (wasted, "wasted_share")):
        drawn = notes(ax, gid)
        assert len(drawn) == len(FAILED)
        assert overlapping([t.get_window_extent() for t in drawn]) == []
        # every note stays inside its Axes, above its bar
        frame = ax.get_window_extent()
        assert all(frame.y0 <= t.get_window_extent().y1 <= frame.y1 + 1 for t in drawn)


def test_failed_shares_round_up_to_two_significant_figures():
    attempts, requests = eleven_strategies()
    figure = plot_outcomes(attempts, requests)
    shown = [t.get_text() for t in notes(figure.axes[0], "failed_requests")]
    # 1 in 3,731 is 0.0268 %: never "0.02 %", never "0 %"; 3,730 in 3,731 never "100 %"
    assert shown == [
        "0 %",
        "0.027 %",
        "0.054 %",
        "1 %",
        "10 %",
        "0.14 %",
        "0.027 %",
        "0 %",
        "0.33 %",
        "99.98 %",
        "2.7 %",
    ]
    assert "share of requests failed" in figure.axes[0].get_title(loc="left")
    wasted = [t.get_text() for t in notes(figure.axes[1], "wasted_share")]
    assert wasted[:3] == ["0 %", "10 %", "20 %"]


def test_percentages_round_toward_the_side_that_never_flatters():
    from sykit._viz.latency_cdf import share_text

    # success shares round down, failure shares up, both to two significant figures
    assert _percent(3730, 3731) == "99.9"
    assert _percent(1, 3731) == "0.026"
    assert _percent(1, 3731, up=True) == "0.027"
    assert _percent(3730, 3731, up=True) == "99.98"
    assert _percent(1, 10**7, up=True) == "0.00001"
    assert _percent(2, 3, up=True) == "66.7"
    assert _percent(0, 5, up=True) == "0" and _percent(5, 5, up=True) == "100"
    assert [share_text(s) for s in (0.0, 0.07, 0.1 + 0.2, 0.00027, 1.0)] == [
        "0",
        "7",
        "30",
        "0.027",
        "100",
    ]


# -- latency CDF ----------------------------------------------------------------------------------


def test_eleven_strategies_with_similar_tails_read_their_percentiles_in_the_legend():
    rng = np.random.default_rng(0)
    frames = []
    for i in range(11):
        # similar tails: markers on the curves would crowd on one spot
        latency = np.exp(rng.normal(0.0, 0.6, 400)) * (1 + 0.01 * i)
        frames.append(pd.DataFrame({"strategy": f"s{i}", "status": "ok", "latency_s": latency}))
    requests = pd.concat(frames, ignore_index=True)
    ax = plot_latency_cdf(requests)
    ax.figure.canvas.draw()
    assert not [line for line in ax.lines if line.get_marker() not in ("None", "", None)]
    texts = ax.get_legend().get_texts()
    shown = " ".join(t.get_text() for t in texts)
    for i in range(11):
        mine = np.sort(requests[requests["strategy"] == f"s{i}"]["latency_s"].to_numpy())
        p50, p99 = (percentile_over_all(mine, len(mine), q) for q in (0.5, 0.99))
        assert (p50, p99) == (np.quantile(mine, 0.5), np.quantile(mine, 0.99))
        assert f"s{i}" in shown
        assert f"p50 {round(p50, 1):.1f} · p99 {round(p99, 1):.1f} s" in shown
    assert overlapping([t.get_window_extent() for t in texts]) == []


# -- threshold sweep ------------------------------------------------------------------------------

#: The threshold sweep of ``sykit compare --dataset routellm --sample 400``.
SWEEP = pd.DataFrame(
    {
        "target_share": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
        "cost_per_request_usd": [
            0.000914,
            0.001698,
            0.002285,
            0.003223,
            0.004352,
            0.005076,
            0.005828,
            0.006509,
            0.007117,
        ],
        "mean_quality": [0.6998, 0.7195, 0.747, 0.757, 0.767, 0.7945, 0.8045, 0.8125, 0.82],
    }
)
REFERENCES = {"weak": (0.00008, 0.688), "strong": (0.0078, 0.825), "oracle": (0.0015, 0.895)}


def test_sweep_labels_sit_beside_their_own_points_off_the_random_mix_line():
    ax = plot_cost_quality_curve(SWEEP, references=REFERENCES)
    ax.figure.canvas.draw()
    (curve,) = [line for line in ax.lines if line.get_gid() == "curve:sweep"]
    points = ax.transData.transform(np.column_stack([curve.get_xdata(), curve.get_ydata()]))
    (mix,) = [line for line in ax.lines if line.get_label() == "random mix"]
    mix_xy = ax.transData.transform(np.column_stack([mix.get_xdata(), mix.get_ydata()]))
    dense = np.concatenate([np.linspace(a, b, 20) for a, b in itertools.pairwise(mix_xy)], axis=0)
    labels = notes(ax, "setting")
    assert [t.get_text() for t in labels] == ["0.1", "0.3", "0.5", "0.7", "0.9"]
    px_per_pt = ax.figure.dpi / 72.0
    for label in labels:
        box = label.get_window_extent()
        own = ax.transData.transform(label.xy)
        centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
        # the label's own point is the sweep point nearest to it, a few points away
        nearest = points[np.argmin(np.hypot(*(points - centre).T))]
        assert nearest == pytest.approx(own)
        gap = np.hypot(max(box.x0 - own[0], 0, own[0] - box.x1), max(box.y0 - own[1], 0))
        assert gap <= 12 * px_per_pt
        # and the random-mix line does not run through it
        inside = (
            (dense[:, 0] > box.x0)
            & (dense[:, 0] < box.x1)
            & (dense[:, 1] > box.y0)
            & (dense[:, 1] < box.y1)
        )
        assert not inside.any(), label.get_text()


def test_bounds_on_one_spot_are_nested_so_both_stars_show():
    references = {**REFERENCES, "cheapest good enough": (0.00151, 0.8952)}
    ax = plot_cost_quality_curve(
        SWEEP, references=references, bounds=["oracle", "cheapest good enough"]
    )
    ax.figure.canvas.draw()
    stars = {
        label: next(line for line in ax.lines if line.get_gid() == f"bound:{label}")
        for label in ("oracle", "cheapest good enough")
    }
    outer, inner = stars["oracle"], stars["cheapest good enough"]
    # each stays exactly at its point ...
    for label, star in stars.items():
        assert (star.get_xdata()[0], star.get_ydata()[0]) == references[label]
    # ... the earlier one drawn larger behind the later one, so its colour rings it
    assert outer.get_markersize() >= inner.get_markersize() + 6
    assert inner.get_zorder() > outer.get_zorder()
    # bounds far apart keep one size
    ax = plot_cost_quality_curve(
        SWEEP,
        references={**REFERENCES, "cheapest good enough": (0.004, 0.85)},
        bounds=["oracle", "cheapest good enough"],
    )
    sizes = {line.get_markersize() for line in ax.lines if str(line.get_gid()).startswith("b")}
    assert sizes == {15}


# -- grid small multiples -------------------------------------------------------------------------


def grid_summary(strategies: int) -> pd.DataFrame:
    rows = []
    for outage in (0.0, 0.1):
        for i in range(strategies):
            for share in (0.2, 0.5, 0.8):
                quality = 0.6 + 0.05 * i + 0.1 * share
                rows.append(
                    {
                        "strategy": f"router {i}",
                        "share": share,
                        "outage": outage,
                        "mean_quality": quality,
                        "quality_ci_low": quality - 0.1,
                        "quality_ci_high": quality + 0.1,
                    }
                )
        rows.append(
            {
                "strategy": "strong only",
                "share": np.nan,
                "outage": outage,
                "mean_quality": 0.8,
                "quality_ci_low": 0.7,
                "quality_ci_high": 0.9,
            }
        )
    return pd.DataFrame(rows)


def bands(ax) -> list[str]:
    """The gids of the filled bands of a panel (every filled area is a band)."""
    from matplotlib.collections import PolyCollection

    return [str(c.get_gid()) for c in ax.collections if isinstance(c, PolyCollection)]


def test_grid_panels_band_only_the_highlighted_line_when_many_lines_share_a_panel():
    table = grid_summary(5)
    axes = ("share", "outage")
    figure = plot_grid_lines(table, x="share", col="outage", axes=axes)
    panels = figure.axes[:2]
    assert all(bands(ax) == [] for ax in panels)
    figure = plot_grid_lines(table, x="share", col="outage", axes=axes, highlight="router 3")
    for ax in figure.axes[:2]:
        assert bands(ax) == ["band:router 3"]
        widths = {line.get_gid(): line.get_linewidth() for line in ax.lines if line.get_gid()}
        assert widths["line:router 3"] > max(w for g, w in widths.items() if g != "line:router 3")
    legend = [t.get_text() for t in figure.legends[0].get_texts()] if figure.legends else None
    if legend is None:
        legend = [t.get_text() for t in figure.axes[1].get_legend().get_texts()]
    assert "95 % CI: router 3" in legend
    # two lines: each keeps its band
    figure = plot_grid_lines(grid_summary(2), x="share", col="outage", axes=axes)
    assert bands(figure.axes[0]) == ["band:router 0", "band:router 1"]
    with pytest.raises(ValueError, match="highlight='nope' is not a strategy"):
        plot_grid_lines(table, x="share", col="outage", axes=axes, highlight="nope")
