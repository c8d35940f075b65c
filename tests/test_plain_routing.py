"""Static routers that carry their routing as a plain function (``weighted_random``,
``threshold_router``, ``sy.strategies.static(fn)``) are routed in bulk without a driver or a
coroutine per request, with the frames the event engines give."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pandas.testing as pdt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sykit as sy
from sykit._run.engines.bulk import _run as bulk_run

HOST = sy.SimHost(
    {"weak": sy.ModelProfile(), "strong": sy.ModelProfile()},
    policy=sy.HostPolicy(cooldown_s=0.0),
)


def run(algorithm: Any, requests: Any, **kwargs: Any) -> sy.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sy.run(algorithm, requests, progress=False, **kwargs)


def same(one: sy.Result, two: sy.Result) -> None:
    pdt.assert_frame_equal(one.attempts, two.attempts, check_exact=True)
    pdt.assert_frame_equal(one.requests, two.requests, check_exact=True)


@pytest.fixture
def no_coroutines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Routing through the algorithm's coroutine fails the test."""

    def refused(fn: Any, state: Any) -> Any:
        raise AssertionError("routed through the algorithm's coroutine")

    monkeypatch.setattr(bulk_run, "_route_statically", refused)


def dataset() -> sy.datasets.Dataset:
    return sy.datasets.load("routellm").filter(lambda f: f.index < 400)


WEAK, STRONG = "mixtral-8x7b-instruct-v0.1", "gpt-4-1106-preview"


def routers(data: sy.datasets.Dataset) -> dict[str, Any]:
    score = sy.strategies.simulated_score(WEAK, STRONG)

    def tied(request: sy.Request) -> float:  # many requests score alike
        return float(len(request.prompt) % 3)

    return {
        "random": sy.strategies.weighted_random({WEAK: 0.7, STRONG: 0.3}),
        "random, own seed": sy.strategies.weighted_random([WEAK, STRONG], seed=5),
        "simulated": sy.strategies.threshold_router(
            WEAK, STRONG, score=score, threshold=sy.strategies.calibrate(score, data, 0.3)
        ),
        "ties": sy.strategies.threshold_router(
            WEAK, STRONG, score=tied, threshold=sy.strategies.calibrate(tied, data, 0.45)
        ),
        "function": sy.strategies.threshold_router(
            WEAK, STRONG, score=lambda r: len(r.prompt) % 11, threshold=5
        ),
        "plain static": sy.strategies.static(
            lambda r: [STRONG, WEAK] if len(r.prompt) > 400 else WEAK, name="plain"
        ),
    }


@pytest.mark.parametrize("name", list(routers(dataset())))
def test_plain_routing_gives_the_event_engines_frames(no_coroutines: None, name: str) -> None:
    data = dataset()
    host = sy.SimHost(
        sy.profiles.from_catalog(data.models), policy=sy.HostPolicy(cooldown_s=0, timeout_s=20.0)
    )
    algorithm = routers(data)[name]
    bulk = run(algorithm, data, host=host, seed=3, concurrency=8)
    kernel = run(algorithm, data, host=host, seed=3, concurrency=8, engine="kernel")
    assert (bulk.engine, kernel.engine) == ("bulk", "kernel")
    same(bulk, kernel)
    if name == "ties":
        assert bulk.requests["evidence_tie_break"].notna().sum() > 1
    reads = bool(bulk.requests["reads_truth"].all())
    assert reads == (name == "simulated")


def test_a_request_without_an_id_is_routed_with_the_runs_id(no_coroutines: None) -> None:
    seen: list[Any] = []

    def score(request: sy.Request) -> float:
        seen.append(request.id)
        return float(len(request.prompt))

    algorithm = sy.strategies.threshold_router("weak", "strong", score=score, threshold=2)
    result = run(algorithm, ["a", "bb", "ccc"], host=HOST)
    assert result.engine == "bulk"
    assert seen == [0, 1, 2]
    assert result.requests["selected_model"].tolist() == ["weak", "strong", "strong"]


def test_a_score_that_gives_an_awaitable_is_awaited_on_the_event_engines() -> None:
    async def later(request: sy.Request) -> float:
        return float(len(request.prompt))

    requests = ["a", "bb", "ccc", "dddd"]
    lambda_score = sy.strategies.threshold_router(
        "weak", "strong", score=lambda r: later(r), threshold=3
    )
    async_score = sy.strategies.threshold_router("weak", "strong", score=later, threshold=3)
    one, two = run(lambda_score, requests, host=HOST), run(async_score, requests, host=HOST)
    assert one.engine == "kernel"
    assert one.requests["selected_model"].tolist() == ["weak", "weak", "strong", "strong"]
    pdt.assert_frame_equal(
        one.requests.drop(columns="strategy"), two.requests.drop(columns="strategy")
    )


