"""The failoverbench fault catalogue (S01–S16), in simulated time or over HTTP, each with a check of
what a correct router does.

Every scenario is a small, self-contained setup (a host with a faulty ``primary`` and a healthy
``secondary``, a few requests, a reference router) plus a check that reads the attempt log and
lists what a correct router would have done differently. The whole catalogue runs in well under a
second of wall time, so it can gate a router in CI or in a notebook:

    report = sy.failoverbench.run_catalogue()             # the reference routers: every row passes
    report = sy.failoverbench.run_catalogue(my_router)    # your router against the same faults
    sy.failoverbench.catalogue()["S07"].run(my_router).problems

The same catalogue runs over real HTTP, against a loopback :class:`sykit.testing.FakeProvider`
whose models reproduce each scenario's faults, through :class:`sykit.HttpHost` (streaming):

    report = sy.failoverbench.run_catalogue(over="http")                # a few seconds of wall time
    sy.failoverbench.catalogue()["S07"].run_http(my_router, time_scale=1 / 50)

Real time is slow (S06 waits 30 s, S15 flaps for a minute), so over HTTP every duration of the
scenario is multiplied by ``time_scale`` (default :data:`HTTP_TIME_SCALE`, 1/50): latencies,
Retry-After, outages, the host's deadline, backoff and cooldown, arrivals and the reference
routers' own deadlines and hedges. A router you pass keeps its own durations: give it scaled ones.
The checks are the same functions; over HTTP they compare times within a :class:`Tolerance` (10 ms
plus 10 % of the scaled time) instead of exactly, while counts, statuses and billing stay exact.
Each request carries text for the tokens it declares, so the provider counts (and bills) what the
simulation counts. One difference is the host's, not the catalogue's: over HTTP an attempt that
was sent and then cancelled or timed out is billed its input (the provider may have started), so
S06 and S09 cost a little more than in simulation.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from ._config import (
    LATER_RANDOM_FAULTS,
    RANDOM_FAULTS,
    ErrorFault,
    Faults,
    Flapping,
    HostPolicy,
    Latency,
    ModelProfile,
)
from ._dists import Constant, Distribution, check_number
from ._driver import Driver
from ._errors import ArgumentError, ModelError
from ._health import AlgorithmWarning, broken_message
from ._hosts.http import HttpHost
from ._hosts.sim import SimHost
from ._models import Outcome, Request, answered, route_to
from ._race import first_ok
from ._race import timeout as _timeout
from ._results import Result
from ._runner import run
from ._types import Algorithm
from .testing import FakeModel, FakeProvider
from .testing._chat import prompt_tokens

__all__ = [
    "HTTP_TIME_SCALE",
    "Scenario",
    "ScenarioOutcome",
    "Tolerance",
    "catalogue",
    "run_catalogue",
]

#: ``check(result, tolerance=EXACT) -> problems``: what a correct router would have done differently.
Check = Callable[..., list[str]]

#: Run seconds per scenario second over HTTP: the whole catalogue takes a few seconds.
HTTP_TIME_SCALE = 1 / 50


@dataclass(frozen=True)
class Tolerance:
    """How a check compares times: a scenario second lasts ``scale`` run seconds, and a time
    matches when it is within ``abs_s + rel × the scaled time`` of it. The default is exact, as
    simulated time is; over HTTP real time jitters by milliseconds."""

    scale: float = 1.0
    abs_s: float = 0.0
    rel: float = 0.0

    @classmethod
    def http(cls, scale: float = HTTP_TIME_SCALE) -> Tolerance:
        """10 ms plus 10 % of the scaled time. Loopback jitter stays within a few milliseconds even
        on a busy machine; more slack would pass a retry that skips S02's scaled 1 s Retry-After."""
        return cls(scale, abs_s=0.01, rel=0.1)

    def at(self, scenario_s: float) -> float:
        """The run time of ``scenario_s`` scenario seconds."""
        return scenario_s * self.scale

    def _slack(self, scenario_s: float) -> float:
        return self.abs_s + self.rel * self.at(scenario_s)

    def near(self, actual_s: float, scenario_s: float) -> bool:
        """Whether a run time is the scenario's ``scenario_s``, within the tolerance."""
        return abs(actual_s - self.at(scenario_s)) <= self._slack(scenario_s)

    def within(self, actual_s: float, scenario_s: float) -> bool:
        """Whether a run time is at most the scenario's ``scenario_s``, within the tolerance."""
        return actual_s <= self.at(scenario_s) + self._slack(scenario_s)


