"""The failoverbench catalogue: scenarios S01–S16, each a host with a faulty ``primary`` and a
healthy ``secondary``, a few requests, a reference router and the check of what a correct router
does. The harness that runs them is ``sykit.failoverbench._harness``; the public face is
:mod:`sykit.failoverbench`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from sykit._base.errors import ModelError
from sykit._base.vocab import ErrorKind, RequestStatus, Status
from sykit._hosts.sim import SimHost
from sykit._results.result import Result
from sykit._run.driver import Driver
from sykit._run.race import first_ok
from sykit._run.race import timeout as _timeout
from sykit._world.config import HostPolicy, Latency, ModelProfile
from sykit._world.faults import Faults, Flapping
from sykit._world.models import Outcome, Request, answered, route_to
from sykit.failoverbench._harness import (
    EXACT,
    HTTP_TIME_SCALE,
    Check,
    Scenario,
    Tolerance,
    run_scenarios,
)

__all__ = ["catalogue", "run_catalogue"]

_REJECT_S = 0.125
_TEXT = Request("Reply with exactly OK.", id="s", input_tokens=40)


def _primary(**kwargs: Any) -> ModelProfile:
    """Answers in 1.0 s (0.5 s to the first token, 50 tokens at 100/s) unless its faults say not."""
    settings: dict[str, Any] = {
        "price_in": 1.0,
        "price_out": 2.0,
        "latency": Latency(ttft=0.5, tokens_per_s=100),
        "output_tokens": 50,
        "reject_delay_s": _REJECT_S,
        "context_window": 32_000,
    }
    settings.update(kwargs)
    return ModelProfile(**settings)


def _secondary() -> ModelProfile:
    """A healthy, pricier fallback with a large window: answers in 1.25 s."""
    return ModelProfile(
        price_in=2.0,
        price_out=4.0,
        latency=Latency(ttft=0.75, tokens_per_s=100),
        output_tokens=50,
        reject_delay_s=_REJECT_S,
        context_window=200_000,
        vision=True,
    )


def _host(
    primary: ModelProfile,
    policy: HostPolicy | None = None,
    secondary: ModelProfile | None = None,
) -> SimHost:
    return SimHost(
        {"primary": primary, "secondary": secondary or _secondary()},
        policy=policy or HostPolicy(),
    )


async def _fallback_router(request: Request, driver: Driver) -> Outcome:
    """The plain reference: primary, with the host's retries and fallback to secondary."""
    return route_to("primary", request, fallbacks=["secondary"])


_fallback_router.__dict__["static"] = True  # a pure function of the request: the bulk engine's


@dataclass(frozen=True)
class _DeadlineRouter:
    """Give the primary ``limit_s`` (5 s), then route to the secondary."""

    limit_s: float = 5.0

    async def __call__(self, request: Request, driver: Driver) -> Outcome:
        response = await _timeout(self.limit_s, driver.call_model(request, ["primary"]))
        if response is None:
            return route_to("secondary", request)
        return answered("primary", response)

    def scaled(self, factor: float) -> _DeadlineRouter:
        """The same router in a clock where a second lasts ``factor`` seconds."""
        return _DeadlineRouter(self.limit_s * factor)


@dataclass(frozen=True)
class _HedgeRouter:
    """Start the primary; start the secondary ``after_s`` (2 s) later; the first success wins."""

    after_s: float = 2.0

    async def __call__(self, request: Request, driver: Driver) -> Outcome:
        async def secondary_later() -> Any:
            await driver.sleep(self.after_s)
            return await driver.call_model(request, ["secondary"])

        calls = (driver.call_model(request, ["primary"]), secondary_later())
        index, response = await first_ok(*calls)
        return answered(("primary", "secondary")[index], response)

    def scaled(self, factor: float) -> _HedgeRouter:
        """The same router in a clock where a second lasts ``factor`` seconds."""
        return _HedgeRouter(self.after_s * factor)


_deadline_router = _DeadlineRouter()
_hedge_router = _HedgeRouter()


