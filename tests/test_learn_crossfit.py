"""Cross-fitting: every request is routed once, by a router fitted without its fold's grades."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit.learn import cross_fit

pytestmark = pytest.mark.filterwarnings("ignore:the price catalogue does not know:UserWarning")

WEAK, STRONG = "small", "large"


def table(n: int = 120, seed: int = 0) -> sy.datasets.Dataset:
    """Prompts marked "hard" are solved by the large model only; "easy" ones by both. Pairs of
    rows share a ``question`` (like MT-Bench's two turns)."""
    rng = np.random.default_rng(seed)
    hard = rng.uniform(size=n) < 0.4
    frame = pd.DataFrame(
        {
            "id": [f"q{i // 2}/t{i % 2}" for i in range(n)],
            "prompt": [
                ("hard " if h else "easy ") + f"task number {i}" for i, h in enumerate(hard)
            ],
            "question": [f"q{i // 2}" for i in range(n)],
            "small_ok": np.where(hard, 0.0, 1.0),
            "large_ok": np.ones(n),
        }
    )
    return sy.datasets.from_frame(
        frame, prompt="prompt", id="id", quality={WEAK: "small_ok", STRONG: "large_ok"}
    )


def hard_word(train: sy.datasets.Dataset):
    """A fit that learns nothing: the word "hard" is the score."""
    return lambda request: float("hard" in request.messages[-1]["content"])


def test_each_request_is_routed_once_by_a_router_that_never_saw_it():
    data = table()
    seen: list[set[str]] = []

    def fit(train):
        seen.append(set(train.frame["id"]))
        assert set(train.quality.index) == seen[-1]  # grades of its own rows only
        return hard_word(train)

    cv = cross_fit(fit, data, weak=WEAK, strong=STRONG, folds=4, resamples=200, group="question")
    assert len(seen) == 4
    everything = set(data.frame["id"])
    requests = cv.comparison.requests
    for name in cv.comparison.strategies:
        ids = requests.loc[requests["strategy"] == name, "request_id"].tolist()
        assert sorted(ids) == sorted(everything)  # every request once per strategy
    for train_ids in seen:
        held_out = everything - train_ids
        assert held_out and not held_out & train_ids
        # the two rows of a question are on the same side
        assert {i.split("/")[0] for i in held_out}.isdisjoint({i.split("/")[0] for i in train_ids})
    assert cv.realizable


def test_each_fold_routes_only_its_own_held_out_requests_in_one_run_per_strategy():
    data = table()
    held_out: list[set[str]] = []
    scored: list[set[str]] = []

    def fit(train):
        held_out.append(set(data.frame["id"]) - set(train.frame["id"]))
        mine: set[str] = set()
        scored.append(mine)

        def score(request):
            mine.add(request.id)
            return float("hard" in request.messages[-1]["content"])

        return score

    cv = cross_fit(fit, data, weak=WEAK, strong=STRONG, folds=4, resamples=200, group="question")
    assert scored == held_out  # each fold's router scored its held-out requests, and only them
    # one run per strategy over every request (the folds' routers behind one static strategy)
    assert len(cv.comparison.results) == len(cv.shares) + 2
    assert {r.engine for r in cv.comparison.results} == {"bulk"}


def test_a_perfect_score_recovers_the_whole_gap_and_beats_random():
    cv = cross_fit(hard_word, table(200), weak=WEAK, strong=STRONG, resamples=300)
    # "hard" is exactly where the large model helps: routing by it is the oracle, whose APGR
    # with 40 % hard prompts is 1 - 0.4 / 2 = 0.8
    hard = float((table(200).quality[WEAK] == 0).mean())
    assert cv.apgr.value == pytest.approx(1 - hard / 2, abs=0.02)
    assert cv.apgr.excludes(cv.random)
    assert cv.random.value == pytest.approx(0.5, abs=0.02)
    assert cv.random.sd > 0
    assert cv.name == "hard_word"


def test_tied_scores_hit_each_share_exactly_in_every_fold():
    data = table(150)
    cv = cross_fit(hard_word, data, weak=WEAK, strong=STRONG, folds=3, resamples=200)
    requests = cv.comparison.requests
    for strategy, share in zip(cv.curve["strategy"], cv.shares, strict=True):
        rows = requests[requests["strategy"] == strategy]
        strong = int((rows["selected_model"].astype(str) == STRONG).sum())
        sizes = [len(test) for _, test in data.folds(3, seed=0, group=data.group_column)]
        assert strong == sum(max(1, round(share * n)) for n in sizes)


def test_a_router_that_reads_the_truth_is_marked_not_realizable():
    cv = cross_fit(
        lambda train: sy.strategies.simulated_score(WEAK, STRONG, apgr=0.7),
        table(),
        weak=WEAK,
        strong=STRONG,
        resamples=200,
    )
    assert not cv.realizable
    assert "not realizable" in repr(cv)


def test_a_router_that_looks_up_held_out_grades_fails_loudly():
    def cheat(train):
        grades = train.quality
        return lambda request: float(grades.loc[request.id, STRONG] - grades.loc[request.id, WEAK])

    with pytest.raises(sy.ArgumentError, match="failed on held-out request"):
        cross_fit(cheat, table(), weak=WEAK, strong=STRONG, resamples=200)


@pytest.mark.filterwarnings("ignore::sykit.AlgorithmWarning")  # the runs say it too
def test_a_router_that_fails_only_while_routing_fails_loudly_with_its_count():
    """Scored without trouble up front (once, then once per share to calibrate), it raises when
    the runs route: they record algorithm errors, and the cross-fit refuses to count them as
    failed requests."""

    def flaky(train):
        looks: dict[object, int] = {}

        def score(request):
            looks[request.id] = looks.get(request.id, 0) + 1
            if looks[request.id] > 1 + 9:  # the 9 shares of the default sweep
                raise LookupError("looked once too often")
            return float(len(request.prompt))

        return score

    with pytest.raises(sy.ArgumentError, match=r"failed on [0-9]+ held-out request\(s\), e\.g\."):
        cross_fit(flaky, table(), weak=WEAK, strong=STRONG, resamples=200)


def test_same_seed_same_result_and_another_seed_other_folds():
    one = cross_fit(hard_word, table(), weak=WEAK, strong=STRONG, resamples=200, seed=3)
    two = cross_fit(hard_word, table(), weak=WEAK, strong=STRONG, resamples=200, seed=3)
    pd.testing.assert_frame_equal(one.comparison.requests, two.comparison.requests)
    assert one.apgr == two.apgr


def test_bad_input_is_refused_clearly():
    data = table()
    with pytest.raises(sy.ArgumentError, match="weak"):
        cross_fit(hard_word, data, weak="nope", strong=STRONG)
    with pytest.raises(sy.ArgumentError, match="shares"):
        cross_fit(hard_word, data, shares=[0.0, 0.5])
    with pytest.raises((sy.ArgumentError, sy.ArgumentTypeError), match="shares"):
        cross_fit(hard_word, data, shares=["half"])
    with pytest.raises(sy.ArgumentTypeError, match="shares"):
        cross_fit(hard_word, data, shares="0.5")
    with pytest.raises(sy.ArgumentError, match="folds"):
        cross_fit(hard_word, data, folds=1)
    with pytest.raises(sy.ArgumentTypeError, match="learner"):
        cross_fit(42, data)
    with pytest.raises(sy.ArgumentTypeError, match="Dataset"):
        cross_fit(hard_word, [sy.Request("x")])
    mmlu = sy.datasets.load("mmlu_pro")
    with pytest.raises(sy.ArgumentError, match="which two"):
        cross_fit(hard_word, mmlu)


def test_the_summary_has_one_row_with_intervals():
    cv = cross_fit(hard_word, table(), weak=WEAK, strong=STRONG, resamples=200)
    row = cv.summary().iloc[0]
    assert row["apgr_low"] <= row["apgr"] <= row["apgr_high"]
    assert row["realizable"]
    assert row["folds"] == 5


# -- n models with a cost trade-off ----------------------------------------------------------------


class MeanPerWord:
    """A tiny learner: a model's predicted quality is its mean grade on training prompts that
    share the prompt's first word."""

    name = "mean per word"

    def fit(self, train, models):
        frame = train.frame
        words = frame["prompt"].str.split().str[0]
        quality = train.quality.reindex(frame["id"])
        table = {m: quality[m].groupby(words.to_numpy()).mean() for m in models}
        return _WordRouter(tuple(models), table)


class _WordRouter:
    name = "mean per word"

    def __init__(self, models, table):
        self.models = models
        self.table = table

    def predict(self, requests):
        return np.array(
            [
                [self.table[m].get(r.messages[-1]["content"].split()[0], 0.5) for m in self.models]
                for r in requests
            ]
        )


def three_models(n: int = 150) -> sy.datasets.Dataset:
    rng = np.random.default_rng(2)
    kind = rng.choice(["easy", "medium", "hard"], size=n)
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "prompt": [f"{k} prompt {i}" for i, k in enumerate(kind)],
            "tiny_ok": (kind == "easy").astype(float),
            "mid_ok": (kind != "hard").astype(float),
            "big_ok": np.ones(n),
        }
    )
    return sy.datasets.from_frame(
        frame,
        prompt="prompt",
        id="id",
        quality={"tiny": "tiny_ok", "mid": "mid_ok", "big": "big_ok"},
    )


