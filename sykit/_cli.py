"""The ``sykit`` command.

``sykit compare`` compares the library's strategies on a shipped evaluation dataset (RouteLLM's GPT-4
vs Mixtral table by default) under a realistic fault profile, prints the summary with paired
differences, the APGR/AIQ of a threshold sweep, and writes CSVs and plots. ``sykit demo`` does a
quick comparison on a synthetic workload.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from . import strategies
from ._config import Faults, Judge, Latency, ModelProfile
from ._dists import LogNormal
from ._hosts.sim import SimHost
from ._models import Request
from ._runner import compare

__all__ = ["demo_host", "demo_requests", "main"]


#: The summary columns the command prints.
TABLE_COLUMNS = (
    "strategy",
    "success_rate",
    "mean_quality",
    "cost_per_request_usd",
    "latency_p50_s",
    "latency_p99_s",
    "attempts_per_request",
    "wasted_share",
    "fallbacks",
    "retries",
)


def demo_host() -> SimHost:
    """Three models and a judge with realistic prices (USD per 1M tokens), latencies and faults."""
    return SimHost(
        {
            "small": ModelProfile(
                price_in=0.15,
                price_out=0.60,
                quality=0.62,
                latency=Latency(ttft=LogNormal(0.35, p95=1.2), tokens_per_s=120),
                faults=Faults(rate_limit=0.02, retry_after_s=1.0, unavailable=0.01, spike_p=0.02),
            ),
            "medium": ModelProfile(
                price_in=0.80,
                price_out=4.00,
                quality=0.75,
                latency=Latency(ttft=LogNormal(0.6, p95=2.0), tokens_per_s=80),
                faults=Faults(unavailable=0.01, spike_p=0.02),
            ),
            "large": ModelProfile(
                price_in=2.50,
                price_out=10.00,
                quality=0.86,
                vision=True,
                latency=Latency(ttft=LogNormal(0.9, p95=4.0), tokens_per_s=50),
                faults=Faults(rate_limit=0.01, unavailable=0.02, spike_p=0.03),
            ),
            "judge": ModelProfile(
                price_in=0.15,
                price_out=0.60,
                latency=Latency(ttft=LogNormal(0.3, p95=0.8), tokens_per_s=150),
            ),
        },
        judge=Judge(accuracy=0.85),
    )


def demo_requests(n: int) -> list[Request]:
    """Prompts of mixed length; a request's difficulty is a keyed draw made by the host."""
    sizes = (12, 60, 300, 1500)
    return [Request("x " * sizes[i % len(sizes)], id=i, max_output_tokens=1024) for i in range(n)]


