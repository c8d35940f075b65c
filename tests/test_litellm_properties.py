"""Properties of ``sy.strategies.litellm_like`` over random deployment groups × random faults ×
random Router settings × seeds: whatever happens, what it records keeps LiteLLM's rules.

For each example:

* the same seed gives identical frames, and the kernel and the asyncio engine give identical
  frames (latencies are continuous, so no two events share an instant);
* every model called belongs to a group the request could reach: the first group, or one its
  fallback tables lead to, at most ``max_fallbacks`` deep;
* no deployment is attempted more than ``num_retries + 1`` times in a row (unless the fallbacks
  form a cycle, which LiteLLM follows back to a group already tried);
* a served request's last call is its one ``ok`` attempt, at the served model;
* a ``skipped`` row is instantaneous and names a deployment that had failed earlier in the run;
  a group of one deployment with no fallbacks is never skipped;
* a ``fallback_reason`` is written only on a failed attempt, never more often than the request's
  ``n_fallbacks``;
* streamed, an attempt that failed after its first token is the last of its request, which
  failed.

``SYKIT_PROPERTY_EXAMPLES`` sets the number of examples (default 60).
"""

from __future__ import annotations

import os
import warnings

import pandas as pd
import pandas.testing as pdt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sykit as sy

EXAMPLES = int(os.environ.get("SYKIT_PROPERTY_EXAMPLES", "60"))
DEPLOYMENTS = ("d1", "d2", "d3", "d4", "d5")
GROUPS = ("g1", "g2", "g3")

FAULTS = {
    "none": sy.Faults(),
    "rate_limit": sy.Faults(rate_limit=0.4, retry_after_s=1.0),
    "rate_limit_fraction": sy.Faults(rate_limit=0.4, retry_after_s=0.5),
    "unavailable": sy.Faults(unavailable=0.5),
    "down": sy.Faults(unavailable=1.0),
    "timeout": sy.Faults(timeout=0.2),
    "policy": sy.Faults(policy=0.3),
    "invalid": sy.Faults(invalid=0.3),
    "non_chat": sy.Faults(non_chat=0.3),
    "auth": sy.Faults(errors=[sy.faults.ErrorFault(401, 0.3), sy.faults.ErrorFault(404, 0.1)]),
    "capability": sy.Faults(errors=[sy.faults.ErrorFault.capability(0.5)]),
    "context": sy.Faults(errors=[sy.faults.ErrorFault.context_window(0.5)]),
    "cut": sy.Faults(cut_stream=0.3),
    "malformed": sy.Faults(malformed=0.3),
    "flapping": sy.Faults(flapping=sy.faults.Flapping(up_s=3.0, down_s=2.0)),
}


@st.composite
def routers(draw):
    """A model_list of 1-3 groups over distinct deployments, fallback tables and settings."""
    n_groups = draw(st.sampled_from([1, 2, 2, 3, 3]))
    deployments = list(DEPLOYMENTS)
    model_list = []
    for group in GROUPS[:n_groups]:
        for _ in range(draw(st.integers(1, 2))):
            if not deployments:
                break
            name = deployments.pop(0)
            params = {"model": f"openai/{name}"}
            if draw(st.booleans()) and draw(st.booleans()):
                params["order"] = draw(st.integers(1, 2))
            model_list.append({"model_name": group, "litellm_params": params})
    groups = list(dict.fromkeys(e["model_name"] for e in model_list))

    def table():
        return {
            g: draw(st.lists(st.sampled_from(groups), min_size=1, max_size=2, unique=True))
            for g in groups
            if draw(st.integers(0, 3))  # three times in four
        }

    options = {
        "fallbacks": table(),
        "context_window_fallbacks": table() if draw(st.booleans()) else None,
        "content_policy_fallbacks": table() if draw(st.booleans()) else None,
        "num_retries": draw(st.integers(0, 3)),
        "allowed_fails": draw(st.one_of(st.none(), st.integers(0, 3))),
        "cooldown_time": draw(st.sampled_from([0.5, 2.0, 5.0])),
        "stream": draw(st.booleans()),
        "max_fallbacks": draw(st.sampled_from([5, 1, 0])),
    }
    faults = {
        e["litellm_params"]["model"][7:]: draw(st.sampled_from(sorted(FAULTS))) for e in model_list
    }
    return model_list, options, faults


def profile(faults: sy.Faults) -> sy.ModelProfile:
    # continuous latencies: no two events at one instant, so both engines order them alike
    return sy.ModelProfile(
        latency=sy.Latency(
            ttft=sy.dists.LogNormal(0.2, p95=0.6), tokens_per_s=sy.dists.LogNormal(80, p95=160)
        ),
        output_tokens=sy.dists.LogNormal(20, p95=60),
        reject_delay_s=sy.dists.LogNormal(0.05, p95=0.1),
        faults=faults,
    )


