"""The candidate loop of many requests at once, in waves: every request's first attempt, then the
retries and fallbacks of those that failed, and so on.

Each wave plans its attempts column-wise, as the simulated host plans one attempt
(:meth:`sykit._hosts.sim._SimSession.plan`), for the attempts whose course does not depend on when
they start: an answer that comes before the deadline, or an error answer (a 429, a 5xx, a policy or
invalid-request 400, a profile's own error, a structural 400 for a request the model cannot take,
a reset, a non-chat answer). Their timings are durations; the run adds them to each request's start
in the same order the event engines do. A timeout (a fault's, or an answer that would end after the
deadline) and a broken stream (cut part-way, or a malformed chunk) are planned too, but settled
when the request is placed: a timeout ends at ``start + timeout_s``, and an answer under way is
billed for what it produced by its end, which depends on the start's rounding (:class:`Timed`).
What only the start can decide (a late answer that the placed start brings in on time, a
malformed first chunk due after the deadline) sends the whole request to the exact path, which
runs the very candidate loop the event engines run (:func:`sykit._run.candidates.serve_steps`) on the
bulk engine's clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from sykit._base.errors import ModelError
from sykit._base.rng import SLOT
from sykit._hosts.base import Reply
from sykit._hosts.sim import broken_reply, fault_error, structural_refusal
from sykit._run.attempts import reply_error
from sykit._run.engines.bulk._draws import attempt_units, quantiles
from sykit._run.records import REASON_CODE
from sykit._world.classify import fallback_reason, is_retryable
from sykit._world.config import HostPolicy, ModelProfile
from sykit._world.faults import LATER_RANDOM_FAULTS, RANDOM_FAULTS
from sykit._world.models import Request

__all__ = [
    "Columns",
    "NotSimple",
    "Timed",
    "Wave",
    "Waves",
    "collected",
    "kept",
    "plan_wave",
    "run_waves",
    "selected",
]

#: Faults whose error the host makes itself (:func:`~sykit._hosts.sim.fault_error`), not from an
#: HTTP error answer.
_RAISED_FAULTS = frozenset(("timeout", "reset", "non_chat"))
#: Random faults listed in the order the keyed uniform is partitioned among them.
_ORDER = (*RANDOM_FAULTS, *LATER_RANDOM_FAULTS)


class NotSimple(Exception):
    """A run the waves cannot take (cooldown state between requests)."""


class Timed(NamedTuple):
    """An attempt whose end or bill depends on its start, settled when its request is placed:
    one that ends at its deadline, or a stream that broke (``after`` from its start). The answer
    the host had planned: ``accepted``, one was under way, billed per the policy for the tokens
    produced by the end; ``total``, when it would have ended, from the attempt's start."""

    accepted: bool
    total: float
    ttft: float
    tokens_per_s: float
    planned: int
    stall_after: int
    stall_s: float
    #: from the attempt's start to its end when it is a broken stream's; NaN: at the deadline
    after: float


#: A timeout fault's: nothing was under way.
_NOTHING_UNDER_WAY = Timed(False, math.inf, 0.0, 0.0, 0, 0, 0.0, math.nan)


