"""How a task's strong and weak trials are coupled when the outcome model draws its quadrant from
two pass rates: independently by default (SAFE s·w, RESCUE s(1 − w), LOSS (1 − s)w, HARD
(1 − s)(1 − w)), with one draw for both only when asked (``coupling="comonotone"``). The draws
stay keyed by (seed, task), so every strategy of a comparison sees the same ones."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st
from sykit._base.rng import uniforms
from sykit.sessions import (
    TaskOutcomes,
    pair_tasks,
    quadrant_of,
    quadrant_probabilities,
    session_frame,
    taubench_airline,
)

TIERS = {"strong": "strong", "weak": "weak"}
PROFILE = sy.ModelProfile(output_tokens=50, price_in=1.0, price_out=1.0)
HOST = sy.SimHost({"strong": PROFILE, "weak": PROFILE})
TURNS = 3

#: (strong_p, weak_p) pairs where the two couplings differ, and the edges where they agree.
PAIRS = [(0.7, 0.2), (0.5, 0.5), (0.25, 0.75), (0.9, 0.6), (0.42, 0.42), (1.0, 0.3), (0.0, 0.8)]


def _independent(s: float, w: float) -> dict[str, float]:
    """The four chances of two independent draws, written out here rather than read from the
    code under test."""
    return {
        "SAFE": s * w,
        "RESCUE": s * (1 - w),
        "LOSS": (1 - s) * w,
        "HARD": (1 - s) * (1 - w),
    }


def _shares(outcomes: TaskOutcomes, task: str, seeds: range) -> dict[str, float]:
    drawn = pd.Series([outcomes.task_quadrant(task, "SAFE", seed) for seed in seeds])
    counts = drawn.value_counts()
    return {q: counts.get(q, 0) / len(seeds) for q in ("SAFE", "RESCUE", "LOSS", "HARD")}


def _within(shares: dict[str, float], chances: dict[str, float], n: int, where: str) -> None:
    """Each share within 4 binomial standard errors of its chance (exact where the chance is 0
    or 1: such a quadrant is never, or always, drawn)."""
    for quadrant, p in chances.items():
        se = math.sqrt(p * (1 - p) / n)
        assert abs(shares[quadrant] - p) <= 4 * se + 1e-12, (where, quadrant, shares, chances)


# --- the formula ------------------------------------------------------------------------------


@pytest.mark.parametrize(("s", "w"), PAIRS)
def test_quadrant_chances_are_products_of_the_two_pass_rates(s, w):
    chances = quadrant_probabilities(s, w)
    assert chances == pytest.approx(_independent(s, w), abs=1e-15)
    assert list(chances) == ["SAFE", "RESCUE", "LOSS", "HARD"]
    assert sum(chances.values()) == pytest.approx(1.0)
    assert quadrant_probabilities(s, w, coupling="independent") == chances


def test_equal_pass_rates_still_disagree_and_the_comonotone_bound_stays_reachable():
    assert quadrant_probabilities(0.5, 0.5) == {
        "SAFE": 0.25,
        "RESCUE": 0.25,
        "LOSS": 0.25,
        "HARD": 0.25,
    }
    assert quadrant_probabilities(0.5, 0.5, coupling="comonotone") == {
        "SAFE": 0.5,
        "RESCUE": 0.0,
        "LOSS": 0.0,
        "HARD": 0.5,
    }
    assert quadrant_probabilities(0.7, 0.2, coupling="comonotone") == pytest.approx(
        {"SAFE": 0.2, "RESCUE": 0.5, "LOSS": 0.0, "HARD": 0.3}
    )
    # comonotone is the most agreement the rates allow: never more RESCUE + LOSS than independent
    for s, w in PAIRS:
        both = quadrant_probabilities(s, w, coupling="comonotone")
        apart = quadrant_probabilities(s, w)
        assert both["RESCUE"] + both["LOSS"] <= apart["RESCUE"] + apart["LOSS"] + 1e-15
        # and each model's own rate is the same under both couplings
        for chances in (both, apart):
            assert chances["SAFE"] + chances["RESCUE"] == pytest.approx(s)
            assert chances["SAFE"] + chances["LOSS"] == pytest.approx(w)


# --- the draws --------------------------------------------------------------------------------


def test_drawn_quadrants_match_the_independent_formula_over_seeds():
    probabilities = {f"t{i}": pair for i, pair in enumerate(PAIRS)}
    outcomes = TaskOutcomes(TIERS, probabilities=probabilities)
    seeds = range(4000)  # fixed seeds: the draws are keyed, so this cannot flake
    for task, (s, w) in probabilities.items():
        _within(_shares(outcomes, task, seeds), _independent(s, w), len(seeds), task)


def test_the_strong_and_weak_draws_of_a_task_are_independent():
    outcomes = TaskOutcomes(TIERS, probabilities={"t": (0.5, 0.5)})
    seeds = range(4000)
    shares = _shares(outcomes, "t", seeds)
    # one draw for both would make RESCUE and LOSS impossible here; two draws make each ~25 %
    _within(shares, dict.fromkeys(("SAFE", "RESCUE", "LOSS", "HARD"), 0.25), len(seeds), "t")
    # the draw is two keyed uniforms of one key: [0] decides the strong model, [1] the weak one
    for seed in range(50):
        u = uniforms(seed, "session-task-draw", "t")
        assert outcomes.task_quadrant("t", "HARD", seed) == quadrant_of(u[0] < 0.5, u[1] < 0.5)


def test_comonotone_keeps_the_one_draw_for_both_models():
    probabilities = {"a": (0.7, 0.2), "b": (0.5, 0.5)}
    outcomes = TaskOutcomes(TIERS, probabilities=probabilities, coupling="comonotone")
    assert outcomes.coupling == "comonotone"
    for seed in range(200):
        for task, (s, w) in probabilities.items():
            u = uniforms(seed, "session-task-draw", task)[0]
            assert outcomes.task_quadrant(task, "SAFE", seed) == quadrant_of(u < s, u < w)
    seeds = range(4000)
    for task, (s, w) in probabilities.items():
        chances = quadrant_probabilities(s, w, coupling="comonotone")
        _within(_shares(outcomes, task, seeds), chances, len(seeds), task)


def test_the_strong_side_draws_the_same_under_either_coupling():
    """Serving only the strong model decides a task by the strong draw alone, which the coupling
    leaves as it was: only the weak side's draw moves."""
    probabilities = {f"t{i}": pair for i, pair in enumerate(PAIRS)}
    apart = TaskOutcomes(TIERS, probabilities=probabilities)
    both = TaskOutcomes(TIERS, probabilities=probabilities, coupling="comonotone")
    for task in probabilities:
        for seed in range(100):
            assert apart.success(task, "SAFE", ["strong"] * 2, 2, seed) == both.success(
                task, "SAFE", ["strong"] * 2, 2, seed
            )


