"""Agent sessions: ordered turns that arrive one after another, each after the previous answer.

A coding agent's traffic is not independent requests: turn k+1 is sent only after turn k was
answered and the tools it asked for have run. :class:`Session` holds the turns of one task;
``sy.run`` / ``sy.compare`` / ``sy.grid`` take a list of sessions where they take requests, and
run them as closed loops: ``concurrency`` counts sessions in flight (a session keeps its slot
from its first turn to its last, gaps included), and with ``arrivals`` the arrival times are
those of the sessions' first turns.

Each turn is a request row of its own. Its ``metadata`` gains ``session_id`` and ``turn`` (and
``parent_session``, and ``parent_turn`` when a turn spawned it, for a sub-agent's session), so
the requests frame links rows to sessions and an algorithm can see which session and turn it
routes.

**Sub-agents.** A session with ``parent=`` is a sub-agent of that session, and with it one *task*.
With ``parent_turn=k`` the parent's turn ``k`` spawns it: it starts when that turn is answered,
and the parent's turn ``k + 1`` waits until every session turn ``k`` spawned has finished (and
until its own pause has passed: the pause runs alongside the children), and carries their results:
each child's final answer (its last turn's output tokens) adds to the prompt of the parent's
turn ``k + 1`` and of every later turn (the results stay in the parent's history). Without
``parent_turn`` the sub-agent runs in the background: it starts with its parent's first turn,
and the parent neither waits for it nor reads its answer. ``concurrency`` counts tasks: a
sub-agent takes no slot of its own; its task's slot is held until its last session ends. ``driver.session_state`` is a dict sykit keeps
per session: what an algorithm stored there on earlier turns (a latched model, counts of tool
signals) it finds on later ones.

The pause before turn k (tool execution, the agent's own work) is ``Turn.gap_s``: seconds, or a
distribution (``sy.dists.LogNormal(8.4, p95=16)``) drawn per session, turn and seed, so strategies
compared with the same seed see the same pauses. A turn that fails ends its session: the later
turns are not sent (an agent whose model call failed does not go on as if it had an answer), so
the requests frame holds the turns that were sent and a session's last row shows where it ended.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sykit._base.checks import check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.rng import uniforms
from sykit._world.models import Request, truth_of

__all__ = ["Session", "SessionPlan", "Turn", "flatten_sessions", "with_input_tokens"]


#: Metadata keys sykit sets on session turns (the row's session, turn and family): a turn's own
#: metadata may not use them, whether or not this session needs them.
_RESERVED = ("session_id", "turn", "parent_session", "parent_turn")


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
        expected="≥ 0 and finite (seconds) or a distribution such as sy.dists.LogNormal",
    )


@dataclass(frozen=True, init=False)
class Session:
    """An agent session: ``turns`` in order (a :class:`Turn`, or a :class:`~sykit.Request` sent
    right after the previous answer), an ``id`` (its position when not given) and, for a
    sub-agent's session, the ``parent`` session's id and the ``parent_turn`` that spawns it.

    A sub-agent with ``parent_turn=k`` starts when the parent's turn ``k`` is answered; the
    parent's turn ``k + 1`` waits for it and its siblings and carries their final answers' tokens
    in its prompt (and so does every later turn). Without ``parent_turn`` it runs in the
    background: it starts with the parent's first turn and nothing waits for it. The parent must
    be a session of the same run; the sub-agent's cost, tokens and time count in its parent's
    task (:func:`sykit.sessions.task_frame`)."""

    turns: tuple[Turn, ...]
    id: str | int | None
    parent: str | int | None
    parent_turn: int | None

    def __init__(
        self,
        turns: Sequence[Turn | Request],
        *,
        id: str | int | None = None,
        parent: str | int | None = None,
        parent_turn: int | None = None,
    ) -> None:
        if isinstance(turns, str | bytes | Request | Turn) or not isinstance(turns, Sequence):
            raise ArgumentTypeError("turns must be a list of sy.sessions.Turn (or sy.Request)")
        checked = []
        for k, turn in enumerate(turns):
            if isinstance(turn, Request):
                turn = Turn(turn)
            elif not isinstance(turn, Turn):
                raise ArgumentTypeError(
                    f"session {id!r}: turn {k} must be a sy.sessions.Turn or sy.Request, got "
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
        if parent_turn is not None:
            if parent is None:
                raise ArgumentError(
                    f"session {id!r}: parent_turn={parent_turn!r} needs parent= (the id of the "
                    "session whose turn spawns this one)"
                )
            if isinstance(parent_turn, bool) or not isinstance(parent_turn, int):
                raise ArgumentTypeError(
                    f"session {id!r}: parent_turn must be an int (the parent's turn, from 0), "
                    f"got {type(parent_turn).__name__}"
                )
            if parent_turn < 0:
                raise ArgumentError(
                    f"session {id!r}: parent_turn is {parent_turn}; turns count from 0"
                )
        object.__setattr__(self, "turns", tuple(checked))
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "parent_turn", parent_turn)


@dataclass
class SessionPlan:
    """Sessions flattened into one list of requests: where each task and session starts, which
    request follows which, the pause before each, and which sessions each turn spawns."""

    first: list[int]  # the request index of each task's first turn (its root session's)
    following: list[int]  # per request: the index of the next turn, -1 after the last
    gaps: list[Any]  # per request: the pause before it (seconds or a distribution)
    session: list[int]  # per request: its session's position
    turn: list[int]  # per request: its turn number
    starts: list[int] = field(default_factory=list)  # per session: its first turn's index
    root: list[int] = field(default_factory=list)  # per session: its task's root session
    # per request: the sessions (positions) its answer spawns, which its next turn waits for
    spawns: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # per session: the sub-agents that start with its first turn and that nothing waits for
    background: dict[int, tuple[int, ...]] = field(default_factory=dict)

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
    no session (plain requests). Sessions and plain requests do not mix; a sub-agent's parent
    must be one session of the run, and parents must not form a cycle."""
    if not isinstance(given, Sequence) or not any(isinstance(s, Session) for s in given):
        return None
    strays = [i for i, s in enumerate(given) if not isinstance(s, Session)]
    if strays:
        raise ArgumentTypeError(
            f"requests mixes sessions and other items (position {strays[0]}: "
            f"{type(given[strays[0]]).__name__}); give a list of sy.sessions.Session only"
        )
    ids = _session_ids(given)
    parents = _parents(given, ids)
    requests: list[Request] = []
    plan = SessionPlan([], [], [], [], [])
    roots = [_root(position, parents, ids) for position in range(len(given))]
    spawned: dict[tuple[int, int], list[int]] = {}
    background: dict[int, list[int]] = {}
    for position, session in enumerate(given):
        parent = parents[position]
        if parent < 0:
            continue
        if session.parent_turn is None:
            background.setdefault(parent, []).append(position)
        else:
            spawned.setdefault((parent, session.parent_turn), []).append(position)
    for position, session in enumerate(given):
        sid = ids[position]
        plan.starts.append(len(requests))
        plan.root.append(roots[position])
        if parents[position] < 0:
            plan.first.append(len(requests))
        for k, turn in enumerate(session.turns):
            request = turn.request
            extra: dict[str, Any] = {"session_id": sid, "turn": k}
            if session.parent is not None:
                extra["parent_session"] = session.parent
                if session.parent_turn is not None:
                    extra["parent_turn"] = session.parent_turn
            clash = [key for key in _RESERVED if key in request.metadata]
            if clash:
                raise ArgumentError(
                    f"session {sid!r} turn {k}: metadata key {clash[0]!r} is sykit's (it names "
                    "the turn's session); rename it"
                )
            children = spawned.get((position, k))
            if children:
                plan.spawns[len(requests)] = tuple(children)
            requests.append(
                _with(request, f"{sid}#{k}" if request.id is None else request.id, extra)
            )
            plan.following.append(len(requests) if k + 1 < len(session.turns) else -1)
            plan.gaps.append(turn.gap_s if k else 0.0)
            plan.session.append(position)
            plan.turn.append(k)
    plan.background = {parent: tuple(children) for parent, children in background.items()}
    return requests, plan


