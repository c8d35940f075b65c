"""Checking and normalising what users pass to ``run`` / ``arun`` / ``compare``.

Every check names the argument it rejects, so a mistake in a notebook cell fails at that cell with
a message saying what to change, never deep inside the simulation.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from ._config import Poisson
from ._driver import Driver
from ._errors import ArgumentError, ArgumentTypeError
from ._hosts.base import Host
from ._models import GroundTruth, Outcome, Request, truth_of
from ._rng import uniforms

__all__ = [
    "DEFAULT_CONCURRENCY",
    "Algorithm",
    "arrival_times",
    "as_algorithm",
    "as_requests",
    "check_concurrency",
    "check_host",
    "check_seed",
]

Algorithm = Callable[[Request, Driver], Awaitable[Outcome]] | Any
DEFAULT_CONCURRENCY = 32


def as_algorithm(algorithm: Algorithm, name: str | None) -> tuple[str, Callable[..., Any]]:
    route = getattr(algorithm, "route", None)
    if route is not None and callable(route) and not inspect.isroutine(algorithm):
        fn = route
        default_name = getattr(algorithm, "name", None) or type(algorithm).__name__
    elif callable(algorithm):
        fn = algorithm
        default_name = (
            getattr(algorithm, "name", None)
            or getattr(algorithm, "__name__", None)
            or type(algorithm).__name__
        )
    else:
        raise ArgumentTypeError(
            "algorithm must be an async function (request, driver) -> Outcome, or an object with "
            f"async route(request, driver) and a name; got {type(algorithm).__name__}"
        )
    try:
        inspect.signature(fn).bind(None, None)
    except TypeError:
        raise ArgumentTypeError(
            f"algorithm {default_name!r} must accept two arguments (request, driver)"
        ) from None
    except ValueError:
        pass  # builtins without signatures: trust them
    if name is not None and (not isinstance(name, str) or not name):
        raise ArgumentTypeError(f"strategy must be a non-empty string, got {name!r}")
    return name or str(default_name), fn


def as_requests(requests: object) -> list[tuple[Any, Request, GroundTruth | None]]:
    if isinstance(requests, Request | str):
        raise ArgumentTypeError(
            "requests must be a list (or dataset) of requests; wrap a single request in a list"
        )
    if not isinstance(requests, Iterable):
        raise ArgumentTypeError(
            f"requests must be an iterable of sy.Request (or prompt strings), got {type(requests).__name__}"
        )
    items = []
    seen: set[Any] = set()
    for i, item in enumerate(requests):
        if isinstance(item, str):
            item = Request(item)
        if not isinstance(item, Request):
            raise ArgumentTypeError(
                f"requests[{i}] must be a sy.Request or a prompt string, got {type(item).__name__}"
            )
        request_id = i if item.id is None else item.id
        if request_id in seen:
            raise ArgumentError(
                f"requests contains the id {request_id!r} twice; request ids must be unique"
            )
        seen.add(request_id)
        truth = truth_of(item)
        view = item.without_truth()
        if view.id != request_id:
            view = _with_id(view, request_id)
        items.append((request_id, view, truth))
    if not items:
        raise ArgumentError("requests is empty")
    return items


def _with_id(request: Request, request_id: Any) -> Request:
    clone = copy.copy(request)
    object.__setattr__(clone, "id", request_id)
    return clone


def check_concurrency(concurrency: object, open_loop: bool) -> int | None:
    if concurrency is None:
        return None if open_loop else DEFAULT_CONCURRENCY
    if isinstance(concurrency, bool) or not isinstance(concurrency, int):
        raise ArgumentTypeError(
            f"concurrency must be a positive int or None, got {type(concurrency).__name__}"
        )
    if concurrency < 1:
        raise ArgumentError(f"concurrency must be ≥ 1, got {concurrency}")
    return concurrency


def check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentTypeError(f"seed must be an int, got {type(seed).__name__}")
    return seed


def arrival_times(arrivals: object, n: int, seed: int) -> list[float] | None:
    if arrivals is None:
        return None
    if isinstance(arrivals, Poisson):
        times, t = [], 0.0
        for i in range(n):
            t += -math.log(uniforms(seed, "arrival", i)[0]) / arrivals.rate_per_s
            times.append(t)
        return times
    if isinstance(arrivals, Sequence) and not isinstance(arrivals, str):
        times = [float(x) for x in arrivals]
        if len(times) != n:
            raise ArgumentError(f"arrivals has {len(times)} times for {n} requests")
        if any(b < a for a, b in itertools.pairwise(times)) or (times and times[0] < 0):
            raise ArgumentError("arrivals must be non-decreasing times ≥ 0")
        return times
    raise ArgumentTypeError(
        f"arrivals must be sy.Poisson(rate_per_s), a list of times, or None; got {type(arrivals).__name__}"
    )


def check_host(host: object) -> Host:
    if not all(hasattr(host, a) for a in ("virtual", "policy", "profiles", "open")):
        raise ArgumentTypeError(
            f"host must be a sy.SimHost or sy.HttpHost, got {type(host).__name__}"
        )
    return host  # type: ignore[return-value]