def _demo(args: argparse.Namespace) -> int:
    host = demo_host()
    lineup = {
        "small only": strategies.single("small"),
        "large only": strategies.single("large"),
        "fallback small>large": strategies.fallback_chain(["small", "large"]),
        "cascade small>large": strategies.cascade(
            "small", "large", judge="judge", judge_timeout_s=2.0
        ),
        "race small|large": strategies.race(["small", "large"]),
        "hedge large @2s": strategies.hedge("large", after=2.0),
    }
    started = time.perf_counter()
    comparison = compare(
        lineup,
        demo_requests(args.requests),
        host=host,
        seeds=[args.seed],
        concurrency=args.concurrency,
        progress=not args.quiet and None,
    )
    elapsed = time.perf_counter() - started
    summary = comparison.summary()
    columns = list(TABLE_COLUMNS)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(
            f"sykit demo: {args.requests} synthetic requests, seed {args.seed}, "
            f"{args.concurrency} in flight, simulated host (virtual time)\n"
        )
        print(summary[columns].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(
        f"\n{len(lineup)} strategies × {args.requests} requests simulated in {elapsed:.1f} s of wall time"
    )
    return 0


STRONG = "gpt-4-1106-preview"
WEAK = "mixtral-8x7b-instruct-v0.1"
JUDGE = "gpt-4o-mini"


def routellm_lineup(weak: str, strong: str, judge: str, requests: Any) -> dict[str, Any]:
    """The library's strategies set up for a weak/strong pair."""
    score = strategies.simulated_score(weak, strong, noise=0.5)
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


def _compare(args: argparse.Namespace) -> int:
    from . import datasets, profiles
    from ._sweep import sweep
    from .faults import realistic, with_faults

    started = time.perf_counter()
    data = datasets.load(args.dataset)
    if args.benchmark:
        data = data.filter(benchmark=args.benchmark)
    if "contaminated" in data.frame.columns:
        data = data.filter(contaminated=False)
    if args.sample and args.sample < len(data):
        data = data.sample(
            args.sample, seed=args.seed, stratify="benchmark" if not args.benchmark else None
        )
    models = list(data.models)
    if len(models) < 2:
        raise SystemExit(f"dataset {args.dataset!r} needs at least two models with ground truth")
    weak, strong = (WEAK, STRONG) if {WEAK, STRONG} <= set(models) else (models[-1], models[0])
    catalog = profiles.from_catalog([weak, strong, JUDGE])
    if args.faults == "realistic":
        catalog = with_faults(catalog, realistic())
        # and one bad minute: the weak model's provider is down from t=120 s to t=180 s
        catalog[weak] = catalog[weak].replace(faults=realistic(outages=[(120.0, 180.0)]))
    host = SimHost(catalog, judge=Judge(accuracy=0.85))
    lineup = routellm_lineup(weak, strong, JUDGE, data)
    progress = None if not args.quiet else False
    runs: dict[str, Any] = {
        "host": host,
        "seeds": [args.seed],
        "concurrency": args.concurrency,
        "progress": progress,
    }
    comparison = compare(lineup, data, **runs)
    summary = comparison.summary(baseline="strong only")
    score = strategies.simulated_score(weak, strong, noise=0.5)
    thresholds_sweep = sweep(
        lambda share: strategies.threshold_router(
            weak, strong, score=score, threshold=strategies.calibrate(score, data, share)
        ),
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
        data,
        weak=weak,
        strong=strong,
        **runs,
    )
    random_sweep = sweep(
        lambda share: strategies.weighted_random({weak: 1 - share, strong: share}),
        [0.1, 0.3, 0.5, 0.7, 0.9],
        data,
        weak=weak,
        strong=strong,
        **runs,
    )
    columns = [*TABLE_COLUMNS, "d_quality", "d_cost_usd"]
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(
            f"sykit compare: {len(data)} requests from {data.name!r} "
            f"({'all benchmarks' if not args.benchmark else args.benchmark}), weak={weak}, strong={strong}, "
            f"judge={JUDGE}, faults={args.faults}, seed {args.seed}, simulated host\n"
        )
        print(summary[columns].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        print("\nd_* = paired difference against 'strong only' on the same requests and faults.")
        print(
            f"threshold router (simulated learned score): APGR {thresholds_sweep.apgr():.3f}, "
            f"AIQ {thresholds_sweep.aiq():.3f}; random router: APGR {random_sweep.apgr():.3f}"
        )
    if args.out:
        written = _write_outputs(
            Path(args.out), comparison, summary, thresholds_sweep, random_sweep
        )
        print(f"\nwrote {len(written)} files to {args.out}/: {', '.join(written)}")
    print(f"done in {time.perf_counter() - started:.1f} s of wall time")
    return 0


def _write_outputs(
    out: Path, comparison: Any, summary: pd.DataFrame, thresholds: Any, random: Any
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out / "summary.csv", index=False)
    comparison.requests.to_csv(out / "requests.csv", index=False)
    comparison.attempts.to_csv(out / "attempts.csv", index=False)
    curves = pd.concat(
        [thresholds.curve.assign(router="threshold"), random.curve.assign(router="random")]
    )
    curves.to_csv(out / "sweeps.csv", index=False)
    written = ["summary.csv", "requests.csv", "attempts.csv", "sweeps.csv"]
    figures = {
        "cost_quality.png": lambda: comparison.plot.cost_quality().figure,
        "latency_cdf.png": lambda: comparison.plot.latency_cdf().figure,
        "outcomes.png": lambda: comparison.plot.outcomes(),
        "threshold_curve.png": lambda: thresholds.plot().figure,
        "race_timeline.png": lambda: comparison.plot.timeline("race weak|strong").figure,
    }
    for name, draw in figures.items():
        figure = draw()
        figure.savefig(out / name, dpi=110)
        plt.close(figure)
        written.append(name)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sykit", description="Prototype and compare LLM routing strategies."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="compare a few strategies on a synthetic workload")
    demo.add_argument("--requests", type=int, default=2000)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--concurrency", type=int, default=32)
    demo.add_argument("--quiet", action="store_true", help="no progress bar")
    demo.set_defaults(handler=_demo)
    cmp = commands.add_parser(
        "compare", help="compare the library's strategies on a shipped dataset"
    )
    cmp.add_argument(
        "--dataset", default="routellm", help="a shipped dataset (sy.datasets.names())"
    )
    cmp.add_argument(
        "--benchmark", default=None, help="keep one benchmark of the dataset (e.g. gsm8k)"
    )
    cmp.add_argument(
        "--sample", type=int, default=None, help="sample this many requests (stratified)"
    )
    cmp.add_argument("--faults", choices=("realistic", "none"), default="realistic")
    cmp.add_argument("--seed", type=int, default=0)
    cmp.add_argument("--concurrency", type=int, default=64)
    cmp.add_argument("--out", default=None, help="folder for CSVs and PNG plots")
    cmp.add_argument("--quiet", action="store_true", help="no progress bar")
    cmp.set_defaults(handler=_compare)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
