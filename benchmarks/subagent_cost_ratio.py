"""What sub-agents do to a task's cost: the OpenHands Index against sykit's model of them.

Real: the OpenHands Index runs the same models on the same tasks with and without sub-agents
(configurations ``alternative_agents/openhands_subagents/<model>`` against ``results/<model>``).
Per model, over the tasks both runs priced, the ratio of total cost with sub-agents to total
cost without (and the median of the per-task ratios), on SWE-bench Verified and on every
benchmark.

Modelled: ``sy.sessions.synthetic_sessions(n, seed=, subagents=k)`` against ``subagents=0`` —
the same drawn work, either in one session or in a family: a parent whose turn 0 briefs ``k``
sub-agents (``briefing_tokens`` each) that make the first half of the session's calls in fresh
contexts and end with a report, after which the parent re-makes a share ``rediscovery`` of their
reads (views, searches, listings) and makes the rest of the calls (the mechanism and the evidence
for its defaults: ``sykit/sessions/_synthetic.py``'s docstring, ``docs/sessions.md``) — run with
one model at that model's list prices (with its prompt cache, and without), costs rolled up per
task (``sy.sessions.session_summary``'s cost per session counts tasks). The ratio is the mean task
cost with sub-agents over the mean without. The real runs used the prompt cache; the rows without
one show what caching does to the comparison.

    python benchmarks/subagent_cost_ratio.py
    python benchmarks/subagent_cost_ratio.py --index PATH --n 300 --subagents 1 2 4
    python benchmarks/subagent_cost_ratio.py --briefing-tokens 0 --rediscovery 0   # the split alone
"""

from __future__ import annotations

import argparse
import inspect
import json
from pathlib import Path
from typing import Any

import pandas as pd

import sykit as sy
from sykit import strategies as st

HERE = Path(__file__).resolve().parent
INDEX = HERE.parent / "datasets/agentic/openhands_index"
SUBAGENTS = "alternative_agents/openhands_subagents/"


def real_ratios(index: Path = INDEX) -> pd.DataFrame:
    """Per model with a sub-agent run and a plain one, and per scope (SWE-bench Verified, all):
    tasks priced by both, the total cost of each, their ratio and the median per-task ratio,
    resolve rates, and both agent versions (the runs are not of one harness version)."""
    runs = pd.read_csv(index / "openhands_index_per_instance.csv.gz")
    meta = json.loads((index / "openhands_index_metadata.json").read_text())
    rows = []
    for config in sorted(c for c in meta if c.startswith(SUBAGENTS)):
        model = config.removeprefix(SUBAGENTS)
        plain = f"results/{model}"
        if plain not in meta:
            continue
        both = runs[runs["config"] == config].merge(
            runs[runs["config"] == plain], on=["benchmark", "instance_id"], suffixes=("_sub", "")
        )
        both = both.dropna(subset=["cost_usd_sub", "cost_usd"])
        both = both[both["cost_usd"] > 0]
        for scope, part in (("swe-bench", both[both["benchmark"] == "swe-bench"]), ("all", both)):
            rows.append(
                {
                    "model": model,
                    "scope": scope,
                    "tasks": len(part),
                    "cost_with_usd": part["cost_usd_sub"].sum(),
                    "cost_without_usd": part["cost_usd"].sum(),
                    "ratio": part["cost_usd_sub"].sum() / part["cost_usd"].sum(),
                    "median_task_ratio": (part["cost_usd_sub"] / part["cost_usd"]).median(),
                    "resolved_with": _rate(part["resolved_sub"]),
                    "resolved_without": _rate(part["resolved"]),
                    "agent_with": meta[config]["agent_version"],
                    "agent_without": meta[plain]["agent_version"],
                }
            )
    return pd.DataFrame(rows)


def _rate(values: pd.Series) -> float:
    return float(values.astype(str).str.lower().eq("true").mean())


def profile_of(meta: dict, *, cache: bool = True) -> sy.ModelProfile:
    """A simulated model at a configuration's list prices, answering with the traced agent's
    answer lengths; with its prompt cache when the metadata prices one."""
    read = meta.get("cache_read_price")
    prompt_cache = (
        sy.profiles.PromptCache(read_price=read, write_price=meta.get("cache_write_price"))
        if cache and read is not None
        else None
    )
    return sy.ModelProfile(
        price_in=meta["input_price"],
        price_out=meta["output_price"],
        output_tokens=sy.sessions.fit_openhands().output_tokens(),
        cache=prompt_cache,
    )


def modelled_cost_ratio(
    profile: sy.ModelProfile, *, n: int, seed: int, subagents: int, **delegation: Any
) -> tuple[float, float, float]:
    """Mean task cost with ``subagents`` sub-agents per task, without, and their ratio: one
    model serving every turn of ``synthetic_sessions(n, seed=seed)`` split or whole;
    ``delegation`` goes to ``synthetic_sessions`` (``briefing_tokens=``, ``rediscovery=``)."""
    host = sy.SimHost({"model": profile})
    costs = []
    for k in (subagents, 0):
        sessions = sy.sessions.synthetic_sessions(n, seed=seed, subagents=k, **delegation)
        result = sy.run(st.single("model"), sessions, host=host, seed=seed, progress=False)
        costs.append(float(sy.sessions.session_summary(result)["cost_per_session_usd"].iloc[0]))
    return costs[0], costs[1], costs[0] / costs[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=INDEX, help="the OpenHands Index folder")
    parser.add_argument("--n", type=int, default=300, help="synthetic tasks per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--subagents", type=int, nargs="+", default=[1, 2, 4])
    defaults = inspect.signature(sy.sessions.synthetic_sessions).parameters
    parser.add_argument(
        "--briefing-tokens",
        type=int,
        default=defaults["briefing_tokens"].default,
        help="the parent's instructions to each sub-agent, in tokens (default: sykit's)",
    )
    parser.add_argument(
        "--rediscovery",
        type=float,
        default=defaults["rediscovery"].default,
        help="the share of the delegated reads the parent re-makes (default: sykit's)",
    )
    args = parser.parse_args()
    delegation = {"briefing_tokens": args.briefing_tokens, "rediscovery": args.rediscovery}
    real = real_ratios(args.index)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print("Real: OpenHands Index, the same model with and without sub-agents")
        print(real.round(3).to_string(index=False))
    meta = json.loads((args.index / "openhands_index_metadata.json").read_text())
    print(
        f"\nModelled: {args.n} synthetic tasks, seed {args.seed}, one model serving every turn, "
        f"briefing_tokens={args.briefing_tokens}, rediscovery={args.rediscovery}"
    )
    for model in real["model"].unique():
        for cache in (True, False):
            for k in args.subagents:
                profile = profile_of(meta[f"results/{model}"], cache=cache)
                with_, without, ratio = modelled_cost_ratio(
                    profile, n=args.n, seed=args.seed, subagents=k, **delegation
                )
                label = "cache" if cache else "no cache"
                print(
                    f"  {model:<20} {label:<9} sub-agents {k}: ${with_:.4f} / ${without:.4f} "
                    f"per task = {ratio:.3f}"
                )


if __name__ == "__main__":
    main()
