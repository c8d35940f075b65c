"""The sentences ``sykit compare`` computes rather than states: each part's finding (part 1: the
deployable strategy with the most quality per dollar against strong only; part 2: whom the faults
cost most and least), the faults each model of the robustness run meets, what the robustness run
changes (its causes) and where its outage and long prompts come from.

Also the columns part 2's finding reads: each strategy's change against its own fault-free run
(:func:`against_fault_free`), which the robustness summary gains.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from sykit._cli.layout import fmt_answered, fmt_number
from sykit._world.faults import ErrorFault, Faults

__all__ = [
    "COST",
    "D_COST",
    "D_P99",
    "D_QUALITY",
    "NO_OUTAGE_NOTE",
    "against_fault_free",
    "causes",
    "default_outage_note",
    "describe_faults",
    "quality_and_cost",
    "robustness_finding",
    "routing_finding",
    "workload_note",
]

#: The summaries' cost column, which the findings compare.
COST = "cost_per_1k_requests_usd"
#: Columns the robustness summary gains: each strategy's change against its fault-free run.
D_QUALITY = "d_quality_vs_fault_free"
D_COST = "d_cost_per_1k_requests_usd_vs_fault_free"
D_P99 = "d_latency_p99_s_vs_fault_free"
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
#: The outage line when no outage is asked for or none comes by default.
NO_OUTAGE_NOTE = "outages: none (add one with --outage MODEL:START-END)"


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


def causes(random_faults: Faults, outages: int, long_prompts: int) -> str:
    """What the robustness run changes against the fault-free one, in words (``the faults, the
    outage and the long prompts``): its random faults, its ``outages`` and its ``long_prompts``
    (how many requests were given a long context)."""
    present = (
        ("the faults", bool(describe_faults(random_faults))),
        ("the outage" if outages == 1 else "the outages", bool(outages)),
        ("the long prompts", bool(long_prompts)),
    )
    return _names([words for words, shown in present if shown] or ["nothing"])


def default_outage_note(weak: str, shares: tuple[float, float], start: float, end: float) -> str:
    """The line saying where the default outage of ``weak`` (from ``start`` to ``end`` s, the
    ``shares`` of its fault-free run) comes from and how to choose another."""
    return (
        f"outage by default: {weak} answers 503 from {shares[0]:.0%} to "
        f"{shares[1]:.0%} of the time weak only took to start its requests without "
        f"faults (t={start:g}–{end:g} s); --outage MODEL:START-END to choose, --outage none "
        "for none"
    )


def workload_note(n: int, long: int, share: float, seed: int, weak: str, window: int) -> str:
    """The line saying which requests the robustness run sends."""
    if not long:
        return (
            f"workload: the same {n} requests, none with a long context (--long-prompts SHARE "
            "to give some a context over the weak model's window)"
        )
    return (
        f"workload: the same {n} requests, {long} of them ({share:.1%}, drawn with "
        f"seed {seed}) with a long context of {int(window * 1.1):,}–{int(window * 1.5):,} "
        f"tokens, over {weak}'s {window:,}-token window (--long-prompts SHARE to change, 0 for "
        "none)"
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


def quality_and_cost(summary: pd.DataFrame, strategy: str) -> tuple[float, float]:
    """A strategy's mean quality and cost per 1,000 requests, read from a summary."""
    row = summary.set_index("strategy").loc[strategy]
    return float(row["mean_quality"]), float(row["cost_per_1k_requests_usd"])


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
    if baseline not in rows.index or not _finite(*quality_and_cost(summary, baseline)):
        return f"No finding: {baseline} has no graded answers to compare with."
    base_q, base_c = quality_and_cost(summary, baseline)
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
    """Part 2's finding, its criterion in the sentence: which strategy ``causes`` cost most and
    which least, ranked by the answered requests it lost and then by its quality (each against
    its own fault-free run), then who paid most and least more, and whose p99 latency grew most
    and least. ``changed`` is the robustness summary with :func:`against_fault_free`'s columns;
    every figure quoted is a cell of the printed robustness table."""
    base = fault_free.set_index("strategy")
    rows = changed.set_index("strategy")
    rows = rows[[_finite(v) for v in rows[D_QUALITY]]]
    if rows.empty:
        return "No finding: no strategy has graded answers in both runs."
    answered = rows["success_rate"] - base["success_rate"].reindex(rows.index)
    keys = pd.DataFrame(
        {"answered": answered.round(3), "quality": rows[D_QUALITY].round(3)}
    ).fillna(0.0)
    ordered = keys.sort_values(list(keys.columns), kind="stable")
    worst = _same_keys(ordered, ordered.iloc[0])
    best = _same_keys(ordered, ordered.iloc[-1])
    if worst == best:
        lead = f"Finding: {causes} cost every strategy the same answered share and quality: " + (
            _lost(rows, worst) + "."
        )
    else:
        lead = (
            f"Finding: against its own fault-free run, ranked by the answered requests it lost "
            f"and then by its quality, {causes} cost most to {_lost(rows, worst)} and least to "
            f"{_lost(rows, best)}."
        )
    moves = [
        _extremes(rows, D_COST, "the cost per 1,000 requests", "Δ $/1k", 2, ""),
        _extremes(rows, D_P99, "the p99 latency", "Δ p99", 1, " s"),
    ]
    return " ".join([lead, *(m for m in moves if m)])


def _lost(rows: pd.DataFrame, names: list[str]) -> str:
    """``name (77.5% answered, Δ quality -0.173)``: as the table's ``ok %`` and ``Δ qual``."""
    row = rows.loc[names[0]]
    return (
        f"{_names(names)} ({fmt_answered(row['success_rate'])} answered, "
        f"Δ quality {fmt_number(row[D_QUALITY], 3, sign=True)})"
    )


def _extremes(
    rows: pd.DataFrame, column: str, what: str, label: str, digits: int, unit: str
) -> str:
    """Who ``column`` (a change against the fault-free run) rose most and least for, as the
    table prints it; empty when no strategy has the figure."""
    shown = rows[column].map(lambda v: fmt_number(v, digits, sign=True) if _finite(v) else "")
    shown = shown[shown != ""]
    if shown.empty:
        return ""
    values = rows.loc[shown.index, column].astype(float).round(digits)
    top, bottom = values.max(), values.min()
    most = [str(n) for n in values.index if values[n] == top]
    least = [str(n) for n in values.index if values[n] == bottom]
    if top == bottom:
        return f"{what.capitalize()} changed the same for every strategy ({label} {shown[most[0]]}{unit})."
    return (
        f"{what.capitalize()} rose most for {_names(most)} ({label} {shown[most[0]]}{unit}) and "
        f"least for {_names(least)} ({label} {shown[least[0]]}{unit})."
    )


def _same_keys(keys: pd.DataFrame, row: pd.Series) -> list[str]:
    return [str(name) for name, other in keys.iterrows() if other.equals(row)]
