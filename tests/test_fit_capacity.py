"""A capacity fitted from closed loops recovers the server's own: its slots, its rate-sharing rule,
its queue limit. Over HTTP against the fake server (real time, within a stated tolerance), and on
a simulated host (virtual time, exactly)."""

from __future__ import annotations

import os

import pandas as pd
import pytest

import sykit as sy
from sykit.testing import FakeModel, FakeProvider

os.environ["SYKIT_PROGRESS"] = "0"

NO_RETRY = sy.HostPolicy(max_retries=0, cooldown_s=0)
#: Over HTTP each measured rate factor is within this of the server's: timer and scheduling noise
#: of a few milliseconds on answers of 60-120 ms (on an idle machine it is within 0.03).
FACTOR_TOLERANCE = 0.15


def sim_host(capacity: sy.Capacity) -> sy.SimHost:
    """A model that answers 50 tokens in 0.5 s after 0.1 s, alone."""
    profile = sy.ModelProfile(
        latency=sy.Latency(ttft=0.1, tokens_per_s=100), output_tokens=50, capacity=capacity
    )
    return sy.SimHost({"m": profile}, policy=NO_RETRY)


# -- over HTTP, in real time -----------------------------------------------------------------------


def test_the_fake_servers_slots_and_sharing_rule_are_recovered_over_http():
    truth = sy.Capacity(slots=3, slowdown=2)  # full rate up to 2 sequences, then 2/n each
    model = FakeModel(ttft_s=0.02, tokens_per_s=500, output_tokens=30, capacity=truth)
    with FakeProvider({"m": model}) as fake:
        host = sy.HttpHost(fake.base_url, models=["m"], policy=NO_RETRY, timeout_s=10)
        fitted = sy.profiles.fit_capacity(host, "m", levels=(1, 2, 4, 8), max_tokens=30)
        fake.wait_idle()
        served = fake.requests
    capacity = fitted.capacity
    assert (capacity.slots, fitted.slots_measured) == (3, True)  # no level has 3: from the waits
    for n in range(1, 4):
        assert abs(capacity.factor(n) - truth.factor(n)) <= FACTOR_TOLERANCE, (n, capacity)
    assert fitted.k == pytest.approx(2.0, abs=0.3)
    assert fitted.k_capacity == sy.Capacity(slots=3, slowdown=fitted.k)
    assert capacity.queue_limit is None
    table = fitted.measurements.set_index("level")
    assert table["queueing"].tolist() == [False, False, True, True]
    assert table["tokens_per_s"][1] == pytest.approx(500, rel=0.1)
    assert (table["errors"] == 0).all()
    # the server's own record of the waits: none below the slots, most requests above them
    assert len(served) == 1 + 8 + 8 + 16 + 32  # a warm-up request, then each level
    waits = [r.queue_s for r in sorted(served, key=lambda r: r.index)]
    assert all(w is not None for w in waits)
    assert max(waits[:17]) < 0.001  # the warm-up, levels 1 and 2
    assert sum(w > 0.001 for w in waits[17:]) >= 30  # after the first 3, nearly every one waits
    # the fitted profile reproduces the measured waits in simulation
    assert fitted.profile is not None and fitted.profile.capacity == capacity
    assert table["sim_ttft_s"][8] == pytest.approx(table["ttft_s"][8], rel=0.3)


def test_the_fake_server_re_times_a_stream_when_another_ends():
    """Two streams share one sequence's rate (250 tokens/s): the short one (10 tokens) ends at
    80 ms; the long one (40 tokens) has 10 by then and does its last 30 at the full rate, ending
    at 200 ms, not the 320 ms of a rate held from its start."""
    capacity = sy.Capacity(slots=2, slowdown=1)
    model = FakeModel(ttft_s=0.005, tokens_per_s=250, output_tokens=100, capacity=capacity)
    requests = [
        sy.Request("short", id="short", max_output_tokens=10, metadata={"stream": True}),
        sy.Request("long", id="long", max_output_tokens=40, metadata={"stream": True}),
    ]
    with FakeProvider({"m": model}) as fake:
        host = sy.HttpHost(fake.base_url, models=["m"], policy=NO_RETRY)
        result = sy.run(sy.strategies.single("m"), requests, host=host, concurrency=2)
    decode = (result.attempts["latency_s"] - result.attempts["ttft_s"]).to_numpy()
    by_id = dict(zip(result.attempts["request_id"], decode, strict=True))
    assert 0.075 <= by_id["short"] <= 0.12, by_id
    assert 0.19 <= by_id["long"] <= 0.26, by_id


