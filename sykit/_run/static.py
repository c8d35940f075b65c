"""``sy.strategies.static``: declare a router whose choice is a pure function of the request.

Such a router needs no events: every request's course can be planned at once, so a run of it goes
to the bulk engine (see docs/engines.md). Declaring it is a promise sykit cannot fully check: the
choice must depend on the request alone (not on time, on other requests, or on state the
function keeps), and the router makes no calls. What sykit can check, it does: a declared router
that awaits anything or reads the clock while routing is run on the event engines instead.

A static router may also carry its routing as a plain function (:func:`routed_by`, the library's
static routers and plain-function ones): a run that plans every request at once calls it per
request, without a driver or a coroutine, and gets what the algorithm would have returned.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sykit._base.callables import binds
from sykit._base.errors import ArgumentTypeError
from sykit._base.types import Algorithm
from sykit._run.driver import Driver
from sykit._world.models import Outcome, Request, route_to
from sykit._world.truth import TruthView, peek_truth

__all__ = ["Route", "RouteMany", "RoutingBatch", "routed_by", "static"]

#: A static router's routing as a plain function: ``route(request, request_id, seed, truth)``
#: gives the models to try (the served one first, then its fallbacks) and the evidence to record
#: (a new dict each time; None: none) for ``request`` (as its algorithm sees it) in a run of
#: ``seed``; ``truth()`` is the request's truth view, and reading it marks the request as
#: reading the truth (as :func:`~sykit._world.truth.peek_truth` does).
Route = Callable[
    [Request, Any, int, Callable[[], TruthView]], tuple[tuple[str, ...], dict[str, Any] | None]
]


@dataclass(frozen=True)
class RoutingBatch:
    """Requests a static router routes at once (``algorithm.route_many``): their ids and the
    requests as their algorithm sees them, in order, and the run's seed. ``quality(model)``
    gives each request's grade for ``model`` (NaN where there is none), as each request's truth
    view gives it; reading it marks every request of the batch as reading the truth."""

    ids: Sequence[Any]
    requests: Sequence[Request]
    seed: int
    quality: Callable[[str], np.ndarray]


#: ``route_many(batch)``: what ``route`` gives for each request of a :class:`RoutingBatch`, at
#: once: each request's models to try, and each one's evidence (None: none for any).
RouteMany = Callable[
    [RoutingBatch], tuple[list[tuple[str, ...]], list[dict[str, Any] | None] | None]
]


def routed_by(route: Route) -> Algorithm:
    """A static algorithm that routes each request as ``route`` says; ``algorithm.route`` is
    ``route`` itself, for a run that routes every request at once."""

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        chain, evidence = route(request, driver.request_id, driver.seed, lambda: peek_truth(driver))
        if evidence:
            driver.evidence(**evidence)
        return route_to(chain[0], request, chain[1:])

    algorithm.__dict__["static"] = True
    algorithm.__dict__["route"] = route
    return algorithm


def static(route: Callable[..., Any], *, name: str | None = None) -> Algorithm:
    """A static router from ``route``, which is either

    * a plain function of the request returning a model name or a list of names (the first is
      served, the rest are its fallbacks in order):
      ``sy.strategies.static(lambda r: "big" if r.images else "small")``; or
    * an ``async def algorithm(request, driver)`` that returns its outcome without awaiting
      anything (it may record ``driver.evidence``), declared static as it is.

    The strategy is named ``name`` (default: the function's name)."""
    if not callable(route):
        raise ArgumentTypeError(
            f"sy.strategies.static needs a function of the request, got {type(route).__name__}"
        )
    label = name if name is not None else getattr(route, "__name__", None) or "static"
    if not isinstance(label, str):
        raise ArgumentTypeError(f"name must be a str, got {type(label).__name__}")
    async_route = inspect.iscoroutinefunction(route)
    if not binds(route, 2 if async_route else 1):
        raise ArgumentTypeError(
            f"sy.strategies.static: {label!r} cannot be called with "
            + (
                "(request, driver), as an async route is"
                if async_route
                else "the request alone; give route(request) -> a model name or a list of names"
            )
        )
    algorithm: Algorithm
    if async_route:

        async def declared(request: Request, driver: Driver) -> Any:
            return await route(request, driver)

        algorithm = declared
    else:

        def chosen(
            request: Request, request_id: Any, seed: int, truth: Callable[[], TruthView]
        ) -> tuple[tuple[str, ...], None]:
            model, fallbacks = _models(route(request), label)
            return (model, *fallbacks), None

        algorithm = routed_by(chosen)
    algorithm.__name__ = algorithm.__qualname__ = label
    algorithm.__doc__ = getattr(route, "__doc__", None)
    algorithm.__dict__["name"] = label
    algorithm.__dict__["static"] = True
    return algorithm


def _models(chosen: object, label: str) -> tuple[str, Sequence[str]]:
    """The served model and its fallbacks from what a static route returned."""
    if isinstance(chosen, str):
        return chosen, ()
    if isinstance(chosen, Sequence) and chosen and all(isinstance(m, str) for m in chosen):
        return chosen[0], tuple(chosen[1:])
    raise ArgumentTypeError(
        f"static router {label!r} must return a model name or a non-empty list of names, "
        f"got {chosen!r:.80}"
    )
