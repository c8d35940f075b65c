"""Checking and normalising what users pass to ``run`` / ``arun`` / ``compare``.

Every check names the argument it rejects, so a mistake in a notebook cell fails at that cell with
a message saying what to change, never deep inside the simulation.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, TypeGuard, overload

from sykit._base.callables import binds
from sykit._base.checks import check_int
from sykit._base.collection import collection_paused
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.request_ids import check_encodable, check_ids_as_text, clash
from sykit._base.rng import uniforms
from sykit._base.types import AlgorithmLike as Algorithm  # _runner and _grid import it from here
from sykit._hosts.base import Host
from sykit._world.config import Poisson
from sykit._world.dists import U_HIGH, check_seconds
from sykit._world.models import TOKEN_LIMIT, GroundTruth, Request

__all__ = [
    "DEFAULT_CONCURRENCY",
    "Algorithm",
    "RunItems",
    "arrival_times",
    "as_algorithm",
    "as_requests",
    "as_source",
    "check_arrivals",
    "check_concurrency",
    "check_host",
    "check_seed",
]

DEFAULT_CONCURRENCY = 32


def as_algorithm(algorithm: Algorithm, name: str | None) -> tuple[str, Callable[..., Any]]:
    if inspect.isclass(algorithm):
        raise ArgumentTypeError(
            f"algorithm is the class {algorithm.__name__}; pass an instance: "
            f"{algorithm.__name__}(...)"
        )
    route = getattr(algorithm, "route", None)
    if route is not None and callable(route) and not inspect.isroutine(algorithm):
        fn = route
        default_name = getattr(algorithm, "name", None) or type(algorithm).__name__
    elif callable(algorithm):
        fn = algorithm
        inner = algorithm
        while isinstance(inner, functools.partial):  # a partial is named after its function
            inner = inner.func
        default_name = (
            getattr(algorithm, "name", None)
            or getattr(inner, "__name__", None)
            or type(algorithm).__name__
        )
    else:
        raise ArgumentTypeError(
            "algorithm must be an async function (request, driver) -> Outcome, or an object with "
            f"async route(request, driver) and a name; got {type(algorithm).__name__}"
        )
    if not binds(fn, 2):
        raise ArgumentTypeError(
            f"algorithm {default_name!r} must accept two arguments (request, driver)"
        )
    why = _not_async(fn)
    if why is not None:
        raise ArgumentTypeError(f"algorithm {default_name!r} {why}")
    if name is not None and (not isinstance(name, str) or not name):
        raise ArgumentTypeError(f"strategy must be a non-empty string, got {name!r}")
    return name or str(default_name), fn


def _not_async(fn: Callable[..., Any]) -> str | None:
    """Why ``fn`` certainly cannot return an awaitable (and how to fix it), or None when it does
    or may.

    ``async def`` functions and methods, ``functools.partial`` of them and objects whose
    ``__call__`` is ``async def`` pass. A plain ``def`` (a function, a method, an object's
    ``__call__``) is refused, unless it wraps an async function (``functools.wraps``): such
    wrappers, lambdas and other callables pass here and are checked when first called (the run
    stops if the call returns something that is not awaitable).
    """
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target):
        return None
    if inspect.ismethod(target):
        target = target.__func__
        what = f"has a plain `def {target.__name__}` method"
        fix = f"`async def {target.__name__}(self, request, driver): ...`"
    elif inspect.isfunction(target):
        label = target.__name__ if target.__name__.isidentifier() else "algorithm"
        what = "is a plain function (`def`, not `async def`)"
        fix = f"`async def {label}(request, driver): ...`"
    elif not inspect.isroutine(target) and not inspect.isclass(target):
        call = inspect.getattr_static(type(target), "__call__", None)
        if not inspect.isfunction(call) or inspect.iscoroutinefunction(call):
            return None
        target = call
        what = f"is a {type(fn).__name__} object whose `__call__` is a plain `def`"
        fix = "`async def __call__(self, request, driver): ...`"
    else:
        return None  # builtins, classes, C callables: checked at the first call
    if inspect.isasyncgenfunction(target):
        return "is an async generator (it uses `yield`); an algorithm must `return` its outcome"
    if target.__name__ == "<lambda>" or target.__code__.co_flags & inspect.CO_ITERABLE_COROUTINE:
        return None  # a lambda may return a coroutine; checked at the first call
    if inspect.iscoroutinefunction(inspect.unwrap(target)):
        return None  # a sync wrapper of an async function returns its coroutine
    return (
        f"{what}; sykit awaits every algorithm, so define it with {fix} and `await` the "
        "driver's calls inside"
    )


#: Columns of a DataFrame that :func:`as_source` hands to ``from_frame`` under their own name.
_FRAME_ROLES = ("id", "input_tokens", "images")


def as_source(requests: object) -> Any:
    """``requests`` as something whose iteration yields requests: a pandas DataFrame becomes the
    dataset ``sy.datasets.from_frame`` makes of it (iterating the frame itself would yield its
    column names, each run as a prompt); anything else is returned as it is."""
    import pandas as pd

    if not isinstance(requests, pd.DataFrame):
        return requests
    return _frame_dataset(requests)


def _frame_dataset(frame: Any) -> Any:
    """The dataset of a DataFrame with a ``prompt`` column: ``id``, ``input_tokens`` and
    ``images`` columns play those roles, the rest reach ``result.requests`` hidden from the
    algorithm (``from_frame``'s default, so a grade column cannot leak to a router)."""
    from sykit.datasets._frame import from_frame

    columns = [str(c) for c in frame.columns]
    shown = ", ".join(map(repr, columns[:8])) + (", …" if len(columns) > 8 else "")
    if "prompt" not in frame.columns:
        raise ArgumentError(
            f"requests is a pandas DataFrame with no 'prompt' column (columns: {shown or 'none'});"
            " name the column of prompts 'prompt', or build a dataset with "
            "sy.datasets.from_frame(frame, prompt='<column>', metadata=[...], quality={...})"
        )
    truth = [c for c in columns if c.startswith(("quality:", "output_tokens:"))]
    if truth:
        raise ArgumentError(
            f"requests is a pandas DataFrame with ground-truth columns ({', '.join(truth[:4])}): "
            "pass the dataset itself (not its .frame), or say which column grades which model "
            "with sy.datasets.from_frame(frame, prompt='prompt', quality={model: column})"
        )
    roles = [role for role in _FRAME_ROLES if role in frame.columns]

    def column(role: str) -> str | None:
        return role if role in roles else None

    try:
        return from_frame(
            frame,
            prompt="prompt",
            id=column("id"),
            input_tokens=column("input_tokens"),
            images=column("images"),
        )
    except (ArgumentError, ArgumentTypeError) as error:
        call = ", ".join(["frame", "prompt='prompt'", *(f"{r}={r!r}" for r in roles)])
        raise type(error)(
            f"requests is a pandas DataFrame, read as sy.datasets.from_frame({call}): {error}"
        ) from None


class RunItems(Sequence[tuple[Any, Request, GroundTruth | None]]):
    """A run's ``(request id, request, truth)`` items by position, kept as three lists (no tuple
    per request: a run over a million requests would hold a million more objects for the
    collector to walk); whether any request carries metadata (else its records need not read
    the requests again), a truth, or analysis columns (as a dataset's items say too); and what
    the runs over them made of them (``memo``: the runs of one plan share their items)."""

    __slots__ = ("has_columns", "has_metadata", "has_truth", "ids", "memo", "requests", "truths")

    def __init__(
        self,
        ids: list[Any],
        requests: list[Request],
        truths: list[GroundTruth | None] | None,
        *,
        has_metadata: bool = True,
    ) -> None:
        self.ids = ids
        self.requests = requests
        self.truths = truths  # None: no request has a truth
        self.has_metadata = has_metadata
        known = [truth for truth in truths if truth is not None] if truths is not None else []
        self.has_truth = bool(known)
        self.has_columns = any(truth.columns for truth in known)
        self.memo: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> tuple[Any, Request, GroundTruth | None]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Any, Request, GroundTruth | None]]: ...
    def __getitem__(
        self, index: int | slice
    ) -> tuple[Any, Request, GroundTruth | None] | list[tuple[Any, Request, GroundTruth | None]]:
        truths = self.truths
        if isinstance(index, slice):
            ids, requests = self.ids[index], self.requests[index]
            if truths is None:
                return [(i, r, None) for i, r in zip(ids, requests, strict=True)]
            return list(zip(ids, requests, truths[index], strict=True))
        return self.ids[index], self.requests[index], None if truths is None else truths[index]

    def __iter__(self) -> Iterator[tuple[Any, Request, GroundTruth | None]]:
        if self.truths is None:  # (repeat has no end: the lists give the length)
            return zip(self.ids, self.requests, itertools.repeat(None))
        return zip(self.ids, self.requests, self.truths, strict=True)


