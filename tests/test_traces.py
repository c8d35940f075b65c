"""Recorded traces as workloads: the shipped Azure trace, replaying and scaling arrivals, token
pairs kept together, and offered load next to latency."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from helpers import constant_profile
from pandas.testing import assert_frame_equal

import sykit as sy
from sykit._base.files import data_dir
from sykit._world.models import truth_of

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(autouse=True)
def agg_backend():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _host() -> sy.SimHost:
    """fast: 0.5 s to the first token at 100 tokens/s, so an answer of k tokens ends after
    0.5 + k/100 s; its window is 8,000 tokens. slow: 1.0 s + k/50 s, with 429s and 503s. No
    cooldown, so a request's course depends on the request alone (the bulk engine's case)."""
    return sy.SimHost(
        {
            "fast": constant_profile(
                0.5, 50, 100.0, price_in=1.0, price_out=2.0, quality=0.5, context_window=8_000
            ),
            "slow": constant_profile(
                1.0,
                100,
                50.0,
                price_in=10.0,
                price_out=30.0,
                quality=0.9,
                faults=sy.Faults(rate_limit=0.2, unavailable=0.1, retry_after_s=0.5),
            ),
        },
        policy=sy.HostPolicy(cooldown_s=0),
    )


# -- the shipped trace ---------------------------------------------------------------------------
def test_the_coding_trace_is_as_bursty_as_documented():
    trace = sy.datasets.azure_trace("code")
    assert len(trace) == 8_819
    assert round(trace.interarrival_cv(), 1) == 13.2
    assert int(trace.counts(1.0).max()) == 67
    assert round(trace.mean_rate_per_s, 1) == 2.6
    assert trace.start == pd.Timestamp("2023-11-16 18:17:03.979960")
    summary = trace.summary()
    assert summary["busiest_second"] == 67
    assert summary["input_tokens_p50"] == 1_469 and summary["output_tokens_p50"] == 13


def test_the_figures_come_from_the_shipped_file():
    """The loader's figures equal those computed straight from the CSV in datasets/traces/."""
    raw = pd.read_csv(data_dir() / "traces" / "AzureLLMInferenceTrace_code_2023.csv")
    stamps = pd.to_datetime(raw["TIMESTAMP"])
    seconds = (stamps - stamps.iloc[0]).dt.total_seconds().to_numpy()
    gaps = np.diff(seconds)
    trace = sy.datasets.azure_trace("code")
    assert trace.interarrival_cv() == pytest.approx(gaps.std() / gaps.mean(), rel=1e-12)
    assert np.bincount(np.floor(seconds).astype(int)).max() == 67
    np.testing.assert_array_equal(trace.input_tokens, raw["ContextTokens"].to_numpy())
    np.testing.assert_array_equal(trace.output_tokens, raw["GeneratedTokens"].to_numpy())
    assert (data_dir() / "traces" / "LICENSE-AzurePublicDataset-CC-BY-4.0.txt").is_file()
    assert "## `traces/" in (data_dir() / "PROVENANCE.md").read_text()


def test_the_conversation_trace_is_near_poisson():
    trace = sy.datasets.azure_trace("conv")
    assert len(trace) == 19_366
    assert round(trace.interarrival_cv(), 2) == 1.09
    assert round(trace.mean_rate_per_s, 1) == 5.5


def test_an_unknown_service_is_refused_with_the_names():
    with pytest.raises(sy.ArgumentError, match=r"unknown service 'chat'.*'code', 'conv'"):
        sy.datasets.azure_trace("chat")


# -- scaling and windows -------------------------------------------------------------------------
def test_doubling_the_rate_halves_every_time_and_gap_exactly():
    trace = sy.datasets.azure_trace("code")
    fast = trace.scaled(rate=2.0)
    np.testing.assert_array_equal(fast.times, trace.times / 2)
    np.testing.assert_array_equal(np.diff(fast.times), np.diff(trace.times) / 2)
    np.testing.assert_array_equal(fast.input_tokens, trace.input_tokens)
    np.testing.assert_array_equal(fast.output_tokens, trace.output_tokens)
    assert fast.interarrival_cv() == pytest.approx(trace.interarrival_cv(), rel=1e-12)
    assert fast.start is None  # the times no longer follow the wall clock