def priced_host() -> sy.SimHost:
    def profile(price: float) -> sy.ModelProfile:
        return sy.ModelProfile(price_in=price, price_out=price, output_tokens=100)

    return sy.SimHost(
        {"tiny": profile(0.1), "mid": profile(1.0), "big": profile(10.0)},
        policy=sy.HostPolicy(timeout_s=3600.0, cooldown_s=0.0),
    )


def test_the_cost_router_buys_quality_only_where_it_pays():
    cv = sy.learn.cross_fit_costs(
        MeanPerWord(), three_models(), host=priced_host(), lambdas=[0.0, 0.3, 100.0], resamples=200
    )
    curve = cv.curve.set_index("lam")
    # λ = 0: the best predicted answer (ties go to the cheaper model): every prompt answered
    assert curve.loc[0.0, "mean_quality"] == pytest.approx(1.0)
    # each prompt goes to the cheapest model that solves its kind
    assert curve.loc[0.0, "cost_per_request_usd"] < float(
        cv.singles.set_index("strategy").loc["big only", "cost_per_request_usd"]
    )
    # a huge λ: always the cheapest model
    mix = curve.loc[100.0, "model_mix"]
    assert mix == {"tiny": 1.0}
    assert cv.realizable
    assert 0 < cv.aiq.low <= cv.aiq.value <= cv.aiq.high
    assert f"{STRONG}" not in cv.frontier["strategy"].tolist()
    assert "mean per word λ=0" in cv.frontier["strategy"].tolist()