def as_requests(requests: object) -> RunItems:
    """The run's ``(request id, request without its truth, truth)`` per request, checked (an
    id-less request keeps no id here: the algorithm is handed it under the run's id, see
    :class:`~sykit._run.state.RequestState`); the collector is paused while they are listed (they
    hold no cycles)."""
    with collection_paused():
        return _as_requests(requests)


def _as_requests(requests: object) -> RunItems:
    requests = as_source(requests)
    if isinstance(requests, Request | str):
        raise ArgumentTypeError(
            "requests must be a list (or dataset) of requests; wrap a single request in a list"
        )
    if not isinstance(requests, Iterable):
        raise ArgumentTypeError(
            f"requests must be an iterable of sy.Request (or prompt strings), got {type(requests).__name__}"
        )
    ids: list[Any] = []
    listed: list[Request] = []
    truths: list[GroundTruth | None] = []
    with_truth = False  # any request with a truth
    metadata = False  # any request with metadata
    given: list[bool] = []  # whether each request came with its own id
    seen: dict[Any, int] = {}  # id → position
    texts = False  # any id given as a string
    for i, item in enumerate(requests):
        if type(item) is not Request:
            if isinstance(item, str):
                item = Request(item)
            if not isinstance(item, Request):
                raise ArgumentTypeError(
                    f"requests[{i}] must be a sy.Request or a prompt string, got "
                    f"{type(item).__name__}"
                )
        own = item.id
        request_id = i if own is None else own
        if request_id in seen:
            first = seen[request_id]
            raise ArgumentError(
                clash((first, request_id, given[first]), (i, request_id, own is not None))
            )
        seen[request_id] = i
        given.append(own is not None)
        if type(request_id) is not int:
            check_encodable(i, request_id)
        if type(request_id) is str:
            texts = True
        fields = item.__dict__
        if "metadata" in fields:  # (a request stores only metadata it was given)
            metadata = True
        truth = fields.get("_truth")
        ids.append(request_id)
        # an id-less request gets its id where an algorithm is handed it (RequestState): a run
        # that never hands it over (a fixed chain on the bulk engine) copies nothing
        if truth is None:
            listed.append(item)
        else:
            with_truth = True
            listed.append(item.without_truth())
        truths.append(truth)
    if not ids:
        raise ArgumentError("requests is empty")
    if texts and len(seen) > 1:
        check_ids_as_text(ids, given)
    return RunItems(ids, listed, truths if with_truth else None, has_metadata=metadata)


