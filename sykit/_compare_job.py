"""``sykit compare``: the library's strategies on a shipped evaluation table, in two honest parts.

1. **Routing quality**, on a host with no faults: which strategy gives the best answers for the
   money. APGR and AIQ of a threshold sweep and of a random router come from these fault-free runs,
   so an outage cannot pass for routing skill.
2. **Robustness**, on the same requests and host with the faults printed in the header (and the
   outages asked for with ``--outage``): who still answers, how fast, at what waste.

Everything needed to reproduce the run (settings, seeds, faults, package versions) is written to
``run.json`` next to the CSVs and plots.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import re
import sys
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from . import strategies
from ._compare_learned import learned_routers, per_benchmark_apgr
from ._config import ErrorFault, Faults, Judge, ModelProfile
from ._curve_stats import curve_of, random_apgr
from ._hosts.sim import SimHost
from ._router_score import SWEEP_SHARES
from ._runner import compare
from .learn._crossfit import NO_DEADLINE

__all__ = ["ROBUSTNESS_COLUMNS", "ROUTING_COLUMNS", "add_arguments", "routellm_lineup", "run_job"]

STRONG = "gpt-4-1106-preview"
WEAK = "mixtral-8x7b-instruct-v0.1"
JUDGE = "gpt-4o-mini"
JUDGE_ACCURACY = 0.85
#: The judge accuracies the cascade is also shown at (its edge depends on it).
JUDGE_ACCURACIES = (0.75, 0.85, 0.95)

#: The columns of the routing-quality table (fault-free run).
ROUTING_COLUMNS = (
    "strategy",
    "realizable",
    "mean_quality",
    "quality_ci_low",
    "quality_ci_high",
    "cost_per_1k_requests_usd",
    "strong_share",
    "d_quality",
    "d_cost_usd",
)
#: The columns of the robustness table (run under faults).
ROBUSTNESS_COLUMNS = (
    "strategy",
    "success_rate",
    "mean_quality",
    "cost_per_1k_requests_usd",
    "latency_p50_s",
    "latency_p99_s",
    "attempts_per_request",
    "retries",
    "fallbacks",
    "wasted_share",
)
_FAULT_WORDS = {
    "rate_limit": "429 rate limits",
    "unavailable": "5xx errors",
    "timeout": "hangs until the client deadline",
    "policy": "content-policy 400s",
    "invalid": "plain 400s",
    "reset": "connection resets",
    "cut_stream": "answers cut mid-stream",
    "malformed": "malformed answers",
    "non_chat": "non-chat 200 bodies",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset", default="routellm", help="a shipped dataset (sy.datasets.names())"
    )
    parser.add_argument(
        "--benchmark", default=None, help="keep one benchmark of the dataset (e.g. gsm8k)"
    )
    parser.add_argument(
        "--sample", type=int, default=None, help="sample this many requests (stratified)"
    )
    parser.add_argument(
        "--faults",
        choices=("realistic", "none"),
        default="realistic",
        help="random faults of the robustness run (default: realistic, see sy.Faults.realistic)",
    )
    parser.add_argument(
        "--outage",
        action="append",
        default=[],
        metavar="MODEL:START-END",
        help="a window of virtual seconds in which MODEL (a name, 'weak', 'strong' or 'judge') "
        "answers 503 in the robustness run; repeatable",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--out", default=None, help="folder for CSVs, PNG plots and run.json")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


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
        "race weak|strong": strategies.race([weak, strong]),
        "hedge strong @p95": strategies.hedge(strong, after="p95"),
        "litellm-like": strategies.litellm_like([weak, strong]),
        "oracle": strategies.oracle([weak, strong]),
    }


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
    start, end = float(match.group(2)), float(match.group(3))
    if not (math.isfinite(start) and math.isfinite(end) and 0 <= start < end):
        raise SystemExit(f"--outage {text!r}: START must be ≥ 0 and before END")
    return model, start, end


def describe_faults(faults: Faults) -> str:
    """One line naming every fault a profile injects (empty when it injects none)."""
    parts = []
    for name, words in _FAULT_WORDS.items():
        p = getattr(faults, name)
        if p:
            detail = ""
            if name == "rate_limit" and faults.retry_after_s is not None:
                detail = f", Retry-After {faults.retry_after_s:g} s"
            if name == "unavailable":
                detail = f", HTTP {faults.unavailable_status}"
            if name in ("cut_stream", "malformed") and faults.break_after_tokens is not None:
                detail = f", after {faults.break_after_tokens} tokens"
            parts.append(f"{p:.1%} {words}{detail}")
    parts += [_describe_error(error) for error in faults.errors if error.p]
    if faults.spike_p:
        parts.append(f"{faults.spike_p:.1%} of answers {faults.spike_factor:g}× slower")
    if faults.stall_p:
        parts.append(f"{faults.stall_p:.1%} of answers stall {faults.stall_s:g} s half-way")
    for start, end in faults.outages:
        parts.append(f"outage (503) from t={start:g} s to t={end:g} s")
    if faults.fail_first:
        parts.append(f"first {faults.fail_first} attempts fail ({faults.fail_first_status})")
    if faults.flapping is not None:
        parts.append(f"flapping {faults.flapping}")
    return "; ".join(parts)


def _describe_error(error: ErrorFault) -> str:
    """``5.0% HTTP 401 (invalid_api_key)``: the code says what the error is; without one given,
    a message given says it better than the status's default code."""
    label = error.code
    if label is None and error.message is not None:
        message = error.message if len(error.message) <= 40 else error.message[:39].rstrip() + "…"
        label = f'"{message}"'
    if label is None:
        label = error.error("{model}")["code"]
    words = f"{error.p:.1%} HTTP {error.status}" + ("" if label is None else f" ({label})")
    if error.retry_after_s is not None:
        words += f", Retry-After {error.retry_after_s:g} s"
    return words