def test_a_target_mean_rate_scales_to_it():
    trace = sy.datasets.azure_trace("code").scaled(rate_per_s=10.0)
    assert trace.mean_rate_per_s == pytest.approx(10.0, rel=1e-12)
    with pytest.raises(sy.ArgumentError, match=r"one of rate= .* or rate_per_s="):
        trace.scaled(rate=2.0, rate_per_s=3.0)
    with pytest.raises(sy.ArgumentError, match="one of rate="):
        trace.scaled()
    with pytest.raises(sy.ArgumentError, match="rate must be > 0"):
        trace.scaled(rate=0.0)


def test_a_window_starts_at_zero_and_keeps_each_request_row():
    trace = sy.traffic.Trace(
        times=[0.0, 1.0, 2.5, 2.5, 4.0, 9.0],
        input_tokens=[10, 11, 12, 13, 14, 15],
        output_tokens=[20, 21, 22, 23, 24, 25],
        name="t",
    )
    part = trace.window(1.0, 3.0)
    assert part.times.tolist() == [0.0, 1.5, 1.5]
    assert part.rows.tolist() == [1, 2, 3]
    assert part.input_tokens.tolist() == [11, 12, 13]
    assert part.output_tokens.tolist() == [21, 22, 23]
    with pytest.raises(sy.ArgumentError, match=r"no arrivals in \[5, 6\) s"):
        trace.window(5.0, 1.0)
    assert trace.head(2).times.tolist() == [0.0, 1.0]


def test_a_window_of_a_timestamped_trace_moves_its_start():
    trace = sy.datasets.azure_trace("code")
    part = trace.window(30.0, 10.0)
    assert part.start == trace.start + pd.Timedelta(seconds=30)
    assert len(part) == 46


# -- runs on a trace -----------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["bulk", "kernel", "asyncio"])
def test_requests_are_admitted_at_the_trace_times(engine):
    trace = sy.datasets.azure_trace("code").window(0, 30)
    host = _host()
    res = sy.run(
        sy.strategies.single("fast"),
        trace.requests(models=host.profiles),
        host=host,
        arrivals=trace,
        engine=engine,
    )
    assert res.engine == engine
    assert len(res.requests) == len(trace) == 17
    assert res.requests["start_s"].tolist() == trace.times.tolist()
    assert res.requests["request_id"].tolist() == [f"azure-code/{r}" for r in trace.rows]


def test_a_faster_replay_admits_at_half_the_times():
    trace = sy.datasets.azure_trace("code").window(0, 30)
    fast = trace.scaled(rate=2.0)
    host = _host()
    res = sy.run(
        sy.strategies.single("fast"), fast.requests(models=("fast",)), host=host, arrivals=fast
    )
    assert res.requests["start_s"].tolist() == (trace.times / 2).tolist()


def test_a_datasets_prompts_take_the_trace_arrival_pattern():
    trace = sy.datasets.azure_trace("code").window(0, 30)
    ds = sy.datasets.synthetic(12, seed=3)
    host = _host()
    res = sy.run(sy.strategies.single("fast"), ds, host=host, arrivals=trace)
    assert res.requests["start_s"].tolist() == trace.times[:12].tolist()
    assert res.requests["request_id"].tolist() == [f"synthetic/3/{i}" for i in range(12)]
    listed = sy.run(sy.strategies.single("fast"), ds, host=host, arrivals=trace.arrivals_for(ds))
    assert_frame_equal(listed.requests, res.requests)
    with pytest.raises(sy.ArgumentError, match=r"has 17 arrivals for 40 requests.*head\(17\)"):
        sy.run(sy.strategies.single("fast"), sy.datasets.synthetic(40), host=host, arrivals=trace)