@dataclass
class Columns:
    """What the waves need of each request, as columns (one entry per request in the run)."""

    ids: list[Any]
    input_tokens: np.ndarray  # int64
    max_output: np.ndarray  # int64, -1: no cap
    requested: np.ndarray  # int64: input + max output (the context-window check)
    images: np.ndarray  # bool
    tools: np.ndarray  # bool
    ends_with_assistant: np.ndarray  # bool
    known_output: dict[str, np.ndarray]  # per model, the truth's output lengths (-1: unknown)

    @classmethod
    def of(
        cls,
        items: Iterable[tuple[Any, Request, Any]],
        n: int,
        routed: Sequence[Request] | None = None,
    ) -> Columns:
        """The columns of ``n`` ``items`` (id, request, truth), read once in order (each request
        may be dropped once read); the requests served are ``routed`` (a static router's) when
        given, else the items' own."""
        # Python lists in the loop (a NumPy element write costs more than the read), arrays after
        tokens: list[int] = []
        caps: list[int] = []
        flagged: list[tuple[int, bool, bool, bool]] = []  # (k, images, tools, prefill): few
        ids: list[Any] = []
        known: dict[str, np.ndarray] = {}
        for k, (request_id, own, truth) in enumerate(items):
            ids.append(request_id)
            if truth is not None and truth.output_tokens:
                for model, length in truth.output_tokens.items():
                    lengths = known.get(model)
                    if lengths is None:
                        lengths = known[model] = np.full(n, -1, dtype=np.int64)
                    lengths[k] = length
            request = own if routed is None else routed[k]
            tokens.append(request.input_tokens)
            cap = request.max_output_tokens
            caps.append(-1 if cap is None else cap)
            prefill = request._ends_with_assistant()
            if request.images or request.tools or prefill:
                flagged.append((k, bool(request.images), bool(request.tools), prefill))
        input_tokens = np.array(tokens, dtype=np.int64).reshape(n)
        max_output = np.array(caps, dtype=np.int64).reshape(n)
        images = np.zeros(n, dtype=bool)
        tools = np.zeros(n, dtype=bool)
        assistant = np.zeros(n, dtype=bool)
        if flagged:
            at, has_images, has_tools, prefills = (
                np.asarray(c) for c in zip(*flagged, strict=True)
            )
            images[at], tools[at], assistant[at] = has_images, has_tools, prefills
        requested = input_tokens + np.maximum(max_output, 0)
        return cls(ids, input_tokens, max_output, requested, images, tools, assistant, known)


@dataclass
class Waves:
    """The attempts the waves planned, one entry per attempt in request order (then in the order
    each request made them), and each request's course (``slow``: it goes the exact way)."""

    request: np.ndarray  # int64 position in the run
    model: np.ndarray  # int32 model code
    candidate: np.ndarray  # int16
    retry: np.ndarray  # int16
    after: np.ndarray  # float64: from the attempt's start to its reply
    backoff: np.ndarray  # float64: the wait before the next attempt (NaN: none follows)
    ok: np.ndarray  # bool
    ttft: np.ndarray  # float64 (NaN for error answers)
    output_tokens: np.ndarray  # int64 (0 for error answers)
    cost: np.ndarray  # float64 (0 for error answers)
    error: np.ndarray  # int32: index into ``errors`` (-1: answered)
    fallback: np.ndarray  # int16: the fallback reason code on a failed attempt (-1: none)
    errors: list[ModelError]  # the distinct errors, each made once by the host's own code
    slow: np.ndarray  # bool per request
    failed: np.ndarray  # int32 per request: index into ``errors`` of its final error (-1: served)
    #: int32 per attempt: index into ``timings`` of an attempt settled when its request is
    #: placed (a timeout's ``after`` is NaN until then; an answer under way has cost and output
    #: tokens 0 until it is billed), -1 otherwise
    timed: np.ndarray
    timings: list[Timed]
    #: Set when each attempt is its own call made while routing (a router that owns its retry
    #: loop, such as ``litellm_like``): the call id of each attempt within its request, and
    #: whether the request moved on to its next target after it (counted in ``n_fallbacks``
    #: whether or not the error has a fallback reason). None: one call per request, in the
    #: answer phase, by the host's candidate loop, whose waits are its retries.
    call: np.ndarray | None = None  # int16
    moved: np.ndarray | None = None  # bool
    #: The input tokens billed per attempt, once a timed attempt was billed for its input
    #: (None: :meth:`input_tokens`' default, the served attempts' input and 0 for the others).
    billed_input: np.ndarray | None = None

    def input_tokens(self, columns: Columns) -> np.ndarray:
        """The input tokens billed per attempt (``columns``: the requests')."""
        if self.billed_input is not None:
            return self.billed_input
        return np.where(self.ok, columns.input_tokens[self.request], 0)


def selected(waves: Waves, keep: np.ndarray) -> Waves:
    """``waves`` with only the attempts ``keep`` selects (per-request fields as they are)."""
    per_attempt = {
        name: getattr(waves, name)
        for name in (*_FIELDS, "timed", "call", "moved", "billed_input")
        if getattr(waves, name) is not None
    }
    return replace(waves, **{name: values[keep] for name, values in per_attempt.items()})


