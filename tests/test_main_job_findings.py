"""The sentences that lead each part of ``sykit compare`` follow the numbers they summarise."""

from __future__ import annotations

import math

import pandas as pd

from sykit._cli.prose import against_fault_free, robustness_finding, routing_finding
from sykit._cli.report import robustness_cells


def routing_summary(rows: list[tuple]) -> pd.DataFrame:
    """A summary frame with the columns the finding reads: strategy, realizable, mean quality and
    cost per 1,000 requests."""
    return pd.DataFrame(
        rows, columns=["strategy", "realizable", "mean_quality", "cost_per_1k_requests_usd"]
    )


BASE = ("strong only", True, 0.823, 7.55)


def test_the_routing_finding_names_the_deployable_strategy_with_most_quality_per_dollar():
    summary = routing_summary(
        [
            ("weak only", True, 0.69, 0.08),  # cheaper, but loses quality
            BASE,
            ("cascade (judge)", True, 0.843, 2.99),
            ("speculative (judge)", True, 0.830, 3.50),  # as good, less quality per dollar
            ("oracle", False, 0.90, 1.50),  # reads the ground truth: never the finding
            ("hedge strong @p95", True, 0.823, 7.98),  # as good, dearer
        ]
    )
    sentence = routing_finding(summary)
    assert "cascade (judge)" in sentence
    assert "0.843 vs 0.823 at $2.99 vs $7.55 per 1,000 requests (60% cheaper)" in sentence
    for other in ("oracle", "speculative", "weak only", "hedge"):
        assert other not in sentence


def test_the_routing_finding_follows_the_numbers_when_they_change():
    summary = routing_summary(
        [BASE, ("cascade (judge)", True, 0.843, 2.99), ("speculative (judge)", True, 0.86, 2.0)]
    )
    assert "speculative (judge) gives" in routing_finding(summary)


def test_the_routing_finding_names_every_strategy_of_a_tie():
    summary = routing_summary(
        [BASE, ("fallback", True, 0.85, 2.0), ("litellm-like", True, 0.85, 2.0)]
    )
    assert "fallback and litellm-like gives" in routing_finding(summary)


def test_the_routing_finding_leaves_out_strategies_without_graded_answers():
    summary = routing_summary([BASE, ("ungraded", True, math.nan, 1.0), ("cheap", True, 0.9, 3.0)])
    sentence = routing_finding(summary)
    assert "cheap gives" in sentence and "ungraded" not in sentence
    nan_base = routing_summary([("strong only", True, math.nan, 7.55), ("cheap", True, 0.9, 3.0)])
    assert routing_finding(nan_base).startswith("No finding: strong only has no graded answers")


def test_the_routing_finding_says_when_nothing_deployable_beats_strong_only():
    summary = routing_summary(
        [
            ("weak only", True, 0.69, 0.08),
            BASE,
            ("random", True, 0.75, 2.5),
            ("oracle", False, 0.95, 1.0),  # better, but not deployable
        ]
    )
    sentence = routing_finding(summary)
    assert sentence.startswith("Finding: no strategy you could deploy matches strong only's")
    assert "the best of the cheaper ones is random: quality 0.750 vs 0.823" in sentence
    dearer = routing_summary([BASE, ("hedge", True, 0.83, 9.0)])
    assert "no strategy you could deploy costs less than strong only" in routing_finding(dearer)


def test_the_routing_finding_gives_the_paired_interval_and_says_when_it_spans_zero():
    summary = routing_summary([BASE, ("cascade", True, 0.843, 2.99)]).assign(
        d_quality=[0.0, 0.02], d_quality_ci_low=[0.0, -0.01], d_quality_ci_high=[0.0, 0.05]
    )
    assert "paired quality difference +0.020, 95 % CI -0.010 to +0.050, within the noise" in (
        routing_finding(summary)
    )
    clear = summary.assign(d_quality_ci_low=[0.0, 0.01])
    assert "within the noise" not in routing_finding(clear)


def run_summary(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(
        rows,
        columns=[
            "strategy",
            "success_rate",
            "mean_quality",
            "cost_per_1k_requests_usd",
            "latency_p99_s",
        ],
    )


FAULT_FREE = run_summary(
    [
        ("weak only", 1.0, 0.70, 0.08, 30.0),
        ("fallback", 1.0, 0.70, 0.08, 30.0),
        ("strong only", 1.0, 0.82, 7.5, 60.0),
    ]
)


def test_the_robustness_finding_names_who_the_faults_cost_most_and_least():
    faulty = run_summary(
        [
            ("weak only", 0.95, 0.66, 0.07, 45.0),  # lost requests
            ("fallback", 1.0, 0.70, 0.50, 35.0),  # answered all, paid a little
            ("strong only", 1.0, 0.82, 7.9, 66.0),  # answered all, paid more
        ]
    )
    changed = against_fault_free(faulty, FAULT_FREE)
    assert changed["d_cost_per_1k_requests_usd_vs_fault_free"].round(2).tolist() == [
        -0.01,
        0.42,
        0.4,
    ]
    sentence = robustness_finding(changed, FAULT_FREE, "the faults and the outage")
    # the criterion is in the sentence, and the figures are the robustness table's cells
    assert sentence.startswith(
        "Finding: against its own fault-free run, ranked by the answered requests it lost and "
        "then by its quality, the faults and the outage cost most to weak only (95% answered, "
        "Δ quality -0.040) and least to fallback and strong only (100% answered, Δ quality +0.000)."
    )
    # cost and latency get their own ranking: the costliest is not hidden behind a tie-break
    assert (
        "The cost per 1,000 requests rose most for fallback (Δ $/1k +0.42) and least for weak "
        "only (Δ $/1k -0.01)." in sentence
    )
    assert (
        "The p99 latency rose most for weak only (Δ p99 +15.0 s) and least for fallback "
        "(Δ p99 +5.0 s)." in sentence
    )
    cells = robustness_cells(
        changed.assign(
            latency_p50_s=1.0, retries=0, fallbacks=0, attempts_per_request=1.0, wasted_share=0.0
        )
    )
    for figure in ("95%", "-0.040", "+0.42", "-0.01", "+15.0", "+5.0"):
        assert (cells == figure).any().any(), figure


def test_the_robustness_finding_handles_ties_and_missing_grades():
    faulty = run_summary(
        [
            ("weak only", 1.0, math.nan, 0.08, 30.0),  # no graded answer: left out
            ("fallback", 1.0, 0.70, 0.08, 30.0),
            ("strong only", 1.0, 0.82, 7.5, 60.0),
        ]
    )
    sentence = robustness_finding(against_fault_free(faulty, FAULT_FREE), FAULT_FREE)
    assert sentence.startswith(
        "Finding: the faults cost every strategy the same answered share and quality: fallback and"
    )
    assert "weak only" not in sentence
    ungraded = faulty.assign(mean_quality=math.nan)
    assert robustness_finding(against_fault_free(ungraded, FAULT_FREE), FAULT_FREE).startswith(
        "No finding"
    )
