"""sy.strategies.litellm_like against LiteLLM's real Router, as recorded in the golden file.

``conformance/litellm_router.py`` ran each scenario on ``litellm.Router`` against the FakeProvider
and wrote every request's attempts (model, status, seconds since its first attempt) to
``conformance/litellm_router_golden.json``. Here the same scenarios (the same faults on the same
models) run on a SimHost under ``litellm_like`` with the same settings. The attempts must match in
order and kind (model, status) exactly, under every one of ``SEEDS``; each gap the real Router
left between two attempts must lie in the range the same gap takes under litellm_like over those
seeds (the backoff plus its 0-0.75 s jitter), widened by ``SLACK`` for the latency of the fake
provider and of LiteLLM itself. The group scenarios give litellm_like the very ``model_list`` the
Router had; where the Router picked a deployment at random, litellm_like replays its picks
(``REPLAYED_PICKS``). Where they disagree for a known reason the scenario is in
``KNOWN_DIFFERENCES``, and the test asserts that it still differs, so it fails once fixed.

The scenarios where the Retry-After header matters are replayed over HTTP too
(``HTTP_SCENARIOS``): litellm_like on an HttpHost against the FakeProvider, with the very
FakeModels the Router met, so the header goes over the wire in the spelling the Router read. Some
spellings (an HTTP-date, ``retry-after-ms``) exist only there.
"""

from __future__ import annotations

import itertools
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

import sykit as sy
from sykit.strategies import _litellm
from sykit.testing import FakeModel, FakeProvider
from tests.helpers import constant_profile

GOLDEN = Path(__file__).resolve().parents[1] / "conformance" / "litellm_router_golden.json"
JITTER = 0.75
SLACK = 0.15  # both sides' latencies: the fake provider's answers, LiteLLM's own overhead
SEEDS = range(24)  # enough for litellm_like's jitter to span most of [0, 0.75) s
USAGE_POLICY = "Invalid prompt: your prompt was flagged as potentially violating our usage policy."

RATE_LIMITED = sy.Faults(rate_limit=1.0, retry_after_s=1.0)
DOWN = sy.Faults(unavailable=1.0)
HEALTHY = sy.Faults()
AUTH = sy.Faults(errors=[sy.faults.ErrorFault(401, 1.0)])