def run_waves(
    columns: Columns,
    routes: np.ndarray,
    chains: list[tuple[str, ...]],
    todo: np.ndarray,
    profiles: Mapping[str, ModelProfile],
    model_codes: Mapping[str, int],
    policy: HostPolicy,
    seed: int,
    session: Any,
) -> Waves:
    """Plan the attempts of requests ``todo`` (positions), each with the chain ``chains[routes[k]]``."""
    n = len(columns.ids)
    slow = np.zeros(n, dtype=bool)
    failed = np.full(n, -1, dtype=np.int32)
    chain_models = [[model_codes[m] for m in chain] for chain in chains]
    width = max(len(c) for c in chains)
    chain_table = np.full((len(chains), width), -1, dtype=np.int32)
    chain_len = np.empty(len(chains), dtype=np.int64)
    for k, codes in enumerate(chain_models):
        chain_table[k, : len(codes)] = codes
        chain_len[k] = len(codes)
    names = {code: name for name, code in model_codes.items()}
    cooling_matters = policy.cooldown_s > 0 and bool((chain_len > 1).any())
    errors = _ErrorTable(profiles, session, policy)
    limit = policy.max_retries

    out: dict[str, list[np.ndarray]] = {key: [] for key in _FIELDS}
    seq_parts: list[np.ndarray] = []
    # the active calls: request, candidate, retry (each model once per chain: n == retry)
    active = np.asarray(todo, dtype=np.int64)
    candidate = np.zeros(len(active), dtype=np.int64)
    retry = np.zeros(len(active), dtype=np.int64)
    step = 0
    while len(active):
        route = routes[active]
        model = chain_table[route, candidate]
        wave = plan_wave(model, names, profiles, columns, active, retry, seed, policy, errors)
        # a request that needs the exact way goes there whole (its earlier attempts are dropped)
        if wave.slow.any():
            slow[active[wave.slow]] = True
        keep = ~wave.slow
        # what each failed attempt leads to: a retry, a fallback, or the request's failure
        failing = np.flatnonzero(keep & ~wave.ok)
        backoff = np.full(len(active), np.nan)
        fallback = np.full(len(active), -1, dtype=np.int16)
        next_candidate = candidate.copy()
        next_retry = retry.copy()
        goes_on = np.zeros(len(active), dtype=bool)
        last = chain_len[route] - 1
        for k in failing.tolist():
            info = errors.info[int(wave.error[k])]
            if info.retryable and cooling_matters:
                raise NotSimple(
                    f"a transient failure starts a cooldown (HostPolicy.cooldown_s="
                    f"{policy.cooldown_s:g}) that later requests' fallback chains would see"
                )
            if info.retryable and retry[k] < limit:
                backoff[k] = info.backoff[int(retry[k])]
                next_retry[k] = retry[k] + 1
                goes_on[k] = True
            elif candidate[k] == last[k] or not info.falls_back:
                failed[active[k]] = wave.error[k]
            else:
                fallback[k] = info.reason_code
                next_candidate[k] = candidate[k] + 1
                next_retry[k] = 0
                goes_on[k] = True
        kept(out, seq_parts, step, keep, wave, active, model, backoff, fallback)
        out["candidate"].append(candidate[keep])
        out["retry"].append(retry[keep])
        active, candidate, retry = (
            active[goes_on],
            next_candidate[goes_on],
            next_retry[goes_on],
        )
        step += 1

    return collected(out, seq_parts, slow, failed, errors)


class Wave(NamedTuple):
    """One wave's plan, an entry per attempt: answered, the time from its start to its reply, its
    TTFT, output tokens, cost, error (an index into the error table; −1: answered), and whether
    its request must go the exact way."""

    ok: np.ndarray
    after: np.ndarray
    ttft: np.ndarray
    output_tokens: np.ndarray
    cost: np.ndarray
    error: np.ndarray
    slow: np.ndarray
    timed: np.ndarray


def plan_wave(
    model: np.ndarray,
    names: Mapping[int, str],
    profiles: Mapping[str, ModelProfile],
    columns: Columns,
    active: np.ndarray,
    ns: np.ndarray,
    seed: int,
    policy: HostPolicy,
    errors: _ErrorTable,
) -> Wave:
    """One wave: the attempt of each request ``active`` at its model (``model``, a code
    ``names`` names; its attempt number ``ns``), planned model by model."""
    m = len(active)
    into = Wave(
        np.zeros(m, dtype=bool),
        np.zeros(m),
        np.full(m, np.nan),
        np.zeros(m, dtype=np.int64),
        np.zeros(m),
        np.full(m, -1, dtype=np.int32),
        np.zeros(m, dtype=bool),
        np.full(m, -1, dtype=np.int32),
    )
    for code in np.unique(model).tolist():
        sel = np.flatnonzero(model == code)
        name = names[code]
        _plan_model(
            name, profiles[name], columns, active[sel], ns[sel], seed, policy.timeout_s, errors,
            sel, into,
        )  # fmt: skip
    return into


