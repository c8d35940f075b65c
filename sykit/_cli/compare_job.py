"""``sykit compare``: the library's strategies on a shipped evaluation table, in two honest parts.

1. **Routing quality**, on a host with no faults: which strategy gives the best answers for the
   money. APGR and AIQ of a threshold sweep and of a random router come from these fault-free runs,
   so an outage cannot pass for routing skill.
2. **Robustness**, on the same requests and host with the faults printed in the header, an outage
   of the weak model (or those asked for with ``--outage``) and a share of requests whose context
   exceeds the weak model's window: who still answers, how fast, at what waste, and what the
   fallbacks are worth.

Each part leads with its finding, computed from its results; tables fit the terminal's width and
the CSVs keep every column.

Everything needed to reproduce the run (settings, seeds, faults, package versions) is written to
``run.json`` next to the CSVs and plots.

This module is the job's top: its command-line arguments, and :func:`run_job`, which runs the
experiment (:mod:`.experiment`), prints its report (:mod:`.report`, with the sentences of
:mod:`.prose` laid out by :mod:`.layout`) and writes its files (:mod:`.writers`), in that order.
"""

from __future__ import annotations

import argparse
import time

from sykit._cli import experiment, report, writers
from sykit._cli.experiment import LONG_PROMPT_SHARE
from sykit._cli.layout import say, terminal_width

__all__ = ["add_arguments", "run_job"]


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
        "answers 503 in the robustness run; repeatable; replaces the default outage of the weak "
        "model (from 25%% to 35%% of the time weak only takes to start its requests without "
        "faults; with --faults realistic); "
        "'none' for no outage",
    )
    parser.add_argument(
        "--long-prompts",
        type=float,
        default=LONG_PROMPT_SHARE,
        metavar="SHARE",
        help="share of the robustness run's requests given a context longer than the weak "
        "model's window, drawn with --seed (default: %(default)s; 0 for none)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        metavar="N",
        help="processes the job runs on: with 2 (the default, on a machine with two cores or "
        "more) the sweeps and the learned routers run in a second process alongside the other "
        "parts; 1 runs everything in this process (the same results)",
    )
    parser.add_argument("--out", default=None, help="folder for CSVs, PNG plots and run.json")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run_job(args: argparse.Namespace) -> int:
    """Run ``sykit compare`` with parsed arguments; print both parts, each led by its finding;
    write files if asked."""
    started = time.perf_counter()
    out = writers.out_folder(args.out)
    written: list[str] = []
    writing_s = 0.0

    def meanwhile(results: experiment.Results, offload: experiment.Offload) -> None:
        nonlocal writing_s
        if out is not None:  # every file but the learned routers', while they finish
            writing = time.perf_counter()
            written.extend(writers.write_files(out, results, offload))
            writing_s = time.perf_counter() - writing

    sweeps = None if out is None else writers.sweep_writer(out)
    results = experiment.run(args, meanwhile=meanwhile, write_sweeps=sweeps)
    width = terminal_width()
    report.print_report(results, width)
    parts = dict(results.seconds)
    if out is not None:
        writing = time.perf_counter()
        assert results.sweeps is not None
        written.extend(results.sweeps.files)
        written.extend(writers.write_learned(out, results, started))
        stale = writers.remove_stale(out, written)
        parts["files"] = writing_s + time.perf_counter() - writing
        print()
        say(f"wrote {len(written)} files to {args.out}/: {', '.join(written)}", width)
        if stale:
            say(
                f"removed {len(stale)} files an earlier run left there that this run does not "
                f"write: {', '.join(stale)}",
                width,
            )
    each = ", ".join(f"{part} {seconds:.1f}" for part, seconds in parts.items())
    say(f"done in {time.perf_counter() - started:.1f} s of wall time: {each}", width)
    return 0