def test_the_cost_curve_and_the_models_alone_are_judged_on_requests_graded_for_every_model():
    """With "big" ungraded on the easy prompts, a model alone and the λ points would be means
    over different requests: all are judged on the prompts graded for every model, where the
    tiny model (it solves only easy prompts) scores 0."""
    data = three_models()
    frame = data.frame
    easy = frame["prompt"].str.startswith("easy")
    ungraded = frame.assign(**{"quality:big": frame["quality:big"].where(~easy)}).rename(
        columns={"quality:tiny": "t", "quality:mid": "m", "quality:big": "b"}
    )
    data = sy.datasets.from_frame(
        ungraded, prompt="prompt", id="id", quality={"tiny": "t", "mid": "m", "big": "b"}
    )
    with pytest.warns(sy.errors.UngradedWarning, match=f"{int(easy.sum())} of the 150 requests"):
        cv = sy.learn.cross_fit_costs(
            MeanPerWord(), data, host=priced_host(), lambdas=[0.0, 100.0], resamples=200
        )
    alone = cv.singles.set_index("strategy")["mean_quality"]
    assert alone["tiny only"] == 0.0
    assert alone["big only"] == 1.0
    assert cv.curve.set_index("lam").loc[0.0, "mean_quality"] == pytest.approx(1.0)
    assert len(cv.comparison.requests) == 150 * 5  # every request still routed