EXACT = Tolerance()

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
    failed = requests[requests["status"] != "ok"]
    if len(failed):
        problems.append(
            f"{len(failed)} request(s) failed: {failed['error_kind'].astype(str).tolist()}"
        )
    wrong = requests[(requests["status"] == "ok") & (requests["served_model"].astype(str) != model)]
    if len(wrong):
        problems.append(
            f"served by {sorted(set(wrong['served_model'].astype(str)))}, expected {model!r}"
        )


def _failed_attempts_cost_nothing(result: Result, problems: list[str]) -> None:
    billed = _rows(result, status="error")["cost_usd"].sum()
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
            failed = _rows(result, status="error")
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
    if (stuck["status"] == "ok").any():
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
    if not (primary["status"] == "cancelled").all():
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
    if request["status"] != "failed" or request["error_kind"] != "policy":
        problems.append("a content-policy denial must be returned, not retried or rerouted")
    if len(result.attempts) != 1:
        problems.append(f"{len(result.attempts)} attempts for a policy denial (expected 1)")
    return problems


def _check_s14(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems = _retries_then_fallback("unavailable", "unavailable", generated=33)(result)
    secondary = _rows(result, model="secondary", status="ok")
    if len(secondary) and secondary["input_tokens"].iloc[0] != _TEXT.input_tokens:
        problems.append(
            "the fallback did not receive the request as it arrived (partial output was sent along)"
        )
    return problems


def _check_s15(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    requests = result.requests
    if (requests["status"] != "ok").any():
        problems.append(
            f"{int((requests['status'] != 'ok').sum())} request(s) failed during the flapping"
        )
    late = requests[requests["arrival_s"] >= tolerance.at(66.0)]
    if (late["served_model"].astype(str) != "primary").any():
        problems.append("after the flapping stopped (60 s) the primary was not used again")
    if not (result.attempts["status"] == "skipped").any():
        problems.append("no cooldown: the flapping primary was tried on every request")
    return problems


def _check_s16(result: Result, tolerance: Tolerance = EXACT) -> list[str]:
    problems: list[str] = []
    _served(result, "secondary", problems=problems)
    _failed_attempts_cost_nothing(result, problems)
    served = _rows(result, model="secondary", status="ok")
    request = result.requests.iloc[0]
    if len(served) != 1:
        problems.append("no successful attempt at the fallback")
    elif not math.isclose(request["cost_usd"], served["cost_usd"].iloc[0]):
        problems.append("the request's cost is not the fallback's own usage")
    elif served["output_tokens"].iloc[0] != 50:
        problems.append("the fallback's usage was not recorded")
    return problems


# -- the catalogue -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScenarioOutcome:
    """A scenario's run and the problems its check found (none: the router behaved correctly)."""

    scenario: Scenario
    result: Result
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class Scenario:
    """One failoverbench scenario: a host, requests, a reference router and a check.

    ``wire_faults`` names, per model, a :data:`sykit.testing.FAULTS` fault that only an HTTP
    exchange can have (S11's stream without ``[DONE]``): :meth:`run_http` adds it to the model the
    host's profile describes; simulation has no wire and leaves it out.
    """

    id: str
    title: str
    description: str
    host: SimHost = field(repr=False)
    requests: tuple[Request, ...] = field(repr=False)
    router: Algorithm = field(repr=False)
    check: Check = field(repr=False)
    arrivals: tuple[float, ...] | None = field(default=None, repr=False)
    wire_faults: Mapping[str, str] = field(default_factory=dict, repr=False)

    def run(self, router: Any = None, *, seed: int = 0, engine: str = "auto") -> ScenarioOutcome:
        """Run ``router`` (default: the reference router) and check its attempt log; ``engine``
        as in :func:`sykit.run`."""
        result = run(
            router if router is not None else self.router,
            list(self.requests),
            host=self.host,
            arrivals=list(self.arrivals) if self.arrivals is not None else None,
            seed=seed,
            progress=False,
            strategy=self.id,
            engine=engine,
        )
        return ScenarioOutcome(self, result, tuple(self.check(result)))

    def run_http(
        self,
        router: Any = None,
        *,
        time_scale: float = HTTP_TIME_SCALE,
        seed: int = 0,
        tolerance: Tolerance | None = None,
    ) -> ScenarioOutcome:
        """Run ``router`` (default: the reference router, its durations scaled) through a streaming
        :class:`sykit.HttpHost` against a :class:`sykit.testing.FakeProvider` that reproduces this
        scenario's host with every duration × ``time_scale``, and check the attempt log with
        ``tolerance`` (default :meth:`Tolerance.http`)."""
        scale = check_number(time_scale, "time_scale", low_open=True)
        if router is None:
            scaled = getattr(self.router, "scaled", None)
            router = scaled(scale) if callable(scaled) else self.router
        if tolerance is None:
            tolerance = Tolerance.http(scale)
        fakes = {
            name: _fake_model(name, profile, scale, self.wire_faults.get(name))
            for name, profile in self.host.profiles.items()
        }
        unknown = set(self.wire_faults) - set(fakes)
        if unknown:
            raise ArgumentError(f"{self.id}: wire_faults name models the host lacks: {unknown}")
        with FakeProvider(fakes, seed=seed) as fake:
            host = HttpHost(
                fake.base_url,
                models=dict(self.host.profiles),
                api_key_env=None,
                policy=_scaled_policy(self.host.policy, scale),
                stream=True,
            )
            result = run(
                router,
                [_on_the_wire(request) for request in self.requests],
                host=host,
                arrivals=None if self.arrivals is None else [t * scale for t in self.arrivals],
                seed=seed,
                progress=False,
                strategy=self.id,
            )
            fake.wait_idle()
        return ScenarioOutcome(self, result, tuple(self.check(result, tolerance)))


# -- over HTTP -----------------------------------------------------------------------------------

#: What each random fault, at probability 1, is on the wire.
_WIRE_FAULTS = {
    "rate_limit": "fail-429",
    "timeout": "hang",
    "policy": "policy-400",
    "invalid": "fail-400",
    "reset": "reset",
    "cut_stream": "cut-stream",
    "malformed": "malformed-chunk",
}


def _constant(value: Distribution, what: str) -> float:
    if not isinstance(value, Constant):
        raise ArgumentError(f"{what} must be a constant to run over HTTP, got {value!r}")
    return value.value


def _fake_model(
    name: str, profile: ModelProfile, scale: float, wire_fault: str | None
) -> FakeModel:
    """A FakeModel that answers as ``profile`` does, every duration × ``scale``. A fault the fake
    provider cannot reproduce exactly (a probability between 0 and 1, a spike, a stall, a quota)
    is an error naming it, rather than a scenario that silently tests something else."""
    faults = profile.faults
    what = f"models[{name!r}]"
    unsupported = [
        f"{fault}={getattr(faults, fault)}"
        for fault in RANDOM_FAULTS + LATER_RANDOM_FAULTS
        if getattr(faults, fault) not in (0.0, 1.0)
    ]
    unsupported += [
        f"errors[{i}]={error!r}"
        for i, error in enumerate(faults.errors)
        if error.p not in (0.0, 1.0)
    ]
    unsupported += [
        f"{f}={getattr(faults, f)}" for f in ("spike_p", "stall_p") if getattr(faults, f)
    ]
    if profile.rate_limit is not None:
        unsupported.append(f"rate_limit={profile.rate_limit!r}")
    if unsupported:
        raise ArgumentError(f"{what}: FakeProvider cannot reproduce {', '.join(unsupported)}")
    output_tokens = round(_constant(profile.output_tokens, f"{what}.output_tokens"))  # type: ignore[arg-type]
    chosen: list[str | ErrorFault] = [wire_fault] if wire_fault is not None else []
    after = None
    for fault in RANDOM_FAULTS:
        if getattr(faults, fault) == 1.0:
            if fault == "unavailable":
                chosen.append(f"fail-{faults.unavailable_status}")
            else:
                chosen.append(_WIRE_FAULTS[fault])
            if fault == "cut_stream":
                after = max(1, (2 * output_tokens) // 3)  # where a simulated stream is cut
            if fault == "malformed":
                after = 0  # a simulated malformed body has no token before it
    if faults.non_chat == 1.0:
        chosen.append("not-chat")
    for error in faults.errors:
        if error.p == 1.0:  # its Retry-After is its own, not the FakeModel's: scaled here
            retry = error.retry_after_s
            chosen.append(error.replace(retry_after_s=None if retry is None else retry * scale))
    if faults.fail_first:
        status = faults.fail_first_status
        base = status if isinstance(status, str) else f"fail-{status}"
        base = {"timeout": "hang"}.get(base, base)
        chosen.append(f"{base}-once" if faults.fail_first == 1 else f"{base}-x{faults.fail_first}")
    if len(chosen) > 1:
        names = [f"error-{c.status}" if isinstance(c, ErrorFault) else c for c in chosen]
        raise ArgumentError(f"{what}: FakeModel takes one fault, this profile has {names}")
    retry_after = faults.retry_after_s
    flapping = faults.flapping
    return FakeModel(
        ttft_s=_constant(profile.latency.ttft, f"{what}.latency.ttft") * scale,  # type: ignore[arg-type]
        tokens_per_s=_constant(profile.latency.tokens_per_s, f"{what}.latency.tokens_per_s")  # type: ignore[arg-type]
        / scale,
        output_tokens=output_tokens,
        fault=chosen[0] if chosen else None,
        fault_after_tokens=after,
        retry_after_s=None if retry_after is None else retry_after * scale,
        vision=profile.vision,
        context_window=profile.context_window,
        prefill=profile.prefill,
        outages=[(t0 * scale, t1 * scale) for t0, t1 in faults.outages],
        flapping=None
        if flapping is None
        else flapping.replace(
            up_s=flapping.up_s * scale,
            down_s=flapping.down_s * scale,
            start_s=flapping.start_s * scale,
            until_s=flapping.until_s * scale,
        ),
    )


def _scaled_policy(policy: HostPolicy, scale: float) -> HostPolicy:
    """The host policy in scaled time. A simulated cut stream is a 502, retried and a fallback
    reason; over HTTP a stream cut after its first token is that only with resend_cut_streams."""
    return policy.replace(
        timeout_s=policy.timeout_s * scale,
        backoff_initial_s=policy.backoff_initial_s * scale,
        backoff_max_s=policy.backoff_max_s * scale,
        retry_after_cap_s=policy.retry_after_cap_s * scale,
        cooldown_s=policy.cooldown_s * scale,
        resend_cut_streams=True,
    )


def _on_the_wire(request: Request) -> Request:
    """``request`` with its last message padded so that the provider counts the input tokens it
    declares: billing and context-window checks then see what the simulation sees."""
    messages = [dict(m) for m in request.messages]
    last = messages[-1] if messages else None
    if request.images or request.tools or last is None or not isinstance(last.get("content"), str):
        return request
    missing = request.input_tokens - prompt_tokens({"messages": messages})
    if missing <= 0:
        return request
    last["content"] += " " + "x" * (4 * missing - 1)  # four characters a token
    return dataclasses.replace(request, messages=tuple(messages))


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
    if over not in ("sim", "http"):
        raise ArgumentError(f"over must be 'sim' or 'http', got {over!r}")
    if over == "http" and engine != "auto":
        raise ArgumentError(f"engine={engine!r} is for over='sim': an HTTP run is real time")
    scenarios = catalogue()
    if ids is not None:
        unknown = [i for i in ids if i not in scenarios]
        if unknown:
            raise ArgumentError(f"unknown scenario ids {unknown}; known: {list(scenarios)}")
        scenarios = {i: scenarios[i] for i in ids}
    rows = []
    broken: list[tuple[str, str]] = []
    for scenario in scenarios.values():
        with warnings.catch_warnings():  # one warning for the catalogue, not one per scenario
            warnings.simplefilter("ignore", AlgorithmWarning)
            if over == "http":
                outcome = scenario.run_http(router, seed=seed, time_scale=time_scale)
            else:
                outcome = scenario.run(router, seed=seed, engine=engine)
        requests = outcome.result.requests
        message = broken_message(scenario.id, requests)
        if message is not None:
            broken.append((scenario.id, message))
        rows.append(
            {
                "id": scenario.id,
                "title": scenario.title,
                "passed": outcome.passed,
                "problems": "; ".join(outcome.problems),
                "attempts": len(outcome.result.attempts),
                "latency_s": float(requests["latency_s"].max()),
                "cost_usd": float(requests["cost_usd"].sum()),
            }
        )
    if broken:
        warnings.warn(
            f"the router failed on the algorithm's side in {len(broken)} of {len(rows)} "
            f"scenarios ({', '.join(i for i, _ in broken)}): the catalogue measured a bug, not "
            f"its fault handling; {broken[0][1]}",
            AlgorithmWarning,
            stacklevel=2,
        )
    return pd.DataFrame(rows)