# name -> (the faults of the primary "a", or of each deployment of the group "a"; litellm_like
# settings beyond the common ones; arrivals). The deployments and their orders come from the
# model_list recorded in the golden file, given to litellm_like as it was to the real Router.
SCENARIOS: dict[str, tuple[sy.Faults | dict[str, sy.Faults], dict, list[float]]] = {
    "429-retry-after-0.5": (sy.Faults(rate_limit=1.0, retry_after_s=0.5), {}, [0.0]),
    "429-retry-after-1": (sy.Faults(rate_limit=1.0, retry_after_s=1.0), {}, [0.0]),
    "429-retry-after-90-cooldown": (
        sy.Faults(rate_limit=1.0, retry_after_s=90.0),
        {"allowed_fails": 0, "cooldown_time": 2, "num_retries": 0},
        [0.0, 3.0],
    ),
    "503": (sy.Faults(unavailable=1.0), {}, [0.0]),
    "400-capability": (sy.Faults(errors=[sy.faults.ErrorFault.capability(1.0)]), {}, [0.0]),
    "401": (sy.Faults(errors=[sy.faults.ErrorFault(401, 1.0)]), {}, [0.0]),
    "404": (sy.Faults(errors=[sy.faults.ErrorFault(404, 1.0)]), {}, [0.0]),
    "422": (sy.Faults(errors=[sy.faults.ErrorFault(422, 1.0)]), {}, [0.0]),
    "non-chat-200": (sy.Faults(non_chat=1.0), {}, [0.0]),
    "malformed-200": (sy.Faults(malformed=1.0), {}, [0.0]),
    "context-window-400": (
        sy.Faults(errors=[sy.faults.ErrorFault.context_window(1.0)]),
        {"context_window_fallbacks": {"a": ["c"]}},
        [0.0],
    ),
    "content-policy-400": (
        sy.Faults(errors=[sy.faults.ErrorFault.policy(1.0)]),
        {"content_policy_fallbacks": {"a": ["c"]}},
        [0.0],
    ),
    "content-policy-400-usage-wording": (
        sy.Faults(errors=[sy.faults.ErrorFault.policy(1.0, message=USAGE_POLICY)]),
        {"content_policy_fallbacks": {"a": ["c"]}},
        [0.0],
    ),
    "503-twice-then-ok": (sy.Faults(fail_first=2, fail_first_status=503), {}, [0.0]),
    "allowed-fails-3": (
        sy.Faults(unavailable=1.0),
        {"allowed_fails": 3, "cooldown_time": 5, "num_retries": 0},
        [0.4 * i for i in range(18)],
    ),
    "group-429-sibling": ({"a1": RATE_LIMITED, "a2": HEALTHY}, {}, [2.0 * i for i in range(6)]),
    "group-503-sibling": ({"a1": DOWN, "a2": HEALTHY}, {}, [0.5 * i for i in range(8)]),
    "group-allowed-fails-1": (
        {"a1": DOWN, "a2": HEALTHY},
        {"allowed_fails": 1, "cooldown_time": 5, "num_retries": 0},
        [0.4 * i for i in range(18)],
    ),
    "order-503": ({"a1": DOWN, "a2": HEALTHY}, {}, [0.0]),
    "order-both-503": ({"a1": DOWN, "a2": DOWN}, {}, [0.0]),
    "order-400": (
        {"a1": sy.Faults(errors=[sy.faults.ErrorFault.capability(1.0)]), "a2": HEALTHY},
        {},
        [0.0],
    ),
    "order-429": ({"a1": RATE_LIMITED, "a2": HEALTHY}, {}, [0.0, 0.5, 2.0]),
    "order-allowed-fails-1": (
        {"a1": DOWN, "a2": HEALTHY},
        {"allowed_fails": 1, "cooldown_time": 5, "num_retries": 0},
        [0.5 * i for i in range(14)],
    ),
    # a1's own cooldown_time (1 s, in the recorded model_list) before the Router's and Retry-After
    "cooldown-time-deployment": (
        {"a1": DOWN, "a2": HEALTHY},
        {"allowed_fails": 0, "cooldown_time": 5, "num_retries": 0},
        [0.4 * i for i in range(8)],
    ),
    "cooldown-time-deployment-429": (
        {"a1": sy.Faults(rate_limit=1.0, retry_after_s=3.0), "a2": HEALTHY},
        {"allowed_fails": 0, "cooldown_time": 5, "num_retries": 0},
        [0.4 * i for i in range(8)],
    ),
    "max-fallbacks-1-list": (
        {m: AUTH for m in ("a", "b", "c")},
        {"fallbacks": {"a": ["b", "c"]}, "max_fallbacks": 1, "num_retries": 0},
        [0.0],
    ),
    "max-fallbacks-1-chain": (
        {m: AUTH for m in ("a", "b", "c")},
        {"fallbacks": {"a": ["b"], "b": ["c"]}, "max_fallbacks": 1, "num_retries": 0},
        [0.0],
    ),
    # streamed requests (litellm_like(stream=True)); a stream cut after 4 tokens is a cut stream
    # on the SimHost wherever it breaks: what matters is that content had come
    "stream-ok": (HEALTHY, {"stream": True}, [0.0]),
    "stream-503": (DOWN, {"stream": True}, [0.0]),
    "stream-cut": (sy.Faults(cut_stream=1.0), {"stream": True}, [0.0]),
    "stream-malformed-first-chunk": (sy.Faults(malformed=1.0), {"stream": True}, [0.0]),
    "stream-malformed-after-content": (
        sy.Faults(malformed=1.0, break_after_tokens=4),
        {"stream": True},
        [0.0],
    ),
    "stream-malformed-allowed-fails-0": (
        sy.Faults(malformed=1.0),
        {"stream": True, "allowed_fails": 0, "cooldown_time": 5},
        [0.0, 1.0, 6.0],
    ),
    "stream-cut-allowed-fails-0": (
        sy.Faults(cut_stream=1.0),
        {"stream": True, "allowed_fails": 0, "cooldown_time": 5},
        [0.0, 1.0, 6.0],
    ),
}

