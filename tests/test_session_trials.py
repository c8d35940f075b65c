"""Per-task success probabilities from repeated trials: the tau-bench trials become probabilities,
the outcome model draws each task's quadrant per seed from them (the same draws for every strategy
of a run), and session intervals resample tasks, so trials of one task are not counted as
independent evidence."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st
from sykit._base.files import data_dir
from sykit._base.rng import uniforms
from sykit._results.metrics import bootstrap_mean_ci
from sykit.sessions import (
    TaskOutcomes,
    pair_tasks,
    quadrant_probabilities,
    session_frame,
    session_summary,
    taubench_airline,
)
from sykit.sessions._clustered import clustered_mean_cis, task_clusters

PROFILE = sy.ModelProfile(output_tokens=50, price_in=1.0, price_out=1.0)
HOST = sy.SimHost({"strong": PROFILE, "weak": PROFILE})
TURNS = 3


def _self_pair() -> pd.DataFrame:
    """The tau-bench trials paired with a copy of themselves: two equally good models."""
    trials = taubench_airline()
    both = pd.concat([trials, trials.assign(model="gpt-4o-b")])
    return pair_tasks(both, "gpt-4o", "gpt-4o-b", trial="trial")


def _sessions(rows: list[tuple[str, str, str]]) -> list[sy.sessions.Session]:
    """One short session per (session id, task id, quadrant label)."""
    return [
        sy.sessions.Session(
            [
                sy.Request(
                    f"{session} turn {k}",
                    input_tokens=100,
                    metadata={"task_id": task, "quadrant": quadrant, "planned_turns": TURNS},
                )
                for k in range(TURNS)
            ],
            id=session,
        )
        for session, task, quadrant in rows
    ]


# --- the trials and their probabilities -----------------------------------------------------------


def test_the_tau_bench_trials_ship_as_50_tasks_by_4_trials():
    trials = taubench_airline()
    assert len(trials) == 200 and trials["task_id"].nunique() == 50
    assert (trials.groupby("task_id")["trial"].apply(sorted) == [[0, 1, 2, 3]] * 50).all()
    assert (trials["model"] == "gpt-4o").all()
    assert trials["resolved"].tolist() == (trials["reward"] == 1.0).tolist()
    assert int(trials["resolved"].sum()) == 84
    trials.loc[0, "model"] = "changed"  # a copy: the shipped table is untouched
    assert (taubench_airline()["model"] == "gpt-4o").all()


def test_trials_become_a_success_probability_per_task_and_model():
    tasks = _self_pair()
    raw = taubench_airline().groupby("task_id")["resolved"].mean()
    assert tasks["instance_id"].tolist() == [str(t) for t in range(50)]
    assert tasks["strong_p"].tolist() == raw.tolist() == tasks["weak_p"].tolist()
    assert (tasks["strong_trials"] == 4).all() and (tasks["weak_trials"] == 4).all()
    assert tasks["strong_p"].mean() == 0.42
    # the label is the majority of trials: 2 of 4 is not a majority
    assert tasks["strong_resolved"].tolist() == (raw > 0.5).tolist()
    assert set(tasks["quadrant"].astype(str)) == {"SAFE", "HARD"}


def test_trial_counts_may_differ_and_a_trial_twice_is_an_error():
    trials = taubench_airline()
    single = trials[trials["trial"] == 0].assign(model="one-run")
    tasks = pair_tasks(pd.concat([trials, single]), "gpt-4o", "one-run", trial="trial")
    assert (tasks["weak_trials"] == 1).all() and set(tasks["weak_p"]) == {0.0, 1.0}
    twice = pd.concat([trials, trials.iloc[[5]]])
    with pytest.raises(sy.ArgumentError, match=r"task 5 trial 0 more than once"):
        pair_tasks(pd.concat([twice, single]), "gpt-4o", "one-run", trial="trial")


def test_quadrant_probabilities_draw_the_models_apart_unless_told_comonotone():
    assert quadrant_probabilities(0.7, 0.2) == pytest.approx(
        {"SAFE": 0.14, "RESCUE": 0.56, "LOSS": 0.06, "HARD": 0.24}
    )
    assert quadrant_probabilities(0.25, 0.75) == pytest.approx(
        {"SAFE": 0.1875, "RESCUE": 0.0625, "LOSS": 0.5625, "HARD": 0.1875}
    )
    assert quadrant_probabilities(0.5, 0.5) == {
        "SAFE": 0.25,
        "RESCUE": 0.25,
        "LOSS": 0.25,
        "HARD": 0.25,
    }
    # one draw for both models: as much agreement as the two rates allow
    assert quadrant_probabilities(0.7, 0.2, coupling="comonotone") == pytest.approx(
        {"SAFE": 0.2, "RESCUE": 0.5, "LOSS": 0.0, "HARD": 0.3}
    )
    assert quadrant_probabilities(0.25, 0.75, coupling="comonotone") == pytest.approx(
        {"SAFE": 0.25, "RESCUE": 0.0, "LOSS": 0.5, "HARD": 0.25}
    )
    assert quadrant_probabilities(0.5, 0.5, coupling="comonotone") == {
        "SAFE": 0.5,
        "RESCUE": 0.0,
        "LOSS": 0.0,
        "HARD": 0.5,
    }
    with pytest.raises(sy.ArgumentError, match=re.escape("weak_p must be in [0, 1], got 1.5")):
        quadrant_probabilities(0.5, 1.5)


# --- the outcome model draws per seed -------------------------------------------------------------


def test_the_drawn_quadrant_follows_the_probabilities():
    outcomes = TaskOutcomes({"strong": "strong", "weak": "weak"}, probabilities={"t": (0.7, 0.2)})
    n = 4000
    drawn = pd.Series([outcomes.task_quadrant("t", "HARD", seed) for seed in range(n)])
    shares = drawn.value_counts(normalize=True)
    for quadrant, p in quadrant_probabilities(0.7, 0.2).items():
        se = math.sqrt(max(p * (1 - p), 1e-12) / n)
        assert abs(shares.get(quadrant, 0.0) - p) <= 4 * se, quadrant
    # the draws are keyed uniforms, [0] for the strong model and [1] for the weak one: a model
    # resolves the task iff its uniform is below its probability
    for seed in range(20):
        u = uniforms(seed, "session-task-draw", "t")
        expected = sy.sessions.quadrant_of(u[0] < 0.7, u[1] < 0.2)
        assert outcomes.task_quadrant("t", "SAFE", seed) == expected


def test_draws_depend_on_seed_and_task_only():
    outcomes = TaskOutcomes(
        {"strong": "strong", "weak": "weak"}, probabilities={"a": (0.5, 0.5), "b": (0.5, 0.5)}
    )
    first = [outcomes.task_quadrant("a", "SAFE", s) for s in range(30)]
    outcomes.task_quadrant("b", "SAFE", 3)  # other calls in between change nothing
    assert [outcomes.task_quadrant("a", "HARD", s) for s in range(30)] == first
    assert len(set(first)) == 4  # each model its own draw, moving with the seed
    other = [outcomes.task_quadrant("b", "SAFE", s) for s in range(30)]
    assert other != first


def test_success_uses_the_drawn_quadrant_not_the_label():
    outcomes = TaskOutcomes({"s": "strong", "w": "weak"}, probabilities={"t": (1.0, 0.0)})
    # always RESCUE, whatever label the session carries
    assert outcomes.success("t", "HARD", ["s", "s"], 2, seed=0)
    assert not outcomes.success("t", "SAFE", ["w", "w"], 2, seed=0)
    with pytest.raises(sy.ArgumentError, match=r"task 'u' has no success probabilities"):
        outcomes.success("u", "SAFE", ["s"], 1, seed=0)
    with pytest.raises(sy.ArgumentError, match=r"unknown quadrant 'EASY'"):
        outcomes.success("t", "EASY", ["s"], 1, seed=0)


def test_bad_probabilities_are_clear_errors():
    tiers = {"s": "strong", "w": "weak"}
    with pytest.raises(sy.ArgumentTypeError, match=r"probabilities must map task ids"):
        TaskOutcomes(tiers, probabilities=[(0.5, 0.5)])
    with pytest.raises(sy.ArgumentError, match=r"must be a pair \(strong_p, weak_p\), got 3"):
        TaskOutcomes(tiers, probabilities={"t": (0.1, 0.2, 0.3)})
    with pytest.raises(
        sy.ArgumentError, match=re.escape("probabilities['t'] weak_p must be in [0, 1], got 1.2")
    ):
        TaskOutcomes(tiers, probabilities={"t": (0.1, 1.2)})
    with pytest.raises(sy.ArgumentTypeError, match=r"must be a pair"):
        TaskOutcomes(tiers, probabilities={"t": 0.5})
    tasks = _self_pair().drop(columns="weak_p")
    with pytest.raises(sy.ArgumentError, match=r"only one of strong_p and weak_p"):
        TaskOutcomes.for_tasks(tasks)


def test_for_tasks_reads_the_probabilities_of_a_trials_table():
    tasks = _self_pair()
    outcomes = TaskOutcomes.for_tasks(tasks)
    assert dict(outcomes.tiers) == {"gpt-4o": "strong", "gpt-4o-b": "weak"}
    assert outcomes.probabilities is not None and len(outcomes.probabilities) == 50
    p = dict(zip(tasks["instance_id"], tasks["strong_p"], strict=True))
    assert all(outcomes.probabilities[t] == (p[t], p[t]) for t in p)


def test_serving_one_model_succeeds_with_its_probability_over_seeds():
    probabilities = {f"t{i}": (i / 10, 1 - i / 10) for i in range(11)}
    outcomes = TaskOutcomes({"s": "strong", "w": "weak"}, probabilities=probabilities)
    seeds = range(600)
    n = len(seeds) * len(probabilities)
    for model, side in (("s", 0), ("w", 1)):
        wins = sum(
            outcomes.success(t, "SAFE", [model] * 4, 4, seed)
            for t in probabilities
            for seed in seeds
        )
        expected = sum(p[side] for p in probabilities.values()) / len(probabilities)
        assert abs(wins / n - expected) <= 4 * math.sqrt(0.25 / n)


# --- runs: shared draws, and intervals over tasks -------------------------------------------------


def test_strategies_compared_in_one_call_see_the_same_draws():
    trials = taubench_airline()
    weak = trials[trials["trial"] < 2].assign(model="weak")  # two trials: other probabilities
    tasks = pair_tasks(
        pd.concat([trials.assign(model="strong"), weak]), "strong", "weak", trial="trial"
    )
    outcomes = TaskOutcomes.for_tasks(tasks)
    sessions = _sessions(
        [
            (t, t, q)
            for t, q in zip(tasks["instance_id"], tasks["quadrant"].astype(str), strict=True)
        ]
    )
    cmp = sy.compare(
        {"strong": st.single("strong"), "weak": st.single("weak")},
        sessions,
        host=HOST,
        seeds=[0, 1, 2],
        progress=False,
    )
    frame = session_frame(cmp, outcomes=outcomes)
    p = tasks.set_index("instance_id")[["strong_p", "weak_p"]]
    for row in frame.itertuples(index=False):
        u = uniforms(row.seed, "session-task-draw", row.session_id)
        chance = p.loc[row.session_id, f"{row.strategy}_p"]
        assert row.success == float(u[0 if row.strategy == "strong" else 1] < chance)
    # with one draw for both models (comonotone), where the two resolve a task equally often,
    # they win or lose it together
    same = p.index[p["strong_p"] == p["weak_p"]]
    frame = session_frame(cmp, outcomes=TaskOutcomes.for_tasks(tasks, coupling="comonotone"))
    pivot = frame.pivot_table(index=["seed", "session_id"], columns="strategy", values="success")
    at = pivot.index.get_level_values("session_id").isin(same)
    assert len(same) > 10 and (pivot.loc[at, "strong"] == pivot.loc[at, "weak"]).all()


def test_one_session_per_task_keeps_the_bootstrap_over_sessions():
    values = pd.Series([1.0, 0.0, 1.0, 1.0, 0.0], index=list("abcde"))
    clusters = pd.Series({s: ("task", s) for s in "abcde"})
    assert clustered_mean_cis([values], clusters) == [bootstrap_mean_ci(values.to_numpy())]


def test_copies_of_a_session_within_its_task_add_no_information():
    values = pd.Series([1.0, 0.0, 1.0, 1.0, 0.0, 0.5], index=list("abcdef"))
    alone = clustered_mean_cis([values], pd.Series({s: ("task", s) for s in values.index}))[0]
    copies = pd.Series(
        np.repeat(values.to_numpy(), 3), index=[f"{s}{k}" for s in values.index for k in range(3)]
    )
    clusters = pd.Series({f"{s}{k}": ("task", s) for s in values.index for k in range(3)})
    clustered = clustered_mean_cis([copies], clusters)[0]
    assert clustered == pytest.approx(alone, rel=1e-12)
    naive = bootstrap_mean_ci(copies.to_numpy())
    assert naive[1] - naive[0] < clustered[1] - clustered[0]
    one = pd.Series({f"{s}{k}": ("task", "x") for s in values.index for k in range(3)})
    assert all(math.isnan(v) for v in clustered_mean_cis([copies], one)[0])


def test_task_clusters_fall_back_to_the_session():
    frame = pd.DataFrame({"session_id": ["a", "b", "c", "a"], "task_id": ["t", "t", None, "t"]})
    clusters = task_clusters(frame)
    assert clusters.to_dict() == {"a": ("task", "t"), "b": ("task", "t"), "c": ("session", "c")}
    assert task_clusters(frame.drop(columns="task_id"))["a"] == ("session", "a")


def test_one_session_per_trial_gives_intervals_too_narrow_and_clustering_widens_them():
    trials = taubench_airline()
    rows = [
        (f"{r.task_id}/{r.trial}", str(r.task_id), "SAFE" if r.resolved else "HARD")
        for r in trials.itertuples(index=False)
    ]
    outcomes = TaskOutcomes({"strong": "strong", "weak": "weak"})
    # the workaround: every trial its own task, 200 independent units
    alone = _sessions([(s, s, q) for s, _, q in rows])
    per_trial = session_summary(
        sy.run(st.single("strong"), alone, host=HOST, seed=0, progress=False), outcomes=outcomes
    ).iloc[0]
    successes = np.array([q == "SAFE" for *_, q in rows], dtype=float)
    assert per_trial["success_rate"] == 0.42
    assert (per_trial["success_ci_low"], per_trial["success_ci_high"]) == bootstrap_mean_ci(
        successes
    )
    assert (round(per_trial["success_ci_low"], 3), round(per_trial["success_ci_high"], 3)) == (
        0.345,
        0.485,
    )
    # the same sessions naming their task: resampled by task
    grouped = _sessions(rows)
    by_task = session_summary(
        sy.run(st.single("strong"), grouped, host=HOST, seed=0, progress=False), outcomes=outcomes
    ).iloc[0]
    assert by_task["success_rate"] == 0.42 and by_task["sessions"] == 200
    assert (round(by_task["success_ci_low"], 3), round(by_task["success_ci_high"], 3)) == (
        0.315,
        0.535,
    )
    # the trials model: one session per task, its quadrant drawn per seed from the probabilities
    tasks = _self_pair()
    model = TaskOutcomes.for_tasks(tasks, {"strong": "strong", "weak": "weak"})
    sessions = _sessions(
        [
            (t, t, q)
            for t, q in zip(tasks["instance_id"], tasks["quadrant"].astype(str), strict=True)
        ]
    )
    cmp = sy.compare([st.single("strong")], sessions, host=HOST, seeds=[0, 1, 2, 3], progress=False)
    drawn = session_summary(cmp, outcomes=model).iloc[0]
    widths = {
        "per trial": per_trial["success_ci_high"] - per_trial["success_ci_low"],
        "by task": by_task["success_ci_high"] - by_task["success_ci_low"],
        "trials model": drawn["success_ci_high"] - drawn["success_ci_low"],
    }
    assert widths["by task"] > 1.5 * widths["per trial"]
    assert widths["trials model"] > 1.5 * widths["per trial"]


def test_paired_differences_are_resampled_by_task_too():
    rows = [
        (f"{t}/{k}", str(t), "RESCUE" if (t + k) % 3 else "LOSS")
        for t in range(12)
        for k in range(4)
    ]
    sessions = _sessions(rows)
    cmp = sy.compare(
        {"strong": st.single("strong"), "weak": st.single("weak")},
        sessions,
        host=HOST,
        seeds=[0],
        progress=False,
    )
    outcomes = TaskOutcomes({"strong": "strong", "weak": "weak"})
    row = (
        session_summary(cmp, outcomes=outcomes, baseline="strong").set_index("strategy").loc["weak"]
    )
    frame = session_frame(cmp, outcomes=outcomes)
    strong = frame[frame["strategy"] == "strong"].set_index("session_id")["success"]
    weak = frame[frame["strategy"] == "weak"].set_index("session_id")["success"]
    diffs = weak - strong
    expected = clustered_mean_cis([diffs], task_clusters(frame))[0]
    assert (row["d_success_rate_ci_low"], row["d_success_rate_ci_high"]) == expected
    assert expected != bootstrap_mean_ci(diffs.to_numpy())


# --- the docs page --------------------------------------------------------------------------------


def test_the_per_task_page_runs_as_written():
    page = data_dir().parent / "docs" / "session-per-task.md"
    if not page.is_file():  # an installed wheel carries the data, not the docs
        pytest.skip("docs/ is not next to the data")
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) == 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/session-per-task.md", "exec"), namespace)
    first = namespace["quadrant_counts"]
    assert (
        round(
            namespace["pair_tasks"](namespace["results"], "big", "small", cost="cost_usd").attrs[
                "cost_ratio"
            ],
            2,
        )
        == 6.29
    )
    assert first(namespace["tasks"]) == {"SAFE": 14, "RESCUE": 0, "LOSS": 0, "HARD": 36}
    assert namespace["tasks"]["strong_p"].mean() == 0.42
    summary = namespace["summary"]
    assert summary["success_rate"].tolist() == [0.43, 0.44]
    assert [round(v, 3) for v in summary["success_ci_low"]] == [0.325, 0.325]
    assert [round(v, 3) for v in summary["success_ci_high"]] == [0.545, 0.56]
    assert len(namespace["configs"]) == 43