def check_concurrency(concurrency: object, open_loop: bool) -> int | None:
    if concurrency is None:
        return None if open_loop else DEFAULT_CONCURRENCY
    return check_int(concurrency, "concurrency", low=1, expected="≥ 1")


def check_seed(seed: object) -> int:
    """A run's seed: any int that fits in 64 bits (a comparison's frames hold it as one)."""
    return check_int(
        seed,
        "seed",
        low=-(2**63),
        high=2**63 - 1,
        expected="an int from -2**63 to 2**63 - 1 (64 bits)",
    )


def check_seeds(seeds: object) -> list[int]:
    """A non-empty list of distinct int seeds (a range or any sequence of ints)."""
    if isinstance(seeds, int) or not isinstance(seeds, Sequence) or not seeds:
        raise ArgumentTypeError("seeds must be a non-empty list of ints")
    checked = [check_seed(s) for s in seeds]
    repeated = sorted({s for s in checked if checked.count(s) > 1})
    if repeated:
        raise ArgumentError(
            f"seeds must be distinct; repeated: {repeated} (a repeated seed repeats the same "
            "draws, so every request would be counted twice)"
        )
    return checked


def check_arrivals(arrivals: object, n: int) -> Poisson | list[float] | None:
    """``None``, a :class:`Poisson`, or a list of ``n`` finite, non-decreasing times ≥ 0 (any
    iterable of numbers, a numpy array or a pandas Series included); a recorded trace
    (``sy.traffic.Trace``, anything with ``arrivals_for(n)``) gives its first ``n`` times."""
    if arrivals is None or isinstance(arrivals, Poisson):
        return arrivals
    recorded = getattr(arrivals, "arrivals_for", None)
    if callable(recorded):
        arrivals = recorded(n)
    if isinstance(arrivals, str | bytes | Mapping | AbstractSet) or not isinstance(
        arrivals, Iterable
    ):
        raise ArgumentTypeError(
            "arrivals must be sy.traffic.Poisson(rate_per_s), a list of arrival times in "
            "seconds, a sy.traffic.Trace, or None; "
            f"got {type(arrivals).__name__} {arrivals!r:.40}"
        )
    times = [check_seconds(x, f"arrivals[{i}]") for i, x in enumerate(arrivals)]
    if len(times) != n:
        raise ArgumentError(f"arrivals has {len(times)} times for {n} requests")
    for i, (a, b) in enumerate(itertools.pairwise(times)):
        if b < a:
            raise ArgumentError(
                f"arrivals must be non-decreasing: arrivals[{i + 1}] = {b:g} comes before "
                f"arrivals[{i}] = {a:g}"
            )
    return times