def _strong_share(comparison: Any, strong: str) -> pd.Series:
    requests = comparison.requests
    served = requests["served_model"].astype(str) == strong
    return served.groupby(requests["strategy"].astype(str), sort=False).mean()


def _table(frame: pd.DataFrame, columns: tuple[str, ...]) -> str:
    shown = frame[[c for c in columns if c in frame.columns]]
    return shown.to_string(index=False, float_format=lambda x: f"{x:.4g}")


def run_job(args: argparse.Namespace) -> int:
    """Run ``sykit compare`` with parsed arguments; print both tables; write files if asked."""
    from . import datasets, profiles
    from ._sweep import sweep

    started = time.perf_counter()
    data = datasets.load(args.dataset)
    filters = []
    if args.benchmark:
        data = data.filter(benchmark=args.benchmark)
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
    models = list(data.models)
    if len(models) < 2:
        raise SystemExit(f"dataset {args.dataset!r} needs at least two models with ground truth")
    weak, strong = (WEAK, STRONG) if {WEAK, STRONG} <= set(models) else (models[-1], models[0])
    names = {"weak": weak, "strong": strong, "judge": JUDGE}
    outages = [parse_outage(text, names) for text in args.outage]

    clean = profiles.from_catalog([weak, strong, JUDGE])
    judge = Judge(accuracy=JUDGE_ACCURACY)
    random_faults = Faults.realistic() if args.faults == "realistic" else Faults()
    faulty: dict[str, ModelProfile] = {}
    for name, profile in clean.items():
        windows = tuple((start, end) for model, start, end in outages if model == name)
        faulty[name] = profile.replace(faults=random_faults.replace(outages=windows))
    # No deadline on the routing host: a slow answer must not turn into a timeout and a
    # cooldown re-route in the part that measures routing alone.
    routing_host = SimHost(clean, judge=judge, policy=NO_DEADLINE)
    robustness_host = SimHost(faulty, judge=judge)
    injected = {name: describe_faults(p.faults) for name, p in faulty.items()}
    any_faults = any(injected.values())

    runs: dict[str, Any] = {
        "seeds": [args.seed],
        "concurrency": args.concurrency,
        "progress": False if args.quiet else None,
    }
    lineup = routellm_lineup(weak, strong, JUDGE, data)
    routing = compare(lineup, data, host=routing_host, **runs)
    routing_summary = routing.summary(baseline="strong only")
    share = _strong_share(routing, strong)
    routing_summary.insert(
        routing_summary.columns.get_loc("cost_per_1k_requests_usd") + 1,
        "strong_share",
        routing_summary["strategy"].map(share),
    )
    score = strategies.simulated_score(weak, strong)
    thresholds = sweep(
        lambda target: strategies.threshold_router(
            weak, strong, score=score, threshold=strategies.calibrate(score, data, target)
        ),
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
        data,
        host=routing_host,
        weak=weak,
        strong=strong,
        value_name="target_share",
        **runs,
    )
    randoms = sweep(
        lambda target: strategies.weighted_random({weak: 1 - target, strong: target}),
        [0.1, 0.3, 0.5, 0.7, 0.9],
        data,
        host=routing_host,
        weak=weak,
        strong=strong,
        value_name="target_share",
        **runs,
    )
    random = random_baseline(routing, weak, strong, seed=args.seed)
    group = data.group_column if data.group_column in routing.requests.columns else None
    bounds = thresholds.intervals(seed=args.seed, group=group)
    judged = _cascade_by_judge_accuracy(clean, data, weak, strong, runs, routing_summary)
    benchmarks = (
        sorted(data.frame["benchmark"].unique()) if "benchmark" in data.frame.columns else []
    )
    bound = per_benchmark_apgr(thresholds, benchmarks) if benchmarks else {}
    learned, learned_long, too_small = learned_routers(data, weak, strong, routing_host, args.seed)
    robustness = compare(lineup, data, host=robustness_host, **runs) if any_faults else None
    robustness_summary = robustness.summary() if robustness is not None else None

    scope = ", ".join(filters) if filters else "all rows"
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(
            f"sykit compare: {len(data)} requests from {data.name!r} ({scope}), seed {args.seed}, "
            f"{args.concurrency} in flight, simulated host (virtual time)"
        )
        print(
            f"models: weak={weak}, strong={strong}, judge={JUDGE} (simulated, right "
            f"{JUDGE_ACCURACY:.0%} of the time); prices and latencies from the shipped catalogue"
        )
        print("\n1. Routing quality: no faults injected")
        print(_table(routing_summary, ROUTING_COLUMNS))
        print(
            "d_* = paired difference against 'strong only' on the same requests. "
            "realizable=False: reads the ground truth (a bound, not a router you can deploy)."
        )
        print(
            f"threshold router on a simulated router score ({_score_label(score)}; reads the "
            f"ground truth): APGR {bounds.apgr:.3f}, AIQ {bounds.aiq:.3f} (95 % bootstrap); "
            f"random router: APGR {randoms.apgr():.3f} in this run (expected {random.value:.3f} "
            f"± {random.sd:.3f} over random rankings of these requests)"
        )
        print(
            "cascade (judge) by the simulated judge's accuracy: "
            + "; ".join(
                f"{accuracy:.0%}: quality {q:.3f} at ${c:.2f}/1k"
                for accuracy, (q, c) in judged.items()
            )
            + " (strong only: {:.3f} at ${:.2f}/1k)".format(
                *_quality_and_cost(routing_summary, "strong only")
            )
        )
        if not learned.empty:
            print(
                "\nLearned routers you could deploy: APGR per benchmark, cross-fitted over 5 "
                "folds (fitted without the fold they route), 95 % bootstrap interval"
            )
            if bound:
                bound_row = {"router": "simulated score (bound, reads the truth)"}
                bound_row.update({b: f"{v:.3f}" for b, v in bound.items()})
                learned = pd.concat([learned, pd.DataFrame([bound_row])], ignore_index=True)
            print(learned.to_string(index=False))
        for note in too_small:
            print(f"learned routers left out {note}")
        print("\n2. Robustness: the same strategies under injected faults")
        if robustness_summary is None:
            print("no faults injected (--faults none and no --outage): nothing to show")
        else:
            for name, words in injected.items():
                print(f"  {name}: {words or 'no faults'}")
            if not outages:
                print("  outages: none (add one with --outage MODEL:START-END)")
            print(_table(robustness_summary, ROBUSTNESS_COLUMNS))
    if args.out:
        out = Path(args.out)
        written = _write_outputs(out, routing, routing_summary, robustness, robustness_summary)
        written += _write_sweeps(out, thresholds, randoms)
        if not learned_long.empty:
            learned_long.to_csv(out / "learned_routers.csv", index=False)
            written.append("learned_routers.csv")
        _write_run_json(out, args, data, weak, strong, routing_host, robustness_host, started)
        written.append("run.json")
        print(f"\nwrote {len(written)} files to {args.out}/: {', '.join(written)}")
    print(f"done in {time.perf_counter() - started:.1f} s of wall time")
    return 0


