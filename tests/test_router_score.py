"""The simulated router score: quality set in APGR (scale-free), RouteLLM's published routers as
presets reproduced on the shipped table, noise keyed by the score's own seed, and the legacy
``noise=`` mode."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy
from sykit import strategies as st
from sykit._grid.sweep import apgr
from sykit._world.models import truth_of
from sykit._world.truth import TruthView

STRONG = "gpt-4-1106-preview"
WEAK = "mixtral-8x7b-instruct-v0.1"
PUBLISHED = st.SimulatedScore.PRESETS
SHARES = st.SimulatedScore.SWEEP_SHARES  # RouteLLM's sweep: the score's deciles
SEEDS = range(5)


@pytest.fixture(scope="module")
def routellm():
    return sy.datasets.load("routellm").filter(contaminated=False)  # as the CLI does


@pytest.fixture(scope="module")
def fast_host():
    """Constant latency, no faults and answers far inside the deadline (no timeouts, so no retries
    or fallbacks): every request is served by the model the router picks, and the run seed
    changes nothing, so one run seed is enough."""
    return sy.SimHost(
        {
            STRONG: constant_profile(0.5, 100, 1000.0, price_in=10.0, price_out=30.0),
            WEAK: constant_profile(0.25, 100, 1000.0, price_in=0.6, price_out=0.6),
        }
    )


@pytest.fixture(scope="module")
def presets(routellm):
    """Every preset with every score seed, fitted on the whole table (per benchmark)."""
    return {
        (name, seed): st.simulated_score(WEAK, STRONG, preset=name, seed=seed).fit(routellm)
        for name in PUBLISHED
        for seed in SEEDS
    }


def fitted_apgr(score: st.SimulatedScore, benchmark: str) -> float:
    fitted = score.fitted.set_index("benchmark")
    return float(fitted.loc[benchmark, "apgr"])


# -- the presets reproduce the published figures -------------------------------------------------


def simulated_combos(benchmark: str) -> list[tuple[str, int]]:
    """The (preset, score seed) pairs whose sweep is simulated on ``benchmark``.

    A simulation costs about 80 µs per request and setting, so simulating all 8 presets × 5 seeds ×
    9 shares on the 3,731 requests would take minutes. The fit computes exactly the sweep the
    simulation measures (same thresholds, same routing, same means; asserted for every simulated
    pair), so the rest is read from the fits: on MT-Bench (144 requests, where the seed matters
    most) every preset with every seed is simulated; on MMLU and GSM8K every preset is simulated
    once, on one of the two (alternating) with one of the seeds (its index mod 5).
    """
    names = list(PUBLISHED)
    if benchmark == "mt_bench":
        return [(name, seed) for name in names for seed in SEEDS]
    parity = 0 if benchmark == "mmlu" else 1
    return [(name, i % len(SEEDS)) for i, name in enumerate(names) if i % 2 == parity]


@pytest.mark.parametrize("benchmark", ["mt_bench", "mmlu", "gsm8k"])
def test_every_preset_reproduces_its_published_apgr(benchmark, routellm, fast_host, presets):
    requests = routellm.filter(benchmark=benchmark)
    combos = simulated_combos(benchmark)
    # One real sweep per benchmark: each simulated pair at RouteLLM's nine shares (the setting
    # ``pair index + share``), next to a single run of each model alone that all pairs share.
    settings = {
        index + share: (combo, share) for index, combo in enumerate(combos) for share in SHARES
    }

    def router(value: float):
        combo, share = settings[value]
        score = presets[combo]
        threshold = st.calibrate(score, requests, share)  # already fitted: no refit
        return st.threshold_router(WEAK, STRONG, score=score, threshold=threshold)

    result = sy.sweep(
        router,
        settings,
        requests,
        host=fast_host,
        weak=WEAK,
        strong=STRONG,
        with_oracle=False,
        concurrency=8,  # few requests in flight simulate fastest
        progress=False,
    )
    frame = result.comparison.requests
    assert frame["status"].eq("ok").all() and frame["n_attempts"].eq(1).all()
    # the sweep's points, as Sweep.curve computes them (one groupby instead of a scan per setting)
    frame = frame.assign(on_strong=frame["served_model"].astype(str) == STRONG)
    points = frame.groupby(frame["strategy"].astype(str)).agg(
        strong_share=("on_strong", "mean"), mean_quality=("quality", "mean")
    )
    weak_quality = points.loc[f"{WEAK} only", "mean_quality"]
    strong_quality = points.loc[f"{STRONG} only", "mean_quality"]
    measured = {}
    for index, combo in enumerate(combos):
        curve = points.loc[[f"{index + share:g}" for share in SHARES]]
        assert curve["strong_share"].tolist() == pytest.approx(SHARES, abs=0.5 / len(requests))
        measured[combo] = apgr(
            curve["strong_share"],
            curve["mean_quality"],
            weak_quality=weak_quality,
            strong_quality=strong_quality,
        )
        # the fit predicts the simulated sweep exactly
        assert measured[combo] == pytest.approx(fitted_apgr(presets[combo], benchmark), abs=1e-9)
    rows = []
    for name, published in ((name, row[benchmark]) for name, row in PUBLISHED.items()):
        per_seed = [
            measured.get((name, seed), fitted_apgr(presets[name, seed], benchmark))
            for seed in SEEDS
        ]
        simulated = [measured[name, seed] for seed in SEEDS if (name, seed) in measured]
        rows.append(
            (
                name,
                published,
                float(np.mean(per_seed)),
                min(per_seed),
                max(per_seed),
                len(simulated),
            )
        )
    report = pd.DataFrame(
        rows, columns=["preset", "published", "mean_of_5_seeds", "min", "max", "simulated_seeds"]
    )
    print(f"\n{benchmark}\n{report.to_string(index=False, float_format=lambda x: f'{x:.3f}')}")
    assert (report["mean_of_5_seeds"] - report["published"]).abs().max() <= 0.03
    assert (report["min"] - report["published"]).abs().max() <= 0.03
    assert (report["max"] - report["published"]).abs().max() <= 0.03


def test_every_preset_is_simulated_with_every_seed_on_mt_bench_and_once_on_a_larger_benchmark():
    larger = simulated_combos("mmlu") + simulated_combos("gsm8k")
    assert sorted(name for name, _ in larger) == sorted(PUBLISHED)
    assert {seed for _, seed in larger} == set(SEEDS)
    assert len(simulated_combos("mt_bench")) == len(PUBLISHED) * len(SEEDS)


def test_the_default_is_a_published_router_not_a_superhuman_one(routellm, presets):
    score = st.simulated_score(WEAK, STRONG)
    assert (score.preset, score.apgr, score.noise) == ("mf_augmented", None, None)
    fitted = presets["mf_augmented", 0].fitted.set_index("benchmark")
    for benchmark, published in PUBLISHED["mf_augmented"].items():
        assert fitted.loc[benchmark, "target_apgr"] == published
        assert fitted.loc[benchmark, "apgr"] == pytest.approx(published, abs=0.01)
        assert fitted.loc[benchmark, "requests"] == len(routellm.filter(benchmark=benchmark))
    assert set(fitted.index) == {"mt_bench", "mmlu", "gsm8k"}


# -- scale-free, keyed, fitted ---------------------------------------------------------------------


def graded_table(n: int = 300, *, low: float = 0.0, high: float = 1.0, seed: int = 0):
    """Right/wrong answers of a weak (60 %) and a strong (80 %) model, graded ``high`` for right and
    ``low`` for wrong, in two benchmarks."""
    rng = np.random.default_rng(seed)
    weak = rng.random(n) < 0.6
    strong = rng.random(n) < 0.8
    frame = pd.DataFrame(
        {
            "q": [f"question {i}" for i in range(n)],
            "weak": np.where(weak, high, low),
            "strong": np.where(strong, high, low),
            "benchmark": ["a", "b"] * (n // 2),
        }
    )
    return sy.datasets.from_frame(
        frame, prompt="q", quality={"weak": "weak", "strong": "strong"}, metadata=["benchmark"]
    )


@pytest.fixture
def host():
    return sy.SimHost(
        {
            "weak": constant_profile(0.1, 10, 100.0, price_in=0.1, price_out=0.1),
            "strong": constant_profile(0.2, 10, 100.0, price_in=1.0, price_out=1.0),
        }
    )


def _view(request):
    return TruthView(truth_of(request), {}, 0, request.id), request.id


def values(score, data):
    """The score of each dataset request, as the router would see it."""
    return [score.value(*_view(request), request) for request in data]


def gain(request):
    quality = truth_of(request).quality
    return quality["strong"] - quality["weak"]


def test_a_target_apgr_means_the_same_router_whatever_the_grading_scale():
    ones = graded_table()
    narrow = graded_table(low=0.4, high=0.6)  # the same answers graded on a narrower scale
    a = st.simulated_score("weak", "strong", apgr=0.7).fit(ones)
    b = st.simulated_score("weak", "strong", apgr=0.7).fit(narrow)
    assert a.fitted["rho"].tolist() == b.fitted["rho"].tolist()
    assert a.fitted["apgr"].tolist() == pytest.approx([0.7, 0.7], abs=0.01)
    assert values(a, ones) == values(b, narrow)  # the same ranking, so the same routing
    # the legacy mode is not scale-free: the same noise blurs the narrow scale's gains more
    legacy = st.simulated_score("weak", "strong", noise=0.5)
    assert values(legacy, ones) != values(legacy, narrow)


def test_run_seeds_change_only_the_simulation_and_the_score_seed_changes_the_router(host):
    data = graded_table(60)
    score = st.simulated_score("weak", "strong", apgr=0.8, seed=3)
    router = st.threshold_router(
        "weak", "strong", score=score, threshold=st.calibrate(score, data, 0.3)
    )
    result = sy.compare({"threshold": router}, data, host=host, seeds=[0, 1])
    for column in ("evidence_score", "served_model"):
        by_seed = result.requests.pivot(index="request_id", columns="seed", values=column)
        assert by_seed[0].tolist() == by_seed[1].tolist()  # a fixed function of the request
    other = st.simulated_score("weak", "strong", apgr=0.8, seed=4).fit(data)
    assert values(other, data) != values(score, data)


def test_ungraded_answers_get_pure_noise_and_stay_out_of_the_fit(host):
    frame = pd.DataFrame(
        {
            "q": [f"q{i}" for i in range(40)],
            "weak": [math.nan if i % 4 == 0 else float(i % 3 == 0) for i in range(40)],
            "strong": [math.nan if i % 5 == 0 else float(i % 2 == 0) for i in range(40)],
        }
    )
    data = sy.datasets.from_frame(frame, prompt="q", quality={"weak": "weak", "strong": "strong"})
    low = st.simulated_score("weak", "strong", apgr=0.3).fit(data)
    high = st.simulated_score("weak", "strong", apgr=0.9).fit(data)
    assert low.fitted["rho"].iloc[0] < 0 < high.fitted["rho"].iloc[0]
    assert low.fitted["requests"].iloc[0] == 40
    ungraded = [i for i in range(40) if i % 4 == 0 or i % 5 == 0]
    low_values, high_values = values(low, data), values(high, data)
    assert [low_values[i] for i in ungraded] == [high_values[i] for i in ungraded]
    assert low_values != high_values
    router = st.threshold_router(
        "weak", "strong", score=high, threshold=st.calibrate(high, data, 0.5)
    )
    result = sy.run(router, data, host=host)
    assert result.requests["status"].eq("ok").all()


def test_calibrate_fits_only_new_benchmarks_and_fit_refits():
    data = graded_table()
    score = st.simulated_score("weak", "strong", apgr=0.75)
    st.calibrate(score, data.filter(benchmark="a"), 0.5)
    rho_a = score.fitted.set_index("benchmark").loc["a", "rho"]
    st.calibrate(score, data, 0.5)  # adds "b"; "a" keeps its fit, as a trained router would
    fitted = score.fitted.set_index("benchmark")
    assert list(fitted.index) == ["a", "b"] and fitted.loc["a", "rho"] == rho_a
    assert score.fit(data.filter(benchmark="b")) is score
    assert score.fitted["benchmark"].tolist() == ["b"]


def test_a_fitted_score_is_a_function_of_the_request_and_refuses_unfitted_benchmarks(host):
    data = graded_table()
    first, rest = data.filter(lambda f: f.index < 200), data.filter(lambda f: f.index >= 200)
    score = st.simulated_score("weak", "strong", apgr=0.95).fit(first.filter(benchmark="a"))
    held_out = [r for r in rest if r.metadata["benchmark"] == "a"]
    scored = values(score, held_out)
    gains = [gain(r) for r in held_out]
    helped = np.mean([v for v, g in zip(scored, gains, strict=True) if g > 0])
    hurt = np.mean([v for v, g in zip(scored, gains, strict=True) if g < 0])
    assert helped > hurt  # the same good router on traffic it was not fitted on
    other = next(r for r in rest if r.metadata["benchmark"] == "b")
    with pytest.raises(sy.ArgumentError, match=r"not been fitted on benchmark 'b'.*calibrate"):
        score.value(*_view(other), other)
    unfitted = st.simulated_score("weak", "strong")
    with pytest.warns(sy.AlgorithmWarning, match="calibrate"):
        result = sy.run(
            st.threshold_router("weak", "strong", score=unfitted, threshold=0), data[:2], host=host
        )
    assert result.requests["error_kind"].eq("algorithm_error").all()
    assert result.requests["error_message"].str.contains("calibrate").all()


def test_a_preset_on_other_traffic_uses_the_mean_figure_or_the_named_benchmark():
    data = graded_table(200)
    plain = sy.datasets.from_frame(
        data.frame.rename(columns={"quality:weak": "w", "quality:strong": "s"}),
        prompt="prompt",
        quality={"weak": "w", "strong": "s"},
    )  # no benchmark column
    score = st.simulated_score("weak", "strong", preset="bert_augmented").fit(plain)
    row = score.fitted.iloc[0]
    assert row["benchmark"] is None
    assert row["target_apgr"] == pytest.approx(np.mean(list(PUBLISHED["bert_augmented"].values())))
    named = st.simulated_score("weak", "strong", preset="bert_augmented", benchmark="gsm8k")
    named.fit(data)  # one group, whatever the benchmark column says
    assert named.fitted[["benchmark", "target_apgr"]].values.tolist() == [["gsm8k", 0.531]]


def test_an_unreachable_target_warns_and_gets_the_closest():
    data = graded_table(100)
    with pytest.warns(UserWarning, match="out of reach") as caught:
        score = st.simulated_score("weak", "strong", apgr=5.0).fit(data)
    messages = [str(warning.message) for warning in caught]
    assert sorted(message.split(" (")[0] for message in messages) == [
        f"APGR 5.000 is out of reach on benchmark {b!r}" for b in "ab"
    ]
    reached = score.fitted.set_index("benchmark")["apgr"]
    assert (reached > 0.9).all() and (reached < 5.0).all()


def test_strategies_using_the_score_read_the_truth(host):
    data = graded_table(20)
    score = st.simulated_score("weak", "strong")
    router = st.threshold_router(
        "weak", "strong", score=score, threshold=st.calibrate(score, data, 0.5)
    )
    result = sy.run(router, data, host=host)
    assert result.requests["reads_truth"].all()
    assert not bool(result.summary()["realizable"].iloc[0])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"preset": "mf"}, sy.ArgumentError, "unknown preset 'mf'; the presets are bert_arena, "),
        ({"preset": 3}, sy.ArgumentTypeError, "preset must be a string"),
        ({"preset": "mf_arena", "noise": 0.5}, sy.ArgumentError, "one of preset=, apgr= or noise="),
        ({"apgr": 0.6, "noise": 0.5}, sy.ArgumentError, "not apgr= and noise="),
        ({"apgr": math.nan}, sy.ArgumentError, "apgr must be a finite number"),
        ({"apgr": True}, sy.ArgumentTypeError, "apgr must be a number"),
        ({"apgr": "0.6"}, sy.ArgumentTypeError, "apgr must be a number"),
        ({"noise": "0.5"}, sy.ArgumentTypeError, "noise must be a number"),
        ({"noise": -1}, sy.ArgumentError, "noise must be a number ≥ 0"),
        ({"benchmark": "hellaswag"}, sy.ArgumentError, "benchmark must be one of mt_bench"),
        ({"apgr": 0.6, "benchmark": "mmlu"}, sy.ArgumentError, "benchmark= picks a preset"),
        ({"seed": 1.5}, sy.ArgumentTypeError, "seed must be an integer"),
    ],
)
def test_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        st.simulated_score("weak", "strong", **kwargs)


def test_model_names_are_checked():
    with pytest.raises(sy.ArgumentTypeError, match="weak must be a model name"):
        st.simulated_score("", "strong")
    with pytest.raises(sy.ArgumentError, match="different models"):
        st.simulated_score("m", "m")


def test_calibrate_checks_its_requests():
    score = st.simulated_score("weak", "strong")
    with pytest.raises(sy.ArgumentTypeError, match=r"sy\.Request"):
        st.calibrate(score, ["not a request"], 0.5)
    with pytest.raises(sy.ArgumentError, match="requests is empty"):
        st.calibrate(score, [], 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert st.calibrate(score, graded_table(20), 0.0) == math.inf


def test_calibrate_names_the_request_a_score_function_fails_on():
    requests = [sy.Request("fine", id="a"), sy.Request("boom", id="b")]

    def score(request):
        if request.prompt == "boom":
            raise LookupError("no grade for it")
        return 0.5

    with pytest.raises(sy.ArgumentError, match=r"raised on request 'b': LookupError: no grade"):
        st.calibrate(score, requests, 0.5)
    with pytest.raises(sy.ArgumentTypeError, match=r"return a number, got str for request 'a'"):
        st.calibrate(lambda request: "high", requests, 0.5)


def test_the_docs_list_the_presets_figures():
    """docs/router-score.md's table shows the published figures the presets hold."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "router-score.md").read_text()
    for name, row in PUBLISHED.items():
        line = next(line for line in page.splitlines() if line.startswith(f"| `{name}`"))
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        published = [float(cells[i]) for i in (1, 3, 5)]
        assert published == [row["mt_bench"], row["mmlu"], row["gsm8k"]], name