# Replayed over HTTP: name -> (the FakeModel of the primary "a", as the recording script gave it to
# the FakeProvider; litellm_like settings beyond the common ones; arrivals). Those not in
# SCENARIOS send a Retry-After spelling a SimHost cannot: an HTTP-date, retry-after-ms.
HTTP_SCENARIOS: dict[str, tuple[FakeModel, dict, list[float]]] = {
    "429-retry-after-0.5": (FakeModel(fault="fail-429", retry_after_s=0.5), {}, [0.0]),
    "429-retry-after-1": (FakeModel(fault="fail-429", retry_after_s=1.0), {}, [0.0]),
    "429-retry-after-date": (
        FakeModel(fault="fail-429", retry_after_s=4.0, retry_after_as="date"),
        {"num_retries": 1},
        [0.0],
    ),
    "429-retry-after-ms-and-seconds": (
        FakeModel(fault="fail-429", retry_after_s=1.0, retry_after_ms=3000.0),
        {"num_retries": 1},
        [0.0],
    ),
    "429-retry-after-ms-only": (
        FakeModel(fault="fail-429", retry_after_s=None, retry_after_ms=3000.0),
        {"num_retries": 1},
        [0.0],
    ),
    "429-retry-after-90-cooldown": (
        FakeModel(fault="fail-429", retry_after_s=90.0),
        {"allowed_fails": 0, "cooldown_time": 2, "num_retries": 0},
        [0.0, 3.0],
    ),
}
HTTP_JITTER_DRAW = 0.5  # litellm_like's jitter over HTTP: 0.75 * 0.5 s on every wait


def speed(ttft: float, tokens: int = 16, tps: float = 2000.0) -> sy.ModelProfile:
    """A deployment as fast as the FakeModel the Router met (its ttft_s, output_tokens,
    tokens_per_s)."""
    return constant_profile(ttft, tokens, tps)


