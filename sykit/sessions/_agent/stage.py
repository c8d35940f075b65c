"""Switchyard's stage router: a coding agent's turns go to a capable or an efficient model by what
the agent's tools did lately.

Reference §C.5 (libsy ``algorithms/stage.rs``, ``util/stage.rs``), composed as in §A.13: the
signals (:mod:`.tool_signals`) → the pick-tier rules → on an undecided turn the optional capability
judge (§C.6a, failing open as in §C.7) → the default tier. Deliberate differences are listed in
:func:`stage_router` and docs/stage-router.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError, ModelError
from sykit._base.types import Algorithm
from sykit._run.driver import Driver
from sykit._world.dists import check_number
from sykit._world.models import Boolean, DecisionRequest, Outcome, Request, route_to
from sykit._world.truth import graded
from sykit.sessions._agent.tool_signals import (
    CRITICAL,
    DEFAULT_RECENT_WINDOW,
    ToolSemantics,
    ToolSignals,
    score,
    tool_signals,
)

__all__ = ["SOURCES", "TIERS", "Pick", "StageState", "pick_tier", "stage_router"]


TIERS = ("capable", "efficient")
#: Why a turn went where it did (the reference's ``DecisionSource`` labels).
SOURCES = ("override", "tests_passed", "dimensions", "llm-classifier", "fall_open")

#: The key of this router's entry in ``driver.session_state``.
STATE_KEY = "stage_router"
#: The question id of the capability judge's decision call.
JUDGE_QUESTION = "efficient_can_solve"
#: A simulated judge's right answer: the efficient model's answer would grade at least this.
JUDGE_ORACLE_QUALITY = 0.5
_TIE = 1e-9  # the reference's epsilon when p_solve meets the judge threshold
#: The judge prompt's own tokens (its instructions and the question) beside the messages shown.
JUDGE_INSTRUCTION_TOKENS = 60
#: The session state key holding the judge prompt's cacheable prefix, in tokens.
_PREFIX_KEY = "stage_judge_prefix_tokens"


@dataclass(frozen=True)
class Pick:
    """What the signals decide for a turn: ``tier`` (None: they abstain), ``source``
    (``"override"``, ``"tests_passed"``, ``"dimensions"`` or ``"ambiguous"``) and the scorer's
    ``score`` and ``confidence`` (NaN without tool activity: nothing to score)."""

    tier: str | None
    source: str
    score: float
    confidence: float


def pick_tier(signals: ToolSignals, confidence_threshold: float) -> Pick:
    """The reference's ``pick_tier`` rules, first match wins (§C.5):

    0. no tool call or result in the conversation → abstain;
    1. ``compacted`` or severity ≥ 1.0 → capable (``override``);
    2. tests passed, at least one recent write or edit, severity 0 → efficient (``tests_passed``);
    3. confidence ≥ ``confidence_threshold`` → capable if the score is positive, else efficient
       (``dimensions``);
    4. otherwise abstain (``ambiguous``): the judge or the default decides.

    The score is reported on every turn with tool activity, whichever rule decided."""
    if not signals.has_tool_activity:
        return Pick(None, "ambiguous", math.nan, math.nan)
    scored = score(signals)
    if signals.compacted or signals.severity >= CRITICAL:
        return Pick("capable", "override", scored.score, scored.confidence)
    produced = signals.recent_write_count + signals.recent_edit_count
    if signals.tests_passed and produced >= 1 and signals.severity <= 0.0:
        return Pick("efficient", "tests_passed", scored.score, scored.confidence)
    if scored.confidence >= confidence_threshold:
        tier = "capable" if scored.score > 0 else "efficient"
        return Pick(tier, "dimensions", scored.score, scored.confidence)
    return Pick(None, "ambiguous", scored.score, scored.confidence)


@dataclass
class StageState:
    """What the router keeps per session (the reference's per-session ``State``): the turns it
    routed, the latest signals, and the tier of the latest turn."""

    turns: int = 0
    signals: ToolSignals | None = None
    tier: str | None = None


def default_tier(default: str | None, capable: str, efficient: str) -> str:
    """The model a turn goes to when nothing decides it: ``efficient`` unless told otherwise."""
    if default is None:
        return efficient
    if default not in (capable, efficient):
        raise ArgumentError(
            f"default must be the capable model {capable!r} or the efficient model "
            f"{efficient!r} (None: efficient), got {default!r}"
        )
    return default


def stage_router(
    capable: str,
    efficient: str,
    *,
    judge: str | None = None,
    default: str | None = None,
    confidence_threshold: float = 0.5,
    recent_turn_window: int = DEFAULT_RECENT_WINDOW,
    base_threshold: float | None = None,
    tool_semantics: Mapping[str, Iterable[str]] | None = None,
) -> Algorithm:
    """Switchyard's stage router (reference §C.5): each turn of an agent session goes to
    ``capable`` or ``efficient`` by the tool signals of its conversation (the other model is the
    fallback).

    Per turn: the signals over the last ``recent_turn_window`` tool results and calls, then the
    rules of :func:`pick_tier` with ``confidence_threshold`` (0–1; 0.5 is the reference's
    calibrated value). A turn the rules leave undecided goes to ``judge`` when given: a decision
    call asking whether ``efficient`` can complete the turn; the efficient model is chosen when
    the judge's probability of yes (its answer when it gives none) reaches ``base_threshold``
    (default 0.5). The judge's instructions, the instruction messages and the task are the
    call's cacheable prefix (``DecisionRequest(cache_prefix_tokens=...)``): a judge with a
    ``sy.profiles.PromptCache`` reads them from its cache on the session's later turns. A judge that
    fails falls open to the default tier (§C.7), and so does every
    undecided turn without a judge. ``default`` names the default tier's model: ``efficient``
    (None, the reference's ``efficient_first`` picker) or ``capable`` (``capable_first``).
    ``tool_semantics`` adds tool names to the vocabulary (``{"observe": [...], "mutate": [...],
    "plan": [...]}``, the reference's [Oct] knob).

    Evidence per turn: ``stage_source`` (one of :data:`SOURCES`), ``stage_tier``, ``stage_score``
    and ``stage_confidence`` (NaN without tool activity), ``stage_judge`` (``"efficient"``,
    ``"capable"``, ``"failed"``; None when the judge was not asked) and ``stage_switched`` (the
    tier differs from the session's previous turn). ``driver.session_state["stage_router"]``
    holds a :class:`StageState`; a request outside a session starts fresh.

    Differences from the reference, on purpose: the judge is one Boolean decision call, not the
    capability rubric's JSON verdict (no ``threshold_step`` per capability boundary); handoff
    notes, per-tier system prompts and sub-agent routing are not modelled; the ``new`` category
    of ``tool_semantics`` is not taken. docs/stage-router.md has the whole list.
    """
    capable, efficient = _model(capable, "capable"), _model(efficient, "efficient")
    if capable == efficient:
        raise ArgumentError(f"capable and efficient are both {capable!r}; give two models")
    judge = None if judge is None else _model(judge, "judge")
    default = default_tier(default, capable, efficient)
    threshold = check_number(confidence_threshold, "confidence_threshold", high=1.0)
    recent_turn_window = check_int(
        recent_turn_window, "recent_turn_window", low=1, type_error=ArgumentError
    )
    if base_threshold is not None and judge is None:
        raise ArgumentError("base_threshold is the judge's threshold: give judge= too")
    p_floor = (
        0.5 if base_threshold is None else check_number(base_threshold, "base_threshold", high=1.0)
    )
    semantics = ToolSemantics.of(tool_semantics)
    fallback_tier = "capable" if default == capable else "efficient"
    models = {"capable": capable, "efficient": efficient}
    question = _judge_question(efficient)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        signals = tool_signals(
            request.messages, window=recent_turn_window, tool_semantics=semantics
        )
        pick = pick_tier(signals, threshold)
        tier, source, verdict = pick.tier, pick.source, None
        if tier is None and judge is not None:
            verdict = await _ask(driver, judge, question, request, recent_turn_window, p_floor)
        if tier is None:
            if verdict in TIERS:
                tier, source = verdict, "llm-classifier"
            else:
                tier, source = fallback_tier, "fall_open"
        state = driver.session_state
        kept = state.get(STATE_KEY) if state is not None else None
        if not isinstance(kept, StageState):
            kept = StageState()
            if state is not None:
                state[STATE_KEY] = kept
        switched = kept.tier is not None and kept.tier != tier
        kept.turns += 1
        kept.signals = signals
        kept.tier = tier
        driver.evidence(
            stage_source=source,
            stage_tier=tier,
            stage_score=pick.score,
            stage_confidence=pick.confidence,
            stage_judge=verdict,
            stage_switched=switched,
        )
        chosen = models[tier]
        other = efficient if chosen == capable else capable
        return route_to(chosen, request, fallbacks=[other])

    algorithm.__name__ = algorithm.__qualname__ = name = (
        f"stage_router({capable}|{efficient}@{threshold:g})"
    )
    algorithm.__dict__["name"] = name  # a function attribute, as sykit.strategies names them
    return algorithm


def _model(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ArgumentTypeError(f"{what} must be a model name (a non-empty str), got {value!r}")
    return value


def _judge_question(efficient: str) -> Boolean:
    def oracle(view: Any) -> bool | None:
        quality = view.quality(efficient)
        return quality >= JUDGE_ORACLE_QUALITY if graded(quality) else None

    return Boolean(
        f"Can {efficient} complete the agent's current step correctly?",
        true_description=f"{efficient} can complete it",
        false_description="it needs the capable model",
        oracle=oracle,
    )


async def _ask(
    driver: Driver,
    judge: str,
    question: Boolean,
    request: Request,
    window: int,
    p_floor: float,
) -> str:
    """The judge's tier for this turn, or ``"failed"``: any error of the decision call fails
    open (the reference's judge turns every failure into no verdict)."""
    shown, stable = _judge_view(request.messages, window)
    # The judge's instructions, then the instruction messages and the task: the same text on
    # every turn of the session, so the same tokens, which a judge with a prompt cache reads
    # from it. Sized once per session (the request's tokens in proportion to its text, on the
    # first turn the judge is asked), as a tokenizer would size the same text every time.
    state = driver.session_state
    prefix = None if state is None else state.get(_PREFIX_KEY)
    if prefix is None:
        prefix = _shown_tokens(request, shown[:stable]) + JUDGE_INSTRUCTION_TOKENS
        if state is not None:
            state[_PREFIX_KEY] = prefix
    decision = DecisionRequest(
        {JUDGE_QUESTION: question},
        context={"messages": shown},
        input_tokens=prefix + _shown_tokens(request, shown[stable:]),
        cache_prefix_tokens=prefix,
        session_id=request.metadata.get("session_id"),
    )
    try:
        answer = (await driver.call_decision(decision, judge))[JUDGE_QUESTION]
    except (ModelError, KeyError):
        return "failed"
    p_solve = (answer.probabilities or {}).get(True)
    if p_solve is None:
        p_solve = 1.0 if answer.value else 0.0
    return "efficient" if p_solve >= p_floor - _TIE else "capable"


def _judge_view(
    messages: Sequence[Mapping[str, Any]], window: int
) -> tuple[list[dict[str, Any]], int]:
    """What the judge reads (§C.6a with a window): the instruction messages, the opening user
    task and the last ``window`` messages, widened so a tool result keeps its call; and how
    many of them lead it unchanged on every turn (the instruction messages and the task before
    anything else: the judge prompt's cacheable prefix)."""
    start = max(0, len(messages) - window)
    while start > 0 and messages[start].get("role") in ("tool", "function"):
        start -= 1
    opening = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    fixed = {
        i
        for i, m in enumerate(messages)
        if i == opening or m.get("role") in ("system", "developer")
    }
    keep = [i for i in range(len(messages)) if i >= start or i in fixed]
    stable = 0
    while stable < len(keep) and keep[stable] == stable and stable in fixed:
        stable += 1
    return [dict(messages[i]) for i in keep], stable


def _shown_tokens(request: Request, shown: list[dict[str, Any]]) -> int:
    """The request's input tokens in proportion to the share of its text the judge is shown
    (the request's own count is the authority on how long the conversation is)."""

    def size(message: Mapping[str, Any]) -> int:
        return len(json.dumps(dict(message), default=str))

    total = sum(size(m) for m in request.messages)
    part = sum(size(m) for m in shown)
    return math.ceil(request.input_tokens * part / total) if total else 0
