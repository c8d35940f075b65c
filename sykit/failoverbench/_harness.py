"""The failoverbench harness: a scenario (host, requests, reference router, check), its run in
simulated time or over HTTP against a :class:`sykit.testing.FakeProvider`, and the report of a
catalogue's runs. The scenarios themselves are in ``sykit.failoverbench._catalogue``; the public face
is :mod:`sykit.failoverbench`.
"""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.types import Algorithm
from sykit._hosts.http import HttpHost
from sykit._hosts.sim import SimHost
from sykit._results.health import AlgorithmWarning, broken_message
from sykit._results.result import Result
from sykit._run.api import run
from sykit._world.config import HostPolicy, ModelProfile
from sykit._world.dists import Constant, Distribution, check_number
from sykit._world.faults import LATER_RANDOM_FAULTS, RANDOM_FAULTS, ErrorFault
from sykit._world.models import Request
from sykit.testing import FakeModel, FakeProvider
from sykit.testing._chat import prompt_tokens

__all__ = [
    "EXACT",
    "HTTP_TIME_SCALE",
    "Check",
    "Scenario",
    "ScenarioOutcome",
    "Tolerance",
    "run_scenarios",
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

    def __post_init__(self) -> None:
        """A negative slack or a scale of 0 would fail (or pass) every time check."""
        object.__setattr__(self, "scale", check_number(self.scale, "scale", low_open=True))
        object.__setattr__(self, "abs_s", check_number(self.abs_s, "abs_s"))
        object.__setattr__(self, "rel", check_number(self.rel, "rel"))

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


# -- scenarios ------------------------------------------------------------------------------------


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

    def __post_init__(self) -> None:
        """A check that cannot be called would only fail after the whole run."""
        if not callable(self.check):
            raise ArgumentTypeError(
                f"{self.id}: check must be a function (result, tolerance) -> list of problems, "
                f"got {type(self.check).__name__} {self.check!r:.40}"
            )

    def _outcome(self, result: Result, *args: Tolerance) -> ScenarioOutcome:
        """The outcome of ``result``, read by this scenario's check (which returns its problems)."""
        problems = self.check(result, *args)
        if not isinstance(problems, (list, tuple)) or not all(isinstance(p, str) for p in problems):
            raise ArgumentTypeError(
                f"{self.id}: check must return a list of problems (str; [] when the router "
                f"behaved correctly), got {type(problems).__name__} {problems!r:.60}"
            )
        return ScenarioOutcome(self, result, tuple(problems))

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
        return self._outcome(result)

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
        if tolerance is not None and not isinstance(tolerance, Tolerance):
            raise ArgumentTypeError(
                "tolerance must be a sy.failoverbench.Tolerance, such as Tolerance.http(), or "
                f"None, got {type(tolerance).__name__} {tolerance!r:.40}"
            )
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
        return self._outcome(result, tolerance)


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


def _check_date_scale(spelling: str, scale: float, what: str) -> None:
    """An HTTP-date counts whole seconds: a Retry-After sent as one cannot be scaled in time."""
    if spelling == "date" and scale != 1.0:
        raise ArgumentError(
            f"{what}: FakeProvider cannot reproduce retry_after_as='date' with durations scaled "
            f"× {scale:g} (an HTTP-date counts whole seconds); run with time_scale=1"
        )


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
    if profile.capacity is not None:  # the fake server re-times streams; the SimHost does not
        unsupported.append(f"capacity={profile.capacity!r}")
    if unsupported:
        raise ArgumentError(f"{what}: FakeProvider cannot reproduce {', '.join(unsupported)}")
    output_tokens = round(_constant(profile.output_tokens, f"{what}.output_tokens"))
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
            _check_date_scale(error.retry_after_as, scale, f"{what} ErrorFault")
            retry, ms = error.retry_after_s, error.retry_after_ms
            chosen.append(
                error.replace(
                    retry_after_s=None if retry is None else retry * scale,
                    retry_after_ms=None if ms is None else ms * scale,
                )
            )
    if faults.fail_first:
        status = faults.fail_first_status
        base = status if isinstance(status, str) else f"fail-{status}"
        base = {"timeout": "hang"}.get(base, base)
        chosen.append(f"{base}-once" if faults.fail_first == 1 else f"{base}-x{faults.fail_first}")
    if len(chosen) > 1:
        names = [f"error-{c.status}" if isinstance(c, ErrorFault) else c for c in chosen]
        raise ArgumentError(f"{what}: FakeModel takes one fault, this profile has {names}")
    retry_after = faults.retry_after_s
    retry_after_ms = faults.retry_after_ms
    _check_date_scale(faults.retry_after_as, scale, f"{what}.faults")
    flapping = faults.flapping
    return FakeModel(
        ttft_s=_constant(profile.latency.ttft, f"{what}.latency.ttft") * scale,
        tokens_per_s=_constant(profile.latency.tokens_per_s, f"{what}.latency.tokens_per_s")
        / scale,
        output_tokens=output_tokens,
        fault=chosen[0] if chosen else None,
        fault_after_tokens=after,
        retry_after_s=None if retry_after is None else retry_after * scale,
        retry_after_as=faults.retry_after_as,
        retry_after_ms=None if retry_after_ms is None else retry_after_ms * scale,
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


def _close(wrong: object, known: Sequence[str]) -> str:
    """A did-you-mean for a misspelt scenario id ("s1" → "S01"), or nothing."""
    if not isinstance(wrong, str):
        return ""
    text = wrong.strip().upper()
    if text[:1] == "S" and text[1:].isdigit() and f"S{int(text[1:]):02d}" in known:
        return f" (did you mean 'S{int(text[1:]):02d}'?)"
    close = difflib.get_close_matches(text, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _selected(scenarios: Mapping[str, Scenario], ids: Any) -> dict[str, Scenario]:
    """The scenarios ``ids`` names, in its order (a set's in the catalogue's). A bare string, an
    empty selection, a misspelt or repeated id is an error: a report that silently covers other
    scenarios than asked would read as a pass."""
    if ids is None:
        return dict(scenarios)
    if isinstance(ids, str) or not isinstance(ids, Iterable):
        raise ArgumentTypeError(
            f"ids must be a list of scenario ids such as ['S01', 'S07'], or None for all of "
            f"them, got {type(ids).__name__} {ids!r:.40}"
        )
    wanted = list(ids)  # once: an iterator would be spent by the checks below
    not_str = [i for i in wanted if not isinstance(i, str)]
    if not_str:
        raise ArgumentTypeError(
            f"ids must hold scenario ids (str) such as 'S01', got {not_str[0]!r:.40} "
            f"({type(not_str[0]).__name__})"
        )
    if not wanted:
        raise ArgumentError(
            "ids is empty, so no scenario would run; leave it out (ids=None) to run them all"
        )
    known = list(scenarios)
    unknown = [i for i in wanted if i not in scenarios]
    if unknown:
        raise ArgumentError(
            f"unknown scenario ids {unknown}{_close(unknown[0], known)}; known: {known}"
        )
    repeated = sorted({i for i in wanted if wanted.count(i) > 1})
    if repeated:
        raise ArgumentError(
            f"ids names {repeated} more than once; name each scenario once (the report has one "
            "row per scenario)"
        )
    if isinstance(ids, Set):
        wanted = [i for i in known if i in ids]
    return {i: scenarios[i] for i in wanted}


def run_scenarios(
    scenarios: Mapping[str, Scenario],
    router: Any = None,
    *,
    seed: int = 0,
    ids: Sequence[str] | None = None,
    engine: str = "auto",
    over: Literal["sim", "http"] = "sim",
    time_scale: float = HTTP_TIME_SCALE,
) -> pd.DataFrame:
    """What :func:`sykit.failoverbench.run_catalogue` does with the ``scenarios`` it is given: one
    row per scenario run (those in ``ids``, if given)."""
    if over not in ("sim", "http"):
        raise ArgumentError(f"over must be 'sim' or 'http', got {over!r}")
    if over == "http" and engine != "auto":
        raise ArgumentError(f"engine={engine!r} is for over='sim': an HTTP run is real time")
    check_number(time_scale, "time_scale", low_open=True)
    scenarios = _selected(scenarios, ids)
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
            stacklevel=3,  # the caller of run_catalogue,
        )
    return pd.DataFrame(rows)
