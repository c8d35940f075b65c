"""APGR/AIQ bootstrap intervals and the random baseline, on synthetic data with a known answer."""

from __future__ import annotations

import numpy as np
import pytest

from sykit import ArgumentError
from sykit._grid.sweep import aiq, apgr
from sykit._results.curve_stats import Curve, Estimate, apgr_of, bootstrap_curve, random_apgr

SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _population(n: int, rng: np.random.Generator, skill: float) -> dict[str, np.ndarray]:
    """Requests where the strong model helps on some; a router's score sees the gain through
    noise (``skill`` = how much of the score is signal)."""
    difficulty = rng.uniform(size=n)
    weak = (difficulty < 0.55).astype(float)
    strong = (difficulty < 0.85).astype(float)
    gain = strong - weak
    score = skill * gain + (1 - skill) * rng.uniform(size=n)
    return {"weak": weak, "strong": strong, "score": score}


def _curve(
    pop: dict[str, np.ndarray], cuts: np.ndarray, clusters: np.ndarray | None = None
) -> Curve:
    """The fixed-threshold router's curve: at each point, requests scoring above the cut go
    strong."""
    to_strong = (pop["score"][:, None] > cuts[None, :]).astype(float)
    quality = np.where(to_strong == 1, pop["strong"][:, None], pop["weak"][:, None])
    cost = np.where(to_strong == 1, 10.0, 1.0)
    return Curve(
        quality,
        to_strong,
        cost,
        pop["weak"],
        pop["strong"],
        np.arange(len(pop["weak"])) if clusters is None else clusters,
    )


def test_point_estimates_equal_the_sweep_formulas():
    rng = np.random.default_rng(1)
    pop = _population(400, rng, 0.5)
    cuts = np.quantile(pop["score"], [1 - s for s in SHARES])
    curve = _curve(pop, cuts)
    boot = bootstrap_curve(curve, resamples=200, seed=0)
    share = curve.strong.mean(axis=0)
    quality = curve.quality.mean(axis=0)
    expected = apgr(
        share, quality, weak_quality=pop["weak"].mean(), strong_quality=pop["strong"].mean()
    )
    assert boot.apgr.value == pytest.approx(expected, abs=1e-12)
    assert boot.aiq.value == pytest.approx(aiq(curve.cost.mean(axis=0), quality), abs=1e-12)
    assert boot.apgr.low < boot.apgr.value < boot.apgr.high


def test_the_interval_covers_the_true_apgr_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    population = _population(200_000, rng, 0.4)
    cuts = np.quantile(population["score"], [1 - s for s in SHARES])
    truth = float(bootstrap_curve(_curve(population, cuts), resamples=100).apgr.value)
    covered = 0
    trials = 200
    for trial in range(trials):
        pick = rng.integers(0, len(population["weak"]), size=400)
        sample = {k: v[pick] for k, v in population.items()}
        estimate = bootstrap_curve(_curve(sample, cuts), resamples=400, seed=trial).apgr
        covered += estimate.low <= truth <= estimate.high
    assert 0.90 <= covered / trials <= 0.99


def test_clusters_are_resampled_together():
    """Pairs of identical requests: resampling pairs (the right unit) gives a wider interval
    than resampling the rows as if they were independent."""
    rng = np.random.default_rng(3)
    pop = _population(300, rng, 0.5)
    doubled = {k: np.repeat(v, 2) for k, v in pop.items()}
    cuts = np.quantile(pop["score"], [1 - s for s in SHARES])
    rows = bootstrap_curve(_curve(doubled, cuts), resamples=1000, seed=0).apgr
    pairs = bootstrap_curve(
        _curve(doubled, cuts, clusters=np.repeat(np.arange(300), 2)), resamples=1000, seed=0
    ).apgr
    assert rows.value == pairs.value
    assert (pairs.high - pairs.low) > 1.2 * (rows.high - rows.low)


def test_random_baseline_is_one_half_with_a_spread_that_shrinks_with_traffic():
    rng = np.random.default_rng(5)
    small = _population(200, rng, 0.0)
    large = _population(5000, rng, 0.0)
    a = random_apgr(small["weak"], small["strong"], SHARES, rankings=2000)
    b = random_apgr(large["weak"], large["strong"], SHARES, rankings=500)
    assert a.value == pytest.approx(0.5, abs=0.01)
    assert b.value == pytest.approx(0.5, abs=0.005)
    assert 0 < b.sd < a.sd
    assert a.low < 0.5 < a.high
    # the closed form of the variance of one share point: a hypergeometric draw of the gains
    assert a.sd < 0.1


def test_apgr_of_matches_the_scalar_formula_row_by_row():
    share = np.array([[0.2, 0.5, 0.8], [0.5, 0.1, 0.9]])
    quality = np.array([[0.6, 0.7, 0.8], [0.65, 0.55, 0.9]])
    weak = np.array([0.5, 0.5])
    strong = np.array([0.9, 0.95])
    got = apgr_of(share, quality, weak, strong)
    for row in range(2):
        assert got[row] == pytest.approx(
            apgr(share[row], quality[row], weak_quality=weak[row], strong_quality=strong[row])
        )


def test_bad_input_is_refused_clearly():
    with pytest.raises(ArgumentError, match="resamples"):
        bootstrap_curve(
            _curve(_population(10, np.random.default_rng(0), 0.5), np.array([0.5])), resamples=3
        )
    with pytest.raises(ArgumentError, match="shape"):
        Curve(np.zeros((3, 2)), np.zeros((3, 1)), np.zeros((3, 2)), *[np.zeros(3)] * 3)


def test_estimate_formats_with_its_interval():
    e = Estimate(0.6812, 0.59, 0.7634)
    assert f"{e:.2f}" == "0.68 [0.59, 0.76]"
    assert float(e) == 0.6812
    assert e.excludes(Estimate(0.5, 0.45, 0.55))
    assert not e.excludes(Estimate(0.6, 0.55, 0.6))


def test_kept_draws_give_what_fresh_draws_give_in_any_order():
    """The bootstrap's weights and the random baseline are kept for the latest call (the
    learners of one table share them): a call with another seed, another number of clusters or
    other qualities in between must not change any result."""
    from sykit._results import curve_stats

    rng = np.random.default_rng(4)
    pops = [_population(n, rng, 0.6) for n in (300, 300, 200)]
    curves = [_curve(p, np.linspace(0.1, 0.9, 5)) for p in pops]
    calls = [(0, 0), (1, 0), (0, 1), (2, 0), (0, 0)]

    def fresh(i: int, seed: int) -> tuple[float, ...]:
        curve_stats._WEIGHTS.clear()
        curve_stats._RANDOM.clear()
        return _results(i, seed)

    def _results(i: int, seed: int) -> tuple[float, ...]:
        boot = bootstrap_curve(curves[i], resamples=300, seed=seed)
        random = random_apgr(pops[i]["weak"], pops[i]["strong"], SHARES, rankings=200, seed=seed)
        return boot.apgr.low, boot.apgr.high, boot.aiq.low, random.value, random.sd

    expected = {call: fresh(*call) for call in set(calls)}
    assert expected[(0, 0)] != expected[(1, 0)] != expected[(0, 1)]
    for call in calls:
        assert _results(*call) == expected[call]