# --- common random numbers --------------------------------------------------------------------


def _trials_pair() -> pd.DataFrame:
    """The tau-bench trials as a strong side (all 4 trials) and a weak side (the first 2): two
    pass rates per task, equal on many tasks."""
    trials = taubench_airline()
    weak = trials[trials["trial"] < 2].assign(model="weak")
    return pair_tasks(
        pd.concat([trials.assign(model="strong"), weak]), "strong", "weak", trial="trial"
    )


def _sessions(tasks: pd.DataFrame) -> list[sy.sessions.Session]:
    return [
        sy.sessions.Session(
            [
                sy.Request(
                    f"{task} turn {k}",
                    input_tokens=100,
                    metadata={"task_id": task, "quadrant": label, "planned_turns": TURNS},
                )
                for k in range(TURNS)
            ],
            id=task,
        )
        for task, label in zip(tasks["instance_id"], tasks["quadrant"].astype(str), strict=True)
    ]


def _success(lineup: dict, tasks: pd.DataFrame, outcomes: TaskOutcomes) -> pd.DataFrame:
    cmp = sy.compare(lineup, _sessions(tasks), host=HOST, seeds=[0, 1, 2, 3], progress=False)
    frame = session_frame(cmp, outcomes=outcomes)
    return frame.pivot_table(index=["seed", "session_id"], columns="strategy", values="success")


def test_strategies_of_one_comparison_and_calls_with_one_seed_see_the_same_draws():
    tasks = _trials_pair()
    outcomes = TaskOutcomes.for_tasks(tasks)
    lineup = {"strong": st.single("strong"), "weak": st.single("weak")}
    success = _success(lineup, tasks, outcomes)
    p = tasks.set_index("instance_id")[["strong_p", "weak_p"]]
    for (seed, task), row in success.iterrows():
        u = uniforms(seed, "session-task-draw", task)
        assert row["strong"] == float(u[0] < p.loc[task, "strong_p"])
        assert row["weak"] == float(u[1] < p.loc[task, "weak_p"])
        # the two strategies' results are the one quadrant drawn for (seed, task)
        drawn = outcomes.task_quadrant(task, "SAFE", seed)
        assert quadrant_of(bool(row["strong"]), bool(row["weak"])) == drawn
    # another call with the same seeds, the lineup reversed and a third strategy added, draws
    # the same: the draws depend on the seed and the task, never on the strategy or the call
    again = _success(
        {
            "half": st.weighted_random({"strong": 0.5, "weak": 0.5}),
            "weak": st.single("weak"),
            "strong": st.single("strong"),
        },
        tasks,
        TaskOutcomes.for_tasks(tasks),
    )
    pd.testing.assert_frame_equal(again[["strong", "weak"]], success[["strong", "weak"]])
    # tasks both sides resolve equally often still split in some seeds: independent draws
    same = p.index[p["strong_p"] == p["weak_p"]]
    mixed = same[(p.loc[same, "strong_p"] > 0) & (p.loc[same, "strong_p"] < 1)]
    at = success.index.get_level_values("session_id").isin(mixed)
    assert len(mixed) > 0
    assert (success.loc[at, "strong"] != success.loc[at, "weak"]).any()
    assert outcomes.coupling == "independent"  # the default


# --- the argument -----------------------------------------------------------------------------


def test_coupling_is_checked_and_carried_by_for_tasks():
    message = r"coupling must be one of 'independent', 'comonotone', got 'positive'"
    with pytest.raises(sy.ArgumentError, match=message):
        TaskOutcomes(TIERS, coupling="positive")
    with pytest.raises(sy.ArgumentError, match=message):
        quadrant_probabilities(0.5, 0.5, coupling="positive")
    with pytest.raises(sy.ArgumentError, match=message):
        TaskOutcomes.for_tasks(_trials_pair(), coupling="positive")
    with pytest.raises(sy.ArgumentError, match=r"coupling must be one of .*, got None"):
        TaskOutcomes(TIERS, coupling=None)  # type: ignore[arg-type]
    assert TaskOutcomes(TIERS).coupling == "independent"
    assert TaskOutcomes.for_tasks(_trials_pair(), coupling="comonotone").coupling == "comonotone"
    assert TaskOutcomes(TIERS) != TaskOutcomes(TIERS, coupling="comonotone")
