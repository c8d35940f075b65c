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
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import re
import shutil
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sykit import strategies
from sykit._cli.compare_learned import learned_routers, per_benchmark_apgr
from sykit._grid.compare import compare
from sykit._hosts.sim import SimHost
from sykit._results.curve_stats import curve_of, random_apgr
from sykit._world.config import ErrorFault, Faults, Judge, ModelProfile
from sykit.learn._crossfit import NO_DEADLINE
from sykit.strategies._router_score import SWEEP_SHARES

__all__ = [
    "ROBUSTNESS_COLUMNS",
    "ROUTING_COLUMNS",
    "add_arguments",
    "fit_table",
    "robustness_finding",
    "routellm_lineup",
    "routing_finding",
    "run_job",
]

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
COST = "cost_per_1k_requests_usd"
#: Columns the robustness summary gains: each strategy's change against its fault-free run.
D_QUALITY = "d_quality_vs_fault_free"
D_COST = "d_cost_per_1k_requests_usd_vs_fault_free"
D_P99 = "d_latency_p99_s_vs_fault_free"
#: Share of the robustness run's requests given a context longer than the weak model's window.
LONG_PROMPT_SHARE = 0.01
#: Key of the random stream that picks the long prompts (next to the job's seed).
LONG_PROMPT_STREAM = 0x10C
#: The default outage of the weak model: from 25 % to 35 % of its fault-free run.
DEFAULT_OUTAGE = (0.25, 0.35)
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


def terminal_width() -> int:
    """The width printed lines must fit: the terminal's, or 120 columns off a terminal."""
    return max(shutil.get_terminal_size((120, 24)).columns, 40)


def say(text: str, width: int, indent: str = "") -> None:
    """Print prose wrapped to ``width``; continuation lines indented two more spaces."""
    kept = text.replace(" %", "\u00a0%")  # "95 %" stays on one line
    wrapped = textwrap.fill(kept, width, initial_indent=indent, subsequent_indent=indent + "  ")
    print(wrapped.replace("\u00a0", " "))


def fit_table(cells: pd.DataFrame, width: int) -> str:
    """A table of strings as text no wider than ``width``: the first column left-aligned, the
    others right-aligned, and the rightmost columns left out (and named) until it fits."""
    shown = list(cells.columns)
    while True:
        lines = _aligned(cells[shown])
        if max(map(len, lines)) <= width or len(shown) == 1:
            break
        shown.pop()
    left_out = [str(c) for c in cells.columns if c not in shown]
    if left_out:
        note = f"({', '.join(left_out)} left out to fit {width} columns; see the CSVs of --out)"
        lines.append(textwrap.fill(note, width))
    return "\n".join(lines)


def _aligned(cells: pd.DataFrame) -> list[str]:
    columns = [[str(c), *map(str, cells[c])] for c in cells.columns]
    widths = [max(map(len, column)) for column in columns]
    rows = []
    for i in range(len(cells) + 1):
        parts = [
            column[i].ljust(w) if j == 0 else column[i].rjust(w)
            for j, (column, w) in enumerate(zip(columns, widths, strict=True))
        ]
        rows.append("  ".join(parts).rstrip())
    return rows


def fmt_number(value: Any, digits: int, *, sign: bool = False) -> str:
    """``value`` with ``digits`` decimals (``+`` for a gain when ``sign``), ``–`` when missing."""
    if value is None or not math.isfinite(float(value)):
        return "–"
    shown = round(float(value), digits) + 0.0  # no "-0.00"
    return f"{shown:{'+' if sign else ''}.{digits}f}"


def fmt_percent(value: Any) -> str:
    """A share as a percentage: whole when exactly 0 or 100 %, else with the decimals that keep
    it off them (99.6 % or 99.97 % must not read as 100 %)."""
    if value is None or not math.isfinite(float(value)):
        return "–"
    share = float(value)
    if share in (0.0, 1.0):
        return f"{share:.0%}"
    return f"{share:.1%}" if 0.0005 <= share <= 0.9995 else f"{share:.2%}"