def _session_ids(given: Sequence[Session]) -> list[Any]:
    """Each session's id (its position when not given), checked unique: a parent names one."""
    ids: list[Any] = []
    seen: dict[Any, int] = {}
    for position, session in enumerate(given):
        sid = position if session.id is None else session.id
        if sid in seen:
            children = _children_naming(given, sid)
            named = f"; sub-agent {children[0]!r} names it as its parent" if children else ""
            raise ArgumentError(
                f"session id {sid!r} is given to sessions {seen[sid]} and {position}; "
                f"session ids must be unique{named}"
            )
        seen[sid] = position
        ids.append(sid)
    return ids


def _children_naming(given: Sequence[Session], parent: Any) -> list[Any]:
    return [
        position if s.id is None else s.id
        for position, s in enumerate(given)
        if s.parent is not None and s.parent == parent
    ]


def _parents(given: Sequence[Session], ids: list[Any]) -> list[int]:
    """Each session's parent position (-1: none), checked: the parent is a session of the run,
    and a spawning turn exists and has a next turn to carry the results."""
    position_of = {sid: position for position, sid in enumerate(ids)}
    parents = []
    for position, session in enumerate(given):
        if session.parent is None:
            parents.append(-1)
            continue
        sid = ids[position]
        parent = position_of.get(session.parent)
        if parent is None:
            raise ArgumentError(
                f"session {sid!r} names parent {session.parent!r}, which is not a session of "
                "this run; give the parent session in the same list (or drop parent=)"
            )
        k = session.parent_turn
        turns = len(given[parent].turns)
        if k is not None and k >= turns - 1:
            where = "its last turn" if k == turns - 1 else f"past its {turns} turns"
            raise ArgumentError(
                f"session {sid!r}: parent_turn={k} is {where} of parent {session.parent!r}; a "
                "sub-agent's results return to the parent's next turn, so it must hang from a "
                f"turn before the last (0 … {turns - 2}), or run in the background "
                "(no parent_turn)"
            )
        parents.append(parent)
    return parents