def kept(
    out: dict[str, list[np.ndarray]],
    seq_parts: list[np.ndarray],
    step: int,
    keep: np.ndarray,
    wave: Wave,
    active: np.ndarray,
    model: np.ndarray,
    backoff: np.ndarray,
    fallback: np.ndarray,
) -> None:
    """Add the attempts of wave ``step`` that ``keep`` selects to ``out`` (per field, one array
    per wave): the requests, their models, the wave's plan (:func:`plan_wave`) and what follows
    each attempt (the wait after it, its fallback reason code)."""
    for key, values in (
        ("request", active),
        ("model", model),
        ("after", wave.after),
        ("backoff", backoff),
        ("ok", wave.ok),
        ("ttft", wave.ttft),
        ("output_tokens", wave.output_tokens),
        ("cost", wave.cost),
        ("error", wave.error),
        ("fallback", fallback),
        ("timed", wave.timed),
    ):
        out.setdefault(key, []).append(values[keep])
    seq_parts.append(np.full(int(np.count_nonzero(keep)), step, dtype=np.int64))


def collected(
    out: Mapping[str, list[np.ndarray]],
    seq_parts: list[np.ndarray],
    slow: np.ndarray,
    failed: np.ndarray,
    errors: _ErrorTable,
) -> Waves:
    """The :class:`Waves` of the attempts the waves planned (``out``: per field, one array per
    wave; ``seq_parts``: each wave's number per attempt), in request order, then in the order each
    request made them, without the requests that go the exact way (whose ``failed`` entry is
    reset). Fields ``out`` lacks take their defaults: candidate and retry 0, no call or move."""
    if not seq_parts:  # nothing planned column-wise: every request goes the exact way
        return _no_waves(slow, failed, [info.error for info in errors.info], errors.timings)
    merged = {key: np.concatenate(parts) for key, parts in out.items()}
    seq = np.concatenate(seq_parts)
    drop = slow[merged["request"]]
    order = np.lexsort((seq[~drop], merged["request"][~drop]))
    failed[slow] = -1
    final = {key: values[~drop][order] for key, values in merged.items()}
    zeros = np.zeros(len(order), dtype=np.int16)
    return Waves(
        request=final["request"],
        model=final["model"].astype(np.int32),
        candidate=final["candidate"].astype(np.int16) if "candidate" in final else zeros,
        retry=final["retry"].astype(np.int16) if "retry" in final else zeros,
        after=final["after"],
        backoff=final["backoff"],
        ok=final["ok"],
        ttft=final["ttft"],
        output_tokens=final["output_tokens"],
        cost=final["cost"],
        error=final["error"],
        fallback=final["fallback"],
        errors=[info.error for info in errors.info],
        slow=slow,
        failed=failed,
        timed=final["timed"],
        timings=errors.timings,
        call=final["call"].astype(np.int16) if "call" in final else None,
        moved=final.get("moved"),
    )


def _no_waves(
    slow: np.ndarray, failed: np.ndarray, errors: list[ModelError], timings: list[Timed]
) -> Waves:
    empty_f = np.zeros(0)
    empty_i = np.zeros(0, dtype=np.int64)
    return Waves(
        request=empty_i,
        model=np.zeros(0, dtype=np.int32),
        candidate=np.zeros(0, dtype=np.int16),
        retry=np.zeros(0, dtype=np.int16),
        after=empty_f,
        backoff=empty_f,
        ok=np.zeros(0, dtype=bool),
        ttft=empty_f,
        output_tokens=empty_i,
        cost=empty_f,
        error=np.zeros(0, dtype=np.int32),
        fallback=np.zeros(0, dtype=np.int16),
        errors=errors,
        slow=slow,
        failed=failed,
        timed=np.zeros(0, dtype=np.int32),
        timings=timings,
    )


