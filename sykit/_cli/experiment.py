"""What ``sykit compare`` runs: the dataset cut as asked, the weak, strong and judge models and
their hosts (a fault-free one for routing quality, a faulty one for robustness), the strategies
set up for the pair, and every comparison behind the printed tables (the routing run, the
threshold and random sweeps, the cascade at other judge accuracies, the learned routers of
:mod:`.compare_learned`, the robustness run over requests with their share of long prompts).

:func:`run` returns all of it as one :class:`Results`; this module prints nothing and writes
nothing (:mod:`.report` and :mod:`.writers` do: the sweeps' files by a writer :func:`run` is
handed and calls where the sweeps run).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from sykit import strategies
from sykit._cli.background import Background
from sykit._cli.compare_learned import learned_routers, per_benchmark_apgr
from sykit._cli.prose import (
    NO_OUTAGE_NOTE,
    against_fault_free,
    causes,
    default_outage_note,
    describe_faults,
    quality_and_cost,
    workload_note,
)
from sykit._grid.compare import compare
from sykit._hosts.sim import SimHost
from sykit._results.curve_stats import curve_of, random_apgr
from sykit._world.config import Judge, ModelProfile
from sykit._world.faults import Faults
from sykit.learn._crossfit import NO_DEADLINE
from sykit.strategies._calibration import calibrate_shares
from sykit.strategies._router_score import SWEEP_SHARES

__all__ = [
    "JUDGE",
    "JUDGE_ACCURACY",
    "LONG_PROMPT_SHARE",
    "Results",
    "Robustness",
    "default_outage",
    "parse_outage",
    "routellm_lineup",
    "run",
    "weak_and_strong",
    "with_long_prompts",
]

STRONG = "gpt-4-1106-preview"
WEAK = "mixtral-8x7b-instruct-v0.1"
JUDGE = "gpt-4o-mini"
JUDGE_ACCURACY = 0.85
#: The judge accuracies the cascade is also shown at (its edge depends on it).
JUDGE_ACCURACIES = (0.75, 0.85, 0.95)
#: Share of the robustness run's requests given a context longer than the weak model's window.
LONG_PROMPT_SHARE = 0.01
#: Key of the random stream that picks the long prompts (next to the job's seed).
LONG_PROMPT_STREAM = 0x10C
#: The race as the seed system runs it (the first call to complete wins, an error included) and
#: the race that waits for the first success, shown beside it.
RACE = "race weak|strong"
RACE_FIRST_OK = "race (first ok)"
#: The default outage of the weak model: from 25 % to 35 % of its fault-free run.
DEFAULT_OUTAGE = (0.25, 0.35)
#: The largest seed the job takes (a run's seed fits in a signed 64-bit int).
MAX_SEED = 2**63 - 1


@dataclasses.dataclass
class Robustness:
    """What part 2 ran on and found."""

    host: SimHost
    injected: dict[str, str]
    outage_note: str
    workload_note: str
    long_ids: list[str]
    causes: str = "the faults"
    comparison: Any = None
    summary: pd.DataFrame | None = None


@dataclasses.dataclass
class Results:
    """Everything one ``sykit compare`` job ran, for :mod:`.report` to print and :mod:`.writers`
    to write."""

    args: argparse.Namespace
    #: The requests, and the words saying how the dataset was cut to them.
    data: Any
    filters: list[str]
    weak: str
    strong: str
    #: Part 1: the fault-free host and the routing comparison on it, its summary against strong
    #: only (with the strong model's share of answers and costs per 1,000 requests).
    routing_host: SimHost
    routing: Any
    routing_summary: pd.DataFrame
    #: The simulated router score behind the threshold sweep and the random router's expected
    #: APGR on these requests.
    score: Any
    random: Any
    #: The threshold and random sweeps (run alongside the others, with the learned routers).
    sweeps: Sweeps | None
    #: The judge cascade's (quality, cost per 1,000 requests) by the judge's accuracy.
    judged: dict[float, tuple[float, float]]
    #: The learned routers' table, the long table behind it, and the benchmarks too small to
    #: cross-fit.
    learned: pd.DataFrame
    learned_long: pd.DataFrame
    too_small: list[str]
    #: Part 2.
    robust: Robustness
    #: Wall seconds of each part (quality, robustness, judge accuracies; the sweeps and the
    #: learned routers: alongside the others in a second process when the machine has two
    #: cores).
    seconds: dict[str, float]


@dataclasses.dataclass(frozen=True)
class Sweeps:
    """The threshold and random sweeps as the job shows them: small tables, cheap to bring back
    from the second process (a sweep holds every run's records)."""

    #: Both sweeps' curves, a ``router`` column saying which.
    curves: pd.DataFrame
    #: The threshold curve's figure, as :meth:`sykit.Sweep.plot` draws it.
    plotted: dict[str, Any]
    #: The threshold sweep's APGR and AIQ with their bootstrap intervals.
    bounds: Any
    #: The random sweep's APGR in this run.
    random_apgr: float
    #: The threshold sweep's APGR per benchmark (a bound for the learned routers).
    bound: dict[str, float]
    #: The files written for them, when asked.
    files: list[str]


#: Writes the sweeps' files: ``write(curves, plotted)`` returns the names written.
SweepWriter = Callable[[pd.DataFrame, dict[str, Any]], list[str]]


def sweep_parts(thresholds: Any, randoms: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The sweeps' curves (a ``router`` column saying which) and the threshold curve's figure
    arguments: what their files are drawn from."""
    from sykit._grid.sweep import curve_plot_arguments

    curves = pd.concat(
        [thresholds.curve.assign(router="threshold"), randoms.curve.assign(router="random")]
    )
    return curves, curve_plot_arguments(thresholds)


#: Runs a side task, maybe in another process: ``offload(fn, *args)`` returns what waits for
#: ``fn(*args)``'s result (see :meth:`Background.also`).
Offload = Callable[..., Callable[[], Any]]


def run(
    args: argparse.Namespace,
    meanwhile: Callable[[Results, Offload], None] | None = None,
    write_sweeps: SweepWriter | None = None,
) -> Results:
    """Run everything ``sykit compare`` shows, with parsed arguments: a bad setting is refused
    before anything runs. The sweeps, the learned routers and the cascade at other judge
    accuracies run in a second process (when the machine has two cores) while this one runs the
    routing and robustness parts; ``write_sweeps`` writes the sweeps' files there, as soon as
    they are done. ``meanwhile(results, offload)`` is called once the parts of this process have
    run (the others' fields then empty), while the others finish: the job writes its other files
    there, handing what it can to ``offload``."""
    from sykit import profiles

    _checked_share(args.long_prompts)
    _checked_seed(args.seed)
    if args.workers < 1:
        raise SystemExit(f"--workers must be 1 or more, got {args.workers}")
    started = time.perf_counter()
    data, filters = _load(args)
    models = list(data.models)
    if len(models) < 2:
        raise SystemExit(f"dataset {args.dataset!r} needs at least two models with ground truth")
    weak, strong = weak_and_strong(args.dataset)
    names = {"weak": weak, "strong": strong, "judge": JUDGE}
    _asked_outages(args.outage, names)  # a bad --outage is refused before anything runs

    clean = profiles.from_catalog([weak, strong, JUDGE])
    judge = Judge(accuracy=JUDGE_ACCURACY)
    # No deadline on the routing host: a slow answer must not turn into a timeout and a
    # cooldown re-route in the part that measures routing alone.
    routing_host = SimHost(clean, judge=judge, policy=NO_DEADLINE)
    runs: dict[str, Any] = {
        "seeds": [args.seed],
        "concurrency": args.concurrency,
        "progress": False if args.quiet else None,
    }
    setting = _Routing(data, weak, strong, routing_host, {**runs, "progress": False}, args.seed)
    learning = Background(_alongside, setting, write_sweeps, workers=args.workers)
    try:
        return _run(
            args,
            started,
            data,
            filters,
            names,
            clean,
            judge,
            routing_host,
            runs,
            learning,
            meanwhile,
        )
    finally:
        learning.cancel()  # a part failed or was interrupted: stop the worker


def _run(
    args: argparse.Namespace,
    started: float,
    data: Any,
    filters: list[str],
    names: Mapping[str, str],
    clean: Mapping[str, ModelProfile],
    judge: Judge,
    routing_host: SimHost,
    runs: dict[str, Any],
    learning: Background[tuple[Sweeps, Any, dict[str, float]]],
    meanwhile: Callable[[Results, Offload], None] | None,
) -> Results:
    weak, strong = names["weak"], names["strong"]
    lineup = routellm_lineup(weak, strong, JUDGE, data)
    routing = compare(lineup, data, host=routing_host, **runs)
    routing_summary = routing.summary(baseline="strong only")
    share = _strong_share(routing, strong)
    routing_summary.insert(
        routing_summary.columns.get_loc("cost_per_1k_requests_usd") + 1,
        "strong_share",
        routing_summary["strategy"].map(share),
    )
    routing_summary["d_cost_per_1k_requests_usd"] = routing_summary["d_cost_usd"] * 1000
    random = random_baseline(routing, weak, strong, seed=args.seed)
    seconds = {"quality": time.perf_counter() - started}
    started = time.perf_counter()
    robust = _robustness(args, clean, judge, data, lineup, names, routing, routing_summary, runs)
    seconds["robustness"] = time.perf_counter() - started
    started = time.perf_counter()
    others = _cascade_at_other_accuracies(clean, data, weak, strong, {**runs, "progress": False})
    seconds["judge accuracies"] = time.perf_counter() - started
    results = Results(
        args=args,
        data=data,
        filters=filters,
        weak=weak,
        strong=strong,
        routing_host=routing_host,
        routing=routing,
        routing_summary=routing_summary,
        score=strategies.simulated_score(weak, strong),
        random=random,
        sweeps=None,
        judged=_by_judge_accuracy(others, routing_summary),
        learned=pd.DataFrame(),
        learned_long=pd.DataFrame(),
        too_small=[],
        robust=robust,
        seconds=seconds,
    )
    if meanwhile is not None:
        meanwhile(results, learning.also)
    waiting = time.perf_counter()
    (sweeps, (learned, learned_long, too_small), part_s), _ = learning.result()
    where = " (alongside, in a second process)" if learning.alongside else ""
    seconds.update({f"{part}{where}": part_s[part] for part in part_s})
    if learning.alongside:
        seconds["waiting for them"] = time.perf_counter() - waiting
    return dataclasses.replace(
        results,
        sweeps=sweeps,
        learned=learned,
        learned_long=learned_long,
        too_small=too_small,
    )


def routellm_lineup(weak: str, strong: str, judge: str, requests: Any) -> dict[str, Any]:
    """The library's strategies set up for a weak/strong pair."""
    score = strategies.simulated_score(weak, strong)
    threshold = strategies.calibrate(score, requests, 0.3)
    return {
        "weak only": strategies.single(weak),
        "strong only": strategies.single(strong),
        "random 30% strong": strategies.weighted_random({weak: 0.7, strong: 0.3}),
        "fallback weak>strong": strategies.fallback_chain([weak, strong]),
        "cascade (judge)": strategies.cascade(weak, strong, judge=judge, judge_timeout_s=5.0),
        "threshold 30% strong": strategies.threshold_router(
            weak, strong, score=score, threshold=threshold
        ),
        "speculative (judge)": strategies.speculative(weak, strong, judge=judge),
        RACE: strategies.race([weak, strong]),
        RACE_FIRST_OK: strategies.first_success([weak, strong]),
        "hedge strong @p95": strategies.hedge(strong, after="p95"),
        "litellm-like": strategies.litellm_like([weak, strong]),
        "oracle": strategies.oracle([weak, strong]),
    }


def weak_and_strong(dataset: str) -> tuple[str, str]:
    """The weak and strong models of a shipped dataset: RouteLLM's pair where it has them, else
    its last and first models, the strong one the one with the higher mean quality over the whole
    dataset (a sample of it cannot swap them; a strong model worse than the weak one would make
    every finding against it upside down)."""
    from sykit import datasets

    full = datasets.load(dataset)
    models = list(full.models)
    if {WEAK, STRONG} <= set(models):
        return WEAK, STRONG
    first, last = models[0], models[-1]
    quality = full.summary()["mean_quality"]
    if quality[last] > quality[first]:
        return first, last
    return last, first


def parse_outage(text: str, names: Mapping[str, str]) -> tuple[str, float, float]:
    """``MODEL:START-END`` → (model, start, end); ``names`` maps aliases (weak, strong, judge)."""
    match = re.fullmatch(r"\s*([^:]+):\s*([0-9.]+)\s*-\s*([0-9.]+)\s*", text)
    if match is None:
        raise SystemExit(f"--outage {text!r}: expected MODEL:START-END, e.g. weak:120-180")
    model = names.get(match.group(1).strip(), match.group(1).strip())
    if model not in names.values():
        raise SystemExit(
            f"--outage {text!r}: unknown model {model!r}; use weak, strong, judge or one of "
            f"{sorted(set(names.values()))}"
        )
    try:
        start, end = float(match.group(2)), float(match.group(3))
    except ValueError:
        raise SystemExit(
            f"--outage {text!r}: START and END must be numbers of seconds, e.g. weak:120-180"
        ) from None
    if not (math.isfinite(start) and math.isfinite(end) and 0 <= start < end):
        raise SystemExit(f"--outage {text!r}: START must be ≥ 0 and before END")
    return model, start, end


def _strong_share(comparison: Any, strong: str) -> pd.Series:
    requests = comparison.requests
    served = requests["served_model"].astype(str) == strong
    return served.groupby(requests["strategy"].astype(str), sort=False).mean()


def with_long_prompts(data: Any, share: float, window: int, seed: int) -> tuple[Any, list[str]]:
    """The requests with ``share`` of them (drawn with ``seed``) given a long context of
    1.1–1.5 × ``window`` tokens (a pasted document), as real traffic has: a model with that window
    must refuse them, which is what fallbacks are for. Also their ids."""
    frame = data.frame
    count = round(share * len(frame))
    rng = np.random.default_rng([seed, LONG_PROMPT_STREAM])
    rows = np.sort(rng.choice(len(frame), size=count, replace=False))
    frame["long_context"] = False
    frame.loc[rows, "input_tokens"] = rng.integers(
        int(window * 1.1), int(window * 1.5), count, endpoint=True
    )
    frame.loc[rows, "long_context"] = True
    workload = data._derive(frame, same_rows=False)
    return workload, [str(i) for i in frame.loc[rows, "id"]]


def default_outage(requests: pd.DataFrame, strategy: str) -> tuple[float, float]:
    """A 503 window over :data:`DEFAULT_OUTAGE` of the time ``strategy`` took to start all its
    requests in its fault-free run (``requests`` is that run's table), so a sample and the full
    table both meet an outage of the same relative size."""
    span = float(requests.loc[requests["strategy"].astype(str) == strategy, "start_s"].max())
    start, end = (round(share * span, 1) for share in DEFAULT_OUTAGE)
    return start, max(end, start + 0.1)


def _asked_outages(
    texts: list[str], names: Mapping[str, str]
) -> list[tuple[str, float, float]] | None:
    """The outages asked with ``--outage`` (``none``: no outage), or None for the default one."""
    if not texts:
        return None
    if [t.strip().lower() for t in texts] == ["none"]:
        return []
    return [parse_outage(text, names) for text in texts]


def _checked_share(share: float) -> float:
    if not (math.isfinite(share) and 0 <= share <= 1):
        raise SystemExit(f"--long-prompts must be a share between 0 and 1, got {share}")
    return share


def _checked_seed(seed: int) -> int:
    """The job's seed: numpy's generators, which draw its samples, long prompts and bootstraps,
    take no negative seed."""
    if not 0 <= seed <= MAX_SEED:
        raise SystemExit(f"--seed must be a whole number from 0 to 2**63 - 1, got {seed}")
    return seed


def _checked_benchmark(data: Any, dataset: str, benchmark: str) -> str:
    """``benchmark`` if ``data`` has it: a name it lacks would leave no request to run."""
    frame = data.frame
    if "benchmark" not in frame.columns:
        raise SystemExit(
            f"--benchmark {benchmark!r}: dataset {dataset!r} has no benchmarks; leave --benchmark out"
        )
    known = sorted(str(b) for b in frame["benchmark"].unique())
    if benchmark not in known:
        raise SystemExit(
            f"--benchmark {benchmark!r}: not a benchmark of {dataset!r}; use one of "
            f"{', '.join(known)}"
        )
    return benchmark


def _load(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The dataset the job runs on and the words saying how it was cut."""
    from sykit import datasets

    data = datasets.load(args.dataset)
    filters = []
    if args.benchmark is not None:
        data = data.filter(benchmark=_checked_benchmark(data, args.dataset, args.benchmark))
        filters.append(f"benchmark={args.benchmark}")
    if "contaminated" in data.frame.columns:
        data = data.filter(contaminated=False)
        filters.append("contaminated prompts left out")
    if args.sample is not None and args.sample < 1:
        raise SystemExit(f"--sample must be a number of requests ≥ 1, got {args.sample}")
    if args.sample and args.sample < len(data):
        by_benchmark = "benchmark" in data.frame.columns and not args.benchmark
        data = data.sample(
            args.sample, seed=args.seed, stratify="benchmark" if by_benchmark else None
        )
        filters.append(f"a {'stratified ' if by_benchmark else ''}sample of {args.sample}")
    return data, filters


def _robustness(
    args: argparse.Namespace,
    clean: Mapping[str, ModelProfile],
    judge: Judge,
    data: Any,
    lineup: Mapping[str, Any],
    names: Mapping[str, str],
    routing: Any,
    routing_summary: pd.DataFrame,
    runs: Mapping[str, Any],
) -> Robustness:
    """Part 2: the same strategies on the faulty host, over the requests with their share of
    long prompts."""
    weak = names["weak"]
    outages, outage_note = _outages(args, names, routing.requests)
    random_faults = Faults.realistic() if args.faults == "realistic" else Faults()
    faulty: dict[str, ModelProfile] = {}
    for name, profile in clean.items():
        windows = tuple((start, end) for model, start, end in outages if model == name)
        faulty[name] = profile.replace(faults=random_faults.replace(outages=windows))
    host = SimHost(faulty, judge=judge)
    injected = {name: describe_faults(p.faults) for name, p in faulty.items()}
    window = clean[weak].context_window
    workload, long_ids = with_long_prompts(data, args.long_prompts, window, args.seed)
    note = workload_note(len(data), len(long_ids), args.long_prompts, args.seed, weak, window)
    found = Robustness(host, injected, outage_note, note, long_ids)
    found.causes = causes(random_faults, len(outages), len(long_ids))
    if any(injected.values()):
        found.comparison = compare(lineup, workload, host=host, **runs)
        found.summary = against_fault_free(found.comparison.summary(), routing_summary)
    return found


def _outages(
    args: argparse.Namespace, names: Mapping[str, str], requests: pd.DataFrame
) -> tuple[list[tuple[str, float, float]], str]:
    """The robustness run's outages (those asked, else the default one with realistic faults)
    and the line that says where they come from (empty when the fault lines say it all)."""
    asked = _asked_outages(args.outage, names)
    if asked is not None or args.faults != "realistic":
        note = "" if asked else NO_OUTAGE_NOTE
        return asked or [], note
    weak = names["weak"]
    start, end = default_outage(requests, "weak only")
    return [(weak, start, end)], default_outage_note(weak, DEFAULT_OUTAGE, start, end)


def random_baseline(routing: Any, weak: str, strong: str, seed: int) -> Any:
    """The random router's APGR on these requests: expected value and spread over random
    rankings, from the weak-only and strong-only runs."""
    only = curve_of(routing.requests, ["strong only"], "weak only", "strong only", strong)
    return random_apgr(only.weak, only.strong_only, SWEEP_SHARES, seed=seed)


def _cascade_at_other_accuracies(
    clean: Mapping[str, ModelProfile], data: Any, weak: str, strong: str, runs: Mapping[str, Any]
) -> dict[float, tuple[float, float]]:
    """The judge cascade's mean quality and cost per 1,000 requests with a simulated judge right
    75 % and 95 % of the time (its edge over the strong model rests on that accuracy); the
    routing table's own run gives the job's accuracy (see :func:`_by_judge_accuracy`)."""
    found = {}
    cascade = strategies.cascade(weak, strong, judge=JUDGE, judge_timeout_s=5.0)
    for accuracy in JUDGE_ACCURACIES:
        if accuracy != JUDGE_ACCURACY:
            host = SimHost(clean, judge=Judge(accuracy=accuracy), policy=NO_DEADLINE)
            summary = compare({"cascade": cascade}, data, host=host, **runs).summary()
            found[accuracy] = quality_and_cost(summary, "cascade")
    return found


def _by_judge_accuracy(
    others: Mapping[float, tuple[float, float]], routing_summary: pd.DataFrame
) -> dict[float, tuple[float, float]]:
    """The cascade's (quality, cost per 1,000 requests) at every judge accuracy, in order."""
    own = {JUDGE_ACCURACY: quality_and_cost(routing_summary, "cascade (judge)")}
    return {accuracy: {**others, **own}[accuracy] for accuracy in JUDGE_ACCURACIES}


@dataclasses.dataclass(frozen=True)
class _Routing:
    """What the parts run alongside the others share: the requests, the weak and strong models,
    the fault-free routing host, the runs' settings (no progress bars) and the seed."""

    data: Any
    weak: str
    strong: str
    host: SimHost
    runs: Mapping[str, Any]
    seed: int


def _sweeps(setting: _Routing, write: SweepWriter | None) -> Sweeps:
    """The threshold sweep of the simulated score and the random sweep on the routing host, what
    the job shows of them, and their files (``write``, when given)."""
    from sykit._grid.sweep import sweep

    data, weak, strong, runs = setting.data, setting.weak, setting.strong, setting.runs
    score = strategies.simulated_score(weak, strong)
    targets = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    calibrated = dict(zip(targets, calibrate_shares(score, data, targets), strict=True))
    thresholds = sweep(
        lambda target: strategies.threshold_router(
            weak, strong, score=score, threshold=calibrated[target]
        ),
        targets,
        data,
        host=setting.host,
        weak=weak,
        strong=strong,
        value_name="target_share",
        **runs,
    )
    randoms = sweep(
        lambda target: strategies.weighted_random({weak: 1 - target, strong: target}),
        [0.1, 0.3, 0.5, 0.7, 0.9],
        data,
        host=setting.host,
        weak=weak,
        strong=strong,
        value_name="target_share",
        **runs,
    )
    requests = thresholds.comparison.requests
    group = data.group_column if data.group_column in requests.columns else None
    frame = data.frame
    benchmarks = sorted(frame["benchmark"].unique()) if "benchmark" in frame.columns else []
    curves, plotted = sweep_parts(thresholds, randoms)
    return Sweeps(
        curves,
        plotted,
        thresholds.intervals(seed=setting.seed, group=group),
        randoms.apgr(),
        per_benchmark_apgr(thresholds, benchmarks) if benchmarks else {},
        [] if write is None else write(curves, plotted),
    )


def _alongside(
    setting: _Routing, write_sweeps: SweepWriter | None
) -> tuple[Sweeps, Any, dict[str, float]]:
    """What needs nothing the routing and robustness parts compute (run alongside them when the
    machine has two cores): the sweeps (and their files), the learned routers, and the seconds
    each took."""
    seconds = {}
    started = time.perf_counter()
    sweeps = _sweeps(setting, write_sweeps)
    seconds["sweeps"] = time.perf_counter() - started
    started = time.perf_counter()
    learned = learned_routers(
        setting.data, setting.weak, setting.strong, setting.host, setting.seed
    )
    seconds["learned routers"] = time.perf_counter() - started
    return sweeps, learned, seconds