def random_baseline(routing: Any, weak: str, strong: str, seed: int) -> Any:
    """The random router's APGR on these requests: expected value and spread over random
    rankings, from the weak-only and strong-only runs."""
    only = curve_of(routing.requests, ["strong only"], "weak only", "strong only", strong)
    return random_apgr(only.weak, only.strong_only, SWEEP_SHARES, seed=seed)


def _quality_and_cost(summary: pd.DataFrame, strategy: str) -> tuple[float, float]:
    row = summary.set_index("strategy").loc[strategy]
    return float(row["mean_quality"]), float(row["cost_per_1k_requests_usd"])


def _cascade_by_judge_accuracy(
    clean: Mapping[str, ModelProfile],
    data: Any,
    weak: str,
    strong: str,
    runs: Mapping[str, Any],
    routing_summary: pd.DataFrame,
) -> dict[float, tuple[float, float]]:
    """The judge cascade's mean quality and cost per 1,000 requests with a simulated judge right
    75 %, 85 % and 95 % of the time: its edge over the strong model rests on that accuracy. The
    routing table's own run gives the job's judge accuracy; the others are run here."""
    found = {}
    cascade = strategies.cascade(weak, strong, judge=JUDGE, judge_timeout_s=5.0)
    for accuracy in JUDGE_ACCURACIES:
        if accuracy == JUDGE_ACCURACY:
            found[accuracy] = _quality_and_cost(routing_summary, "cascade (judge)")
            continue
        host = SimHost(clean, judge=Judge(accuracy=accuracy), policy=NO_DEADLINE)
        summary = compare({"cascade": cascade}, data, host=host, **runs).summary()
        found[accuracy] = _quality_and_cost(summary, "cascade")
    return found