def test_each_arrival_keeps_its_recorded_pair_in_the_run():
    trace = sy.datasets.azure_trace("code").window(0, 30)
    host = _host()
    res = sy.run(
        sy.strategies.single("fast"),
        trace.requests(models=host.profiles),
        host=host,
        arrivals=trace,
    )
    attempts = res.attempts.set_index("request_id")
    ids = [f"azure-code/{r}" for r in trace.rows]
    assert attempts.loc[ids, "input_tokens"].tolist() == trace.input_tokens.tolist()
    assert attempts.loc[ids, "output_tokens"].tolist() == trace.output_tokens.tolist()
    # the answer took as long as the recorded length at the profile's speed
    expected = (0.5 + trace.output_tokens / 100.0).tolist()
    assert attempts.loc[ids, "latency_s"].tolist() == pytest.approx(expected, rel=1e-6)
    assert res.requests["trace_output_tokens"].tolist() == trace.output_tokens.tolist()
    assert res.requests["trace_row"].tolist() == trace.rows.tolist()


def test_without_models_the_profile_draws_the_answer_length():
    trace = sy.datasets.azure_trace("code").window(0, 30)
    host = _host()
    res = sy.run(sy.strategies.single("fast"), trace.requests(models=()), host=host, arrivals=trace)
    assert set(res.attempts["output_tokens"]) == {50}  # the constant profile's length
    assert res.attempts["input_tokens"].tolist() == trace.input_tokens.tolist()


def test_the_algorithm_never_sees_the_recorded_output():
    trace = sy.datasets.azure_trace("code").head(3)
    seen = []

    async def look(request, driver):
        seen.append((request.prompt, dict(request.metadata), request.input_tokens))
        return sy.route_to("fast", request)

    sy.run(look, trace.requests(models=("fast",)), host=_host(), arrivals=trace)
    assert seen == [
        (f"azure-code request {r}", {}, int(n))
        for r, n in zip(trace.rows, trace.input_tokens, strict=True)
    ]


def test_drawn_requests_take_whole_recorded_pairs():
    """Pairs where output = 3 × input: a draw of the two lengths apart would break that."""
    inputs = np.arange(1, 201)
    trace = sy.traffic.Trace(
        times=np.arange(200) * 0.5, input_tokens=inputs, output_tokens=3 * inputs
    )
    requests = trace.requests(models=("fast",), n=1_000, seed=7)
    assert len(requests) == 1_000
    res = sy.run(sy.strategies.single("fast"), requests, host=_host(), concurrency=50)
    frame = res.attempts.merge(res.requests[["request_id", "trace_row"]], on="request_id")
    assert (frame["output_tokens"] == 3 * frame["input_tokens"]).all()
    assert (frame["input_tokens"] == inputs[frame["trace_row"]]).all()
    assert frame["trace_row"].nunique() > 150  # drawn across the trace, not one pair repeated


def test_drawn_requests_are_the_same_for_the_same_seed():
    trace = sy.datasets.azure_trace("conv")

    def pairs(seed):
        return [
            (r.id, r.input_tokens, truth_of(r).columns["trace_row"])
            for r in trace.requests(models=("fast",), n=300, seed=seed)
        ]

    assert pairs(1) == pairs(1)
    assert [p[1:] for p in pairs(1)] != [p[1:] for p in pairs(2)]


def test_a_traced_run_is_the_same_for_the_same_seed():
    trace = sy.datasets.azure_trace("code").window(180, 20)
    host = _host()
    requests = trace.requests(models=host.profiles)
    chain = sy.strategies.fallback_chain(["slow", "fast"])
    first = sy.run(chain, requests, host=host, arrivals=trace, seed=4)
    again = sy.run(chain, trace.requests(models=host.profiles), host=host, arrivals=trace, seed=4)
    other = sy.run(chain, requests, host=host, arrivals=trace, seed=5)
    assert_frame_equal(first.attempts, again.attempts)
    assert_frame_equal(first.requests, again.requests)
    assert not first.attempts["status"].equals(other.attempts["status"])


