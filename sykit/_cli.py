"""The ``sykit`` command.

``sykit compare`` compares the library's strategies on a shipped evaluation dataset (RouteLLM's GPT-4
vs Mixtral table by default): routing quality on a fault-free host (with the APGR/AIQ of a threshold
sweep), then robustness under the faults it prints (see :mod:`sykit._compare_job`). ``sykit demo``
does a quick comparison on a synthetic workload. Both write CSVs and plots with ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from . import strategies
from ._compare_job import add_arguments, run_job
from ._config import Faults, Judge, Latency, ModelProfile
from ._dists import LogNormal
from ._errors import SykitError
from ._hosts.sim import SimHost
from ._models import Request
from ._results import Comparison
from ._runner import compare

__all__ = ["demo_host", "demo_requests", "main"]


#: The summary columns the command prints.
TABLE_COLUMNS = (
    "strategy",
    "success_rate",
    "mean_quality",
    "cost_per_1k_requests_usd",
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
    if args.out:
        written = write_demo_outputs(Path(args.out), comparison, summary)
        print(f"wrote {len(written)} files to {args.out}/: {', '.join(written)}")
    return 0


def write_demo_outputs(out: Path, comparison: Comparison, summary: pd.DataFrame) -> list[str]:
    """The demo's tables as CSV and its plots as PNG in ``out``, to read or share after the run."""
    from ._compare_job import save_figures

    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out / "summary.csv", index=False)
    comparison.requests.to_csv(out / "requests.csv", index=False)
    comparison.attempts.to_csv(out / "attempts.csv", index=False)
    written = ["summary.csv", "requests.csv", "attempts.csv"]
    figures = {
        "cost_quality.png": lambda: comparison.plot.cost_quality().figure,
        "latency_cdf.png": lambda: comparison.plot.latency_cdf().figure,
        "outcomes.png": lambda: comparison.plot.outcomes(),
    }
    return written + save_figures(out, figures)


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
    demo.add_argument("--out", default=None, help="folder for CSVs and PNG plots")
    demo.set_defaults(handler=_demo)
    cmp = commands.add_parser(
        "compare",
        help="compare the library's strategies on a shipped dataset: routing quality without "
        "faults, then robustness under faults",
    )
    add_arguments(cmp)
    cmp.set_defaults(handler=run_job)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except SykitError as error:  # a bad setting: said in one line, as argparse says its own
        raise SystemExit(f"sykit {args.command}: {error}") from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