def _score_label(score: Any) -> str:
    preset = getattr(score, "preset", None)
    if preset:
        return f"preset {preset!r}"
    return repr(score)


def _write_outputs(
    out: Path,
    routing: Any,
    routing_summary: pd.DataFrame,
    robustness: Any,
    robustness_summary: pd.DataFrame | None,
) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    routing_summary.to_csv(out / "routing_summary.csv", index=False)
    routing.requests.to_csv(out / "routing_requests.csv", index=False)
    written = ["routing_summary.csv", "routing_requests.csv"]
    figures = {"cost_quality.png": lambda: routing.plot.cost_quality().figure}
    if robustness is not None and robustness_summary is not None:
        robustness_summary.to_csv(out / "robustness_summary.csv", index=False)
        robustness.requests.to_csv(out / "robustness_requests.csv", index=False)
        robustness.attempts.to_csv(out / "robustness_attempts.csv", index=False)
        written += ["robustness_summary.csv", "robustness_requests.csv", "robustness_attempts.csv"]
        figures["latency_cdf.png"] = lambda: robustness.plot.latency_cdf().figure
        figures["outcomes.png"] = lambda: robustness.plot.outcomes()
        figures["race_timeline.png"] = lambda: robustness.plot.timeline("race weak|strong").figure
    return written + save_figures(out, figures)


def save_figures(out: Path, figures: Mapping[str, Callable[[], Any]]) -> list[str]:
    """Draw each figure, save it as ``out/<name>`` (a tight box: titles and labels inside) and
    close it; return the names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, draw in figures.items():
        figure = draw()
        figure.savefig(out / name, dpi=110, bbox_inches="tight")
        plt.close(figure)
    return list(figures)


def _write_sweeps(out: Path, thresholds: Any, randoms: Any) -> list[str]:
    import matplotlib.pyplot as plt

    curves = pd.concat(
        [thresholds.curve.assign(router="threshold"), randoms.curve.assign(router="random")]
    )
    curves.to_csv(out / "sweeps.csv", index=False)
    figure = thresholds.plot().figure
    figure.savefig(out / "threshold_curve.png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return ["sweeps.csv", "threshold_curve.png"]


def _plain(value: Any) -> Any:
    """Configuration objects as JSON-friendly values; a dataclass names its class under
    ``"class"`` (a key no field can have: ``sy.ErrorFault`` has a field ``type``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"class": type(value).__name__, **fields}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("sykit", "pandas", "numpy", "anyio", "httpx", "matplotlib"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _write_run_json(
    out: Path,
    args: argparse.Namespace,
    data: Any,
    weak: str,
    strong: str,
    routing_host: SimHost,
    robustness_host: SimHost,
    started: float,
) -> None:
    record = {
        "command": ["sykit", *sys.argv[1:]] if sys.argv and "sykit" in sys.argv[0] else None,
        "arguments": {k: v for k, v in vars(args).items() if k != "handler"},
        "dataset": {
            "name": data.name,
            "requests": len(data),
            "request_ids": [str(r.id) for r in data],
        },
        "weak": weak,
        "strong": strong,
        "judge": JUDGE,
        "seeds": [args.seed],
        "routing_host": {
            "models": _plain(routing_host.profiles),
            "policy": _plain(routing_host.policy),
            "judges": _plain(routing_host.judges),
        },
        "robustness_host": {
            "models": _plain(robustness_host.profiles),
            "policy": _plain(robustness_host.policy),
        },
        "versions": _versions(),
        "wall_s": round(time.perf_counter() - started, 3),
    }
    (out / "run.json").write_text(json.dumps(record, indent=2) + "\n")
