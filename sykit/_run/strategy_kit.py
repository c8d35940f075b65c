"""What the reference strategies and the agent routers (``sykit/_agent``) share: naming an
algorithm, checking a list of model names, and session affinity (:func:`sykit.strategies.affinity`).

Both ``sykit.strategies`` and ``sykit.sessions._agent`` import from here, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.types import Algorithm, AlgorithmLike
from sykit._run.driver import Driver
from sykit._run.inputs import as_algorithm
from sykit._world.models import Outcome, Request, route_to

__all__ = ["AFFINITY_TRIGGERS", "affinity"]


def named_algorithm(name: str, algorithm: Algorithm) -> Algorithm:
    algorithm.__name__ = algorithm.__qualname__ = name
    algorithm.__dict__["name"] = name  # a function attribute (Algorithm does not declare it)
    return algorithm


def checked_models(models: Sequence[str] | str, what: str, *, at_least: int = 1) -> list[str]:
    """``models`` (a name or a collection of names) as a list of at least ``at_least`` names;
    anything else (None, a number, a class) is refused as the wrong type, not failing to
    iterate."""
    if not isinstance(models, str | Iterable):
        kind = f"the class {models.__name__}" if isinstance(models, type) else repr(models)
        raise ArgumentTypeError(
            f"{what} takes a model name or a list of model names, got {kind:.80}"
        )
    names = [models] if isinstance(models, str) else list(models)
    if len(names) < at_least or not all(isinstance(m, str) and m for m in names):
        raise ArgumentError(f"{what} needs at least {at_least} model name(s), got {models!r}")
    return names


AFFINITY_TRIGGERS = ("new_session", "user_turn")


def affinity(
    inner: Algorithm,
    *,
    trigger: str = "new_session",
    latch_only: Sequence[str] | None = None,
) -> AlgorithmLike:
    """Session affinity (Switchyard's ``AffinityRouter``, reference §C.8): the first model
    ``inner`` picks in an agent session (:class:`sy.sessions.Session`) is latched, and the
    session's later turns go to it with no routing work (no judge, no classifier call).

    ``trigger="new_session"`` decides once per session (the first assignment wins);
    ``"user_turn"`` decides again on each real user turn (the last message is the user's own
    text, not a tool result) and holds through the tool continuations in between.
    ``latch_only`` latches only those models (a strong-tier latch: a turn ``inner`` sends
    elsewhere is routed afresh next time). A request outside a session is routed by ``inner``
    alone. Evidence ``affinity``: ``"held"`` (the latch routed it) or ``"decided"``."""
    if trigger not in AFFINITY_TRIGGERS:
        raise ArgumentError(f"trigger must be one of {list(AFFINITY_TRIGGERS)}, got {trigger!r}")
    _, route = as_algorithm(inner, None)
    allowed = None if latch_only is None else frozenset(checked_models(latch_only, "latch_only"))

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        state = driver.session_state
        if state is None:
            return await route(request, driver)
        latched = state.get("affinity")
        if latched is not None and not (trigger == "user_turn" and _is_user_turn(request)):
            driver.evidence(affinity="held")
            return route_to(latched, request)
        outcome = await route(request, driver)
        if isinstance(outcome, Outcome) and (allowed is None or outcome.model in allowed):
            state["affinity"] = outcome.model
        driver.evidence(affinity="decided")
        return outcome

    named = named_algorithm(f"affinity({getattr(inner, '__name__', 'inner')})", algorithm)
    restart = getattr(getattr(route, "__self__", None), "start_run", None)
    if callable(restart):
        return _Restarting(named, restart)
    return named


class _Restarting:
    """An algorithm wrapping a stateful one (``hedge(after="p95")``, ``litellm_like``): the runner
    restarts the inner one with every run, as it would the inner one alone."""

    def __init__(self, algorithm: Algorithm, restart: Callable[[], None]) -> None:
        self._algorithm = algorithm
        self._restart = restart
        self.name = algorithm.__name__

    def start_run(self) -> None:
        self._restart()

    async def route(self, request: Request, driver: Driver) -> Outcome:
        return await self._algorithm(request, driver)


def _is_user_turn(request: Request) -> bool:
    """The last message is the user's own words (not tool results, in OpenAI's ``tool`` role or
    as Anthropic ``tool_result`` blocks)."""
    if not request.messages:
        return False
    last = request.messages[-1]
    if last.get("role") != "user":
        return False
    content = last.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, Sequence):
        return any(
            isinstance(block, Mapping) and block.get("type") == "text" and block.get("text")
            for block in content
        )
    return False