# The load-aware routing strategies: name -> (the profile of each deployment of the group "a",
# litellm_like settings beyond the common ones, arrivals). A "timeout" setting (the Router's) is
# the SimHost's HostPolicy.timeout_s. The deployments, with their rpm, come from the recorded
# model_list.
LOAD_SCENARIOS: dict[str, tuple[dict[str, sy.ModelProfile], dict, list[float]]] = {
    "latency-slow-fast": (
        {"a1": speed(0.3), "a2": speed(0.02)},
        {"routing_strategy": "latency-based-routing"},
        [1.0 * i for i in range(6)],
    ),
    "latency-buffer": (
        {"a1": speed(0.3), "a2": speed(0.02)},
        {
            "routing_strategy": "latency-based-routing",
            "routing_strategy_args": {"lowest_latency_buffer": 50},
        },
        [1.0 * i for i in range(10)],
    ),
    "latency-timeout": (
        {"a1": speed(3.0), "a2": speed(0.02)},
        {"routing_strategy": "latency-based-routing", "timeout": 0.5, "num_retries": 0},
        [1.0 * i for i in range(5)],
    ),
    "latency-503-once": (
        {
            "a1": speed(0.3),
            "a2": speed(0.1),
            "a3": constant_profile(0.02, 16, 2000.0, faults=sy.Faults(outages=[(4.5, 5.5)])),
        },
        {"routing_strategy": "latency-based-routing", "num_retries": 1},
        [1.0 * i for i in range(12)],
    ),
    "latency-buffer-0.5": (
        {"a1": speed(0.1), "a2": speed(0.1), "a3": speed(0.5)},
        {
            "routing_strategy": "latency-based-routing",
            "routing_strategy_args": {"lowest_latency_buffer": 0.5},
        },
        [1.0 * i for i in range(12)],
    ),
    "least-busy-overlapping": (
        {"a1": speed(1.0), "a2": speed(1.0)},
        {"routing_strategy": "least-busy"},
        [0.0, 0.2, 0.4, 0.6, 2.0],
    ),
    "least-busy-slow-fast": (
        {"a1": speed(3.0), "a2": speed(0.1)},
        {"routing_strategy": "least-busy"},
        [0.25 * i for i in range(8)],
    ),
    "usage-rpm-limits": (
        {"a1": speed(0.01), "a2": speed(0.01)},
        {"routing_strategy": "usage-based-routing-v2", "num_retries": 0},
        [0.5 * i for i in range(5)],
    ),
    "usage-lowest-tpm": (
        {"a1": speed(0.01, tokens=64), "a2": speed(0.01)},
        {"routing_strategy": "usage-based-routing-v2"},
        [0.5 * i for i in range(6)],
    ),
    "usage-rpm-2": (
        {"a1": speed(0.01), "a2": speed(0.01)},
        {"routing_strategy": "usage-based-routing-v2", "num_retries": 0},
        [0.2 * i for i in range(8)],
    ),
    "usage-no-limits": (
        {"a1": speed(0.5), "a2": speed(0.5), "a3": speed(0.5)},
        {"routing_strategy": "usage-based-routing-v2"},
        [0.2 * i for i in range(12)],
    ),
    # cost-based-routing draws nothing: compared as they are. The prices come from the recorded
    # model_list; the profiles here have none (price 0), as LiteLLM's cost map has no a1, a2.
    "cost-cheap-expensive": (
        {"a1": speed(0.01), "a2": speed(0.01)},
        {"routing_strategy": "cost-based-routing"},
        [0.5 * i for i in range(6)],
    ),
    "cost-cheap-503-cooldown": (
        {
            "a1": speed(0.01),
            "a2": constant_profile(0.01, 16, 2000.0, faults=sy.Faults(outages=[(0.9, 1.5)])),
        },
        {
            "routing_strategy": "cost-based-routing",
            "allowed_fails": 0,
            "cooldown_time": 2,
            "num_retries": 1,
        },
        [0.0, 1.0, 2.0, 4.0, 5.0],
    ),
    "cost-rpm-limit": (
        {"a1": speed(0.01), "a2": speed(0.01)},
        {"routing_strategy": "cost-based-routing", "num_retries": 0},
        [0.5 * i for i in range(5)],
    ),
    "cost-zero-is-unknown": (
        {"a1": speed(0.01), "a2": speed(0.01)},
        {"routing_strategy": "cost-based-routing"},
        [0.5 * i for i in range(4)],
    ),
}

# Load scenarios where the strategy picks at random among several deployments (latency-based:
# among those within the buffer, the first request among two unseen ones; usage-based: among
# equal usage). There litellm_like replays the Router's pick when it is among the deployments
# its own rule would pick from (``router.load.choices``), and makes its own pick otherwise, which
# then shows as a difference. least-busy draws nothing and is compared as it is.
REPLAYED_CHOICES = {
    "latency-slow-fast",
    "latency-buffer",
    "latency-timeout",
    "usage-rpm-limits",
    "usage-lowest-tpm",
    "latency-503-once",
    "latency-buffer-0.5",
    "usage-rpm-2",
    "usage-no-limits",
}

# name -> why litellm_like over HTTP does not do what the real Router did
HTTP_KNOWN_DIFFERENCES: dict[str, str] = {}

# Scenarios where the Router picks at random between a1 and a2 (simple-shuffle, no order), so
# one recorded run is one draw among many. There litellm_like replays the real Router's picks:
# each attempt goes to the deployment the Router chose for it, provided litellm_like has it
# among its candidates (healthy, of the order in play); everything else (whether to retry, how
# long to wait, which deployment is cooling, when to fall back) is litellm_like's own and must
# match. A pick litellm_like could not have made (a deployment it has cooled) shows as a
# difference in the attempts.
REPLAYED_PICKS = {"group-429-sibling", "group-503-sibling", "group-allowed-fails-1"}