def test_a_plain_route_that_fails_or_names_an_unknown_model_is_recorded_by_the_events() -> None:
    weights = sy.strategies.weighted_random({"weak": 1.0, "nowhere": 1.0})
    result = run(weights, [f"q{i}" for i in range(20)], host=HOST)
    assert result.engine == "kernel"
    assert set(result.requests["error_kind"].dropna()) == {"unknown_model"}


@pytest.fixture
def columns_made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many requests each reading of a run's requests into columns (Columns.of) read."""
    made: list[int] = []
    of = bulk_run.Columns.of

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(args[1])
        return of(*args, **kwargs)

    monkeypatch.setattr(bulk_run.Columns, "of", counted)
    return made


def test_the_runs_of_a_comparison_read_their_requests_columns_once(columns_made: list[int]) -> None:
    made = columns_made
    lineup = {
        "chain": sy.strategies.fallback_chain(["weak", "strong"]),
        "random": sy.strategies.weighted_random(["weak", "strong"]),
        "plain": sy.strategies.static(lambda r: "strong", name="plain"),
    }
    requests = [f"q{i}" for i in range(30)]
    cmp = sy.compare(lineup, requests, host=HOST, progress=False, seeds=(0, 1))
    assert {r.engine for r in cmp.results} == {"bulk"}
    assert made == [30]  # six runs, one reading
    alone = {n: run(fn, requests, host=HOST, seed=1, strategy=n) for n, fn in lineup.items()}
    for name, result in alone.items():
        pdt.assert_frame_equal(cmp.result(name, seed=1).requests, result.requests)
    assert made == [30, 30, 30, 30]  # each run of its own reads its own


def test_runs_over_one_dataset_read_its_requests_columns_once(columns_made: list[int]) -> None:
    made = columns_made
    data = dataset()
    host = sy.SimHost(sy.profiles.from_catalog(data.models), policy=sy.HostPolicy(cooldown_s=0))
    first = run(sy.strategies.single(WEAK), data, host=host)
    again = run(sy.strategies.weighted_random([WEAK, STRONG]), data, host=host)
    other = run(sy.strategies.single(WEAK), data.filter(lambda f: f.index < 100), host=host)
    assert (first.engine, again.engine, other.engine) == ("bulk",) * 3
    assert made == [400, 100]  # once per dataset: the filtered one is another
    pdt.assert_frame_equal(
        first.requests.head(100).drop(columns="request_id"),
        other.requests.drop(columns="request_id"),
        check_categorical=False,
    )


@pytest.mark.parametrize("concurrency", [1, 3, 64])
def test_a_closed_loop_of_one_attempt_a_request_is_placed_as_the_events_place_it(
    concurrency: int,
) -> None:
    """Equal durations (slots that free up at the same instant) and unequal ones."""
    host = sy.SimHost(
        {
            "weak": sy.ModelProfile(latency=sy.Latency(ttft=0.5, tokens_per_s=100.0)),
            "strong": sy.ModelProfile(
                latency=sy.Latency(ttft=sy.dists.LogNormal(0.7, sigma=0.8), tokens_per_s=50.0)
            ),
        },
        policy=sy.HostPolicy(cooldown_s=0.0),
    )
    requests = [sy.Request(f"q{i}", input_tokens=10 + i % 7) for i in range(40)]
    for algorithm in (
        sy.strategies.single("weak"),
        sy.strategies.weighted_random({"weak": 0.5, "strong": 0.5}),
    ):
        bulk = run(algorithm, requests, host=host, concurrency=concurrency, seed=2)
        kernel = run(
            algorithm, requests, host=host, concurrency=concurrency, seed=2, engine="kernel"
        )
        assert bulk.engine == "bulk"
        same(bulk, kernel)


def test_a_cross_fits_strategies_route_each_fold_by_its_plain_function(
    no_coroutines: None,
) -> None:
    data = sy.datasets.load("routellm").filter(benchmark="gsm8k", contaminated=False)
    cv = sy.learn.cross_fit(sy.learn.Logistic(), data, shares=(0.3,), folds=3)
    assert {r.engine for r in cv.comparison.results} == {"bulk"}
    rows = cv.comparison.requests
    routed = rows[rows["strategy"].astype(str).str.contains("strong")]
    assert routed["evidence_score"].notna().all()  # every request scored by its fold's router


