"""Profiles fitted from measurements reproduce what was measured: a simulated run with fitted
profiles has the measured p50 and p95 within 10%."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit._fitting.profile import compare_quantiles, fit
from sykit._hosts.http import HttpHost
from sykit.testing import FakeModel, FakeProvider

os.environ["SYKIT_PROGRESS"] = "0"

PRICES = sy.ModelProfile(price_in=0.15, price_out=0.6, vision=True, context_window=8000)


def simulate(profiles, model, n=3000, **kwargs):
    host = sy.SimHost(profiles)
    return sy.run(sy.strategies.single(model), [f"q{i}" for i in range(n)], host=host, **kwargs)


def measured_table(seed=0, n=400) -> pd.DataFrame:
    """Latencies as a load test would log them: a heavy-tailed ttft, jittery tokens/s, varied lengths."""
    rng = np.random.default_rng(seed)
    ttft = rng.lognormal(math.log(0.4), 0.5, n)
    tps = rng.lognormal(math.log(80), 0.2, n)
    out = rng.lognormal(math.log(150), 0.4, n).round()
    return pd.DataFrame(
        {
            "model": "m",
            "ttft_s": ttft,
            "tokens_per_s": tps,
            "output_tokens": out,
            "latency_s": ttft + out / tps,
        }
    )


def test_a_table_of_measured_latencies_is_reproduced_within_ten_percent():
    table = measured_table()
    profiles = fit(table[["model", "ttft_s", "tokens_per_s", "output_tokens"]], base=PRICES)
    profile = profiles["m"]
    assert (profile.price_in, profile.vision, profile.context_window) == (0.15, True, 8000)
    sim = simulate(profiles, "m")
    table = table.assign(status="ok", kind="model")
    for column in ("ttft_s", "latency_s"):
        check = compare_quantiles(table, sim, column=column)
        assert check["quantile"].tolist() == [0.5, 0.95]
        assert (check["rel_error"].abs() < 0.10).all(), check


def test_a_csv_path_and_empirical_distributions_work_too(tmp_path):
    path = tmp_path / "latencies.csv"
    measured_table(seed=1).drop(columns=["tokens_per_s"]).to_csv(path, index=False)
    profiles = fit(path, ttft="empirical", tokens_per_s="empirical", output_tokens="empirical")
    assert isinstance(profiles["m"].latency.ttft, sy.dists.Empirical)
    sim = simulate(profiles, "m")
    check = compare_quantiles(path, sim, quantiles=np.linspace(0.05, 0.95, 19))
    assert len(check) == 19
    assert (check["rel_error"].abs() < 0.10).all(), check


def test_an_http_run_against_the_fault_server_is_reproduced_in_simulation():
    models = {
        "jittery": FakeModel(
            ttft_s=sy.dists.LogNormal(0.03, p95=0.08),
            tokens_per_s=4000,
            output_tokens=sy.dists.Uniform(8, 16),
        )
    }
    with FakeProvider(models) as fake:
        host = HttpHost(
            fake.base_url,
            models={"jittery": PRICES},
            stream=True,
            policy=sy.HostPolicy(cooldown_s=0, timeout_s=5),
        )
        requests = [f"q{i}" for i in range(100)]
        measured = sy.run(sy.strategies.single("jittery"), requests, host=host, concurrency=10)
    profiles = fit(measured.attempts, base=host)
    assert profiles["jittery"].price_out == 0.6
    sim = simulate(profiles, "jittery")
    for column in ("ttft_s", "latency_s"):
        check = compare_quantiles(measured, sim, column=column)
        assert (check["rel_error"].abs() < 0.10).all(), check


def test_failure_rates_by_kind_come_from_error_rows():
    n_ok, frame = 90, []
    frame += [{"status": "ok", "ttft_s": 0.2, "latency_s": 1.2, "output_tokens": 100}] * n_ok
    frame += [
        {"status": "error", "error_kind": "rate_limit", "http_status": 429, "latency_s": 0.01}
    ] * 5
    frame += [
        {"status": "error", "error_kind": "unavailable", "http_status": 502, "latency_s": 0.03}
    ] * 3
    frame += [{"status": "error", "error_kind": "timeout", "latency_s": 30.0}] * 2
    frame += [{"status": "cancelled", "latency_s": 0.1}] * 50  # neither success nor failure
    frame += [{"status": "error", "error_kind": "capability", "http_status": 400}] * 7
    data = pd.DataFrame(frame).assign(model="m", kind="model")
    base = PRICES.replace(faults=sy.Faults(retry_after_s=3.0, outages=[(10, 20)]))
    profile = fit(data, base={"m": base})["m"]
    faults = profile.faults
    answered = n_ok + 5 + 3 + 2 + 7
    assert faults.rate_limit == pytest.approx(5 / answered)
    assert faults.unavailable == pytest.approx(3 / answered)
    assert faults.timeout == pytest.approx(2 / answered)
    assert faults.unavailable_status == 502
    assert (faults.retry_after_s, faults.outages) == (3.0, ((10.0, 20.0),))  # kept from base
    assert profile.latency.ttft == sy.dists.Constant(0.2)
    assert profile.latency.tokens_per_s == sy.dists.Constant(100.0)
    assert profile.output_tokens == sy.dists.Constant(100.0)
    assert 0.01 <= profile.reject_delay_s.quantile(0.5) <= 0.03
    kept = fit(data, base=base, faults=False)["m"]
    assert kept.faults == base.faults


def test_the_bases_other_random_faults_are_measured_not_added():
    """A base whose faults a fit would otherwise count twice: its ErrorFault(503) and resets
    show in the data as unavailable attempts, its non-chat bodies as invalid_response."""
    frame = [{"status": "ok", "ttft_s": 0.2, "latency_s": 1.2, "output_tokens": 100}] * 50
    frame += [{"status": "error", "error_kind": "unavailable", "http_status": 503}] * 40
    frame += [{"status": "error", "error_kind": "invalid_response", "http_status": 200}] * 10
    data = pd.DataFrame(frame).assign(model="m", kind="model", latency_s=0.5)
    base = PRICES.replace(
        faults=sy.Faults(
            errors=[sy.faults.ErrorFault(503, 0.4)], reset=0.1, cut_stream=0.05, non_chat=0.1
        )
    )
    faults = fit(data, base=base)["m"].faults  # adding them up would pass 1 and be refused
    assert (faults.unavailable, faults.malformed) == (pytest.approx(0.4), pytest.approx(0.1))
    assert (faults.errors, faults.reset, faults.cut_stream, faults.non_chat) == ((), 0, 0, 0)


def test_non_streamed_runs_fit_the_whole_latency():
    rng = np.random.default_rng(3)
    latency = rng.lognormal(math.log(0.8), 0.3, 300)
    data = pd.DataFrame({"model": "m", "latency_s": latency, "output_tokens": 50})
    profiles = fit(data)
    sim = simulate(profiles, "m")
    check = compare_quantiles(data, sim, column="latency_s")
    assert (check["rel_error"].abs() < 0.10).all(), check


def test_decisions_and_too_few_samples():
    data = pd.DataFrame(
        {
            "model": ["m", "m", "m", "j"],
            "kind": ["model", "model", "decision", "decision"],
            "status": "ok",
            "ttft_s": [0.5, 0.7, 0.01, 0.02],
            "latency_s": [1.0, 1.2, 0.05, 0.05],
            "output_tokens": [100, 100, 5, 5],
        }
    )
    with pytest.warns(UserWarning) as warned:
        profiles = fit(data, base=PRICES)
    assert [str(w.message)[:25] for w in warned] == [
        "fit: 'm' has 2 successful",
        "fit: 'j' has 1 successful",
    ]
    assert profiles["m"].latency == PRICES.latency
    profiles = fit(data, min_samples=1)
    assert profiles["m"].latency.ttft.quantile(0.5) == pytest.approx(0.6)  # decisions left out
    assert profiles["j"].latency.ttft == sy.dists.Constant(
        0.02
    )  # a judge fitted from its decisions


def test_bad_inputs_name_themselves():
    with pytest.raises(ValueError, match="'model' column"):
        fit(pd.DataFrame({"ttft_s": [0.1]}))
    with pytest.raises(ValueError, match="measured timings"):
        fit(pd.DataFrame({"model": ["m"]}))
    with pytest.raises(TypeError, match="data must be a DataFrame"):
        fit(42)
    with pytest.raises(ValueError, match="ttft must be 'lognormal' or 'empirical'"):
        fit(measured_table(), ttft="gamma")
    with pytest.raises(TypeError, match="base must be"):
        fit(measured_table(), base=3)
    with pytest.raises(ValueError, match="min_samples"):
        fit(measured_table(), min_samples=0)
    table = measured_table()
    with pytest.raises(ValueError, match="no column 'nope'"):
        compare_quantiles(table, table, column="nope")
    with pytest.raises(ValueError, match="quantiles"):
        compare_quantiles(table, table, quantiles=[2])
    overall = compare_quantiles(table, table, by=None)
    assert overall["rel_error"].tolist() == [0.0, 0.0] and "model" not in overall