_FIELDS = (
    "request",
    "model",
    "candidate",
    "retry",
    "after",
    "backoff",
    "ok",
    "ttft",
    "output_tokens",
    "cost",
    "error",
    "fallback",
)


@dataclass
class _ErrorInfo:
    error: ModelError
    retryable: bool
    falls_back: bool
    reason_code: int
    backoff: list[float]  # the wait before retry r + 1, per r


class _ErrorTable:
    """The distinct error answers of a run, each classified once with the host's own code, and
    the attempts settled when their requests are placed (:class:`Timed`)."""

    def __init__(
        self, profiles: Mapping[str, ModelProfile], session: Any, policy: HostPolicy
    ) -> None:
        self.profiles = profiles
        self.session = session
        self.policy = policy
        self.info: list[_ErrorInfo] = []
        self.index: dict[tuple[str, str, Any], int] = {}
        self.timings: list[Timed] = [_NOTHING_UNDER_WAY]

    def code(self, model: str, fault: str, which: int) -> int:
        key = (model, fault, which)
        found = self.index.get(key)
        if found is not None:
            return found
        faults = self.profiles[model].faults
        if fault in _RAISED_FAULTS:
            return self._add(key, model, Reply(None, error=fault_error(fault, model)))
        if fault == "error":
            entry = faults.errors[which]
            parts: Any = (entry.status, entry.body(model), entry.headers())
        else:
            parts = self.session._fault(fault, faults)
        status, body, *rest = parts
        return self._add(key, model, Reply(status, body, (rest[0] if rest else None) or {}))

    def answer(self, model: str, reply: Reply) -> int:
        """The code of an error answer the host worded itself (a structural 400, a broken
        stream): one per model and wording (a context overflow's names the request's token
        counts, a cut stream's the tokens it produced)."""
        error = reply.error
        key = (
            model,
            "answer",
            repr((reply.status, reply.body, None if error is None else str(error))),
        )
        found = self.index.get(key)
        if found is not None:
            return found
        return self._add(key, model, reply)

    def _add(self, key: tuple[str, str, Any], model: str, reply: Reply) -> int:
        policy = self.policy
        error = reply_error(reply, model)
        assert error is not None
        reason = fallback_reason(error)
        retry_after = getattr(error, "retry_after_s", None)
        info = _ErrorInfo(
            error=error,
            retryable=is_retryable(error),
            falls_back=policy.allows_fallback(reason),
            reason_code=0 if reason is None else REASON_CODE[reason],
            backoff=[policy.backoff_s(r, retry_after) for r in range(policy.max_retries + 1)],
        )
        self.index[key] = len(self.info)
        self.info.append(info)
        return self.index[key]


def _plan_model(
    name: str,
    profile: ModelProfile,
    columns: Columns,
    requests: np.ndarray,
    ns: np.ndarray,
    seed: int,
    timeout_s: float,
    errors: _ErrorTable,
    sel: np.ndarray,
    into: Wave,
) -> None:
    """Plan the attempts at one model (requests ``requests``, attempt numbers ``ns``), writing
    into the wave's arrays at ``sel``, in the order the simulated host decides: a request the
    model cannot take is refused, else a random fault is drawn, else (or for a stream that will
    break) the answer is planned."""
    u = attempt_units(seed, [columns.ids[k] for k in requests.tolist()], name, ns.tolist())
    at_model = _AtModel(name, profile, columns, requests, u, timeout_s, errors, sel, into)
    refused = (
        (columns.images[requests] & (not profile.vision))
        | (columns.tools[requests] & (not profile.tools))
        | (columns.requested[requests] > profile.context_window)
        | (columns.ends_with_assistant[requests] & (not profile.prefill))
    )
    if refused.any():
        at_model.refuse(np.flatnonzero(refused))
    fault = _draw_faults(profile.faults, u)  # index into _ORDER, then the profile's errors
    fault[refused] = -1  # refused whatever its faults would have drawn
    kind = np.asarray([*_ORDER, *("error" for _ in profile.faults.errors)], dtype=object)
    broken = np.zeros(len(requests), dtype=np.int64)
    if (fault >= 0).any():
        drawn = kind[np.maximum(fault, 0)]
        rejected = (fault >= 0) & (drawn != "timeout") & (drawn != "cut_stream")
        rejected &= drawn != "malformed"
        if rejected.any():
            at_model.reject(np.flatnonzero(rejected), fault)
        at = sel[np.flatnonzero((fault >= 0) & (drawn == "timeout"))]
        into.after[at] = np.nan  # (start + timeout_s) - start, once the start is known
        into.error[at] = errors.code(name, "timeout", 0)
        into.timed[at] = 0  # _NOTHING_UNDER_WAY
        broken[(fault >= 0) & (drawn == "cut_stream")] = 1
        broken[(fault >= 0) & (drawn == "malformed")] = 2
    answering = ~refused & ((fault < 0) | (broken > 0))
    if answering.any():
        rows = np.flatnonzero(answering)
        at_model.answer(rows, broken[rows])