def test_the_fake_server_queues_in_order_and_refuses_when_its_queue_is_full():
    capacity = sy.Capacity(slots=1, queue_limit=1, reject_status=429)
    model = FakeModel(ttft_s=0.01, tokens_per_s=1000, output_tokens=50, capacity=capacity)
    with FakeProvider({"m": model}) as fake:
        host = sy.HttpHost(fake.base_url, models=["m"], policy=NO_RETRY, stream=True)
        result = sy.run(sy.strategies.single("m"), ["a", "b", "c"], host=host, concurrency=3)
        fake.wait_idle()
        served = sorted(fake.requests, key=lambda r: r.started_at)
    attempts = result.attempts
    assert sorted(attempts["status"]) == ["error", "ok", "ok"]
    refused = attempts[attempts["status"] == "error"].iloc[0]
    assert (refused["http_status"], refused["error_kind"]) == (429, "rate_limit")
    assert "overloaded" in refused["error_message"]
    assert [r.fault for r in served].count("overloaded") == 1
    waits = sorted(r.queue_s for r in served if r.queue_s is not None)
    assert waits[0] < 0.01 and waits[1] >= 0.04  # the second waited for the first's 60 ms


def test_a_fake_model_refuses_a_capacity_it_cannot_serve():
    with pytest.raises(sy.ArgumentError, match=r"queue_timeout_s.*timeout_s"):
        FakeModel(capacity=sy.Capacity(slots=2, queue_timeout_s=1.0))
    with pytest.raises(sy.ArgumentTypeError, match=r"capacity must be a sy\.Capacity"):
        FakeModel(capacity=4)  # type: ignore[arg-type]  # the wrong type on purpose


# -- on a simulated host, exactly ------------------------------------------------------------------


def test_a_simulated_servers_capacity_is_recovered_exactly():
    fitted = sy.profiles.fit_capacity(
        sim_host(sy.Capacity(slots=3, slowdown=2)), "m", levels=(1, 2, 4, 8)
    )
    assert fitted.capacity == sy.Capacity(slots=3, slowdown=[(1, 1.0), (2, 1.0), (3, 0.6667)])
    assert (fitted.k, fitted.k_error) == (2.0, pytest.approx(0.0, abs=1e-4))
    table = fitted.measurements
    assert table["level"].tolist() == [1, 2, 4, 8]
    assert table["requests"].tolist() == [8, 8, 16, 32]  # 4 × n, at least 8
    assert table["tokens_per_s"].tolist() == pytest.approx([100, 100, 66.667, 66.667], rel=1e-4)
    assert table["slots_implied"].tolist() == pytest.approx([1, 2, 3, 3])
    assert table["queueing"].tolist() == [False, False, True, True]
    assert table["fitted_factor"].tolist() == pytest.approx([1, 1, 0.6667, 0.6667])
    assert table["sim_ttft_s"].tolist() == pytest.approx(table["ttft_s"].tolist(), rel=1e-3)
    assert set(fitted.attempts["level"]) == {1, 2, 4, 8}
    again = sy.profiles.fit_capacity(
        sim_host(sy.Capacity(slots=3, slowdown=2)), "m", levels=(1, 2, 4, 8)
    )
    pd.testing.assert_frame_equal(again.measurements, table)


def test_an_earlier_fits_attempts_are_fitted_again_without_measuring():
    fitted = sy.profiles.fit_capacity(
        sim_host(sy.Capacity(slots=3, slowdown=2)), "m", levels=(1, 2, 4, 8)
    )
    again = sy.profiles.fit_capacity(fitted.attempts)  # at the frame's levels
    assert again.capacity == fitted.capacity
    pd.testing.assert_frame_equal(again.measurements, fitted.measurements)
    fewer = sy.profiles.fit_capacity(fitted.attempts, "m", levels=(1, 2, 4))
    assert (fewer.capacity.slots, fewer.slots_measured) == (3, True)


