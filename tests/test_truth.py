"""Ground truth reaches an algorithm only through sy.strategies.peek_truth, and strategies that use
it are flagged."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy

GRADES = pd.DataFrame(
    {
        "q": ["a", "b", "c", "d", "e", "f", "g", "h"],
        "weak_grade": [9, 2, 7, 1, 8, None, 5, 6],  # raw 1-10 grades a user divided by 10
        "strong_grade": [8, 9, 3, 9, 8, 6, 10, 10],
        "topic": ["x", "y", "x", "y", "x", "y", "x", "y"],
    }
)


@pytest.fixture
def graded():
    frame = GRADES.assign(weak=GRADES["weak_grade"] / 10, strong=GRADES["strong_grade"] / 10)
    return sy.datasets.from_frame(frame, prompt="q", quality={"weak": "weak", "strong": "strong"})


@pytest.fixture
def host():
    return sy.SimHost(
        {
            "weak": constant_profile(0.1, 10, 100, price_in=0.1, price_out=0.1),
            "strong": constant_profile(0.2, 10, 100, price_in=1.0, price_out=1.0),
        }
    )


def test_an_algorithm_reads_no_quality_from_responses_or_metadata(graded, host):
    seen: list[dict] = []

    async def snoop(request, driver):
        response = await driver.call_model(request, ["weak"])
        seen.append(
            {
                "response_quality": getattr(response, "quality", None),
                "metadata": dict(request.metadata),
                "fields": set(vars(response)) if hasattr(response, "__dict__") else set(),
            }
        )
        return sy.answered("weak", response)

    result = sy.run(snoop, graded, host=host)
    assert len(seen) == len(graded)
    assert all(s["response_quality"] is None and s["metadata"] == {} for s in seen)
    assert not any("quality" in s["fields"] for s in seen)
    # The grades still reach the results, and the unnamed columns reach the requests frame.
    assert result.requests["quality"].tolist()[:5] == [0.9, 0.2, 0.7, 0.1, 0.8]
    assert result.requests["weak_grade"].tolist()[:5] == [9, 2, 7, 1, 8]
    assert result.requests["topic"].tolist() == ["x", "y"] * 4
    assert not result.requests["reads_truth"].any()
    with pytest.warns(sy.errors.UngradedWarning, match="1 served answer has no grade"):
        assert bool(result.summary()["realizable"].iloc[0])


def test_metadata_cannot_name_a_ground_truth_column():
    frame = GRADES.assign(weak=GRADES["weak_grade"] / 10)
    with pytest.raises(sy.ArgumentError, match="quality or output_tokens column"):
        sy.datasets.from_frame(frame, prompt="q", quality={"weak": "weak"}, metadata=["weak"])


def test_truth_readers_are_flagged_and_the_rest_are_not(graded, host):
    score = sy.strategies.simulated_score("weak", "strong", noise=0.1)
    lineup = {
        "oracle": sy.strategies.oracle(["weak", "strong"]),
        "cheapest good": sy.strategies.cheapest_good_enough(["weak", "strong"]),
        "threshold": sy.strategies.threshold_router("weak", "strong", score=score, threshold=0.0),
        "weak": sy.strategies.single("weak"),
        "cascade": sy.strategies.cascade("weak", "strong", judge="weak"),
    }
    comparison = sy.compare(lineup, graded, host=host)
    flags = comparison.requests.groupby("strategy", observed=True)["reads_truth"].all()
    assert flags.to_dict() == {
        "oracle": True,
        "cheapest good": True,
        "threshold": True,
        "weak": False,
        "cascade": False,  # its simulated judge reads the truth inside the host, not the algorithm
    }
    with pytest.warns(sy.errors.UngradedWarning):
        summary = comparison.summary().set_index("strategy")
    assert summary["realizable"].to_dict() == {k: not v for k, v in flags.to_dict().items()}


def test_peek_truth_in_a_user_algorithm_flags_only_the_requests_that_peeked(graded, host):
    async def peeks_sometimes(request, driver):
        if request.id % 2 == 0:
            view = sy.strategies.peek_truth(driver)
            assert view.quality("strong") is not None
        return sy.route_to("weak", request)

    result = sy.run(peeks_sometimes, graded, host=host)
    assert result.requests["reads_truth"].tolist() == [True, False] * 4
    with pytest.warns(sy.errors.UngradedWarning):
        assert not bool(result.summary()["realizable"].iloc[0])


def test_peek_truth_needs_a_driver():
    with pytest.raises(sy.ArgumentTypeError, match="driver"):
        sy.strategies.peek_truth(object())


def test_the_oracle_serves_the_best_graded_answer_and_bounds_every_strategy(graded, host):
    lineup = {
        "oracle": sy.strategies.oracle(["weak", "strong"]),
        "cheapest good": sy.strategies.cheapest_good_enough(["weak", "strong"]),
        "weak": sy.strategies.single("weak"),
        "strong": sy.strategies.single("strong"),
        "race": sy.strategies.race(["weak", "strong"]),
        "random": sy.strategies.weighted_random(["weak", "strong"]),
    }
    comparison = sy.compare(lineup, graded, host=host)
    oracle = comparison["oracle"].requests
    # a: weak 0.9 > strong 0.8; c: weak 0.7 > 0.3; e: tie 0.8 → cheaper weak; f: weak ungraded
    assert oracle["served_model"].astype(str).tolist() == [
        "weak",
        "strong",
        "weak",
        "strong",
        "weak",
        "strong",
        "strong",
        "strong",
    ]
    best_grades = [0.9, 0.9, 0.7, 0.9, 0.8, 0.6, 1.0, 1.0]
    assert oracle["quality"].tolist() == pytest.approx(best_grades)
    # Per request, no strategy earns more than the oracle (where both are graded).
    requests = comparison.requests
    best = requests[requests["strategy"] == "oracle"].set_index("request_id")["quality"]
    for name in lineup:
        mine = requests[requests["strategy"] == name].set_index("request_id")["quality"]
        both = mine.notna() & best.notna()
        assert (mine[both] <= best[both] + 1e-12).all(), name
    # The old rule (cheapest answer graded ≥ 0.5) is beaten by strong-only on this table.
    with pytest.warns(sy.errors.UngradedWarning):
        summary = comparison.summary().set_index("strategy")["mean_quality"]
    assert summary["cheapest good"] < summary["strong"] <= summary["oracle"]
    assert math.isclose(summary["oracle"], sum(best_grades) / 8)