def _root(position: int, parents: list[int], ids: list[Any]) -> int:
    """The task's root session of ``position``: its parents followed up to one without."""
    chain = [position]
    while parents[chain[-1]] >= 0:
        parent = parents[chain[-1]]
        if parent in chain:
            loop = [*chain[chain.index(parent) :], parent]
            raise ArgumentError(
                "sessions "
                + " → ".join(repr(ids[p]) for p in loop)
                + " form a cycle of parents; a sub-agent's parents must lead up to a session "
                "without one"
            )
        chain.append(parent)
    return chain[-1]


def with_input_tokens(request: Request, extra: int) -> Request:
    """``request`` with ``extra`` more prompt tokens (a sub-agent's answer in the parent's
    history), keeping its id, metadata and ground truth."""
    return _with(request, request.id, {}, input_tokens=request.input_tokens + extra)


def _with(
    request: Request,
    request_id: Any,
    extra: Mapping[str, Any],
    input_tokens: int | None = None,
) -> Request:
    """``request`` with its id and more metadata (requests are immutable: a copy), keeping the
    ground truth a dataset attached to it (what the simulated host grades the turn with)."""
    copy = Request(
        [dict(m) for m in request.messages],
        id=request_id,
        images=request.images,
        tools=[dict(t) for t in request.tools],
        input_tokens=request.input_tokens if input_tokens is None else input_tokens,
        max_output_tokens=request.max_output_tokens,
        metadata={**request.metadata, **extra},
    )
    truth = truth_of(request)
    return copy if truth is None else copy.with_truth(truth)