# name -> why litellm_like does not do what the real Router did
KNOWN_DIFFERENCES: dict[str, str] = {}

Attempt = tuple[str, int | None, float]


def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def replaying(router, picks: list[list[str]], by_rule: bool = False):
    """``router`` with each attempt sent where the real Router sent it, when it can be: among
    the candidates, or with ``by_rule`` among the deployments its routing strategy picks from."""
    own = router._pick
    made: dict[int, int] = {}

    def pick(group, candidates, draws, request, now):
        rid = int(draws.key[2])
        n = made[rid] = made.get(rid, -1) + 1
        wanted = picks[rid][n] if n < len(picks[rid]) else None
        allowed = candidates
        if by_rule:
            allowed = router.load.choices(
                group, candidates, now, request.input_tokens, router.stream
            )
        if wanted in allowed:
            return wanted
        return own(group, candidates, draws, request, now)

    router._pick = pick
    return router


def simulated(name: str, seed: int) -> tuple[list[list[Attempt]], list[str]]:
    """Each request's attempts under litellm_like, and its outcome ("ok: <model>" or "error")."""
    policy = sy.HostPolicy()
    if name in LOAD_SCENARIOS:
        models, settings, arrivals = LOAD_SCENARIOS[name]
        settings = dict(settings)
        if "timeout" in settings:
            policy = sy.HostPolicy(timeout_s=settings.pop("timeout"))
    else:
        faults, settings, arrivals = SCENARIOS[name]
        if isinstance(faults, sy.Faults):
            faults = {"a": faults}
        models = {m: constant_profile(0.01, 16, 2000.0, faults=f) for m, f in faults.items()}
    profile = constant_profile(0.01, 16, 2000.0)  # the FakeModel's default latency
    host = sy.SimHost({"b": profile, "c": profile, **models}, policy=policy)
    router = sy.strategies.litellm_like(
        model_list=golden()["scenarios"][name]["model_list"],
        **{"num_retries": 2, "fallbacks": {"a": ["b"]}, **settings},
    )
    if name in REPLAYED_PICKS or name in REPLAYED_CHOICES:
        picks = [[a[0] for a in r] for r in recorded(name)]
        router = replaying(router, picks, by_rule=name in REPLAYED_CHOICES)
    requests = [sy.Request(f"request {i}", id=i) for i in range(len(arrivals))]
    result = sy.run(router, requests, host=host, arrivals=arrivals, seed=seed)
    frame = result.attempts
    frame = frame[frame["status"] != "skipped"]  # the real Router's log has calls only
    frame = frame.sort_values(["request_id", "start_s", "call_id"])
    out: list[list[Attempt]] = [[] for _ in arrivals]
    for rid, model, status, start, ttft in zip(
        frame["request_id"],
        frame["model"],
        frame["http_status"],
        frame["start_s"],
        frame["ttft_s"],
        strict=True,
    ):
        if settings.get("stream") and not pd.isna(ttft):
            status = 200  # a stream that had begun: the provider answered 200, then broke it
        # a call the client gave up on (a timeout) has no status, as the provider recorded it
        out[int(rid)].append((model, None if pd.isna(status) else int(status), float(start)))
    outcomes = [
        f"ok: {model}" if status == "ok" else "error"
        for status, model in zip(
            result.requests["status"], result.requests["served_model"], strict=True
        )
    ]
    return [[(m, s, t - rows[0][2]) for m, s, t in rows] for rows in out], outcomes


def recorded(name: str) -> list[list[Attempt]]:
    return [
        [(m, None if s is None else int(s), float(t)) for m, s, t in request["attempts"]]
        for request in golden()["scenarios"][name]["requests"]
    ]


def recorded_outcomes(name: str) -> list[str]:
    """Each request's outcome as the real Router gave it ("ok: <model>" or "error")."""
    return [
        "error" if request["outcome"].startswith("error") else request["outcome"]
        for request in golden()["scenarios"][name]["requests"]
    ]


