"""Agent sessions: ordered turns that arrive one after another, each after the previous answer.

A coding agent's traffic is not independent requests: turn k+1 is sent only after turn k was
answered and the tools it asked for have run. :class:`Session` holds the turns of one task;
``sy.run`` / ``sy.compare`` / ``sy.grid`` take a list of sessions where they take requests, and
run them as closed loops: ``concurrency`` counts sessions in flight (a session keeps its slot
from its first turn to its last, gaps included), and with ``arrivals`` the arrival times are
those of the sessions' first turns.

Each turn is a request row of its own. Its ``metadata`` gains ``session_id`` and ``turn`` (and
``parent_session`` for a sub-agent's session), so the requests frame links rows to sessions and an
algorithm can see which session and turn it routes. ``driver.session_state`` is a dict sykit keeps
per session: what an algorithm stored there on earlier turns (a latched model, counts of tool
signals) it finds on later ones.

The pause before turn k (tool execution, the agent's own work) is ``Turn.gap_s``: seconds, or a
distribution (``sy.LogNormal(8.4, p95=16)``) drawn per session, turn and seed, so strategies
compared with the same seed see the same pauses. A turn that fails ends its session: the later
turns are not sent (an agent whose model call failed does not go on as if it had an answer), so
the requests frame holds the turns that were sent and a session's last row shows where it ended.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import check_real
from .._errors import ArgumentError, ArgumentTypeError
from .._models import Request
from .._rng import uniforms

__all__ = ["Session", "SessionPlan", "Turn", "flatten_sessions"]


@dataclass(frozen=True)
class Turn:
    """One turn of a session: its request, and the pause before it is sent (after the previous
    turn's answer; ignored for the first turn)."""

    request: Request
    gap_s: Any = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.request, Request):
            raise ArgumentTypeError(
                f"Turn.request must be a sy.Request, got {type(self.request).__name__}"
            )
        object.__setattr__(self, "gap_s", _check_gap(self.gap_s))


def _check_gap(gap: Any) -> Any:
    """``gap`` if it is a distribution, else as a float of seconds (finite and ≥ 0)."""
    if hasattr(gap, "quantile") and callable(gap.quantile):
        return gap
    return check_real(
        gap,
        "gap_s",
        low=0,
        expected="≥ 0 and finite (seconds) or a distribution such as sy.LogNormal",
    )


@dataclass(frozen=True, init=False)
class Session:
    """An agent session: ``turns`` in order (a :class:`Turn`, or a :class:`~sykit.Request` sent
    right after the previous answer), an ``id`` (its position when not given) and, for a
    sub-agent's session, the ``parent`` session's id."""

    turns: tuple[Turn, ...]
    id: str | int | None
    parent: str | int | None

    def __init__(
        self,
        turns: Sequence[Turn | Request],
        *,
        id: str | int | None = None,
        parent: str | int | None = None,
    ) -> None:
        if isinstance(turns, str | bytes | Request | Turn) or not isinstance(turns, Sequence):
            raise ArgumentTypeError("turns must be a list of sy.Turn (or sy.Request)")
        checked = []
        for k, turn in enumerate(turns):
            if isinstance(turn, Request):
                turn = Turn(turn)
            elif not isinstance(turn, Turn):
                raise ArgumentTypeError(
                    f"session {id!r}: turn {k} must be a sy.Turn or sy.Request, got "
                    f"{type(turn).__name__}"
                )
            checked.append(turn)
        if not checked:
            raise ArgumentError(f"session {id!r} has no turns")
        for name, value in (("id", id), ("parent", parent)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
                raise ArgumentTypeError(
                    f"session {name} must be a str or int, got {type(value).__name__}"
                )
        object.__setattr__(self, "turns", tuple(checked))
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "parent", parent)


@dataclass
class SessionPlan:
    """Sessions flattened into one list of requests: where each session starts, which request
    follows which, and the pause before each."""

    first: list[int]  # the request index of each session's first turn
    following: list[int]  # per request: the index of the next turn, -1 after the last
    gaps: list[Any]  # per request: the pause before it (seconds or a distribution)
    session: list[int]  # per request: its session's position
    turn: list[int]  # per request: its turn number

    def gap(self, index: int, seed: int) -> float:
        """The pause before request ``index``, drawn per seed, session and turn."""
        gap = self.gaps[index]
        if isinstance(gap, int | float):
            return float(gap)
        u = uniforms(seed, "session-gap", self.session[index], self.turn[index])[0]
        value = float(gap.quantile(u))
        if not math.isfinite(value) or value < 0:
            raise ArgumentError(f"a gap distribution gave {value!r}; gaps must be finite and ≥ 0")
        return value


def flatten_sessions(given: Sequence[Any]) -> tuple[list[Request], SessionPlan] | None:
    """The requests of ``given`` sessions in order, and their plan; None when ``given`` holds
    no session (plain requests). Sessions and plain requests do not mix."""
    if not isinstance(given, Sequence) or not any(isinstance(s, Session) for s in given):
        return None
    strays = [i for i, s in enumerate(given) if not isinstance(s, Session)]
    if strays:
        raise ArgumentTypeError(
            f"requests mixes sessions and other items (position {strays[0]}: "
            f"{type(given[strays[0]]).__name__}); give a list of sy.Session only"
        )
    requests: list[Request] = []
    plan = SessionPlan([], [], [], [], [])
    seen: dict[Any, int] = {}
    for position, session in enumerate(given):
        sid = position if session.id is None else session.id
        if sid in seen:
            raise ArgumentError(
                f"session id {sid!r} is given to sessions {seen[sid]} and {position}; "
                "session ids must be unique"
            )
        seen[sid] = position
        plan.first.append(len(requests))
        for k, turn in enumerate(session.turns):
            request = turn.request
            extra: dict[str, Any] = {"session_id": sid, "turn": k}
            if session.parent is not None:
                extra["parent_session"] = session.parent
            clash = [key for key in extra if key in request.metadata]
            if clash:
                raise ArgumentError(
                    f"session {sid!r} turn {k}: metadata key {clash[0]!r} is sykit's (it names "
                    "the turn's session); rename it"
                )
            requests.append(
                _with(request, f"{sid}#{k}" if request.id is None else request.id, extra)
            )
            plan.following.append(len(requests) if k + 1 < len(session.turns) else -1)
            plan.gaps.append(turn.gap_s if k else 0.0)
            plan.session.append(position)
            plan.turn.append(k)
    return requests, plan


def _with(request: Request, request_id: Any, extra: Mapping[str, Any]) -> Request:
    """``request`` with its id and more metadata (requests are immutable: a copy), keeping the
    ground truth a dataset attached to it (what the simulated host grades the turn with)."""
    copy = Request(
        [dict(m) for m in request.messages],
        id=request_id,
        images=request.images,
        tools=[dict(t) for t in request.tools],
        input_tokens=request.input_tokens,
        max_output_tokens=request.max_output_tokens,
        metadata={**request.metadata, **extra},
    )
    truth = getattr(request, "_truth", None)
    return copy if truth is None else copy.with_truth(truth)
