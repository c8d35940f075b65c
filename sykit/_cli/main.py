"""The ``sykit`` command.

``sykit compare`` compares the library's strategies on a shipped evaluation dataset (RouteLLM's GPT-4
vs Mixtral table by default): routing quality on a fault-free host (with the APGR/AIQ of a threshold
sweep), then robustness under the faults it prints (see :mod:`sykit._cli.compare_job`). ``sykit demo``
does a quick comparison on a synthetic workload. Both write CSVs and plots with ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from sykit import strategies
from sykit._base.errors import SykitError
from sykit._cli.compare_job import add_arguments, run_job
from sykit._cli.layout import (
    fit_table,
    fmt_answered,
    fmt_number,
    fmt_percent,
    say,
    terminal_width,
)
from sykit._cli.writers import out_folder, save_figures
from sykit._grid.compare import compare
from sykit._hosts.sim import SimHost
from sykit._results.result import Comparison
from sykit._world.config import Judge, Latency, ModelProfile
from sykit._world.dists import LogNormal
from sykit._world.faults import Faults
from sykit._world.models import Request

__all__ = ["demo_host", "demo_requests", "main"]


#: The summary columns the command prints, under the short headers it prints them with.
TABLE_COLUMNS = {
    "strategy": "strategy",
    "success_rate": "ok %",
    "mean_quality": "quality",
    "cost_per_1k_requests_usd": "$/1k req",
    "latency_p50_s": "p50 s",
    "latency_p99_s": "p99 s",
    "attempts_per_request": "att/req",
    "wasted_share": "waste %",
    "fallbacks": "fallbacks",
    "retries": "retries",
}
_DIGITS = {"mean_quality": 3, "cost_per_1k_requests_usd": 2, "attempts_per_request": 2}


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
    if args.requests < 1:
        raise SystemExit(f"--requests must be a number of requests ≥ 1, got {args.requests}")
    out = out_folder(args.out)  # a bad folder is refused before the run, not after it
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
    width = terminal_width()
    say(
        f"sykit demo: {args.requests} synthetic requests, seed {args.seed}, "
        f"{args.concurrency} in flight, simulated host (virtual time)",
        width,
    )
    print()
    print(fit_table(demo_cells(summary), width))
    say(
        "ok % = requests answered; $/1k req = USD per 1,000 requests; p50/p99 = latency of the "
        "answered requests; waste % = share of the spend on answers nobody served",
        width,
    )
    print()
    say(
        f"{len(lineup)} strategies × {args.requests} requests simulated in {elapsed:.1f} s of "
        "wall time",
        width,
    )
    if out is not None:
        written = write_demo_outputs(out, comparison, summary)
        print(f"wrote {len(written)} files to {args.out}/: {', '.join(written)}")
    return 0


def demo_cells(summary: pd.DataFrame) -> pd.DataFrame:
    """The demo's table as printed: :data:`TABLE_COLUMNS` under short headers with units (its CSV
    keeps every column of the summary)."""
    cells = {}
    for column, header in TABLE_COLUMNS.items():
        values = summary[column]
        if column == "strategy":
            cells[header] = values
        elif column == "success_rate":  # rounded as the figures round it (see fmt_answered)
            cells[header] = values.map(fmt_answered)
        elif column.endswith(("_rate", "_share")):
            cells[header] = values.map(fmt_percent)
        else:
            digits = _DIGITS.get(column, 1 if column.endswith("_s") else 0)
            cells[header] = values.map(lambda x, d=digits: fmt_number(x, d))
    return pd.DataFrame(cells)


def write_demo_outputs(out: Path, comparison: Comparison, summary: pd.DataFrame) -> list[str]:
    """The demo's tables as CSV and its plots as PNG in ``out``, to read or share after the run."""
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
