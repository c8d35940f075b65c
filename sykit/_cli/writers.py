"""The files ``sykit compare --out`` writes: the summaries and per-request tables as CSV (every
column, where the printed tables keep a few), the figures as PNG, the sweeps' curves, the learned
routers' long table, and ``run.json``: everything needed to reproduce the run (settings, seeds,
hosts, faults, the long prompts' ids, package versions). The ``--out`` folder is made and checked
writable before the job runs (:func:`out_folder`); a folder an earlier job wrote in keeps none of
its files this one does not write (:func:`remove_stale`).

:func:`save_figures` also writes ``sykit demo``'s figures.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from sykit._cli.background import later
from sykit._cli.experiment import JUDGE, RACE, Offload, Results, SweepWriter, sweep_parts

__all__ = [
    "JOB_FILES",
    "ROBUSTNESS_COLUMNS",
    "ROUTING_COLUMNS",
    "out_folder",
    "remove_stale",
    "save_figures",
    "sweep_writer",
    "write_comparisons",
    "write_files",
    "write_learned",
    "write_sweeps",
]

#: Columns ``routing_summary.csv`` holds among the rest of the summary (fault-free run).
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
#: Columns ``robustness_summary.csv`` holds among the rest of the summary (run under faults).
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


#: Every file ``sykit compare --out`` may write; a run writes some of them only (no
#: ``robustness_*`` without faults, no ``learned_routers.csv`` when no benchmark can be cross-fitted).
JOB_FILES = (
    "routing_summary.csv",
    "routing_requests.csv",
    "routing_requests.parquet",
    "cost_quality.png",
    "robustness_summary.csv",
    "robustness_requests.csv",
    "robustness_requests.parquet",
    "robustness_attempts.csv",
    "robustness_attempts.parquet",
    "latency_cdf.png",
    "outcomes.png",
    "race_timeline.png",
    "sweeps.csv",
    "threshold_curve.png",
    "learned_routers.csv",
    "run.json",
)


def out_folder(text: str | None) -> Path | None:
    """The ``--out`` folder, made now and checked writable, so that a bad one is refused before
    the job runs rather than after it (None: no files asked)."""
    if text is None:
        return None
    if not text.strip():
        raise SystemExit("--out is empty: give a folder to write the files in, or leave --out out")
    out = Path(text)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as error:
        raise SystemExit(f"--out {text!r}: {_why_unwritable(out, error)}") from None
    return out


def _why_unwritable(out: Path, error: OSError) -> str:
    if out.exists() and not out.is_dir():
        return "is a file, not a folder; give a folder path (a new one is made)"
    file = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if file is not None:
        return f"{str(file)!r} is a file, not a folder; give a folder path"
    where = f" ({error.filename})" if error.filename else ""
    return f"cannot write there: {error.strerror or error}{where}; give a folder you can write to"


def remove_stale(out: Path, written: list[str]) -> list[str]:
    """Remove the files of :data:`JOB_FILES` an earlier run left in ``out`` that this run did not
    write, so that the folder holds one run's files only (next to its ``run.json``); return
    their names. Other files are left alone."""
    stale = [name for name in JOB_FILES if name not in written and (out / name).is_file()]
    for name in stale:
        (out / name).unlink()
    return stale


def write_files(out: Path, results: Results, offload: Offload | None = None) -> list[str]:
    """Write the files of the routing and robustness parts in ``out`` (the sweeps' are written
    where they run, see :func:`sweep_writer`; the learned routers' table and ``run.json`` by
    :func:`write_learned`); return the names written, in order. ``offload`` runs the writing of
    the records (CSV and Parquet, the longest part) beside the figures."""
    robust = results.robust
    out.mkdir(parents=True, exist_ok=True)
    return write_comparisons(
        out, results.routing, results.routing_summary, robust.comparison, robust.summary, offload
    )


def sweep_writer(out: Path) -> SweepWriter:
    """What writes the sweeps' files in ``out`` (``sweeps.csv`` and ``threshold_curve.png``),
    wherever the sweeps run: a function another process can be handed."""
    return functools.partial(_sweep_files, out)


def write_learned(out: Path, results: Results, started: float) -> list[str]:
    """Write the learned routers' long table and ``run.json`` (``started``: the job's
    :func:`time.perf_counter` at its start, for the wall time it records); return the names."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if not results.learned_long.empty:
        results.learned_long.to_csv(out / "learned_routers.csv", index=False)
        written.append("learned_routers.csv")
    _write_run_json(out, results, started)
    return [*written, "run.json"]


