"""What ``sykit compare`` prints, in order: the header (requests, models), part 1 (its finding, the
routing table and its legend, the threshold and random routers' APGR, the cascade by judge
accuracy), the learned routers' table, and part 2 (its finding, the faults, outage and workload
of the robustness run, its table and the legend of the columns that fitted).

It reads an experiment's :class:`~sykit._cli.experiment.Results`: the sentences computed from them
come from :mod:`.prose`, the fitting to the terminal from :mod:`.layout`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sykit._cli.experiment import (
    JUDGE,
    JUDGE_ACCURACY,
    RACE,
    RACE_FIRST_OK,
    Results,
    Robustness,
)
from sykit._cli.layout import fit_table, fmt_answered, fmt_number, fmt_percent, say
from sykit._cli.prose import (
    D_COST,
    D_P99,
    D_QUALITY,
    quality_and_cost,
    robustness_finding,
    routing_finding,
)

__all__ = ["print_report", "robustness_cells", "routing_cells"]


def print_report(results: Results, width: int) -> None:
    """Print both parts of the job, each led by its finding, fitted to ``width`` columns."""
    args, data, routing_summary = results.args, results.data, results.routing_summary
    scope = ", ".join(results.filters) if results.filters else "all rows"
    say(
        f"sykit compare: {len(data)} requests from {data.name!r} ({scope}), seed {args.seed}, "
        f"{args.concurrency} in flight, simulated host (virtual time)",
        width,
    )
    say(
        f"models: weak={results.weak}, strong={results.strong}, judge={JUDGE} (simulated, right "
        f"{JUDGE_ACCURACY:.0%} of the time); prices and latencies from the shipped catalogue",
        width,
    )
    print("\n1. Routing quality: no faults injected")
    say(routing_finding(routing_summary), width)
    print(fit_table(routing_cells(routing_summary), width))
    say(
        "$/1k req = USD per 1,000 requests; Δ = paired difference against 'strong only' on the "
        "same requests; realizable no: reads the ground truth, so no router you could deploy "
        "(the oracle's quality is an upper bound; the threshold router's simulated score stands "
        "for a published router's, which deployable routers can beat).",
        width,
    )
    sweeps, random = results.sweeps, results.random
    assert sweeps is not None  # run() returns them
    bounds = sweeps.bounds
    say(
        f"threshold router on a simulated router score ({_score_label(results.score)}; reads the "
        f"ground truth): APGR {bounds.apgr:.3f}, AIQ {bounds.aiq:.3f} (95 % bootstrap); "
        f"random router: APGR {sweeps.random_apgr:.3f} in this run (expected "
        f"{random.value:.3f} ± {random.sd:.3f} over random rankings of these requests)",
        width,
    )
    say(
        "cascade (judge) by the simulated judge's accuracy: "
        + "; ".join(
            f"{accuracy:.0%}: quality {q:.3f} at ${c:.2f}/1k"
            for accuracy, (q, c) in results.judged.items()
        )
        + " (strong only: {:.3f} at ${:.2f}/1k)".format(
            *quality_and_cost(routing_summary, "strong only")
        ),
        width,
    )
    _print_learned(results.learned, results.learned_long, sweeps.bound, results.too_small, width)
    _print_robustness(results.robust, routing_summary, width)


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
            "ok %": summary["success_rate"].map(fmt_answered),
            "quality": summary["mean_quality"].map(lambda x: fmt_number(x, 3)),
            "Δ qual": summary[D_QUALITY].map(lambda x: fmt_number(x, 3, sign=True)),
            "$/1k": summary["cost_per_1k_requests_usd"].map(lambda x: fmt_number(x, 2)),
            "Δ $/1k": summary[D_COST].map(lambda x: fmt_number(x, 2, sign=True)),
            # the p99 and its change before the p50: a narrow terminal keeps what the finding quotes
            "p99 s": summary["latency_p99_s"].map(lambda x: fmt_number(x, 1)),
            "Δ p99 s": summary[D_P99].map(lambda x: fmt_number(x, 1, sign=True)),
            "p50 s": summary["latency_p50_s"].map(lambda x: fmt_number(x, 1)),
            "retries": summary["retries"].map(lambda x: fmt_number(x, 0)),
            "fallbacks": summary["fallbacks"].map(lambda x: fmt_number(x, 0)),
            "att/req": summary["attempts_per_request"].map(lambda x: fmt_number(x, 2)),
            "waste %": summary["wasted_share"].map(fmt_percent),
        }
    )


def _print_learned(
    learned: pd.DataFrame,
    long: pd.DataFrame,
    simulated: Mapping[str, float],
    too_small: list[str],
    width: int,
) -> None:
    if not learned.empty:
        print()
        say(
            "Learned routers you could deploy: APGR per benchmark, cross-fitted over 5 folds "
            "(fitted without the fold they route), 95 % bootstrap interval",
            width,
        )
        if simulated:
            row = {"router": "simulated score (reads the truth)"}
            row.update({b: f"{v:.3f}" for b, v in simulated.items()})
            learned = pd.concat([learned, pd.DataFrame([row])], ignore_index=True)
        print(fit_table(learned.fillna("–"), width))
        if simulated:
            say(simulated_score_note(long, simulated), width)
    for note in too_small:
        say(f"learned routers left out {note}", width)


def simulated_score_note(long: pd.DataFrame, simulated: Mapping[str, float]) -> str:
    """What the simulated score's row is, and where deployable routers beat it (so it is no
    upper bound there)."""
    deployable = long[~long["router"].str.startswith("random") & long["realizable"].astype(bool)]
    beaten = []
    for benchmark, value in simulated.items():
        rows = deployable[deployable["benchmark"] == benchmark]
        better = [
            str(r) for r, apgr in zip(rows["router"], rows["apgr"], strict=True) if apgr > value
        ]
        if better:
            beaten.append(f"on {benchmark} {' and '.join(better)} beat it")
    where = (
        "it is no upper bound: " + "; ".join(beaten)
        if beaten
        else "no deployable router here beats it"
    )
    return (
        "simulated score: part 1's threshold router, on a score calibrated to a published "
        f"router's APGR (it reads the truth, so it cannot be deployed); {where}."
    )


def _print_robustness(robust: Robustness, fault_free: pd.DataFrame, width: int) -> None:
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
        "p99 s": "p99/p50 = latency of the answered requests",
        "Δ qual": "Δ = change against the same strategy's fault-free run in part 1 "
        f"({robust.causes} together)",
        "retries": "retries = new calls to the same model after a failure",
        "fallbacks": "fallbacks = switches to another model",
        "waste %": "waste % = share of the spend on answers nobody served",
    }
    say("; ".join(text for column, text in legend.items() if column in header) + ".", width)
    note = race_note(robust.summary)
    if note:
        say(note, width)


def race_note(summary: pd.DataFrame) -> str:
    """Why the race answers fewer requests than its first-ok twin when it does: the seed
    system's race serves the first call to complete, and a fast error completes first."""
    rows = summary.set_index("strategy")
    if RACE not in rows.index or RACE_FIRST_OK not in rows.index:
        return ""
    race, first_ok = rows.loc[RACE, "success_rate"], rows.loc[RACE_FIRST_OK, "success_rate"]
    if not race < first_ok:
        return ""
    return (
        f"{RACE} serves the first call to complete, an error included (the seed system's race): "
        f"under faults a fast error wins it, so it answers {fmt_answered(race)}; {RACE_FIRST_OK} "
        f"waits for the first success and answers {fmt_answered(first_ok)}."
    )


def _score_label(score: Any) -> str:
    preset = getattr(score, "preset", None)
    if preset:
        return f"preset {preset!r}"
    return repr(score)