@pytest.mark.parametrize(
    "strategy",
    [
        sy.strategies.fallback_chain(["slow", "fast"]),
        sy.strategies.weighted_random({"fast": 0.5, "slow": 0.5}),
    ],
)
def test_the_bulk_engine_gives_the_kernels_frames_on_a_trace(strategy):
    trace = sy.datasets.azure_trace("code").window(180, 20).scaled(rate=1.5)
    host = _host()
    requests = trace.requests(models=host.profiles)
    bulk = sy.run(strategy, requests, host=host, arrivals=trace, seed=2, engine="bulk")
    kernel = sy.run(strategy, requests, host=host, arrivals=trace, seed=2, engine="kernel")
    assert (bulk.engine, kernel.engine) == ("bulk", "kernel")
    assert len(bulk.requests) > 100
    assert_frame_equal(bulk.attempts, kernel.attempts)
    assert_frame_equal(bulk.requests, kernel.requests)


# -- your own frames -----------------------------------------------------------------------------
def test_a_frame_of_timestamps_becomes_seconds_since_the_first():
    frame = pd.DataFrame(
        {
            "ts": ["2024-01-01 00:00:01.5", "2024-01-01 00:00:02", "2024-01-01 00:00:04.25"],
            "prompt": [10, 20, 30],
            "completion": [1, 2, 3],
        }
    )
    trace = sy.traffic.Trace.from_frame(
        frame, time="ts", input_tokens="prompt", output_tokens="completion"
    )
    assert trace.times.tolist() == [0.0, 0.5, 2.75]
    assert trace.start == pd.Timestamp("2024-01-01 00:00:01.5")
    stamped = frame.assign(ts=pd.to_datetime(frame["ts"], format="ISO8601"))
    again = sy.traffic.Trace.from_frame(
        stamped, time="ts", input_tokens="prompt", output_tokens="completion"
    )
    assert again.times.tolist() == [0.0, 0.5, 2.75]
    durations = frame.assign(ts=pd.to_timedelta([3.0, 3.5, 5.75], unit="s"))
    assert sy.traffic.Trace.from_frame(
        durations, time="ts", input_tokens="prompt", output_tokens="completion"
    ).times.tolist() == [0.0, 0.5, 2.75]


def test_a_frame_of_seconds_keeps_them_as_recorded():
    frame = pd.DataFrame({"t": [2.0, 2.0, 3.5], "i": [5, 6, 7], "o": [1, 1, 2]})
    trace = sy.traffic.Trace.from_frame(
        frame, time="t", input_tokens="i", output_tokens="o", name="mine"
    )
    assert trace.times.tolist() == [2.0, 2.0, 3.5]
    assert trace.start is None
    assert trace.frame.columns.tolist() == ["row", "time_s", "input_tokens", "output_tokens"]
    text = frame.assign(t=["2", "2", "3.5"])
    assert sy.traffic.Trace.from_frame(
        text, time="t", input_tokens="i", output_tokens="o"
    ).times.tolist() == [2.0, 2.0, 3.5]


def test_a_frame_without_the_time_column_is_refused_with_its_columns():
    frame = pd.DataFrame({"when": [0.0], "i": [5], "o": [1]})
    with pytest.raises(
        sy.ArgumentError, match=r"time column 'ts' is not in the frame; columns are: when, i, o"
    ):
        sy.traffic.Trace.from_frame(frame, time="ts", input_tokens="i", output_tokens="o")
    with pytest.raises(sy.ArgumentTypeError, match="needs a pandas DataFrame"):
        sy.traffic.Trace.from_frame([1, 2], time="ts", input_tokens="i", output_tokens="o")


def test_negative_seconds_are_refused_with_the_fix():
    frame = pd.DataFrame({"t": [-1.0, 0.0], "i": [5, 6], "o": [1, 2]})
    with pytest.raises(sy.ArgumentError, match=r"must be ≥ 0; row 0 has -1\. Shift them"):
        sy.traffic.Trace.from_frame(frame, time="t", input_tokens="i", output_tokens="o")
    with pytest.raises(sy.ArgumentError, match=r"times must be ≥ 0 seconds"):
        sy.traffic.Trace(times=[-0.5], input_tokens=[1], output_tokens=[1])


