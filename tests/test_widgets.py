"""The playground, driven headless: set a control, the comparison re-runs, the summary changes."""

from __future__ import annotations

import base64
import io
import math
import re
from html.parser import HTMLParser

import matplotlib
import pandas.testing as pdt
import pytest
from helpers import constant_profile

import sykit as sy
from sykit import widgets
from sykit._playground import ui
from sykit.widgets import KNOBS, Knobs, apply_knobs, build_lineup, scale_distribution

REQUESTS = [sy.Request(f"question {i}", id=i) for i in range(12)]
LINEUP = [
    "fast only",
    "strong only",
    "fallback fast>strong",
    "cascade fast>strong",
    "race fast|strong",
    "hedge strong",
]


@pytest.fixture(autouse=True)
def agg_backend():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


@pytest.fixture
def pg(host):
    return widgets.playground(REQUESTS, host, plot="timeline", hedge_after_s=2.0)


def row(pg, strategy):
    return pg.summary.set_index("strategy").loc[strategy]


# -- the default lineup ---------------------------------------------------------------------------


def test_default_lineup_uses_cheapest_and_priciest_models_and_the_judge(host):
    lineup = widgets.default_strategies(host)
    assert list(lineup) == LINEUP
    built = build_lineup(lineup, Knobs(hedge_after_s=1.5))
    assert built["hedge strong"].name == "hedge(strong,1.5s)"
    assert built["cascade fast>strong"].name == "cascade(fast>strong)"
    without_judge = sy.SimHost({"a": sy.ModelProfile(price_out=1.0)})
    assert list(widgets.default_strategies(without_judge)) == ["a only", "hedge a"]
    with pytest.raises(ValueError, match="judge 'oracle' is not a model"):
        widgets.default_strategies(host, judge="oracle")


def _abc_host(**kwargs) -> sy.SimHost:
    """Three answering models named unlike the defaults; b's answers take about 6 s."""
    slow = sy.Latency(ttft=sy.dists.LogNormal(5.0, p95=9.0), tokens_per_s=100)
    return sy.SimHost(
        {
            "mid": constant_profile(0.5, 50, 100.0, price_in=1.0, price_out=4.0, quality=0.7),
            "a": constant_profile(0.25, 50, 100.0, price_in=0.1, price_out=0.4, quality=0.5),
            "b": sy.ModelProfile(
                price_in=5.0, price_out=15.0, quality=0.9, latency=slow, output_tokens=100
            ),
        },
        **kwargs,
    )


def test_default_lineup_uses_the_hosts_own_models_weak_mid_and_strong():
    host = _abc_host(judge=sy.Judge(accuracy=0.8))
    lineup = widgets.default_strategies(host)
    assert list(lineup) == [
        "a only",
        "mid only",
        "b only",
        "fallback a>mid>b",
        "cascade a>b",
        "race a|b",
        "hedge b",
    ]
    built = build_lineup(lineup, Knobs())
    assert built["fallback a>mid>b"].name == "fallback(a>mid>b)"
    # no judge model and no sy.Judge given: no cascade
    assert "cascade a>b" not in widgets.default_strategies(_abc_host())
    # a model without a quality is a helper: it judges
    helper = constant_profile(0.1, 5, 50.0, price_in=0.05, price_out=0.1)
    graded = sy.SimHost({**_abc_host().profiles, "grader": helper})
    assert list(graded.judges) and "cascade a>b" in widgets.default_strategies(graded)
    assert build_lineup(widgets.default_strategies(graded), Knobs())["cascade a>b"].name == (
        "cascade(a>b)"
    )


def test_the_judge_slider_moves_the_default_cascade_and_the_hedge_starts_at_the_tail():
    host = _abc_host(judge=sy.Judge(accuracy=0.8))
    requests = [sy.Request(f"question {i}", id=i) for i in range(60)]
    pg = widgets.playground(requests, host, plot="cost_quality")
    assert pg.knobs.judge_error_rate == pytest.approx(0.2)
    answer_p95 = widgets.hedge_delay(host, "b")
    assert pg.knobs.hedge_after_s == answer_p95 and 8.0 < answer_p95 < 12.0
    assert row(pg, "hedge b")["attempts_per_request"] < 1.2  # not 2 s against a 6 s median
    cascade = row(pg, "cascade a>b")["mean_quality"]
    pg.controls["judge_error_rate"].value = 0.5
    assert row(pg, "cascade a>b")["mean_quality"] != cascade


