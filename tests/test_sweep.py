"""Sweeps: the curve of one parametric strategy, its references and bounds, APGR and AIQ."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from helpers import constant_profile, weak_strong_host

import sykit as sy
from sykit import strategies as st
from sykit._grid.sweep import aiq, apgr
from sykit._results.metrics import UngradedWarning


@pytest.fixture
def host():
    return weak_strong_host()


REQUESTS = [sy.Request(f"q{i}", id=i) for i in range(300)]


def mix(share: float):
    return st.weighted_random({"weak": 1 - share, "strong": share})


def test_apgr_of_the_straight_line_is_one_half():
    shares = np.linspace(0, 1, 11)
    assert apgr(shares, 0.4 + 0.5 * shares, weak_quality=0.4, strong_quality=0.9) == pytest.approx(
        0.5
    )
    assert apgr([0.2], [0.9], weak_quality=0.4, strong_quality=0.9) == pytest.approx(0.9)
    assert math.isnan(apgr([0.5], [0.5], weak_quality=0.5, strong_quality=0.5))


def test_aiq_is_the_area_under_the_nondecreasing_hull():
    # hull of (0,0), (1,1), (2,1): area 0.5 + 1 over a cost range of 2
    assert aiq([0, 1, 2], [0, 1, 1]) == pytest.approx(0.75)
    # a dominated point below the hull changes nothing; a drop in quality is flattened
    assert aiq([0, 0.5, 1, 2], [0, 0.1, 1, 0.5]) == pytest.approx(0.75)
    assert aiq([1.0], [0.7]) == 0.7


def test_a_sweep_of_the_random_router_is_the_straight_line(host):
    shares = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    result = sy.sweep(
        lambda p: st.weighted_random({"weak": 1 - p, "strong": p}),
        shares,
        REQUESTS,
        host=host.replace(policy=sy.HostPolicy()),
        weak="weak",
        strong="strong",
    )
    curve = result.curve
    refs = result.references
    line = refs["weak"][1] + (refs["strong"][1] - refs["weak"][1]) * curve["strong_share"]
    assert np.abs(curve["mean_quality"] - line).max() < 0.06
    assert result.apgr() == pytest.approx(0.5, abs=0.05)
    assert refs["oracle"][1] >= curve["mean_quality"].max()
    assert set(refs) == {"weak", "strong", "oracle"}
    assert 0 < result.aiq() <= 1
    assert curve["realizable"].all()  # a random router reads no truth


def test_a_sweep_of_a_truth_reading_score_is_a_bound(host):
    score = st.simulated_score("weak", "strong", noise=0.2)
    result = sy.sweep(
        lambda t: st.threshold_router("weak", "strong", score=score, threshold=t),
        [0.0, 0.5],
        REQUESTS[:40],
        host=host,
        weak="weak",
        strong="strong",
    )
    assert not result.curve["realizable"].any()


def test_a_sweep_plot_draws_one_curve_through_its_settings(host):
    import matplotlib

    matplotlib.use("Agg")
    result = sy.sweep(
        lambda p: st.weighted_random({"weak": 1 - p, "strong": p}),
        [0.25, 0.5, 0.75],
        REQUESTS[:60],
        host=host,
        weak="weak",
        strong="strong",
    )
    lines = {line.get_label(): len(line.get_xdata()) for line in result.plot().get_lines()}
    assert lines["sweep"] == 3
    assert lines["random mix"] > 2  # sampled densely, so it bends on a log cost axis


def test_the_curve_names_the_swept_value(host):
    result = sy.sweep(mix, [0.25, 0.75], REQUESTS[:40], host=host, weak="weak", strong="strong")
    curve = result.curve
    assert curve.columns[0] == "value" and "threshold" not in curve.columns
    assert curve["value"].tolist() == [0.25, 0.75]
    assert curve["strategy"].tolist() == ["0.25", "0.75"]
    assert curve["n_ungraded"].tolist() == [0, 0]


def test_the_plot_still_labels_points_with_their_value(host):
    import matplotlib

    matplotlib.use("Agg")
    result = sy.sweep(mix, [0.25, 0.75], REQUESTS[:40], host=host, weak="weak", strong="strong")
    ax = result.plot()
    assert [t.get_text() for t in ax.texts if t.get_gid() == "setting"] == ["0.25", "0.75"]


# -- bounds ---------------------------------------------------------------------------------------


def test_bounds_default_to_the_oracle_on_a_simhost(host):
    default = sy.sweep(mix, [0.5], REQUESTS[:20], host=host, weak="weak", strong="strong")
    assert list(default.references) == ["weak", "strong", "oracle"]
    for kwargs in ({"bounds": {}}, {"with_oracle": False}):
        none = sy.sweep(
            mix, [0.5], REQUESTS[:20], host=host, weak="weak", strong="strong", **kwargs
        )
        assert list(none.references) == ["weak", "strong"]
        assert none.comparison.strategies == ["0.5", "weak only", "strong only"]


def test_named_bounds_are_run_and_drawn(host):
    import matplotlib

    matplotlib.use("Agg")
    bounds = {
        "oracle": st.oracle(["weak", "strong"]),
        "good enough": st.cheapest_good_enough(["weak", "strong"]),
    }
    result = sy.sweep(
        mix, [0.5], REQUESTS[:40], host=host, weak="weak", strong="strong", bounds=bounds
    )
    assert list(result.references) == ["weak", "strong", "oracle", "good enough"]
    summary = result.comparison.summary().set_index("strategy")
    for name in bounds:
        assert result.references[name] == (
            summary.loc[name, "cost_per_request_usd"],
            summary.loc[name, "mean_quality"],
        )
        assert not summary.loc[name, "realizable"]
    drawn = {line.get_gid() for line in result.plot().get_lines()}
    assert {"bound:oracle", "bound:good enough"} <= drawn


def test_bounds_must_be_named_apart_from_the_sweep(host):
    run = {"host": host, "weak": "weak", "strong": "strong"}
    with pytest.raises(sy.ArgumentError, match="bounds name 'weak only'"):
        sy.sweep(mix, [0.5], REQUESTS[:5], bounds={"weak only": st.single("weak")}, **run)
    with pytest.raises(sy.ArgumentError, match=r"bounds name '0\.5'"):
        sy.sweep(mix, [0.5], REQUESTS[:5], bounds={"0.5": st.single("weak")}, **run)
    with pytest.raises(sy.ArgumentTypeError, match="bounds must map a name"):
        sy.sweep(mix, [0.5], REQUESTS[:5], bounds=[st.single("weak")], **run)


# -- ungraded answers -----------------------------------------------------------------------------

TABLE = pd.DataFrame(
    {
        "q": [f"prompt {i}" for i in range(8)],
        "weak": [0.9, 0.2, None, 0.1, 0.8, None, 0.5, 0.6],
        "strong": [0.8, 0.9, 0.3, 0.9, None, 0.6, 1.0, 1.0],
    }
)


def test_the_curve_and_references_leave_ungraded_answers_out():
    table = sy.datasets.from_frame(TABLE, prompt="q", quality={"weak": "weak", "strong": "strong"})
    host = sy.SimHost(
        {
            "weak": constant_profile(0.1, 10, 100, price_in=0.1, price_out=0.1),
            "strong": constant_profile(0.2, 10, 100, price_in=1.0, price_out=1.0),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UngradedWarning)  # the curve does not warn: it counts
        result = sy.sweep(
            mix, [0.0, 1.0], table, host=host, weak="weak", strong="strong", seeds=[0, 1]
        )
        curve = result.curve.set_index("value")
        refs = result.references
    assert refs["weak"][1] == pytest.approx(TABLE["weak"].mean())
    assert refs["strong"][1] == pytest.approx(TABLE["strong"].mean())
    assert curve.loc[0.0, "mean_quality"] == pytest.approx(TABLE["weak"].mean())
    assert curve.loc[1.0, "mean_quality"] == pytest.approx(TABLE["strong"].mean())
    assert curve["n_ungraded"].tolist() == [4, 2]  # 2 and 1 empty cells, over 2 seeds
    best = TABLE[["weak", "strong"]].max(axis=1)  # the oracle serves the best graded answer
    assert refs["oracle"][1] == pytest.approx(best.mean())


# -- argument checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"weak": "tiny"}, sy.ArgumentError, r"weak='tiny' is not a model of the host"),
        ({"strong": "huge"}, sy.ArgumentError, r"strong='huge' is not a model of the host"),
        ({"strong": "weak"}, sy.ArgumentError, "weak and strong are both 'weak'"),
        ({"values": "abc"}, sy.ArgumentTypeError, "values must be a list of numbers.*'abc'"),
        ({"values": [0.1, "x"]}, sy.ArgumentTypeError, r"values must be numbers; got 'x' \(str\)"),
        ({"values": [0.1, None]}, sy.ArgumentTypeError, "got None"),
        ({"values": [0.1, math.nan]}, sy.ArgumentError, "finite"),
        ({"values": 0.5}, sy.ArgumentTypeError, "values must be a list of numbers"),
        ({"values": []}, sy.ArgumentError, "values is empty"),
        ({"values": [0.5, 0.5]}, sy.ArgumentError, "values must be distinct"),
        ({"make_strategy": 3}, sy.ArgumentTypeError, "make_strategy must be a function"),
        ({"seeds": [0, 1, 0]}, sy.ArgumentError, r"seeds must be distinct; repeated: \[0\]"),
    ],
)
def test_sweep_arguments_are_checked(host, kwargs, error, match):
    run = {
        "make_strategy": mix,
        "values": [0.5],
        "requests": REQUESTS[:5],
        "host": host,
        "weak": "weak",
        "strong": "strong",
        **kwargs,
    }
    with pytest.raises(error, match=match):
        sy.sweep(**run)


def test_numpy_values_are_numbers(host):
    result = sy.sweep(
        mix, np.array([0.0, 1.0]), REQUESTS[:5], host=host, weak="weak", strong="strong"
    )
    assert result.curve["value"].tolist() == [0.0, 1.0]


def test_the_curve_calls_the_swept_value_what_it_is(host):
    import matplotlib

    matplotlib.use("Agg")
    result = sy.sweep(
        mix,
        [0.25, 0.75],
        REQUESTS[:40],
        host=host,
        weak="weak",
        strong="strong",
        value_name="target_share",
    )
    curve = result.curve
    assert curve.columns[0] == "target_share" and "value" not in curve.columns
    assert curve["target_share"].tolist() == [0.25, 0.75]
    ax = result.plot()
    assert ax.get_title(loc="left").endswith("(points labelled with their target share)")
    assert "threshold" not in ax.get_title(loc="left")
    assert [t.get_text() for t in ax.texts if t.get_gid() == "setting"] == ["0.25", "0.75"]
    with pytest.raises(sy.ArgumentError, match="'mean_quality' is already a column"):
        sy.sweep(
            mix,
            [0.5],
            REQUESTS[:5],
            host=host,
            weak="weak",
            strong="strong",
            value_name="mean_quality",
        )
    with pytest.raises(sy.ArgumentTypeError, match="value_name must name"):
        sy.sweep(mix, [0.5], REQUESTS[:5], host=host, weak="weak", strong="strong", value_name="")


@pytest.mark.parametrize("seeds", [(0,), (0, 1)])
def test_intervals_surround_the_sweeps_own_apgr_and_aiq(host, seeds):
    sweep = sy.sweep(
        mix, [0.2, 0.5, 0.8], REQUESTS, host=host, weak="weak", strong="strong", seeds=seeds
    )
    boot = sweep.intervals(resamples=300)
    assert boot.apgr.value == pytest.approx(sweep.apgr(), abs=1e-12)
    assert boot.aiq.value == pytest.approx(sweep.aiq(), abs=1e-12)
    assert boot.apgr.low < boot.apgr.value < boot.apgr.high
    assert boot.aiq.low <= boot.aiq.value <= boot.aiq.high
    assert sweep.intervals(resamples=300) == boot  # seeded


def test_intervals_resample_a_group_column_together(host):
    requests = [sy.Request(f"q{i}", id=i, metadata={"pair": i // 2}) for i in range(200)]
    sweep = sy.sweep(mix, [0.3, 0.7], requests, host=host, weak="weak", strong="strong")
    alone = sweep.intervals(resamples=300)
    paired = sweep.intervals(resamples=300, group="pair")
    assert paired.apgr.value == alone.apgr.value
    with pytest.raises(sy.ArgumentError, match="group"):
        sweep.intervals(group="nope")