def routing_cells(summary: pd.DataFrame) -> pd.DataFrame:
    """The routing table as printed: short columns, units in the headers, costs per 1,000
    requests (the CSV keeps every column of the summary)."""
    low, high = summary["quality_ci_low"], summary["quality_ci_high"]
    return pd.DataFrame(
        {
            "strategy": summary["strategy"],
            "realizable": summary["realizable"].map(lambda x: "yes" if x else "no"),
            "quality [95% CI]": [
                f"{fmt_number(q, 3)} [{fmt_number(a, 3)}, {fmt_number(b, 3)}]"
                for q, a, b in zip(summary["mean_quality"], low, high, strict=True)
            ],
            "$/1k req": summary["cost_per_1k_requests_usd"].map(lambda x: fmt_number(x, 2)),
            "strong %": summary["strong_share"].map(fmt_percent),
            "Δ quality": summary["d_quality"].map(lambda x: fmt_number(x, 3, sign=True)),
            "Δ $/1k req": (summary["d_cost_usd"] * 1000).map(lambda x: fmt_number(x, 2, sign=True)),
        }
    )


def robustness_cells(summary: pd.DataFrame) -> pd.DataFrame:
    """The robustness table as printed; Δ columns against the same strategy's fault-free run."""
    return pd.DataFrame(
        {
            "strategy": summary["strategy"],
            "ok %": summary["success_rate"].map(fmt_percent),
            "quality": summary["mean_quality"].map(lambda x: fmt_number(x, 3)),
            "Δ qual": summary[D_QUALITY].map(lambda x: fmt_number(x, 3, sign=True)),
            "$/1k": summary["cost_per_1k_requests_usd"].map(lambda x: fmt_number(x, 2)),
            "Δ $/1k": summary[D_COST].map(lambda x: fmt_number(x, 2, sign=True)),
            "p50 s": summary["latency_p50_s"].map(lambda x: fmt_number(x, 1)),
            "p99 s": summary["latency_p99_s"].map(lambda x: fmt_number(x, 1)),
            "Δ p99 s": summary[D_P99].map(lambda x: fmt_number(x, 1, sign=True)),
            "retries": summary["retries"].map(lambda x: fmt_number(x, 0)),
            "fallbacks": summary["fallbacks"].map(lambda x: fmt_number(x, 0)),
            "att/req": summary["attempts_per_request"].map(lambda x: fmt_number(x, 2)),
            "waste %": summary["wasted_share"].map(fmt_percent),
        }
    )


def against_fault_free(faulty: pd.DataFrame, fault_free: pd.DataFrame) -> pd.DataFrame:
    """The robustness summary with what the faults changed for each strategy: quality, cost
    per 1,000 requests and p99 latency minus its own fault-free run's."""
    base = fault_free.set_index("strategy")
    out = faulty.copy()
    for column, source in ((D_QUALITY, "mean_quality"), (D_COST, "cost_per_1k_requests_usd")):
        out[column] = out[source] - out["strategy"].map(base[source])
    out[D_P99] = out["latency_p99_s"] - out["strategy"].map(base["latency_p99_s"])
    return out


def _finite(*values: Any) -> bool:
    return all(v is not None and math.isfinite(float(v)) for v in values)