def arrival_times(arrivals: Poisson | list[float] | None, n: int, seed: int) -> list[float] | None:
    """The arrival time of each request: the checked list as is, or Poisson draws keyed by seed."""
    if not isinstance(arrivals, Poisson):
        return arrivals
    times, t = [], 0.0
    for i in range(n):
        t += -math.log(uniforms(seed, "arrival", i)[0]) / arrivals.rate_per_s
        times.append(t)
    return times


def _has_host_members(host: object) -> TypeGuard[Host]:
    return all(hasattr(host, a) for a in ("virtual", "policy", "profiles", "open"))


def check_host(host: object) -> Host:
    if not _has_host_members(host):
        raise ArgumentTypeError(
            f"host must be a sy.SimHost or sy.HttpHost, got {type(host).__name__}"
        )
    if host.virtual:
        for name, profile in host.profiles.items():
            _check_output_tokens(name, profile)
    return host


def _check_output_tokens(name: str, profile: Any) -> None:
    """Refuse a simulated model whose longest answer would not fit the records (32-bit token
    counts), before the run rather than in its middle."""
    dist = getattr(profile, "output_tokens", None)
    if dist is None:
        return
    longest = dist.quantile(U_HIGH)
    if longest >= TOKEN_LIMIT + 0.5:
        raise ArgumentError(
            f"model {name!r}: output_tokens = {dist!r} can draw {longest:.3g} tokens, more than "
            f"the 2**31 - 1 ({TOKEN_LIMIT:,}) the records can count; use a smaller distribution"
        )