def test_unsorted_times_are_refused_unless_sort_is_asked_for():
    frame = pd.DataFrame({"t": [0.0, 3.0, 1.0, 1.0], "i": [5, 6, 7, 8], "o": [50, 60, 70, 80]})
    with pytest.raises(
        sy.ArgumentError,
        match=r"must be in time order: row 2 \(1 s\) comes after row 1 \(3 s\); pass sort=True",
    ):
        sy.traffic.Trace.from_frame(frame, time="t", input_tokens="i", output_tokens="o")
    trace = sy.traffic.Trace.from_frame(
        frame, time="t", input_tokens="i", output_tokens="o", sort=True
    )
    assert trace.times.tolist() == [0.0, 1.0, 1.0, 3.0]
    assert trace.rows.tolist() == [0, 2, 3, 1]  # stable: equal times keep their order
    assert list(zip(trace.input_tokens, trace.output_tokens, strict=True)) == [
        (5, 50),
        (7, 70),
        (8, 80),
        (6, 60),
    ]
    with pytest.raises(sy.ArgumentError, match="times must be in time order"):
        sy.traffic.Trace(times=[1.0, 0.0], input_tokens=[1, 1], output_tokens=[1, 1])


def test_a_trace_built_from_arrays_is_checked():
    with pytest.raises(sy.ArgumentError, match="output_tokens has 1 values for 2 arrival times"):
        sy.traffic.Trace(times=[0.0, 1.0], input_tokens=[1, 1], output_tokens=[1])
    with pytest.raises(sy.ArgumentError, match=r"input_tokens\[1\] must be a whole number"):
        sy.traffic.Trace(times=[0.0, 1.0], input_tokens=[1, 1.5], output_tokens=[1, 1])
    with pytest.raises(sy.ArgumentError, match="rows must be distinct"):
        sy.traffic.Trace(times=[0.0, 1.0], input_tokens=[1, 1], output_tokens=[1, 1], rows=[4, 4])
    with pytest.raises(sy.ArgumentError, match="times is empty"):
        sy.traffic.Trace(times=[], input_tokens=[], output_tokens=[])
    trace = sy.traffic.Trace(times=[0.0, 1.0], input_tokens=[1, 2], output_tokens=[3, 4])
    with pytest.raises(ValueError, match="read-only"):
        trace.times[0] = 5.0


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (
            "i",
            "many",
            r"input_tokens column 'i' must hold whole numbers ≥ 0 in every row; row 1 has 'many'",
        ),
        (
            "o",
            None,
            r"output_tokens column 'o' must hold whole numbers ≥ 0 in every row; row 1 has",
        ),
        (
            "o",
            2.5,
            r"output_tokens column 'o' must hold whole numbers ≥ 0 in every row; row 1 has 2\.5",
        ),
        (
            "i",
            -3,
            r"input_tokens column 'i' must hold whole numbers ≥ 0 in every row; row 1 has -3",
        ),
        (
            "t",
            "soon",
            r"time column 't' must hold timestamps or seconds \(numbers\); row 1 has 'soon'",
        ),
        ("t", None, r"time column 't' is empty at row 1"),
    ],
)
def test_bad_cells_are_refused_naming_the_column_and_row(column, value, message):
    frame = pd.DataFrame({"t": ["0", "1", "2"], "i": [5, 6, 7], "o": [1, 2, 3]}, dtype=object)
    frame.loc[1, column] = value
    with pytest.raises(sy.ArgumentError, match=message):
        sy.traffic.Trace.from_frame(frame, time="t", input_tokens="i", output_tokens="o")


def test_arrivals_for_needs_a_count_or_sized_requests():
    trace = sy.traffic.Trace(times=[0.0, 1.0, 2.0], input_tokens=[1, 1, 1], output_tokens=[1, 1, 1])
    assert trace.arrivals_for(2) == [0.0, 1.0]
    assert trace.arrivals_for(["a", "b", "c"]) == [0.0, 1.0, 2.0]
    with pytest.raises(sy.ArgumentTypeError, match="number of requests or the requests"):
        trace.arrivals_for("ab")
    with pytest.raises(sy.ArgumentTypeError, match="models must be a list of model names"):
        trace.requests(models="fast")