def _names(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def routing_finding(summary: pd.DataFrame, baseline: str = "strong only") -> str:
    """Part 1's finding in one sentence: among the strategies you could deploy that answer at
    least as well as ``baseline`` for less, the one with the most quality per dollar, with its
    figures beside the baseline's; else the best quality among the cheaper ones."""
    rows = summary.set_index("strategy")
    if baseline not in rows.index or not _finite(*_quality_and_cost(summary, baseline)):
        return f"No finding: {baseline} has no graded answers to compare with."
    base_q, base_c = _quality_and_cost(summary, baseline)
    mine = rows[rows["realizable"].eq(True) & (rows.index != baseline)]
    mine = mine[[_finite(q, c) for q, c in zip(mine["mean_quality"], mine[COST], strict=True)]]
    cheaper = mine[mine[COST] < base_c]
    as_good = cheaper[cheaper["mean_quality"] >= base_q]
    if not as_good.empty:
        per_dollar = as_good["mean_quality"] / as_good[COST].where(as_good[COST] > 0, math.nan)
        best = _tied_best(as_good.assign(score=per_dollar.fillna(math.inf)), "score")
        q, c = float(best["mean_quality"].iloc[0]), float(best[COST].iloc[0])
        return (
            f"Finding: of the strategies you could deploy, {_names(list(best.index))} gives the "
            f"most quality per dollar without losing quality against {baseline}: quality "
            f"{q:.3f} vs {base_q:.3f} at ${c:,.2f} vs ${base_c:,.2f} per 1,000 requests "
            f"({1 - c / base_c:.0%} cheaper{_paired(best)})."
        )
    if cheaper.empty:
        return (
            f"Finding: no strategy you could deploy costs less than {baseline} (quality "
            f"{base_q:.3f} at {_per_1k(base_c)})."
        )
    best = _tied_best(cheaper, "mean_quality")
    q, c = float(best["mean_quality"].iloc[0]), float(best[COST].iloc[0])
    return (
        f"Finding: no strategy you could deploy matches {baseline}'s quality for less; the "
        f"best of the cheaper ones is {_names(list(best.index))}: quality {q:.3f} vs "
        f"{base_q:.3f} at ${c:,.2f} vs ${base_c:,.2f} per 1,000 requests"
        f"{_paired(best, prefix='; ')}."
    )


def _per_1k(cost: float) -> str:
    """A cost per 1,000 requests in words."""
    return f"${cost:,.2f} per 1,000 requests"


def _tied_best(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """The cheapest row with the highest ``column``, and the rows that tie with it on quality
    (to 3 decimals) and cost (to the cent), in table order."""
    top = rows[rows[column] == rows[column].max()].sort_values(COST, kind="stable")
    first = top.iloc[0]
    quality, cost = round(float(first["mean_quality"]), 3), round(float(first[COST]), 2)
    return top[(top["mean_quality"].round(3) == quality) & (top[COST].round(2) == cost)]


def _paired(best: pd.DataFrame, prefix: str = "; ") -> str:
    """The paired quality difference and its 95 % interval, when the summary has them."""
    row = best.iloc[0]
    fields = ("d_quality", "d_quality_ci_low", "d_quality_ci_high")
    if not all(f in best.columns for f in fields) or not _finite(*(row[f] for f in fields)):
        return ""
    d, low, high = (float(row[f]) for f in fields)
    noise = ", within the noise" if low <= 0 <= high else ""
    return f"{prefix}paired quality difference {d:+.3f}, 95 % CI {low:+.3f} to {high:+.3f}{noise}"


def robustness_finding(
    changed: pd.DataFrame, fault_free: pd.DataFrame, causes: str = "the faults"
) -> str:
    """Part 2's finding in one sentence: which strategy ``causes`` cost most and which least
    (answered requests first, then quality, cost and p99 latency), each against its own
    fault-free run. ``changed`` is the robustness summary with :func:`against_fault_free`'s
    columns."""
    base = fault_free.set_index("strategy")
    rows = changed.set_index("strategy")
    rows = rows[[_finite(v) for v in rows[D_QUALITY]]]
    if rows.empty:
        return "No finding: no strategy has graded answers in both runs."
    answered = rows["success_rate"] - base["success_rate"].reindex(rows.index)
    keys = pd.DataFrame(
        {
            "answered": answered.round(3),
            "quality": rows[D_QUALITY].round(3),
            "cost": rows[D_COST].round(2),
            "p99": rows[D_P99].round(1),
        }
    ).fillna(0.0)
    ordered = keys.sort_values(
        list(keys.columns), ascending=[True, True, False, False], kind="stable"
    )
    worst = _same_keys(ordered, ordered.iloc[0])
    best = _same_keys(ordered, ordered.iloc[-1])
    if worst == best:
        return f"Finding: {causes} cost every strategy the same: {_change(rows, base, worst)}."
    return (
        f"Finding: against its own fault-free run, {causes} cost most to "
        f"{_change(rows, base, worst)}; least to {_change(rows, base, best)}."
    )


def _same_keys(keys: pd.DataFrame, row: pd.Series) -> list[str]:
    return [str(name) for name, other in keys.iterrows() if other.equals(row)]


def _change(rows: pd.DataFrame, base: pd.DataFrame, names: list[str]) -> str:
    """``name: quality 0.825 → 0.801, $7.72 → $7.90 per 1,000 requests, p99 64.0 → 70.2 s``."""
    first = names[0]
    now, before = rows.loc[first], base.loc[first]

    def move(column: str, fmt: str) -> str:
        return f"{format(float(before[column]), fmt)} → {format(float(now[column]), fmt)}"

    answered = f"{fmt_percent(now['success_rate'])} answered"
    return (
        f"{_names(names)} (quality {move('mean_quality', '.3f')}, {answered}; "
        f"${move(COST, ',.2f').replace('→ ', '→ $')} per 1,000 requests; "
        f"p99 latency {move('latency_p99_s', '.1f')} s)"
    )


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


def _load(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The dataset the job runs on and the words saying how it was cut."""
    from sykit import datasets

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
    return data, filters


@dataclasses.dataclass
class _Robustness:
    """What part 2 ran on and found."""

    host: SimHost
    injected: dict[str, str]
    outage_note: str
    workload_note: str
    long_ids: list[str]
    causes: str = "the faults"
    comparison: Any = None
    summary: pd.DataFrame | None = None


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
) -> _Robustness:
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
    note = _workload_note(args, len(data), len(long_ids), weak, window)
    found = _Robustness(host, injected, outage_note, note, long_ids)
    causes = (
        ("the faults", bool(describe_faults(random_faults))),
        ("the outage" if len(outages) == 1 else "the outages", bool(outages)),
        ("the long prompts", bool(long_ids)),
    )
    found.causes = _names([words for words, present in causes if present] or ["nothing"])
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
        note = "" if asked else "outages: none (add one with --outage MODEL:START-END)"
        return asked or [], note
    weak = names["weak"]
    start, end = default_outage(requests, "weak only")
    note = (
        f"outage by default: {weak} answers 503 from {DEFAULT_OUTAGE[0]:.0%} to "
        f"{DEFAULT_OUTAGE[1]:.0%} of the time weak only took to start its requests without "
        f"faults (t={start:g}–{end:g} s); --outage MODEL:START-END to choose, --outage none "
        "for none"
    )
    return [(weak, start, end)], note


def _workload_note(args: argparse.Namespace, n: int, long: int, weak: str, window: int) -> str:
    """The line saying which requests the robustness run sends."""
    if not long:
        return (
            f"workload: the same {n} requests, none with a long context (--long-prompts SHARE "
            "to give some a context over the weak model's window)"
        )
    return (
        f"workload: the same {n} requests, {long} of them ({args.long_prompts:.1%}, drawn with "
        f"seed {args.seed}) with a long context of {int(window * 1.1):,}–{int(window * 1.5):,} "
        f"tokens, over {weak}'s {window:,}-token window (--long-prompts SHARE to change, 0 for "
        "none)"
    )


def run_job(args: argparse.Namespace) -> int:
    """Run ``sykit compare`` with parsed arguments; print both parts, each led by its finding;
    write files if asked."""
    from sykit import profiles
    from sykit._grid.sweep import sweep

    started = time.perf_counter()
    _checked_share(args.long_prompts)
    data, filters = _load(args)
    models = list(data.models)
    if len(models) < 2:
        raise SystemExit(f"dataset {args.dataset!r} needs at least two models with ground truth")
    weak, strong = (WEAK, STRONG) if {WEAK, STRONG} <= set(models) else (models[-1], models[0])
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
    robust = _robustness(args, clean, judge, data, lineup, names, routing, routing_summary, runs)

    width = terminal_width()
    scope = ", ".join(filters) if filters else "all rows"
    say(
        f"sykit compare: {len(data)} requests from {data.name!r} ({scope}), seed {args.seed}, "
        f"{args.concurrency} in flight, simulated host (virtual time)",
        width,
    )
    say(
        f"models: weak={weak}, strong={strong}, judge={JUDGE} (simulated, right "
        f"{JUDGE_ACCURACY:.0%} of the time); prices and latencies from the shipped catalogue",
        width,
    )
    print("\n1. Routing quality: no faults injected")
    say(routing_finding(routing_summary), width)
    print(fit_table(routing_cells(routing_summary), width))
    say(
        "$/1k req = USD per 1,000 requests; Δ = paired difference against 'strong only' on the "
        "same requests; realizable no: reads the ground truth (a bound, not a router you can "
        "deploy).",
        width,
    )
    say(
        f"threshold router on a simulated router score ({_score_label(score)}; reads the "
        f"ground truth): APGR {bounds.apgr:.3f}, AIQ {bounds.aiq:.3f} (95 % bootstrap); "
        f"random router: APGR {randoms.apgr():.3f} in this run (expected {random.value:.3f} "
        f"± {random.sd:.3f} over random rankings of these requests)",
        width,
    )
    say(
        "cascade (judge) by the simulated judge's accuracy: "
        + "; ".join(
            f"{accuracy:.0%}: quality {q:.3f} at ${c:.2f}/1k" for accuracy, (q, c) in judged.items()
        )
        + " (strong only: {:.3f} at ${:.2f}/1k)".format(
            *_quality_and_cost(routing_summary, "strong only")
        ),
        width,
    )
    _print_learned(learned, bound, too_small, width)
    _print_robustness(robust, routing_summary, width)
    if args.out:
        out = Path(args.out)
        written = _write_outputs(out, routing, routing_summary, robust.comparison, robust.summary)
        written += _write_sweeps(out, thresholds, randoms)
        if not learned_long.empty:
            learned_long.to_csv(out / "learned_routers.csv", index=False)
            written.append("learned_routers.csv")
        _write_run_json(out, args, data, weak, strong, routing_host, robust, started)
        written.append("run.json")
        print()
        say(f"wrote {len(written)} files to {args.out}/: {', '.join(written)}", width)
    print(f"done in {time.perf_counter() - started:.1f} s of wall time")
    return 0


def _print_learned(
    learned: pd.DataFrame, bound: Mapping[str, float], too_small: list[str], width: int
) -> None:
    if not learned.empty:
        print()
        say(
            "Learned routers you could deploy: APGR per benchmark, cross-fitted over 5 folds "
            "(fitted without the fold they route), 95 % bootstrap interval",
            width,
        )
        if bound:
            bound_row = {"router": "simulated score (bound, reads the truth)"}
            bound_row.update({b: f"{v:.3f}" for b, v in bound.items()})
            learned = pd.concat([learned, pd.DataFrame([bound_row])], ignore_index=True)
        print(fit_table(learned.fillna("–"), width))
    for note in too_small:
        say(f"learned routers left out {note}", width)


def _print_robustness(robust: _Robustness, fault_free: pd.DataFrame, width: int) -> None:
    print("\n2. Robustness: the same strategies under injected faults")
    if robust.summary is None:
        say("no faults injected (--faults none and no --outage): nothing to show", width)
        return
    say(robustness_finding(robust.summary, fault_free, robust.causes), width)
    for name, words in robust.injected.items():
        say(f"{name}: {words or 'no faults'}", width, indent="  ")
    for note in (robust.outage_note, robust.workload_note):
        if note:
            say(note, width, indent="  ")
    table = fit_table(robustness_cells(robust.summary), width)
    print(table)
    header = table.splitlines()[0]  # the columns that fitted: explain only those
    legend = {
        "ok %": "ok % = requests answered",
        "$/1k": "$/1k = USD per 1,000 requests",
        "p50 s": "p50/p99 = latency of the answered requests",
        "Δ qual": "Δ = change against the same strategy's fault-free run in part 1 "
        f"({robust.causes} together)",
        "retries": "retries = new calls to the same model after a failure",
        "fallbacks": "fallbacks = switches to another model",
        "waste %": "waste % = share of the spend on answers nobody served",
    }
    say("; ".join(text for column, text in legend.items() if column in header) + ".", width)


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
    robust: _Robustness,
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