async def _catching_router(request: Request, driver: Driver) -> Outcome:
    """Call the primary in the routing phase; on any model error, route to the secondary."""
    try:
        response = await driver.call_model(request, ["primary"])
    except ModelError:
        return route_to("secondary", request)
    return answered("primary", response)


# -- checks ------------------------------------------------------------------------------------


def _rows(result: Result, **where: Any) -> pd.DataFrame:
    frame = result.attempts
    for column, value in where.items():
        frame = frame[frame[column] == value]
    return frame


def _served(result: Result, model: str, *, problems: list[str]) -> None:
    requests = result.requests
    failed = requests[requests["status"] != RequestStatus.OK]
    if len(failed):
        problems.append(
            f"{len(failed)} request(s) failed: {failed['error_kind'].astype(str).tolist()}"
        )
    wrong = requests[
        (requests["status"] == RequestStatus.OK) & (requests["served_model"].astype(str) != model)
    ]
    if len(wrong):
        problems.append(
            f"served by {sorted(set(wrong['served_model'].astype(str)))}, expected {model!r}"
        )


def _met_the_fault(result: Result, problems: list[str], *, failed: bool = False) -> bool:
    """Whether the router tried the faulty primary (and, if ``failed``, saw an attempt fail): a
    router that never does would pass the scenario without handling its fault."""
    primary = _rows(result, model="primary")
    if failed:
        primary = primary[primary["status"] == Status.ERROR]
    if len(primary):
        return True
    problems.append(
        "no failed attempt at the primary: the fallback was not a failover"
        if failed
        else "the primary was never tried, so its fault was never met"
    )
    return False


def _failed_attempts_cost_nothing(result: Result, problems: list[str]) -> None:
    billed = _rows(result, status=Status.ERROR)["cost_usd"].sum()
    if billed:
        problems.append(f"failed attempts were billed ${billed:.6f}")


def _fell_back(result: Result, reason: str, problems: list[str]) -> None:
    reasons = set(result.attempts["fallback_reason"].dropna().astype(str))
    if reasons != {reason}:
        problems.append(f"fallback reasons {sorted(reasons)}, expected [{reason!r}]")


def _check_s01(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "primary", problems=problems)
    primary = _rows(result, model="primary")
    if primary["status"].astype(str).tolist() != ["error", "ok"]:
        problems.append(
            f"primary attempts {primary['status'].astype(str).tolist()}, expected one 429 then success"
        )
    elif not tolerance.near(primary["start_s"].iloc[1] - primary["end_s"].iloc[0], 2.0):
        problems.append(f"the retry did not wait the {tolerance.at(2.0):g} s Retry-After")
    if len(_rows(result, model="secondary")):
        problems.append("fell back although a retry would succeed")
    return problems