# -- building and re-running ----------------------------------------------------------------------


def test_playground_is_a_vbox_with_every_control_and_a_first_run(pg):
    import ipywidgets

    assert isinstance(pg, ipywidgets.VBox) and isinstance(pg, widgets.Playground)
    assert set(pg.controls) == {*KNOBS, "strategies", "plot", "timeline"}
    assert pg.runs == 1 and pg.error is None
    assert pg.summary["strategy"].tolist() == LINEUP
    table = pg.table.value.replace("&gt;", ">")
    assert all(re.search(rf"<td[^>]*>{re.escape(name)}</td>", table) for name in LINEUP)
    assert pg.figure.axes[0].get_title(loc="left").startswith("fast only · request")
    assert pg.knobs == Knobs(judge_error_rate=0.0)


def test_latency_scale_stretches_every_answer(pg):
    before = pg.table.value
    assert row(pg, "fast only")["latency_p50_s"] == 1.0
    pg.controls["latency_scale"].value = 2.0
    assert pg.runs == 2
    assert row(pg, "fast only")["latency_p50_s"] == 2.0
    assert row(pg, "strong only")["latency_p50_s"] == 6.0
    assert pg.table.value != before


def test_concurrency_changes_the_makespan(pg):
    assert row(pg, "fast only")["makespan_s"] == 1.0
    pg.controls["concurrency"].value = 1
    assert row(pg, "fast only")["makespan_s"] == 12.0


def test_hedge_strategy_is_rebuilt_with_the_new_delay(pg):
    # strong answers in 3.0 s: a hedge after 2 s starts a copy, one after 5 s never does
    assert row(pg, "hedge strong")["attempts_per_request"] == 2.0
    html = pg.table.value
    pg.controls["hedge_after_s"].value = 5.0
    assert row(pg, "hedge strong")["attempts_per_request"] == 1.0
    assert row(pg, "hedge strong")["cancelled_attempts"] == 0
    assert pg.table.value != html


def test_fault_rates_fail_attempts(pg):
    assert (pg.summary["retries"] == 0).all()
    html = pg.table.value
    pg.controls["unavailable"].value = 0.5
    assert pg.host.profiles["fast"].faults.unavailable == 0.5
    assert (pg.summary["retries"] > 0).all()
    assert pg.table.value != html


def test_judge_error_rate_changes_the_cascade_only(pg):
    before = pg.summary.copy()
    pg.controls["judge_error_rate"].value = 0.5
    assert pg.host.judges["judge"].accuracy == 0.5
    after = pg.summary
    assert (
        row(pg, "cascade fast>strong")["mean_quality"]
        != (before.set_index("strategy").loc["cascade fast>strong", "mean_quality"])
    )
    others = [n for n in LINEUP if n != "cascade fast>strong"]
    columns = ["strategy", "success_rate", "mean_quality", "cost_usd", "latency_p50_s"]
    pdt.assert_frame_equal(
        before[before["strategy"].isin(others)][columns].reset_index(drop=True),
        after[after["strategy"].isin(others)][columns].reset_index(drop=True),
    )


def test_same_knobs_same_summary(pg):
    first = pg.summary.copy()
    pg.controls["concurrency"].value = 3
    assert not pg.summary.equals(first)
    pg.controls["concurrency"].value = 32
    pdt.assert_frame_equal(pg.summary, first)
    assert pg.runs == 3


def test_strategy_selection_reruns_only_the_chosen_ones(pg):
    pg.controls["strategies"].value = ("race fast|strong", "fast only")
    assert pg.summary["strategy"].tolist() == ["fast only", "race fast|strong"]
    runs = pg.runs
    pg.controls["strategies"].value = ()
    assert pg.runs == runs and "Select at least one strategy" in pg.status.value
    assert pg.summary["strategy"].tolist() == ["fast only", "race fast|strong"]