def run(model_list, options, faults, *, seed, engine):
    host = sy.SimHost(
        {m: profile(FAULTS[f]) for m, f in faults.items()},
        policy=sy.HostPolicy(timeout_s=5.0),
    )
    router = sy.strategies.litellm_like(model_list=model_list, **options)
    requests = [sy.Request(f"q{i}", id=i) for i in range(20)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sy.run(
            router,
            requests,
            host=host,
            arrivals=sy.traffic.Poisson(2.0),
            seed=seed,
            engine=engine,
            progress=False,
        )


TABLES = ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks")


def edges(options) -> dict[str, set[str]]:
    """group -> the other groups its fallback tables name (a group naming itself is skipped)."""
    out: dict[str, set[str]] = {}
    for key in TABLES:
        for group, targets in (options.get(key) or {}).items():
            out.setdefault(group, set()).update(t for t in targets if t != group)
    return out


def revisits(model_list, options) -> bool:
    """Whether a request can come back to a group it has left: a cycle among the fallbacks, or
    a group two fallback paths lead to (a failed fallback tries its own fallbacks before the
    next of its parent's, so ``g1: [g2, g3], g2: [g3]`` tries g3 twice)."""
    graph = edges(options)

    def cycle(group, path):
        return any(g in path or cycle(g, path | {g}) for g in graph.get(group, ()))

    first = model_list[0]["model_name"]
    if cycle(first, {first}):
        return True
    seen: set[str] = set()

    def twice(group) -> bool:
        for g in graph.get(group, ()):
            if g in seen:
                return True
            seen.add(g)
            if twice(g):
                return True
        return False

    return twice(first)


def reachable(model_list, options) -> set[str]:
    """group -> the groups a request for it may reach, within max_fallbacks."""
    tables = [
        options.get(k) or {}
        for k in ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks")
    ]
    out: set[str] = set()
    frontier = {model_list[0]["model_name"]}
    for _ in range(options["max_fallbacks"] + 1):
        out |= frontier
        frontier = {g for t in tables for f in frontier for g in t.get(f, ())} - out
    return out


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(routers(), st.integers(0, 3))
def test_litellm_like_keeps_the_routers_rules(spec, seed):
    model_list, options, faults = spec
    result = run(model_list, options, faults, seed=seed, engine="kernel")
    again = run(model_list, options, faults, seed=seed, engine="kernel")
    on_asyncio = run(model_list, options, faults, seed=seed, engine="asyncio")
    for other in (again, on_asyncio):
        pdt.assert_frame_equal(result.attempts, other.attempts)
        pdt.assert_frame_equal(result.requests, other.requests)

    group_of = {e["litellm_params"]["model"][7:]: e["model_name"] for e in model_list}
    allowed = {m for m, g in group_of.items() if g in reachable(model_list, options)}
    attempts = result.attempts.sort_values(["request_id", "start_s", "call_id"])
    failed_before: set[str] = set()
    lone = {
        g
        for g in set(group_of.values())
        if list(group_of.values()).count(g) == 1
        and not any(
            (options.get(k) or {}).get(g)
            for k in ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks")
        )
    }
    for row in attempts.sort_values(["start_s", "call_id"]).itertuples():
        model = str(row.model)
        if row.status == "skipped":
            assert row.start_s == row.end_s
            assert row.error_kind == "cooldown"
            assert model in failed_before, (model, row.start_s)
            assert group_of[model] not in lone
        elif row.status == "error":
            failed_before.add(model)
        if not pd.isna(row.fallback_reason):
            assert row.status == "error"

    for request in result.requests.itertuples():
        rows = attempts[attempts["request_id"] == request.request_id]
        calls = rows[rows["status"] != "skipped"]
        assert set(calls["model"].astype(str)) <= allowed
        assert rows["fallback_reason"].notna().sum() <= request.n_fallbacks
        run_length, previous = 0, None
        for model in calls["model"].astype(str):
            run_length = run_length + 1 if model == previous else 1
            previous = model
            # a cycle among the fallbacks may bring the request back to the same deployment
            if not revisits(model_list, options):
                assert run_length <= options["num_retries"] + 1, (request.request_id, model)
        if request.status == "ok":
            assert (calls["status"] == "ok").sum() == 1
            assert calls["status"].iloc[-1] == "ok"
            assert str(calls["model"].iloc[-1]) == str(request.served_model)
        else:
            assert (calls["status"] == "ok").sum() == 0
        if options["stream"]:
            broken = calls[(calls["status"] == "error") & calls["ttft_s"].notna()]
            if len(broken):
                assert broken.index[-1] == calls.index[-1]
                assert request.status == "failed"