def write_comparisons(
    out: Path,
    routing: Any,
    routing_summary: pd.DataFrame,
    robustness: Any,
    robustness_summary: pd.DataFrame | None,
    offload: Offload | None = None,
) -> list[str]:
    """The routing and robustness runs' tables as CSV and their figures as PNG (the records
    written by ``offload``'s worker, when given one, while the figures are drawn)."""
    out.mkdir(parents=True, exist_ok=True)
    routing_summary.to_csv(out / "routing_summary.csv", index=False)
    written = ["routing_summary.csv", *_record_files("routing_requests")]
    records = [("routing_requests", routing.requests)]
    figures = {
        "cost_quality.png": lambda: _titled(routing.plot.cost_quality().figure, FAULT_FREE_RUN)
    }
    if robustness is not None and robustness_summary is not None:
        robustness_summary.to_csv(out / "robustness_summary.csv", index=False)
        written += [
            "robustness_summary.csv",
            *_record_files("robustness_requests"),
            *_record_files("robustness_attempts"),
        ]
        records += [
            ("robustness_requests", robustness.requests),
            ("robustness_attempts", robustness.attempts),
        ]
        figures["latency_cdf.png"] = lambda: _titled(
            robustness.plot.latency_cdf().figure, FAULTY_RUN
        )
        figures["outcomes.png"] = lambda: _titled(robustness.plot.outcomes(), FAULTY_RUN)
        figures["race_timeline.png"] = lambda: _titled(
            robustness.plot.timeline(RACE).figure, FAULTY_RUN
        )
    writing = (offload or later)(_records, out, records)
    figures_written = save_figures(out, figures)
    writing()  # the records are written (or the worker's error raised here)
    return written + figures_written


def _record_files(name: str) -> list[str]:
    """The files :func:`_records` writes for the records called ``name``."""
    return [f"{name}.csv", f"{name}.parquet"]


def _records(out: Path, records: list[tuple[str, pd.DataFrame]]) -> None:
    """Runs' records as CSV, and as Parquet beside them with their dtypes: a CSV of tens of
    thousands of rows makes ``pd.read_csv`` guess types a block at a time (a ``DtypeWarning``
    where a text column is empty for a whole block); ``pd.read_parquet`` reads them back as they
    were (the files :func:`_record_files` names)."""
    for name, frame in records:
        csv, parquet = _record_files(name)
        frame.to_csv(out / csv, index=False)
        frame.to_parquet(out / parquet, index=False)


#: What each figure of the job says it shows, after its own title.
FAULT_FREE_RUN = "part 1: no faults injected"
FAULTY_RUN = "part 2: under injected faults"


def _titled(figure: Any, run: str) -> Any:
    """``figure`` with the run it shows after each of its axes' titles."""
    for ax in figure.axes:
        title = ax.get_title(loc="left") or ax.get_title()
        if title and run not in title:
            where = "left" if ax.get_title(loc="left") else "center"
            joint = "\n" if len(title) + len(run) > 90 else " — "  # a long title: a line of its own
            ax.set_title(f"{title}{joint}{run}", loc=where)
    return figure


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


def write_sweeps(out: Path, thresholds: Any, randoms: Any) -> list[str]:
    """The threshold and random sweeps' curves as CSV, and the threshold curve as PNG."""
    return _sweep_files(out, *sweep_parts(thresholds, randoms))


def _sweep_files(out: Path, curves: pd.DataFrame, plotted: dict[str, Any]) -> list[str]:
    """``sweeps.csv`` and ``threshold_curve.png`` (``plotted``: as ``Sweep.plot`` draws it)."""
    out.mkdir(parents=True, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sykit._viz import plot_cost_quality_curve

    curves.to_csv(out / "sweeps.csv", index=False)
    ax = plot_cost_quality_curve(**plotted)
    figure = _titled(ax.figure, FAULT_FREE_RUN)
    figure.savefig(out / "threshold_curve.png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return ["sweeps.csv", "threshold_curve.png"]


def _plain(value: Any) -> Any:
    """Configuration objects as JSON-friendly values; a dataclass names its class under
    ``"class"`` (a key no field can have: ``sy.faults.ErrorFault`` has a field ``type``)."""
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


def _write_run_json(out: Path, results: Results, started: float) -> None:
    args, data, robust, routing_host = (
        results.args,
        results.data,
        results.robust,
        results.routing_host,
    )
    record = {
        "command": ["sykit", *sys.argv[1:]] if sys.argv and "sykit" in sys.argv[0] else None,
        "arguments": {k: v for k, v in vars(args).items() if k != "handler"},
        "dataset": {
            "name": data.name,
            "requests": len(data),
            "request_ids": [str(r.id) for r in data],
        },
        "weak": results.weak,
        "strong": results.strong,
        "judge": JUDGE,
        "seeds": [args.seed],
        "routing_host": {
            "models": _plain(routing_host.profiles),
            "policy": _plain(routing_host.policy),
            "judges": _plain(routing_host.judges),
        },
        "robustness_host": {
            "models": _plain(robust.host.profiles),
            "policy": _plain(robust.host.policy),
        },
        "robustness_workload": {
            "long_prompt_share": args.long_prompts,
            "long_prompt_request_ids": robust.long_ids,
        },
        "versions": _versions(),
        "wall_s": round(time.perf_counter() - started, 3),
    }
    (out / "run.json").write_text(json.dumps(record, indent=2) + "\n")