def test_in_a_notebook_the_plot_is_shown_as_a_png(pg, monkeypatch):
    assert pg.output.outputs == ()  # headless: nothing could show it
    monkeypatch.setattr(ui, "_in_notebook", lambda: True)
    pg.controls["plot"].value = "cost_quality"
    (shown,) = pg.output.outputs
    assert base64.b64decode(shown["data"]["image/png"]).startswith(b"\x89PNG")


def test_plot_choice_redraws_without_rerunning(pg):
    runs = pg.runs
    pg.controls["plot"].value = "latency_cdf"
    assert pg.runs == runs
    assert pg.figure.axes[0].get_xlabel() == "latency (s, log scale)"
    legend = [t.get_text() for t in pg.figure.axes[0].get_legend().get_texts()]
    # every strategy named once (curves that coincide share a line: "a = b (...)")
    named = [name for text in legend for name in text.split(" (")[0].split(" = ")]
    assert sorted(named) == sorted(LINEUP)
    assert all(text.split(" (")[1].startswith("100 % ok") for text in legend)
    pg.controls["plot"].value = "outcomes"
    assert len(pg.figure.axes) == 2


def test_colours_follow_the_lineup_not_the_selection(pg):
    from matplotlib.colors import to_hex

    from sykit._viz import strategy_colors

    pg.set(strategies=["hedge strong"], plot="latency_cdf")
    (line,) = [line for line in pg.figure.axes[0].lines if line.get_gid() == "cdf:hedge strong"]
    assert to_hex(line.get_color()) == strategy_colors(LINEUP)["hedge strong"]


def test_the_timeline_shows_the_chosen_strategy_without_rerunning(pg):
    assert pg.controls["timeline"].options == tuple(LINEUP)
    runs = pg.runs
    pg.controls["timeline"].value = "hedge strong"
    assert pg.runs == runs
    assert pg.figure.axes[0].get_title(loc="left").startswith("hedge strong · request")
    pg.set(strategies=["fast only"])  # the chosen one left out: the first that ran
    assert pg.figure.axes[0].get_title(loc="left").startswith("fast only · request")


def test_the_table_shows_the_change_since_the_previous_run(pg):
    assert pg.change is None and "(+" not in pg.table.value
    pg.controls["latency_scale"].value = 2.0
    change = pg.change.set_index("strategy")
    assert change.loc["fast only", "latency_p50_s"] == 1.0
    assert change.loc["fast only", "success_rate"] == 0.0
    assert '<small style="color:#b00020">(+1.00)</small>' in pg.table.value  # slower: worse
    assert "change since run 1" in pg.status.value
    pg.controls["latency_scale"].value = 1.0
    assert '<small style="color:#1b7f3b">(-1.00)</small>' in pg.table.value  # faster: better
    pg.set(strategies=["fast only", "race fast|strong"])
    pg.set(strategies=LINEUP)  # strategies that did not run last time: no change shown
    assert pg.change.set_index("strategy")["latency_p50_s"].isna().sum() == len(LINEUP) - 2


def test_only_plots_the_data_can_draw_are_offered_and_the_menu_says_why():
    ungraded = sy.SimHost(
        {
            "a": constant_profile(0.2, 10, 50.0, price_in=1.0, price_out=2.0),
            "b": constant_profile(0.5, 10, 50.0, price_in=3.0, price_out=6.0),
        }
    )
    lineup = {"a only": sy.strategies.single("a"), "b only": sy.strategies.single("b")}
    pg = widgets.playground(REQUESTS, ungraded, lineup, plot="cost_quality")
    menu = pg.controls["plot"]
    assert [key for _, key in menu.options] == ["latency_cdf", "outcomes", "timeline"]
    assert menu.value == "latency_cdf"
    assert pg.figure is not None and pg.figure.axes[0].get_xlabel().startswith("latency")
    assert pg.output.outputs == ()  # no error where the plot should be
    (why,) = re.findall(r"<br><small>(.*?)</small>", pg.status.value)
    assert why.startswith("cost vs quality is not offered: no strategy has graded answers")
    assert "\n" not in why and "Error" not in why