def differences(name: str) -> list[str]:
    """What differs between litellm_like and the real Router in a scenario (empty: they agree)."""
    real = recorded(name)
    results = [simulated(name, seed) for seed in SEEDS]
    runs = [attempts for attempts, _ in results]
    if any(len(sim) != len(real) for sim in runs):
        return [f"{len(real)} requests recorded, {len(runs[0])} simulated"]
    out = []
    outcomes = recorded_outcomes(name)
    for seed, (_, simulated_outcomes) in zip(SEEDS, results, strict=True):
        if simulated_outcomes != outcomes:
            out.append(f"seed {seed}: LiteLLM {outcomes}, litellm_like {simulated_outcomes}")
            break
    for i, r in enumerate(real):
        kinds_r = [a[:2] for a in r]
        kinds_s = {tuple(a[:2] for a in sim[i]) for sim in runs}
        if kinds_s != {tuple(kinds_r)}:
            out.append(f"request {i}: LiteLLM {kinds_r}, litellm_like {sorted(kinds_s)}")
            continue
        for n, (a, b) in enumerate(itertools.pairwise(r)):
            gap = b[2] - a[2]
            sim_gaps = [sim[i][n + 1][2] - sim[i][n][2] for sim in runs]
            low, high = min(sim_gaps) - SLACK, max(sim_gaps) + SLACK
            if not low <= gap <= high:
                out.append(
                    f"request {i}, gap {n}: LiteLLM {gap:.3f} s, "
                    f"litellm_like {min(sim_gaps):.3f}-{max(sim_gaps):.3f} s"
                )
    return out


def http_replayed(name: str, fake: FakeProvider) -> tuple[list[list[Attempt]], list[str]]:
    """Each request's attempts, as the FakeProvider recorded them, and its outcome, under
    litellm_like on an HttpHost with every jitter draw at ``HTTP_JITTER_DRAW``."""
    _, settings, arrivals = HTTP_SCENARIOS[name]
    host = sy.HttpHost(fake.base_url, models=["a", "b", "c"], api_key="x")
    router = sy.strategies.litellm_like(
        model_list=golden()["scenarios"][name]["model_list"],
        **{"num_retries": 2, "fallbacks": {"a": ["b"]}, **settings},
    )
    requests = [sy.Request(f"request {i}", id=i) for i in range(len(arrivals))]
    result = sy.run(router, requests, host=host, arrivals=arrivals, seed=0)
    fake.wait_idle()
    out: list[list[Attempt]] = [[] for _ in arrivals]
    for record in sorted(fake.requests, key=lambda r: r.started_at):
        index = int(record.body["messages"][-1]["content"].split()[-1])
        out[index].append((record.model, int(record.status), record.started_at))
    outcomes = [
        f"ok: {model}" if status == "ok" else "error"
        for status, model in zip(
            result.requests["status"], result.requests["served_model"], strict=True
        )
    ]
    return [[(m, s, t - rows[0][2]) for m, s, t in rows] for rows in out], outcomes


def http_differences(name: str, replay: tuple[list[list[Attempt]], list[str]]) -> list[str]:
    """What differs between litellm_like over HTTP and the real Router in a scenario. With its
    jitter fixed at ``0.75 * HTTP_JITTER_DRAW`` s, a gap of the real Router's must lie within
    the jitter's range around litellm_like's gap, widened by ``SLACK``."""
    real = recorded(name)
    attempts, outcomes = replay
    out = []
    if outcomes != recorded_outcomes(name):
        out.append(f"LiteLLM {recorded_outcomes(name)}, litellm_like {outcomes}")
    for i, (r, h) in enumerate(zip(real, attempts, strict=True)):
        if [a[:2] for a in r] != [a[:2] for a in h]:
            out.append(f"request {i}: LiteLLM {[a[:2] for a in r]}, litellm_like {h}")
            continue
        for n, ((ra, rb), (ha, hb)) in enumerate(
            zip(itertools.pairwise(r), itertools.pairwise(h), strict=True)
        ):
            gap, base = rb[2] - ra[2], hb[2] - ha[2] - JITTER * HTTP_JITTER_DRAW
            if not base - SLACK <= gap <= base + JITTER + SLACK:
                out.append(
                    f"request {i}, gap {n}: LiteLLM {gap:.3f} s, litellm_like "
                    f"{base:.3f}-{base + JITTER:.3f} s"
                )
    return out