# -- offered load next to latency ----------------------------------------------------------------
def _queued_run(seeds=None):
    """One slot (concurrency=1), answers of 50 tokens (1.0 s on "fast"); request 3 is longer
    than fast's 8,000-token window and fails at once."""
    trace = sy.traffic.Trace(
        times=[0.0, 0.5, 1.0, 2.5, 3.0, 7.0],
        input_tokens=[100, 100, 100, 100, 9_000, 100],
        output_tokens=[50] * 6,
        name="q",
    )
    host = _host()
    requests = trace.requests(models=("fast",))
    single = sy.strategies.single("fast")
    if seeds is None:
        return sy.run(single, requests, host=host, arrivals=trace, concurrency=1)
    return sy.compare(
        {"a": single, "b": single}, requests, host=host, arrivals=trace, concurrency=1, seeds=seeds
    )


def test_offered_load_bins_arrivals_and_latency_exactly():
    res = _queued_run()
    # admissions: 0 → 1.0, 0.5 waits to 1.0 → 2.0, 1.0 waits to 2.0 → 3.0, 2.5 waits to 3.0 → 4.0,
    # 3.0 waits to 4.0 and is refused (window) → failed, 7.0 → 8.0
    assert res.requests["start_s"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 7.0]
    assert res.requests["status"].tolist() == ["ok"] * 4 + ["failed", "ok"]
    table = sy.traffic.offered_load(res, bin_s=2.0)
    nan = float("nan")
    expected = pd.DataFrame(
        {
            "strategy": ["single(fast)"] * 4,
            "bin_start_s": [0.0, 2.0, 4.0, 6.0],
            "bin_end_s": [2.0, 4.0, 6.0, 8.0],
            "offered": [3, 2, 0, 1],
            "offered_per_s": [1.5, 1.0, 0.0, 0.5],
            "ok": [3, 1, 0, 1],
            "failed": [0, 1, 0, 0],
            "latency_p50_s": [1.0, 1.0, nan, 1.0],
            "latency_p99_s": [1.0, 1.0, nan, 1.0],
            # from arrival: the waits for the one slot count
            "response_p50_s": [1.5, 1.5, nan, 1.0],
            "response_p99_s": [float(np.quantile([1.0, 1.5, 2.0], 0.99)), 1.5, nan, 1.0],
        }
    )
    assert_frame_equal(table, expected, check_exact=True)


def test_offered_load_of_a_comparison_averages_its_seeds():
    cmp = _queued_run(seeds=[0, 1])
    table = sy.traffic.offered_load(cmp, bin_s=4.0, strategies=["b"])
    assert table["strategy"].unique().tolist() == ["b"]
    assert table["offered"].tolist() == [10, 2]  # both seeds' requests
    assert table["offered_per_s"].tolist() == [1.25, 0.25]  # per seed
    assert table["failed"].tolist() == [2, 0]
    assert sy.traffic.offered_load(cmp, 4.0)["strategy"].unique().tolist() == ["a", "b"]
    with pytest.raises(sy.ArgumentError, match=r"strategies \['c'\] are not in these results"):
        sy.traffic.offered_load(cmp, strategies=["c"])
    with pytest.raises(sy.ArgumentError, match="bin_s must be > 0"):
        sy.traffic.offered_load(cmp, bin_s=0)
    with pytest.raises(sy.ArgumentTypeError, match="Result, a Comparison or a requests DataFrame"):
        sy.traffic.offered_load(42)