# -- routing every request at once ----------------------------------------------------------------


def graded_table(grades: list[tuple[float | None, float | None, str]]) -> sy.datasets.Dataset:
    frame = pd.DataFrame(
        {
            "prompt": [f"prompt {i}" for i in range(len(grades))],
            "weak": [w for w, _, _ in grades],
            "strong": [s for _, s, _ in grades],
            "benchmark": [b for _, _, b in grades],
        }
    )
    return sy.datasets.from_frame(
        frame, prompt="prompt", quality={"weak": "weak", "strong": "strong"}, metadata=["benchmark"]
    )


GRADE = st.one_of(st.none(), st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]))
ROWS = st.lists(st.tuples(GRADE, GRADE, st.sampled_from(["a", "b"])), min_size=4, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rows=ROWS,
    weights=st.lists(st.sampled_from([0.0, 0.0, 0.2, 1.0, 3.0]), min_size=2, max_size=2).filter(
        lambda w: sum(w) > 0
    ),
    seed=st.integers(0, 5),
    share=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    kind=st.sampled_from(["preset", "apgr", "noise", "function", "ties"]),
)
def test_routing_every_request_at_once_gives_the_event_engines_frames(
    rows: list[tuple[float | None, float | None, str]],
    weights: list[float],
    seed: int,
    share: float,
    kind: str,
) -> None:
    """``route_many`` (weighted_random, threshold_router) against the algorithm's coroutine on
    the kernel: missing grades, two benchmarks, zero weights, ties at the threshold."""
    data = graded_table(rows)
    if kind == "function" or kind == "ties":
        score: Any = (
            (lambda r: len(r.prompt) % 3) if kind == "ties" else (lambda r: len(r.prompt) / 7)
        )
    else:
        score = sy.strategies.simulated_score(
            "weak",
            "strong",
            **({"apgr": 0.7} if kind == "apgr" else {"noise": 0.2} if kind == "noise" else {}),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threshold = sy.strategies.calibrate(score, data, share)
    lineup = {
        "random": sy.strategies.weighted_random(
            dict(zip(["weak", "strong"], weights, strict=True))
        ),
        "threshold": sy.strategies.threshold_router(
            "weak", "strong", score=score, threshold=threshold
        ),
    }
    bulk = sy.compare(lineup, data, host=HOST, progress=False, seeds=(seed,))
    kernel = sy.compare(lineup, data, host=HOST, progress=False, seeds=(seed,), engine="kernel")
    assert {r.engine for r in bulk.results} == {"bulk"}
    pdt.assert_frame_equal(bulk.requests, kernel.requests, check_exact=True)
    pdt.assert_frame_equal(bulk.attempts, kernel.attempts, check_exact=True)


def test_a_simulated_score_routes_every_request_at_once(
    monkeypatch: pytest.MonkeyPatch, no_coroutines: None
) -> None:
    called = []
    original = bulk_run._Bulk._route_many

    def counted(self: Any, route_many: Any) -> Any:
        called.append(self.run.strategy)
        return original(self, route_many)

    monkeypatch.setattr(bulk_run._Bulk, "_route_many", counted)
    monkeypatch.setattr(bulk_run._Bulk, "_route_by", None)  # routing one by one fails the test
    data = dataset()
    host = sy.SimHost(sy.profiles.from_catalog(data.models), policy=sy.HostPolicy(cooldown_s=0))
    result = run(routers(data)["simulated"], data, host=host, strategy="simulated")
    assert called == ["simulated"] and result.engine == "bulk"
    assert result.requests["reads_truth"].all()


def test_a_route_the_algorithm_could_not_serve_fails_its_request_alone() -> None:
    """A static router that returns an empty model name for one request: ``engine="auto"``
    records that request's failure as the event engines do, not a failed run; the bulk engine,
    asked for by name, says why it cannot run it."""
    host = sy.SimHost({"small": sy.ModelProfile()})

    def route(request: sy.Request) -> str:
        return "" if request.id == 1 else "small"

    static = sy.strategies.static(route, name="st")
    auto = run(static, ["a", "b", "c"], host=host)
    kernel = run(static, ["a", "b", "c"], host=host, engine="kernel")
    pd.testing.assert_frame_equal(auto.requests, kernel.requests, check_exact=True)
    assert auto.requests["status"].astype(str).tolist() == ["ok", "failed", "ok"]
    with pytest.raises(sy.errors.ArgumentError, match="cannot run on the bulk engine"):
        run(static, ["a", "b", "c"], host=host, engine="bulk")
