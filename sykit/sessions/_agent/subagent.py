"""The sub-agent router (reference §C.8, ``SubagentRouter``): a sub-agent's turns are routed by
a rule of their own, everything else by the parent algorithm it wraps.

A turn is a sub-agent's when its metadata names a ``parent_session`` (a ``sy.sessions.Session(...,
parent=...)``). The rule is a fixed model (the reference's ``fixed_target``) or a gate on the
sub-agent's prompt (``SubagentGate``): the text of the last user message, which is the task the
parent delegated. A gate that abstains, or a prompt with no text, routes to ``default``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._run.driver import Driver
from sykit._run.inputs import as_algorithm
from sykit._world.models import Outcome, Request, route_to

__all__ = ["SUBAGENT_TRIGGERS", "SubagentRouter", "delegated_prompt", "subagent_router"]

SUBAGENT_TRIGGERS = ("every_request", "new_session")
_LATCH_KEY = "subagent"


class SubagentRouter:
    """The router built by :func:`subagent_router`; an object so that a stateful parent or gate
    (``advisor_gate``, ``hedge(after="p95")``) still starts afresh on every run."""

    def __init__(
        self,
        parent: Any,
        target: str | None,
        gate: Any,
        default: str | None,
        trigger: str,
    ) -> None:
        parent_name, self.parent_route = as_algorithm(parent, None)
        self.parts = [parent, gate]
        self.target, self.default, self.trigger = target, default, trigger
        self.gate_route: Callable[..., Any] | None = None
        self.gate_rule: Callable[[str], str | None] | None = None
        if gate is None:
            rule = str(target)
        elif _is_algorithm(gate):
            rule, self.gate_route = as_algorithm(gate, None)
        else:
            self.gate_rule = gate
            rule = getattr(gate, "__name__", "gate")
        self.name = f"{parent_name}+subagent({rule})"

    def start_run(self) -> None:
        for part in self.parts:
            start = getattr(part, "start_run", None)
            if callable(start):
                start()

    async def route(self, request: Request, driver: Driver) -> Outcome:
        if request.metadata.get("parent_session") is None:
            return await self.parent_route(request, driver)
        if self.target is not None:
            driver.evidence(subagent="target")
            return route_to(self.target, request)
        state = driver.session_state if self.trigger == "new_session" else None
        if state is not None and _LATCH_KEY in state:
            driver.evidence(subagent="held")
            return route_to(state[_LATCH_KEY], request)
        outcome = await self.decide(request, driver)
        if state is not None:
            state[_LATCH_KEY] = outcome.model
        return outcome

    async def decide(self, request: Request, driver: Driver) -> Outcome:
        """The gate's choice for this sub-agent turn, or ``default``."""
        assert self.default is not None
        prompt = delegated_prompt(request)
        pick: str | None = None
        fallbacks: list[str] = []
        if prompt is not None and self.gate_route is not None:
            outcome = await self.gate_route(Request(prompt, metadata=request.metadata), driver)
            if not isinstance(outcome, Outcome):
                raise ArgumentTypeError(
                    f"gate must return sy.route_to(...) or sy.answered(...), got {outcome!r:.80}"
                )
            pick, fallbacks = outcome.model, list(outcome.fallbacks)
        elif prompt is not None and self.gate_rule is not None:
            pick = self.gate_rule(prompt)
            if pick is not None and (not isinstance(pick, str) or not pick):
                raise ArgumentTypeError(f"gate must return a model name or None, got {pick!r}")
            fallbacks = [self.default] if pick != self.default else []
        if pick is None:
            driver.evidence(subagent="default")
            return route_to(self.default, request)
        driver.evidence(subagent="gate")
        return route_to(pick, request, fallbacks=fallbacks)


def subagent_router(
    parent: Any,
    *,
    target: str | None = None,
    gate: Any = None,
    default: str | None = None,
    trigger: str = "every_request",
) -> SubagentRouter:
    """Route a sub-agent's turns (metadata ``parent_session`` set) by their own rule, and every
    other request by ``parent`` (reference §C.8, ``SubagentRouter``).

    The rule is one of:

    * ``target="model"``: every sub-agent turn goes there, no fallbacks (``fixed_target``);
    * ``gate=`` with ``default="model"`` (``SubagentGate``): the gate sees the sub-agent's
      prompt, the last non-empty text of the last user message. A function
      ``gate(text) -> model | None`` picks a model (``default`` follows as fallback) or abstains
      (None). An algorithm (e.g. :func:`task_classifier`) routes a copy of the turn holding only
      that prompt, and the turn goes where it chose, with its fallbacks; an answer it made for
      the prompt is not served. An abstention or a prompt without text routes to ``default``.

    ``trigger="new_session"`` latches a sub-agent session's first choice for its later turns
    (``driver.session_state``, one per sub-agent session); ``"every_request"`` (default)
    decides every turn. Evidence on sub-agent turns: ``subagent`` (``"target"``, ``"gate"``,
    ``"default"``, ``"held"``), plus what a gate algorithm records; the parent's turns carry
    only the parent's evidence.

    Differs from the reference: a sub-agent is a session with a parent, not harness headers
    (every such turn counts as delegated work; there are no maintenance kinds); sub-agents route
    over the host's models, not a model set of their own; the router is named
    ``"<parent>+subagent(<rule>)"``, not after the parent alone, so that both can be compared.
    """
    as_algorithm(parent, None)  # an error naming the problem now, not at the first request
    if (target is None) == (gate is None):
        raise ArgumentError(
            "give subagent_router either target= (a fixed model) or gate= (a rule on the "
            "sub-agent's prompt), " + ("not both" if target is not None else "got neither")
        )
    if target is not None:
        if not isinstance(target, str) or not target:
            raise ArgumentTypeError(
                f"target must be a model name (a non-empty str), got {target!r}"
            )
        if default is not None:
            raise ArgumentError(
                "default is for gate=; with target= every sub-agent turn goes there"
            )
    else:
        if not callable(gate):
            raise ArgumentTypeError(
                "gate must be a function (text) -> model | None or an algorithm, "
                f"got {type(gate).__name__}"
            )
        if not isinstance(default, str) or not default:
            raise ArgumentError(
                f"gate= needs default=, the model when it abstains; got {default!r}"
            )
    if trigger == "user_turn":
        raise ArgumentError(
            "trigger='user_turn' is not for sub-agents (as in the reference): a sub-agent's "
            "turns follow one delegated task; use 'every_request' or 'new_session'"
        )
    if trigger not in SUBAGENT_TRIGGERS:
        raise ArgumentError(f"trigger must be one of {list(SUBAGENT_TRIGGERS)}, got {trigger!r}")
    return SubagentRouter(parent, target, gate, default, trigger)


def delegated_prompt(request: Request) -> str | None:
    """The task a parent gave its sub-agent: the last non-empty text block of the last user
    message (harnesses append it after their own context); None when it has none."""
    last = next((m for m in reversed(request.messages) if m.get("role") == "user"), None)
    if last is None:
        return None
    content = last.get("content")
    if isinstance(content, str):
        return content if content.strip() else None
    if isinstance(content, list | tuple):
        for block in reversed(content):
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = str(block.get("text") or "")
                if text.strip():
                    return text
    return None


def _is_algorithm(gate: Any) -> bool:
    """An algorithm (an ``async def`` or an object with ``route``), not a function of text."""
    route = getattr(gate, "route", None)
    return inspect.iscoroutinefunction(gate) or (callable(route) and not inspect.isroutine(gate))