def _retries_then_fallback(reason: str, kind: str, *, generated: int = 0) -> Check:
    """Three failed attempts at the primary, then the secondary serves. Each failed attempt is
    billed for the ``generated`` output tokens it produced before it broke (0: rejected, free)."""

    def check(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
        problems: list[str] = []
        _served(result, "secondary", problems=problems)
        primary = _rows(result, model="primary")
        if len(primary) != 3 or set(primary["error_kind"].astype(str)) != {kind}:
            problems.append(
                f"expected 3 attempts at primary failing with {kind}, got {len(primary)}"
            )
        _fell_back(result, reason, problems)
        if generated:
            failed = _rows(result, status=Status.ERROR)
            if failed["output_tokens"].tolist() != [generated] * len(failed):
                problems.append(
                    f"broken answers billed for {failed['output_tokens'].tolist()} output tokens, "
                    f"expected the {generated} each generated"
                )
        else:
            _failed_attempts_cost_nothing(result, problems)
        return problems

    return check


def _check_s02(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems = _retries_then_fallback("rate_limit", "rate_limit")(result)
    primary = _rows(result, model="primary")
    waits = (primary["start_s"].to_numpy()[1:] - primary["end_s"].to_numpy()[:-1]).tolist()
    if len(waits) != 2 or not all(tolerance.near(wait, 1.0) for wait in waits):
        problems.append(f"retries waited {waits}, not the {tolerance.at(1.0):g} s Retry-After")
    return problems


def _check_s03(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "primary", problems=problems)
    primary = _rows(result, model="primary")
    if primary["status"].astype(str).tolist() != ["error", "ok"]:
        problems.append("expected one 500, then a successful retry on the same model")
    return problems


def _check_s06(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "secondary", problems=problems)
    latency = float(result.requests["latency_s"].max())
    if not tolerance.within(latency, 10.0):
        problems.append(
            f"the request waited {latency:g} s on a silent target "
            f"(expected ≤ {tolerance.at(10.0):g} s)"
        )
    stuck = _rows(result, model="primary")
    if _met_the_fault(result, problems) and (stuck["status"] == Status.OK).any():
        problems.append("a silent target cannot have answered")
    return problems


def _check_s07(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "secondary", problems=problems)
    latency = float(result.requests["latency_s"].max())
    if not tolerance.within(latency, 5.0):
        problems.append(
            f"the request took {latency:g} s; a hedge would answer in about "
            f"{tolerance.at(3.25):g} s"
        )
    primary = _rows(result, model="primary")
    if not _met_the_fault(result, problems):
        return problems
    if not (primary["status"] == Status.CANCELLED).all():
        problems.append("the slow primary was not cancelled")
    elif primary["output_tokens"].sum() != 0:
        problems.append("the cancelled primary was billed for output it never produced")
    return problems


def _check_s08(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems = _retries_then_fallback("unavailable", "unavailable", generated=40)(result)
    cut = _rows(result, model="primary")
    # the simulated gateway says "after 40 of 60 tokens"; an HTTP client knows only "after 40 tokens"
    if not cut["error_message"].astype(str).str.contains("after 40 (?:of 60 )?tokens").all():
        problems.append("the cut streams were not reported as cut after 40 of 60 tokens")
    return problems


def _check_s09(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "primary", problems=problems)
    primary = _rows(result, model="primary")
    if primary["error_kind"].astype(str).tolist()[:1] != ["timeout"] or not tolerance.near(
        primary["end_s"].iloc[0] - primary["start_s"].iloc[0], 10.0
    ):
        problems.append("the stalled attempt did not time out at the 10 s deadline")
    return problems


def _check_s10(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "secondary", problems=problems)
    kinds = _rows(result, model="primary")["error_kind"].astype(str).tolist()
    if kinds != ["invalid_response"]:
        problems.append(f"expected one invalid_response from primary, got {kinds}")
    _failed_attempts_cost_nothing(result, problems)
    return problems


def _check_s11(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "primary", problems=problems)
    if len(result.attempts) != 1:
        problems.append("a complete answer without [DONE] needs no retry")
    return problems


def _check_s12(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "secondary", problems=problems)
    _fell_back(result, "context_window", problems)
    if len(_rows(result, model="primary")) != 1:
        problems.append("an overflow 400 must not be retried")
    return problems


def _check_s13(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    request = result.requests.iloc[0]
    if request["status"] != RequestStatus.FAILED or request["error_kind"] != ErrorKind.POLICY:
        problems.append("a content-policy denial must be returned, not retried or rerouted")
    if len(result.attempts) != 1:
        problems.append(f"{len(result.attempts)} attempts for a policy denial (expected 1)")
    return problems


def _check_s14(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems = _retries_then_fallback("unavailable", "unavailable", generated=33)(result)
    secondary = _rows(result, model="secondary", status=Status.OK)
    if len(secondary) and secondary["input_tokens"].iloc[0] != _TEXT.input_tokens:
        problems.append(
            "the fallback did not receive the request as it arrived (partial output was sent along)"
        )
    return problems


def _check_s15(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    requests = result.requests
    if (requests["status"] != RequestStatus.OK).any():
        problems.append(
            f"{int((requests['status'] != RequestStatus.OK).sum())} request(s) failed during the flapping"
        )
    late = requests[requests["arrival_s"] >= tolerance.at(66.0)]
    if (late["served_model"].astype(str) != "primary").any():
        problems.append("after the flapping stopped (60 s) the primary was not used again")
    if not (result.attempts["status"] == Status.SKIPPED).any():
        problems.append("no cooldown: the flapping primary was tried on every request")
    return problems


def _check_s16(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "secondary", problems=problems)
    _met_the_fault(result, problems, failed=True)
    _failed_attempts_cost_nothing(result, problems)
    served = _rows(result, model="secondary", status=Status.OK)
    request = result.requests.iloc[0]
    if len(served) != 1:
        problems.append("no successful attempt at the fallback")
    elif not math.isclose(request["cost_usd"], served["cost_usd"].iloc[0]):
        problems.append("the request's cost is not the fallback's own usage")
    elif served["output_tokens"].iloc[0] != 50:
        problems.append("the fallback's usage was not recorded")
    return problems


def catalogue() -> dict[str, Scenario]:
    """The 16 scenarios, keyed S01…S16, in order."""
    single = (_TEXT,)
    long = (
        Request("Summarise this log.", id="long", input_tokens=100_000, max_output_tokens=1_000),
    )
    flap_times = tuple(float(t) for t in range(80))
    flap_requests = tuple(Request(f"turn {i}", id=i, input_tokens=40) for i in range(80))
    entries = [
        Scenario("S01", "429 with Retry-After, once",
                 "The primary answers one 429 with Retry-After: 2. A correct router waits exactly that "
                 "long and retries the same model.",
                 _host(_primary(faults=Faults(fail_first=1, fail_first_status=429, retry_after_s=2.0))),
                 single, _fallback_router, _check_s01),
        Scenario("S02", "persistent 429",
                 "The primary always answers 429 (Retry-After: 1). A correct router honours Retry-After "
                 "on each retry, then falls back with reason rate_limit.",
                 _host(_primary(faults=Faults(rate_limit=1.0, retry_after_s=1.0))),
                 single, _fallback_router, _check_s02),
        Scenario("S03", "500 once",
                 "The primary answers one 500. A correct router retries after its backoff and is served "
                 "by the same model.",
                 _host(_primary(faults=Faults(fail_first=1, fail_first_status=500))),
                 single, _fallback_router, _check_s03),
        Scenario("S04", "persistent 503",
                 "The primary always answers 503. A correct router spends its retries, then falls back "
                 "with reason unavailable; failed attempts are not billed.",
                 _host(_primary(faults=Faults(unavailable=1.0))),
                 single, _fallback_router, _retries_then_fallback("unavailable", "unavailable")),
        Scenario("S05", "TCP reset",
                 "The primary's connection is reset on every attempt (a transport failure, no HTTP "
                 "status). It is retried, then the router falls back.",
                 _host(_primary(faults=Faults(reset=1.0))),
                 single, _fallback_router, _retries_then_fallback("unavailable", "unavailable")),
        Scenario("S06", "no response at all",
                 "The primary never answers (the host's deadline is 30 s). A timeout is retried but is "
                 "not a fallback reason, so a correct router bounds the wait itself (here 5 s) and "
                 "routes to the secondary.",
                 _host(_primary(faults=Faults(timeout=1.0)), HostPolicy(timeout_s=30.0)),
                 single, _deadline_router, _check_s06),
        Scenario("S07", "first token after 20 s",
                 "The primary's first token takes 20 s. A correct router hedges to the secondary (here "
                 "after 2 s), serves it, and cancels the primary before it produced any output.",
                 _host(_primary(latency=Latency(ttft=20.0, tokens_per_s=100))),
                 single, _hedge_router, _check_s07),
        Scenario("S08", "stream cut after 40 of 60 tokens",
                 "Every answer from the primary stops after 40 of its 60 tokens (a 502). A truncated "
                 "answer is never served: retry, then fall back. Each cut attempt is billed for the "
                 "40 tokens it generated.",
                 _host(_primary(output_tokens=60, faults=Faults(cut_stream=1.0))),
                 single, _fallback_router, _check_s08),
        Scenario("S09", "30 s stall",
                 "The primary's first attempt stalls; the client deadline (10 s) ends it and the retry "
                 "succeeds on the same model.",
                 _host(_primary(faults=Faults(fail_first=1, fail_first_status="timeout")),
                       HostPolicy(timeout_s=10.0)),
                 single, _fallback_router, _check_s09),
        Scenario("S10", "malformed chunk",
                 "The primary answers 200 with a body that cannot be parsed (invalid_response: neither "
                 "retried nor a fallback reason). A correct router catches it and reroutes.",
                 _host(_primary(faults=Faults(malformed=1.0))),
                 single, _catching_router, _check_s10),
        Scenario("S11", "no [DONE]",
                 "The stream ends without its [DONE] marker, but the answer is complete (content, "
                 "finish_reason, usage). A correct client serves it without a retry; one that waits "
                 "for [DONE] or treats its absence as a cut retries and falls back. Only HTTP has the "
                 "marker: in simulation the answer arrives whole and S11 is a sanity check.",
                 _host(_primary()),
                 single, _fallback_router, _check_s11, wire_faults={"primary": "no-done"}),
        Scenario("S12", "400 context_length_exceeded",
                 "A 100k-token request overflows the primary's 32k window. A correct router does not "
                 "retry and falls back with reason context_window to the 200k secondary.",
                 _host(_primary()),
                 long, _fallback_router, _check_s12),
        Scenario("S13", "400 content filter",
                 "The primary denies the content (content_policy_violation). Without "
                 "allow_policy_fallback a correct router returns the denial: no retry, no reroute.",
                 _host(_primary(faults=Faults(policy=1.0))),
                 single, _fallback_router, _check_s13),
        Scenario("S14", "cut stream, then the fallback rejects assistant prefill",
                 "The primary's stream is cut. The fallback refuses assistant prefill (a 400): a "
                 "client that resends the partial answer as an assistant message fails; a correct "
                 "router sends the fallback the request as it arrived.",
                 _host(_primary(faults=Faults(cut_stream=1.0)),
                       secondary=_secondary().replace(prefill=False)),
                 single, _fallback_router, _check_s14),
        Scenario("S15", "a primary that flaps for 60 s",
                 "The primary alternates 5 s up and 5 s down for the first 60 s while a request "
                 "arrives every second. A correct router cools the primary down while it fails, serves "
                 "from the secondary, and returns to the primary once it is stable.",
                 _host(_primary(faults=Faults(flapping=Flapping(up_s=5.0, down_s=5.0, until_s=60.0)))),
                 flap_requests, _fallback_router, _check_s15, flap_times),
        Scenario("S16", "fallback model and usage reported, failed attempts not billed",
                 "The primary always fails with 503. The request must report the secondary as the "
                 "served model, its usage and cost, and bill nothing for the failed attempts.",
                 _host(_primary(faults=Faults(unavailable=1.0))),
                 single, _fallback_router, _check_s16),
    ]  # fmt: skip
    return {scenario.id: scenario for scenario in entries}


def run_catalogue(
    router: Any = None,
    *,
    seed: int = 0,
    ids: Sequence[str] | None = None,
    engine: str = "auto",
    over: Literal["sim", "http"] = "sim",
    time_scale: float = HTTP_TIME_SCALE,
) -> pd.DataFrame:
    """Run every scenario (or those in ``ids``) with ``router`` (default: each scenario's reference
    router) and return one row per scenario: passed, problems, attempts, latency and cost.
    ``over="sim"`` runs in simulated time (``engine`` as in :func:`sykit.run`); ``over="http"``
    runs each scenario over HTTP against a fake provider with every duration × ``time_scale``
    (see :meth:`Scenario.run_http`; latency is then in real, scaled seconds)."""
    return run_scenarios(
        catalogue(),
        router,
        seed=seed,
        ids=ids,
        engine=engine,
        over=over,
        time_scale=time_scale,
    )
