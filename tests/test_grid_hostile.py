"""Grids, sweeps, comparisons and their results given legal but unusual input, or wrong input:
clear errors naming the argument, never a result silently missing a strategy or a cell."""

from __future__ import annotations

from pathlib import Path

import pytest

import sykit as sy
from sykit import strategies as st

N = 6


def _requests() -> list[sy.Request]:
    return [sy.Request(f"q{i}", id=f"r{i}", input_tokens=100 + i) for i in range(N)]


def _host() -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.LogNormal(0.4, sigma=0.5), tokens_per_s=200)
    return sy.SimHost(
        {
            "weak": sy.ModelProfile(latency=latency, price_in=1e-6, price_out=2e-6, quality=0.6),
            "strong": sy.ModelProfile(latency=latency, price_in=1e-5, price_out=3e-5, quality=0.9),
        }
    )


@pytest.fixture(scope="module")
def grid() -> sy.Grid:
    return sy.grid(
        {
            "routed": lambda n, flag: st.single("weak" if flag else "strong"),
            "ref": st.single("strong"),
        },
        _requests(),
        host=_host(),
        axes={"n": [1, 2], "flag": [True, False]},
        progress=False,
    )


@pytest.fixture(scope="module")
def comparison() -> sy.Comparison:
    strategies = {"weak": st.single("weak"), "strong": st.single("strong")}
    return sy.compare(strategies, _requests(), host=_host(), progress=False)


# -- axis names -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["resumed", "engine", "key", "retries", "mean_quality", "latency_p90_s"]
)
def test_an_axis_named_like_a_column_of_cells_or_summary_is_refused(name):
    factory = eval(f"lambda {name}: st.single('weak')")  # a parameter named after the axis
    with pytest.raises(sy.ArgumentError, match=f"axis name '{name}' is already a column"):
        sy.grid({"x": factory}, _requests(), host=_host(), axes={name: [1, 2]}, progress=False)


# -- picking cells by axis value ------------------------------------------------------------------
def test_comparison_at_a_value_the_axis_lacks_is_refused_not_missing_a_strategy(grid):
    with pytest.raises(sy.ArgumentError, match=r"n=3 is not a value of the axis 'n'.*\[1, 2\]"):
        grid.comparison(n=3, flag=True)
    assert grid.comparison(n=1, flag=True).strategies == ["routed", "ref"]


@pytest.mark.parametrize("value", ["1", True, [1], None])
def test_result_at_a_value_of_another_type_is_refused(grid, value):
    with pytest.raises(sy.ArgumentError, match="is not a value of the axis 'n'"):
        grid.result("routed", n=value, flag=False)


def test_result_takes_an_equal_number_of_another_numeric_type(grid):
    assert grid.result("routed", n=1.0, flag=False).strategy == "routed"


# -- sweeps ---------------------------------------------------------------------------------------
def test_sweep_values_alike_to_six_digits_run_as_distinct_settings():
    sweep = sy.sweep(
        lambda p: st.weighted_random({"weak": 1 - p, "strong": p}),
        [0.1, 0.1000001],
        _requests(),
        host=_host(),
        weak="weak",
        strong="strong",
        progress=False,
    )
    assert list(sweep.curve["value"]) == [0.1, 0.1000001]
    assert sweep.labels == ("0.1", "0.1000001")


# -- summaries ------------------------------------------------------------------------------------
def test_summary_by_something_not_a_name_is_a_clear_type_error(comparison, grid):
    with pytest.raises(sy.ArgumentTypeError, match=r"summary\(by=...\) takes a column name"):
        comparison.summary(by=3)
    with pytest.raises(sy.ArgumentTypeError, match=r"summary\(by=...\) takes a column name"):
        grid.summary(by=3)


def test_paired_takes_one_metric_by_name(comparison):
    paired = comparison.paired("weak", metrics="cost_usd")
    assert "d_cost_usd" in paired and "d_quality" not in paired


# -- the output folder ----------------------------------------------------------------------------
def test_out_below_a_file_is_refused_before_anything_runs(tmp_path):
    file = tmp_path / "a-file"
    file.write_text("mine")
    with pytest.raises(sy.ArgumentError, match="is a file, not a folder"):
        sy.grid(
            {"x": st.single("weak")}, _requests(), host=_host(), out=file / "grid", progress=False
        )
    assert file.read_text() == "mine"


def test_out_that_cannot_be_written_is_an_argument_error(tmp_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(sy.ArgumentError, match=r"cannot be written.*Permission denied"):
        sy.grid(
            {"x": st.single("weak")}, _requests(), host=_host(), out=tmp_path / "g", progress=False
        )


@pytest.mark.parametrize(
    ("values", "ticks"),
    [(["cheap", "dear", "other"], ["cheap", "dear", "other"]), ([1, "b", 3], ["1", "b", "3"])],
)
def test_lines_along_an_axis_of_text_place_its_values_in_order(values, ticks):
    """An axis of text (or of mixed labels) along x: the values at 0, 1, 2 in the axis's order,
    named on the ticks (it raised a TypeError about an unordered Categorical, or '<=' between
    int and str)."""
    import matplotlib

    matplotlib.use("Agg")
    grid = sy.grid(
        {"w": lambda mode: st.single("weak" if mode == values[0] else "strong")},
        _requests(),
        host=_host(),
        axes={"mode": values},
        progress=False,
    )
    figure = grid.plot.lines(x="mode")
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ticks
    assert [line.get_xdata().tolist() for line in ax.lines] == [[0.0, 1.0, 2.0]]
    import matplotlib.pyplot as plt

    plt.close(figure)