@pytest.fixture(scope="module")
def http_replays():
    """Every HTTP scenario run once, side by side (each on its own FakeProvider): they wait in
    real time, seconds each."""

    def replay(name: str) -> tuple[list[list[Attempt]], list[str]]:
        primary = HTTP_SCENARIOS[name][0]
        with FakeProvider({"a": primary, "b": FakeModel(), "c": FakeModel()}) as fake:
            return http_replayed(name, fake)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_litellm._Draws, "next", lambda self: HTTP_JITTER_DRAW)
        with ThreadPoolExecutor(len(HTTP_SCENARIOS)) as pool:
            return dict(zip(HTTP_SCENARIOS, pool.map(replay, HTTP_SCENARIOS), strict=True))


def test_the_golden_file_and_the_scenarios_name_the_same_cases():
    recorded_names = set(golden()["scenarios"])
    assert recorded_names == set(SCENARIOS) | set(HTTP_SCENARIOS) | set(LOAD_SCENARIOS)
    assert not set(LOAD_SCENARIOS) & (set(SCENARIOS) | set(HTTP_SCENARIOS))
    assert set(LOAD_SCENARIOS) >= REPLAYED_CHOICES
    assert set(HTTP_KNOWN_DIFFERENCES) <= set(HTTP_SCENARIOS)
    assert set(KNOWN_DIFFERENCES) <= recorded_names
    assert recorded_names >= REPLAYED_PICKS
    assert golden()["litellm_version"] == "1.110.2"


@pytest.mark.parametrize(
    "name", [n for n in [*SCENARIOS, *LOAD_SCENARIOS] if n not in KNOWN_DIFFERENCES]
)
def test_litellm_like_does_what_the_real_router_did(name):
    assert differences(name) == []


def test_known_differences_still_differ():
    # Once litellm_like does what the real Router did in a listed scenario, move the scenario
    # out of KNOWN_DIFFERENCES (empty while every scenario matches).
    for name, why in KNOWN_DIFFERENCES.items():
        assert differences(name), f"{name} now matches the real Router: {why}"


@pytest.mark.parametrize("name", [n for n in HTTP_SCENARIOS if n not in HTTP_KNOWN_DIFFERENCES])
def test_litellm_like_over_http_does_what_the_real_router_did(name, http_replays):
    assert http_differences(name, http_replays[name]) == []


def test_http_known_differences_still_differ(http_replays):
    for name, why in HTTP_KNOWN_DIFFERENCES.items():
        assert http_differences(name, http_replays[name]), f"{name} now matches: {why}"


def test_the_replayed_load_picks_left_litellm_like_no_choice_after_the_first():
    # A replayed pick is checked only against the deployments litellm_like's rule would pick
    # from: here that rule leaves one deployment for every pick after the first one or two, so
    # the Router's later picks are litellm_like's own, not replayed draws.
    sizes: list[int] = []
    own = _litellm.LoadState.choices

    def counted(self, *args):
        valid = own(self, *args)
        sizes.append(len(valid))
        return valid

    expected = {
        "latency-slow-fast": [2, 1, 1, 1, 1, 1],
        "latency-timeout": [2, 1, 1, 1, 1, 1],  # and the fallback b
        # requests 3 and 4: none left, then b (each asked twice: by the replay, then by
        # litellm_like's own pick, as the Router's picks there were for b)
        "usage-rpm-limits": [2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1],
        "usage-lowest-tpm": [2, 1, 1, 1, 1, 1],
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_litellm.LoadState, "choices", counted)
        for name, wanted in expected.items():
            sizes.clear()
            simulated(name, 0)
            assert sizes == wanted, name
