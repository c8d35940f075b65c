"""What summary figures mean: failed answers count 0, ungraded ones are left out and counted, and
intervals resample requests (not seed × request rows)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy
from sykit import strategies as st
from sykit._results.metrics import UngradedWarning, paired_differences

# Two models graded on eight prompts; three cells are empty (ungraded answers).
TABLE = pd.DataFrame(
    {
        "q": [f"prompt {i}" for i in range(8)],
        "weak": [0.9, 0.2, None, 0.1, 0.8, None, 0.5, 0.6],
        "strong": [0.8, 0.9, 0.3, 0.9, None, 0.6, 1.0, 1.0],
    }
)


@pytest.fixture
def table():
    return sy.datasets.from_frame(TABLE, prompt="q", quality={"weak": "weak", "strong": "strong"})


def make_host(**weak_overrides):
    return sy.SimHost(
        {
            "weak": constant_profile(0.1, 10, 100, price_in=0.1, price_out=0.1, **weak_overrides),
            "strong": constant_profile(0.2, 10, 100, price_in=1.0, price_out=1.0),
        }
    )


def summary_quietly(result, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UngradedWarning)
        return result.summary(**kwargs)


# -- a missing grade is missing, not zero ---------------------------------------------------------


@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
def test_a_single_model_reproduces_the_tables_mean_over_graded_prompts(table, seeds):
    cmp = sy.compare(
        {"weak": st.single("weak"), "strong": st.single("strong")},
        table,
        host=make_host(),
        seeds=seeds,
    )
    summary = summary_quietly(cmp).set_index("strategy")
    for model in ("weak", "strong"):
        assert summary.loc[model, "mean_quality"] == pytest.approx(TABLE[model].mean(), abs=1e-15)
        assert summary.loc[model, "n_ungraded"] == TABLE[model].isna().sum() * len(seeds)
        assert summary.loc[model, "requests"] == len(TABLE)
        assert summary.loc[model, "seeds"] == len(seeds)
        assert summary.loc[model, "success_rate"] == 1.0


def test_ungraded_answers_warn_once_pointing_at_the_caller(table):
    cmp = sy.compare(
        {"weak": st.single("weak"), "strong": st.single("strong")}, table, host=make_host()
    )
    with pytest.warns(UngradedWarning) as caught:
        cmp.summary(baseline="weak")
    assert len(caught) == 1
    assert caught[0].filename == __file__
    message = str(caught[0].message)
    assert "3 served answers have no grade" in message
    assert "'weak': 2" in message and "'strong': 1" in message
    assert "leave them out" in message
    with pytest.warns(UngradedWarning) as caught:
        cmp["weak"].summary()
    assert len(caught) == 1 and caught[0].filename == __file__
    assert issubclass(UngradedWarning, UserWarning)


def test_a_fully_graded_run_does_not_warn():
    graded = sy.datasets.from_frame(
        TABLE.fillna(0.5), prompt="q", quality={"weak": "weak", "strong": "strong"}
    )
    result = sy.run(st.single("strong"), graded, host=make_host())
    with warnings.catch_warnings():
        warnings.simplefilter("error", UngradedWarning)
        summary = result.summary()
    assert summary["n_ungraded"].tolist() == [0]


def test_paired_differences_leave_ungraded_answers_out(table):
    cmp = sy.compare(
        {"weak": st.single("weak"), "strong": st.single("strong")}, table, host=make_host()
    )
    paired = cmp.paired("weak").set_index("strategy")
    both = TABLE.dropna()
    assert paired.loc["strong", "n_requests_quality"] == len(both) == 5
    assert paired.loc["strong", "d_quality"] == pytest.approx(
        (both["strong"] - both["weak"]).mean()
    )
    assert paired.loc["strong", "seeds"] == 1
    assert paired.loc["strong", "n_requests_cost_usd"] == len(TABLE)


def test_failed_requests_count_as_zero_and_an_all_failed_run_has_quality_zero(table):
    host = make_host(faults=sy.Faults(invalid=1.0))
    failed = sy.run(st.single("weak"), table, host=host)
    assert (failed.requests["status"] == "failed").all()
    summary = failed.summary().iloc[0]
    assert summary["mean_quality"] == 0.0
    assert summary["n_ungraded"] == 0


def test_failures_count_zero_next_to_graded_answers(table):
    async def fail_odd(request, driver):
        if request.id % 2:
            raise RuntimeError("no answer")
        return sy.route_to("strong", request)

    result = sy.run(fail_odd, table, host=make_host())
    assert result.requests["status"].tolist() == ["ok", "failed"] * 4
    quality = TABLE["strong"].where(TABLE.index % 2 == 0, 0.0)  # failed = 0, NaN stays out
    with pytest.warns(UngradedWarning, match="1 served answer has no grade"):
        summary = result.summary().iloc[0]
    assert summary["mean_quality"] == pytest.approx(quality.mean())
    assert summary["n_ungraded"] == 1  # prompt 4: served by strong, which has no grade for it


def test_without_any_ground_truth_quality_is_nan_and_nothing_warns():
    host = sy.SimHost({"m": constant_profile(0.1, 10, 100, faults=sy.Faults(invalid=0.3))})
    result = sy.run(st.single("m"), [sy.Request(f"q{i}") for i in range(40)], host=host)
    assert 0 < (result.requests["status"] == "failed").sum() < 40  # failures alone make no mean
    with warnings.catch_warnings():
        warnings.simplefilter("error", UngradedWarning)
        summary = result.summary().iloc[0]
    assert math.isnan(summary["mean_quality"])
    assert math.isnan(summary["quality_ci_low"]) and math.isnan(summary["quality_ci_high"])
    assert summary["n_ungraded"] == (result.requests["status"] == "ok").sum()


# -- intervals resample requests ------------------------------------------------------------------


def test_the_interval_does_not_shrink_with_seeds_when_each_request_scores_the_same():
    grades = np.random.default_rng(5).uniform(size=120).round(2)
    graded = sy.datasets.from_frame(
        pd.DataFrame({"q": [f"q{i}" for i in range(120)], "weak": grades, "strong": grades}),
        prompt="q",
        quality={"weak": "weak", "strong": "strong"},
    )
    widths = {}
    for n in (1, 3, 10):
        summary = sy.compare({"weak": st.single("weak")}, graded, host=make_host(), seeds=range(n))
        row = summary.summary().iloc[0]
        assert row["requests"] == 120 and row["seeds"] == n
        assert row["mean_quality"] == pytest.approx(grades.mean())
        widths[n] = row["quality_ci_high"] - row["quality_ci_low"]
    assert widths[1] > 0
    assert widths[3] == pytest.approx(widths[1], rel=0.05)
    assert widths[10] == pytest.approx(widths[1], rel=0.05)


def test_seed_noise_does_not_narrow_the_interval_below_the_request_spread():
    rng = np.random.default_rng(11)
    frame = _paired_frame(rng, n_requests=80, n_seeds=10, mean=0.2, request_sd=1.0, seed_sd=0.5)
    paired = paired_differences(frame, "base", metrics=("quality",)).set_index("strategy")
    row = paired.loc["new"]
    assert row["n_requests_quality"] == 80 and row["seeds"] == 10
    # sd of a request's mean ≈ sqrt(1 + 0.5² / 10); 95% width ≈ 2 · 1.96 · that / sqrt(80)
    expected = 2 * 1.96 * math.sqrt(1 + 0.25 / 10) / math.sqrt(80)
    assert row["d_quality_ci_high"] - row["d_quality_ci_low"] == pytest.approx(expected, rel=0.2)


def _paired_frame(
    rng: np.random.Generator,
    *,
    n_requests: int,
    n_seeds: int,
    mean: float,
    request_sd: float,
    seed_sd: float,
) -> pd.DataFrame:
    """Requests frames of a baseline and a strategy whose per-request difference is
    ``mean + request effect + seed noise``: the population mean difference is ``mean``."""
    effect = rng.normal(mean, request_sd, size=n_requests)
    base = rng.uniform(size=n_requests)
    seeds = np.repeat(np.arange(n_seeds), n_requests)
    ids = np.tile(np.arange(n_requests), n_seeds)
    new = base[ids] + effect[ids] + rng.normal(0.0, seed_sd, size=len(ids))

    def rows(strategy: str, quality: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "strategy": strategy,
                "request_id": ids,
                "seed": seeds,
                "status": "ok",
                "quality": quality,
                "latency_s": 1.0,
                "cost_usd": 0.0,
            }
        )

    return pd.concat([rows("base", base[ids]), rows("new", new)], ignore_index=True)


def test_the_paired_interval_covers_a_known_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    repetitions, truth = 200, 0.1
    covered = 0
    for _ in range(repetitions):
        frame = _paired_frame(
            rng, n_requests=100, n_seeds=3, mean=truth, request_sd=0.5, seed_sd=0.3
        )
        row = paired_differences(frame, "base", metrics=("quality",)).iloc[1]
        covered += row["d_quality_ci_low"] <= truth <= row["d_quality_ci_high"]
    coverage = covered / repetitions
    assert 0.92 <= coverage <= 0.98, coverage


# -- the statistics page --------------------------------------------------------------------------


def test_the_statistics_page_defines_every_summary_column_and_is_linked():
    from pathlib import Path

    from sykit._results.metrics import FALLBACK_REASONS, SUMMARY_COLUMNS

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "statistics.md").read_text()
    reasons = {f"fallbacks_{reason}" for reason in FALLBACK_REASONS}
    missing = [c for c in SUMMARY_COLUMNS if c not in reasons and f"`{c}`" not in page]
    assert missing == []
    assert "(docs/statistics.md)" in (root / "README.md").read_text()
    assert "(statistics.md)" in (root / "docs" / "guide.md").read_text()