def test_refusals_give_the_queue_limit():
    """Two slots and one place in the queue: a closed loop of 3 fills them, one of 4 is refused."""
    capacity = sy.Capacity(slots=2, queue_limit=1)
    fitted = sy.profiles.fit_capacity(sim_host(capacity), "m", levels=(1, 2, 3, 4, 6))
    assert fitted.capacity == capacity.replace(slowdown=[(1, 1.0), (2, 0.5)])
    assert fitted.k == 1.0
    refused = fitted.measurements.set_index("level")["refused"]
    assert (refused[[1, 2, 3]] == 0).all() and (refused[[4, 6]] > 0).all()
    assert "queue limit: 1 (requests refused with 503 from 4 concurrent requests" in fitted.text()


def test_a_curve_no_k_fits_keeps_its_points():
    curve = [(1, 1.0), (2, 1.0), (4, 1.0), (6, 0.3)]  # flat, then a cliff
    fitted = sy.profiles.fit_capacity(
        sim_host(sy.Capacity(slots=6, slowdown=curve)), "m", levels=(1, 2, 4, 8)
    )
    assert fitted.capacity == sy.Capacity(slots=6, slowdown=curve)
    assert fitted.k_capacity is None and fitted.k_error > 0.1
    assert "the measured points (the best k" in fitted.text()


def test_without_queueing_the_slots_are_a_lower_bound():
    fitted = sy.profiles.fit_capacity(
        sim_host(sy.Capacity(slots=32, slowdown=2)), "m", levels=(1, 2, 4)
    )
    assert (fitted.capacity.slots, fitted.slots_measured) == (4, False)
    assert fitted.capacity.factors() == pytest.approx((1.0, 1.0, 0.75, 0.5))
    assert "slots: at least 4 (no level queued" in str(fitted)


def test_the_report_and_the_plot_show_measured_against_fitted():
    import matplotlib

    matplotlib.use("Agg")
    fitted = sy.profiles.fit_capacity(
        sim_host(sy.Capacity(slots=3, slowdown=2)), "m", levels=(1, 2, 4, 8)
    )
    text = fitted.text()
    assert "level  in_flight  ttft_s  sim_ttft_s  tokens/s/seq  factor  fitted  queueing" in text
    assert "slots: 3 (the time to first token grows from 4 concurrent requests" in text
    assert "slowdown: k = 2 fits" in text
    figure = fitted.plot()
    rate_ax, ttft_ax = figure.axes
    labels = [line.get_label() for line in rate_ax.get_lines()]
    assert labels == ["measured", "fitted points", "k = 2"]
    assert [line.get_label() for line in ttft_ax.get_lines()][:2] == [
        "measured",
        "simulated (fitted)",
    ]
    with pytest.raises(sy.ArgumentError, match="two matplotlib Axes"):
        fitted.plot(ax=rate_ax)


def test_bad_input_is_refused_with_the_fix():
    host = sim_host(sy.Capacity(slots=2))
    with pytest.raises(sy.ArgumentError, match="levels must include 1"):
        sy.profiles.fit_capacity(host, "m", levels=(2, 4))
    with pytest.raises(sy.ArgumentError, match="at least the highest level"):
        sy.profiles.fit_capacity(host, "m", levels=(1, 8), requests_per_level=4)
    with pytest.raises(sy.UnknownModel):
        sy.profiles.fit_capacity(host, "nope")
    with pytest.raises(sy.ArgumentTypeError, match="a host"):
        sy.profiles.fit_capacity("http://localhost:8000/v1", "m")
    with pytest.raises(sy.ArgumentError, match="columns"):
        sy.profiles.fit_capacity(pd.DataFrame({"model": ["m"]}))
    with pytest.raises(sy.ArgumentError, match="max_tokens"):
        sy.profiles.fit_capacity(host, "m", max_tokens=1)