def test_the_load_plot_draws_two_labelled_panels():
    cmp = _queued_run(seeds=[0])
    fig = sy.traffic.plot_load(cmp, bin_s=2.0)
    load_ax, latency_ax = fig.axes[:2]
    assert load_ax.get_ylabel() == "offered load (requests/s)"
    assert latency_ax.get_ylabel() == "latency from arrival (s)"
    assert latency_ax.get_xlabel() == "arrival time (s)"
    assert "per 2 s of arrivals" in load_ax.get_title(loc="left")
    (steps,) = load_ax.patches  # one offered-load line: both strategies had the same arrivals
    np.testing.assert_array_equal(steps.get_data().values, [1.5, 1.0, 0.0, 0.5])
    lines = latency_ax.get_lines()
    assert len(lines) == 4  # p99 and p50 per strategy
    np.testing.assert_array_equal(lines[0].get_xdata(), [1.0, 3.0, 5.0, 7.0])
    p99 = float(np.quantile([1.0, 1.5, 2.0], 0.99))
    np.testing.assert_array_equal(lines[0].get_ydata(), [p99, 1.5, np.nan, 1.0])
    np.testing.assert_array_equal(lines[1].get_ydata(), [1.5, 1.5, np.nan, 1.0])
    legend = [t.get_text() for t in latency_ax.get_legend().get_texts()]
    assert legend == ["a", "b", "p99", "p50"]
    fig.canvas.draw()


def test_the_plot_accessors_draw_the_load_plot():
    cmp = _queued_run(seeds=[0])
    fig = cmp.plot.load(2.0, strategies=["b"])
    latency_ax = fig.axes[1]
    assert len(latency_ax.get_lines()) == 2  # p99 and p50 of the one strategy asked for
    direct = sy.traffic.plot_load(cmp, 2.0, strategies=["b"]).axes[1].get_lines()
    for mine, theirs in zip(latency_ax.get_lines(), direct, strict=True):
        np.testing.assert_array_equal(mine.get_ydata(), theirs.get_ydata())
        assert mine.get_color() == theirs.get_color()
    res = cmp.results[0]
    one = res.plot.load(2.0, log=True)
    assert one.axes[1].get_yscale() == "log"
    with pytest.raises(sy.ArgumentError, match="not in this comparison"):
        cmp.plot.load(strategies=["z"])


def test_the_load_plot_takes_two_axes_or_refuses():
    import matplotlib.pyplot as plt

    res = _queued_run()
    fig, pair = plt.subplots(2, 1)
    assert sy.traffic.plot_load(res, 2.0, ax=pair, log=True, queue=False) is fig
    assert pair[1].get_yscale() == "log"
    assert pair[1].get_ylabel() == "latency (s)"
    np.testing.assert_array_equal(pair[1].get_lines()[0].get_ydata(), [1.0, 1.0, np.nan, 1.0])
    with pytest.raises(sy.ArgumentTypeError, match=r"two Axes \(load, latency\)"):
        sy.traffic.plot_load(res, ax=pair[0])


def test_the_traces_page_runs_as_written():
    """docs/traces.md is a walk-through: every block runs, and the figures it quotes are these."""
    namespace: dict = {}
    text = (DOCS / "traces.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    for block in blocks:
        exec(compile(block, "docs/traces.md", "exec"), namespace)
    code = sy.datasets.azure_trace("code").summary()
    conv = sy.datasets.azure_trace("conv").summary()

    def row(label, key, spec):
        values = [format(s[key], spec).replace("-", "−") for s in (code, conv)]
        return f"| {label} | {values[0]} | {values[1]} |"

    def tokens(label, kind):
        values = [f"{s[f'{kind}_p50']:,.0f} / {s[f'{kind}_p99']:,.0f}" for s in (code, conv)]
        return f"| {label} | {values[0]} | {values[1]} |"

    for line in (
        row("requests", "requests", ","),
        row("mean rate (requests/s)", "mean_rate_per_s", ".1f"),
        "| inter-arrival CV | 13.2 | 1.09 |",
        row("busiest second (requests)", "busiest_second", "d"),
        tokens("input tokens p50 / p99", "input_tokens"),
        tokens("output tokens p50 / p99", "output_tokens"),
        row("input–output correlation (Pearson)", "input_output_corr", ".2f"),
    ):
        assert line in text
    assert (round(code["interarrival_cv"], 1), round(conv["interarrival_cv"], 2)) == (13.2, 1.09)
    assert len(namespace["table"]) == 2 * 12 and namespace["fig"].axes[0].get_ylabel()