def test_with_grades_every_plot_is_offered(pg):
    assert [key for _, key in pg.controls["plot"].options] == list(widgets.PLOTS)
    assert "<br>" not in pg.status.value


class _Cells(HTMLParser):
    """The rows of an HTML table as (tag, text-align) per cell."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("th", "td"):
            style = dict(attrs).get("style") or ""
            align = re.search(r"text-align:\s*(\w+)", style)
            self.rows[-1].append((tag, align.group(1) if align else None))


def test_table_headers_share_their_columns_alignment(pg):
    cells = _Cells()
    cells.feed(pg.table.value)
    header, *body = cells.rows
    assert pg.table.value.count("<table") == 1
    assert [tag for tag, _ in header] == ["th"] * len(ui._TABLE_COLUMNS)
    assert [align for _, align in header] == ["left"] + ["right"] * (len(header) - 1)
    assert len(body) == len(LINEUP)
    for row in body:
        assert row == [("td", align) for _, align in header]


def test_playground_figures_are_drawn_large_enough_to_read(pg, monkeypatch):
    from matplotlib.text import Text
    from PIL import Image

    monkeypatch.setattr(ui, "_in_notebook", lambda: True)
    for plot in widgets.PLOTS:
        pg.controls["plot"].value = plot
        figure = pg.figure
        assert figure.dpi >= 110
        sizes = [t.get_fontsize() for t in figure.findobj(Text) if t.get_text() and t.get_visible()]
        assert min(sizes) * figure.dpi / 72 >= 10, plot
        (shown,) = pg.output.outputs
        png = Image.open(io.BytesIO(base64.b64decode(shown["data"]["image/png"])))
        assert png.info["dpi"] == pytest.approx((figure.dpi, figure.dpi), abs=0.5)


def test_every_control_has_a_tooltip(pg):
    for name, control in pg.controls.items():
        assert len(control.tooltip) > 20, name


def test_a_change_reruns_only_the_strategies_that_depend_on_it(pg):
    first = pg.comparison
    pg.controls["hedge_after_s"].value = 5.0
    assert pg.session.reused == len(LINEUP) - 1
    assert pg.comparison["fast only"] is first["fast only"]
    assert pg.comparison["hedge strong"] is not first["hedge strong"]
    pg.controls["concurrency"].value = 4
    assert pg.session.reused == len(LINEUP) - 1  # every strategy depends on the concurrency
    pg.controls["concurrency"].value = 32
    pg.controls["hedge_after_s"].value = 2.0
    assert pg.comparison["hedge strong"] is first["hedge strong"]  # kept from the first run


def test_set_changes_several_controls_with_one_run(pg):
    pg.set(concurrency=4, latency_scale=0.5)
    assert pg.runs == 2
    assert pg.knobs.concurrency == 4 and pg.knobs.latency_scale == 0.5
    with pytest.raises(TypeError, match=r"unknown control\(s\) \['speed'\]"):
        pg.set(speed=2)


def test_a_failing_run_is_shown_and_keeps_the_last_results(host):
    def picky(hedge_after_s):
        if hedge_after_s < 1:
            raise ValueError("hedging this early is not allowed")
        return sy.strategies.hedge("strong", after=hedge_after_s)

    pg = widgets.playground(
        REQUESTS[:4], host, {"fast": sy.strategies.single("fast"), "picky": picky}, plot="timeline"
    )
    summary = pg.summary
    pg.controls["hedge_after_s"].value = 0.5
    assert isinstance(pg.error, ValueError)
    assert "hedging this early is not allowed" in pg.status.value
    assert pg.summary is summary and pg.runs == 1
    pg.controls["hedge_after_s"].value = 1.5
    assert pg.error is None and pg.runs == 2


# -- arguments ------------------------------------------------------------------------------------


def test_strategies_are_algorithms_or_factories_of_named_knobs(host):
    async def fast(request, driver):
        return sy.route_to("fast", request)

    def everything(**knobs):
        assert set(knobs) == set(KNOBS)
        return fast

    pg = widgets.playground(REQUESTS[:2], host, {"plain": fast, "factory": everything})
    assert pg.summary["strategy"].tolist() == ["plain", "factory"]
    pg = widgets.playground(REQUESTS[:2], host, [sy.strategies.single("fast")], selected=[])
    assert pg.summary is None and pg.runs == 0
    with pytest.raises(
        TypeError,
        match=r"strategies\['bad'\] must be an async algorithm.*takes \['request', 'driver'\]",
    ):
        widgets.playground(REQUESTS, host, {"bad": lambda request, driver: None})
    with pytest.raises(TypeError, match=r"host must be a sy\.SimHost"):
        widgets.playground(REQUESTS, object())
    with pytest.raises(ValueError, match="plot must be one of"):
        widgets.playground(REQUESTS, host, plot="pie")
    with pytest.raises(ValueError, match=r"selected names unknown strategies \['nope'\]"):
        widgets.playground(REQUESTS, host, selected=["nope"])


def test_knobs_check_their_values():
    with pytest.raises(ValueError, match="concurrency must be an int ≥ 1"):
        Knobs(concurrency=0)
    with pytest.raises(ValueError, match="timeout must be a probability"):
        Knobs(timeout=1.5)
    with pytest.raises(ValueError, match="latency_scale must be > 0"):
        Knobs(latency_scale=0)
    with pytest.raises(TypeError, match=r"unknown knob\(s\) \['speed'\]"):
        Knobs().replace(speed=1)


# -- the host transformations ---------------------------------------------------------------------


def test_apply_knobs_scales_faults_latency_and_judge(profiles):
    faulty = profiles["fast"].replace(
        faults=sy.Faults(rate_limit=0.2, unavailable=0.1, spike_p=0.05),
        latency=sy.Latency(ttft=sy.dists.LogNormal(0.5, p95=2.0), tokens_per_s=100),
    )
    host = sy.SimHost({"fast": faulty})
    tweaked = apply_knobs(host, Knobs(fault_scale=2.0, timeout=0.1, latency_scale=3.0))
    profile = tweaked.profiles["fast"]
    assert profile.faults.rate_limit == pytest.approx(0.4)
    assert profile.faults.unavailable == pytest.approx(0.2)
    assert profile.faults.timeout == pytest.approx(0.1)
    assert profile.faults.spike_p == pytest.approx(0.1)
    assert profile.latency.ttft.median == pytest.approx(1.5)
    assert profile.latency.ttft.sigma == pytest.approx(faulty.latency.ttft.sigma)
    assert profile.latency.tokens_per_s.value == pytest.approx(100 / 3)
    assert profile.reject_delay_s.value == pytest.approx(0.15)
    assert tweaked.judges["fast"].accuracy == 0.9
    capped = apply_knobs(host, Knobs(fault_scale=10.0)).profiles["fast"].faults
    assert capped.rate_limit + capped.unavailable == pytest.approx(1.0)
    off = apply_knobs(host, Knobs(fault_scale=0.0)).profiles["fast"].faults
    assert (off.rate_limit, off.unavailable, off.spike_p) == (0.0, 0.0, 0.0)


def test_fault_scale_zero_turns_every_random_fault_off(profiles):
    from sykit._world.faults import RANDOM_FAULTS

    every = sy.Faults(
        **dict.fromkeys(RANDOM_FAULTS, 0.1), spike_p=0.3, stall_p=0.2, outages=[(5.0, 6.0)]
    )
    host = sy.SimHost({"fast": profiles["fast"].replace(faults=every)})
    off = apply_knobs(host, Knobs(fault_scale=0.0)).profiles["fast"].faults
    assert {
        name: getattr(off, name) for name in (*RANDOM_FAULTS, "spike_p", "stall_p")
    } == dict.fromkeys((*RANDOM_FAULTS, "spike_p", "stall_p"), 0.0)
    assert off.outages == ((5.0, 6.0),)  # scripted, not random
    scaled = apply_knobs(host, Knobs(fault_scale=1.1, timeout=0.05)).profiles["fast"].faults
    assert scaled.cut_stream == pytest.approx(0.11) and scaled.malformed == pytest.approx(0.11)
    assert scaled.timeout == pytest.approx(0.16)


def test_fault_scale_scales_non_chat_bodies_and_error_faults_too(profiles):
    faults = sy.Faults(
        rate_limit=0.1,
        non_chat=0.1,
        errors=[
            sy.faults.ErrorFault(401, 0.1, code="invalid_api_key"),
            sy.faults.ErrorFault(404, 0.05),
        ],
    )
    host = sy.SimHost({"fast": profiles["fast"].replace(faults=faults)})
    scaled = apply_knobs(host, Knobs(fault_scale=2.0)).profiles["fast"].faults
    assert scaled.non_chat == pytest.approx(0.2)
    assert [e.p for e in scaled.errors] == pytest.approx([0.2, 0.1])
    assert scaled.errors[0].code == "invalid_api_key"  # only the probability changes
    off = apply_knobs(host, Knobs(fault_scale=0.0)).profiles["fast"].faults
    assert off.non_chat == 0.0 and [e.p for e in off.errors] == [0.0, 0.0]
    # ×10 is 3.5 in all: scaled down to 1 together, the new kinds included.
    capped = apply_knobs(host, Knobs(fault_scale=10.0)).profiles["fast"].faults
    assert capped.random_total == pytest.approx(1.0)
    assert capped.non_chat == pytest.approx(1 / 3.5)
    assert [e.p for e in capped.errors] == pytest.approx([1 / 3.5, 0.5 / 3.5])


@pytest.mark.parametrize(
    "dist",
    [
        sy.dists.Constant(0.4),
        sy.dists.LogNormal(0.8, p95=2.5),
        sy.dists.Uniform(0.2, 0.6),
        sy.dists.Exponential(mean=0.5),
        sy.dists.Empirical([0.3, 0.4, 1.9]),
    ],
)
def test_scale_distribution_keeps_the_kind_and_scales_every_quantile(dist):
    scaled = scale_distribution(dist, 2.5)
    assert type(scaled) is type(dist)
    for u in (0.1, 0.5, 0.9):
        assert scaled.quantile(u) == pytest.approx(2.5 * dist.quantile(u))
    assert scaled.mean == pytest.approx(2.5 * dist.mean)
    assert scale_distribution(dist, 1) is dist


def test_scale_distribution_wraps_other_distributions_and_checks_the_factor():
    class Custom:
        def quantile(self, u):
            return u

        @property
        def mean(self):
            return 0.5

    scaled = scale_distribution(scale_distribution(Custom(), 2.0), 3.0)
    assert scaled.quantile(0.5) == 3.0 and scaled.mean == 3.0
    with pytest.raises(ValueError, match="factor must be a finite number > 0"):
        scale_distribution(sy.dists.Constant(1.0), 0)
    with pytest.raises(ValueError, match="factor"):
        scale_distribution(sy.dists.Constant(1.0), math.inf)
    with pytest.raises(TypeError, match="dist must be a distribution"):
        scale_distribution(1.0, 2.0)


# -- without widgets ------------------------------------------------------------------------------


def test_the_logic_and_the_plots_work_without_ipywidgets(host, monkeypatch):
    import sys

    from sykit._playground.figures import draw
    from sykit._playground.session import Session

    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # any import of it fails
    session = Session(REQUESTS, host, widgets.default_strategies(host), seed=0)
    session.run(Knobs(latency_scale=2.0), ["fast only", "hedge strong"])
    assert session.summary["strategy"].tolist() == ["fast only", "hedge strong"]
    assert session.host.profiles["fast"].latency.ttft.value == 1.0
    figure = draw("latency_cdf", session.comparison)
    assert figure.axes[0].get_xlabel() == "latency (s, log scale)"
    with pytest.raises(ImportError):
        widgets.playground(REQUESTS, host)