def _draw_faults(faults: Any, u: np.ndarray) -> np.ndarray:
    """Each attempt's random fault: an index into ``_ORDER``, then into the profile's errors
    (-1: none), from its FAULT uniform partitioned as the host partitions it."""
    fault = np.full(len(u), -1, dtype=np.int64)
    if faults.random_total > 0:
        x = u[:, SLOT.FAULT].copy()
        probabilities = [getattr(faults, f) for f in _ORDER] + [e.p for e in faults.errors]
        for k, p in enumerate(probabilities):
            x -= p
            fault[(x < 0) & (fault < 0)] = k
    return fault


@dataclass
class _AtModel:
    """One wave's attempts at one model: their requests, their eight uniforms each (``u``) and
    where they go in the wave (``sel`` into ``into``)."""

    name: str
    profile: ModelProfile
    columns: Columns
    requests: np.ndarray
    u: np.ndarray
    timeout_s: float
    errors: _ErrorTable
    sel: np.ndarray
    into: Wave

    def refuse(self, rows: np.ndarray) -> None:
        """The structural 400s of ``rows``, worded by the host's own function."""
        columns, name = self.columns, self.name
        codes = np.empty(len(rows), dtype=np.int32)
        for j, (k, detail) in enumerate(
            zip(self.requests[rows].tolist(), self.u[rows, SLOT.DETAIL].tolist(), strict=True)
        ):
            cap = int(columns.max_output[k])
            refusal = structural_refusal(
                name,
                self.profile,
                images=bool(columns.images[k]),
                input_tokens=int(columns.input_tokens[k]),
                max_output_tokens=None if cap < 0 else cap,
                tools=bool(columns.tools[k]),
                ends_with_assistant=bool(columns.ends_with_assistant[k]),
                detail=detail,
            )
            assert refusal is not None  # the same conditions as the caller's mask
            codes[j] = self.errors.answer(name, Reply(*refusal))
        self._after_rejection(rows, codes)

    def reject(self, rows: np.ndarray, fault: np.ndarray) -> None:
        """The error answers of ``rows``' random faults (an HTTP error, a reset, a non-chat
        answer, a profile's own error), after the rejection delay."""
        n_order = len(_ORDER)
        codes = np.asarray(
            [
                self.errors.code(self.name, _ORDER[k], 0)
                if k < n_order
                else self.errors.code(self.name, "error", k - n_order)
                for k in fault[rows].tolist()
            ],
            dtype=np.int32,
        )
        self._after_rejection(rows, codes)

    def _after_rejection(self, rows: np.ndarray, codes: np.ndarray) -> None:
        at = self.sel[rows]
        self.into.after[at] = quantiles(self.profile.reject_delay_s, self.u[rows, SLOT.TTFT])
        self.into.error[at] = codes

    def answer(self, rows: np.ndarray, broken: np.ndarray) -> None:
        """The answers of ``rows`` (``broken``: 0 a whole answer, 1 a stream that will be cut,
        2 one that will send a malformed chunk), as the host plans them: the first token, the
        rate, the length, a spike, a stall; an answer that would end after the deadline is a
        timeout (timed once its start is known: :class:`Timed`), a broken stream ends at its
        break and is billed for what it produced when its request is placed."""
        name, profile, u, into, errors = self.name, self.profile, self.u, self.into, self.errors
        faults = profile.faults
        timeout_s = self.timeout_s
        picked = self.requests[rows]
        output = _output_tokens(name, profile, self.columns, picked, u[rows, SLOT.OUTPUT_TOKENS])
        latency = profile.latency
        ttft = quantiles(latency.ttft, u[rows, SLOT.TTFT])
        inputs = self.columns.input_tokens[picked].astype(np.float64)
        if latency.prefill_tokens_per_s:
            ttft = ttft + inputs / latency.prefill_tokens_per_s
        tps = quantiles(latency.tokens_per_s, u[rows, SLOT.TOKENS_PER_S])
        factor = np.ones(len(rows))
        if faults.spike_p:
            spiked = u[rows, SLOT.SPIKE] < faults.spike_p
            factor[spiked] = faults.spike_factor
            if faults.spike_factor != 1.0:
                ttft = np.where(spiked, ttft * faults.spike_factor, ttft)
        total = ttft + (output.astype(np.float64) / tps) * factor
        stalled = np.zeros(len(rows), dtype=bool)
        if faults.stall_p:
            stalled = u[rows, SLOT.STALL] < faults.stall_p
            total = np.where(stalled, total + faults.stall_s, total)
        at = self.sel[rows]
        # A malformed first chunk comes at the first token, nothing billed, if that is by the
        # deadline; a first token after it is on time or not depending on the start's rounding.
        first_chunk = (broken == 2) & (not faults.break_after_tokens)
        on_time = first_chunk & (ttft <= timeout_s)
        if first_chunk.any():
            into.slow[at[first_chunk & ~on_time]] = True
            if on_time.any():
                reply = broken_reply("malformed", name, None, 0, 0.0)
                into.after[at[on_time]] = ttft[on_time]
                into.error[at[on_time]] = errors.answer(name, reply)
        # An answer that would end after the deadline is stopped there. (One that ends by it
        # does at any start: adding a start rounds monotonically.)
        late = (total > timeout_s) & ~first_chunk
        cut = (broken > 0) & ~late & ~first_chunk
        timeout = errors.code(name, "timeout", 0) if late.any() else -1
        for j in np.flatnonzero(late | cut).tolist():
            out_j = int(output[j])
            ttft_j, factor_j, tps_j = float(ttft[j]), float(factor[j]), float(tps[j])
            stall_s = faults.stall_s if stalled[j] else 0.0
            stall_after = max(1, out_j // 2) if stall_s else 0
            after = math.nan
            if late[j]:
                into.error[at[j]] = timeout
            else:  # the stream breaks after its last good token, as the host breaks it
                limit = faults.break_after_tokens
                produced = max(1, (2 * out_j) // 3) if limit is None else max(1, min(limit, out_j))
                after = ttft_j + ((produced - 1) / tps_j) * factor_j
                if stall_s and produced > stall_after:
                    after += stall_s
                kind = "cut_stream" if broken[j] == 1 else "malformed"
                reply = broken_reply(kind, name, produced, out_j, 0.0)
                into.error[at[j]] = errors.answer(name, reply)
            into.after[at[j]] = after
            into.timed[at[j]] = len(errors.timings)
            timing = Timed(True, float(total[j]), ttft_j, tps_j / factor_j, out_j, stall_after,
                           stall_s, after)  # fmt: skip
            errors.timings.append(timing)
        fine = ~late & (broken == 0)
        at = at[fine]
        into.after[at] = total[fine]
        into.ttft[at] = ttft[fine]
        into.output_tokens[at] = output[fine]
        into.ok[at] = True
        into.cost[at] = (inputs[fine] * profile.price_in + output[fine] * profile.price_out) / 1e6


def _drawn_tokens(profile: ModelProfile, u: np.ndarray) -> np.ndarray:
    """The profile's answer lengths for the uniforms ``u``, as the host draws them."""
    return np.maximum(1, np.rint(quantiles(profile.output_tokens, u))).astype(np.int64)


def _output_tokens(
    name: str, profile: ModelProfile, columns: Columns, picked: np.ndarray, u: np.ndarray
) -> np.ndarray:
    """The answer lengths: the dataset's when it knows them, else the profile's draw; capped."""
    lengths = columns.known_output.get(name)
    if lengths is None:
        output = _drawn_tokens(profile, u)
    else:  # drawn only where the dataset does not know the length
        output = lengths[picked]
        unknown = output < 0
        if unknown.any():
            output[unknown] = _drawn_tokens(profile, u[unknown])
    caps = columns.max_output[picked]
    capped = (caps >= 0) & (output > caps)
    output[capped] = caps[capped]
    return output
