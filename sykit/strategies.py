"""Reference routing strategies, each a plain algorithm a user could have written in a cell.

Every factory returns an ``async def (request, driver) -> Outcome`` with a ``name`` attribute, so
it can be passed to ``sy.run`` / ``sy.compare`` directly or read as an example.

    sy.strategies.single("large")
    sy.strategies.fallback_chain(["small", "large"])
    sy.strategies.race(["small", "large"])               # first completion wins
    sy.strategies.first_success(["small", "large"])      # first success wins
    sy.strategies.hedge("large", after=2.0)              # Tail-at-Scale hedged request
    sy.strategies.cascade("small", "large", judge="judge")
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from ._driver import Driver
from ._models import Outcome, Request, answered, ask_good_enough, route_to
from ._race import first, first_ok
from ._race import hedge as _hedge
from ._race import timeout as _timeout

__all__ = ["cascade", "fallback_chain", "first_success", "hedge", "race", "single"]

Algorithm = Callable[[Request, Driver], Awaitable[Outcome]]


def _named(name: str, algorithm: Algorithm) -> Algorithm:
    algorithm.__name__ = algorithm.__qualname__ = name
    algorithm.name = name  # type: ignore[attr-defined]
    return algorithm


def _models(models: Sequence[str] | str, what: str, *, at_least: int = 1) -> list[str]:
    names = [models] if isinstance(models, str) else list(models)
    if len(names) < at_least or not all(isinstance(m, str) and m for m in names):
        raise ValueError(f"{what} needs at least {at_least} model name(s), got {models!r}")
    return names


def single(model: str) -> Algorithm:
    """Send everything to ``model``."""
    (model,) = _models(model, "single()")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        return route_to(model, request)

    return _named(f"single({model})", algorithm)


def fallback_chain(models: Sequence[str]) -> Algorithm:
    """Route to ``models[0]``; the host's candidate loop falls back through the rest in order."""
    names = _models(models, "fallback_chain()")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        return route_to(names[0], request, fallbacks=names[1:])

    return _named("fallback(" + ">".join(names) + ")", algorithm)


def race(models: Sequence[str]) -> Algorithm:
    """Call every model at once; serve the first to *complete*, cancel the rest (an error can win)."""
    names = _models(models, "race()", at_least=2)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        index, result = await first(*(driver.call_model(request, [m]) for m in names))
        if isinstance(result, BaseException):
            raise result
        return answered(names[index], result)

    return _named("race(" + ",".join(names) + ")", algorithm)


def first_success(models: Sequence[str]) -> Algorithm:
    """Call every model at once; serve the first *success*, cancel the rest."""
    names = _models(models, "first_success()", at_least=2)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        index, response = await first_ok(*(driver.call_model(request, [m]) for m in names))
        return answered(names[index], response)

    return _named("first_ok(" + ",".join(names) + ")", algorithm)


def hedge(model: str, *, after: float, copies: int = 2) -> Algorithm:
    """Call ``model``; if it has not answered after ``after`` seconds, send another copy; serve
    whichever succeeds first and cancel the other (Dean & Barroso's hedged request)."""
    (model,) = _models(model, "hedge()")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        response = await _hedge(
            lambda: driver.call_model(request, [model]), after=after, copies=copies
        )
        return answered(model, response)

    return _named(f"hedge({model},{after:g}s)", algorithm)


def cascade(
    weak: str,
    strong: str,
    *,
    judge: str,
    threshold: float = 0.5,
    judge_timeout_s: float | None = None,
) -> Algorithm:
    """Answer with ``weak``; ask ``judge`` whether that answer is good enough; if not (or the judge
    fails or times out), route to ``strong`` with ``weak`` as fallback (FrugalGPT-style)."""
    _models([weak, strong, judge], "cascade()")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        try:
            draft = await driver.call_model(request, [weak])
        except Exception:
            return route_to(strong, request)
        question = ask_good_enough(request, draft, threshold=threshold)
        try:
            call = driver.call_decision(question, judge)
            verdict = await (call if judge_timeout_s is None else _timeout(judge_timeout_s, call))
        except Exception:
            verdict = None
        if verdict is not None and verdict.yes("good_enough"):
            driver.evidence(verdict="accept")
            return answered(weak, draft)
        driver.evidence(verdict="escalate" if verdict is not None else "judge_unavailable")
        return route_to(strong, request, fallbacks=[weak])

    return _named(f"cascade({weak}>{strong})", algorithm)