def test_models_with_the_same_grades_leave_apgr_undefined_and_say_so():
    data = table()
    frame = data.frame.assign(**{"quality:small": data.frame["quality:large"]})
    same = sy.datasets.from_frame(
        frame.rename(columns={"quality:small": "s", "quality:large": "l"}),
        prompt="prompt",
        id="id",
        quality={WEAK: "s", STRONG: "l"},
    )
    with pytest.warns(UserWarning, match="APGR is undefined"):
        cv = cross_fit(hard_word, same, weak=WEAK, strong=STRONG, resamples=200)
    assert np.isnan(cv.apgr.value)
    assert np.isfinite(cv.aiq.value)


def test_a_strong_model_worse_than_the_weak_one_is_judged_with_a_warning():
    """weak= and strong= swapped: the figures are those of routing to the worse model, which is
    rarely what was meant, so the caller is told (and the figures are still given)."""
    with pytest.warns(UserWarning, match=r"strong='small' has the lower mean quality.*swap"):
        swapped = cross_fit(hard_word, table(), weak=STRONG, strong=WEAK, resamples=200)
    assert np.isfinite(swapped.apgr.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_fit(hard_word, table(), weak=WEAK, strong=STRONG, resamples=200)
    assert not [w for w in caught if "lower mean quality" in str(w.message)]


def test_a_group_function_gets_the_row_as_folds_give_it_and_groups_as_its_column_does():
    data = table()
    by_column = cross_fit(
        hard_word, data, weak=WEAK, strong=STRONG, resamples=200, group="question"
    )
    by_function = cross_fit(
        hard_word, data, weak=WEAK, strong=STRONG, resamples=200, group=lambda row: row["question"]
    )
    assert by_function.apgr == by_column.apgr and by_function.aiq == by_column.aiq


def test_requests_ungraded_for_one_model_are_left_out_of_the_judgement_with_a_warning():
    """With the strong model graded on half the rows, the means of the shares would mix rows
    graded for both with rows graded for one: the judgement keeps the rows graded for both. A
    constant gain makes every ranking's APGR exactly 0.5."""
    rng = np.random.default_rng(3)
    n = 200
    weak = rng.uniform(0, 0.7, n)
    strong = weak + 0.3
    strong[rng.uniform(size=n) < 0.5] = np.nan
    frame = pd.DataFrame({"prompt": [f"task {i}" for i in range(n)], "w": weak, "s": strong})
    data = sy.datasets.from_frame(frame, prompt="prompt", quality={WEAK: "w", STRONG: "s"})
    graded = int(np.isfinite(strong).sum())
    with pytest.warns(UserWarning, match=f"judged on the {graded} graded for both"):
        cv = cross_fit(hard_word, data, weak=WEAK, strong=STRONG, resamples=200)
    assert cv.apgr.value == pytest.approx(0.5, abs=1e-9)
    assert cv.apgr.low <= 0.5 <= cv.apgr.high
    assert cv.random.value == pytest.approx(0.5, abs=0.02)
    assert len(cv.comparison.requests) == n * (len(cv.shares) + 2)  # every request still routed


def test_no_request_graded_for_both_models_is_refused():
    frame = pd.DataFrame(
        {"prompt": [f"t{i}" for i in range(40)], "w": [0.5] * 20 + [np.nan] * 20}
    ).assign(s=lambda f: np.where(f["w"].isna(), 1.0, np.nan))
    data = sy.datasets.from_frame(frame, prompt="prompt", quality={WEAK: "w", STRONG: "s"})
    with pytest.raises(sy.errors.ArgumentError, match="no request is graded for both"):
        cross_fit(hard_word, data, weak=WEAK, strong=STRONG, resamples=200)
