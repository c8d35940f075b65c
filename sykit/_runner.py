"""``run``, ``arun`` and ``compare``: feed requests to an algorithm on a host and collect the records.

Per request: the algorithm runs (routing phase) in its own task; when it returns, whatever it left
running is cancelled (cause ``abandoned``; ``request_failed`` if it failed); a ``route_to`` outcome
then gets its answer-phase call through the candidate loop; one request row is written.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio

from . import _engine
from ._config import Poisson
from ._context import CURRENT_REQUEST
from ._driver import Driver, RequestState, RunState
from ._errors import ModelError, NoTargets, SimDeadlock, UnknownModel
from ._hosts.base import Host
from ._models import GroundTruth, Outcome, Request, Response, truth_of
from ._records import REQUEST_COLUMNS, RequestRow, attempts_frame, requests_frame
from ._results import Comparison, Result
from ._rng import uniforms

__all__ = ["arun", "compare", "run"]

Algorithm = Callable[[Request, Driver], Awaitable[Outcome]] | Any
DEFAULT_CONCURRENCY = 32


# --------------------------------------------------------------------------------------------
# Argument checks


def _as_algorithm(algorithm: Algorithm, name: str | None) -> tuple[str, Callable[..., Any]]:
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
        raise TypeError(
            "algorithm must be an async function (request, driver) -> Outcome, or an object with "
            f"async route(request, driver) and a name; got {type(algorithm).__name__}"
        )
    try:
        inspect.signature(fn).bind(None, None)
    except TypeError:
        raise TypeError(
            f"algorithm {default_name!r} must accept two arguments (request, driver)"
        ) from None
    except ValueError:
        pass  # builtins without signatures: trust them
    if name is not None and (not isinstance(name, str) or not name):
        raise TypeError(f"strategy must be a non-empty string, got {name!r}")
    return name or str(default_name), fn


def _as_requests(requests: object) -> list[tuple[Any, Request, GroundTruth | None]]:
    if isinstance(requests, Request | str):
        raise TypeError(
            "requests must be a list (or dataset) of requests; wrap a single request in a list"
        )
    if not isinstance(requests, Iterable):
        raise TypeError(
            f"requests must be an iterable of sy.Request (or prompt strings), got {type(requests).__name__}"
        )
    items = []
    seen: set[Any] = set()
    for i, item in enumerate(requests):
        if isinstance(item, str):
            item = Request(item)
        if not isinstance(item, Request):
            raise TypeError(
                f"requests[{i}] must be a sy.Request or a prompt string, got {type(item).__name__}"
            )
        request_id = i if item.id is None else item.id
        if request_id in seen:
            raise ValueError(
                f"requests contains the id {request_id!r} twice; request ids must be unique"
            )
        seen.add(request_id)
        truth = truth_of(item)
        view = item.without_truth()
        if view.id != request_id:
            view = _with_id(view, request_id)
        items.append((request_id, view, truth))
    if not items:
        raise ValueError("requests is empty")
    return items


def _with_id(request: Request, request_id: Any) -> Request:
    import copy

    clone = copy.copy(request)
    object.__setattr__(clone, "id", request_id)
    return clone


def _check_concurrency(concurrency: object, open_loop: bool) -> int | None:
    if concurrency is None:
        return None if open_loop else DEFAULT_CONCURRENCY
    if isinstance(concurrency, bool) or not isinstance(concurrency, int):
        raise TypeError(
            f"concurrency must be a positive int or None, got {type(concurrency).__name__}"
        )
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, got {concurrency}")
    return concurrency


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    return seed


def _arrival_times(arrivals: object, n: int, seed: int) -> list[float] | None:
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
            raise ValueError(f"arrivals has {len(times)} times for {n} requests")
        if any(b < a for a, b in itertools.pairwise(times)) or (times and times[0] < 0):
            raise ValueError("arrivals must be non-decreasing times ≥ 0")
        return times
    raise TypeError(
        f"arrivals must be sy.Poisson(rate_per_s), a list of times, or None; got {type(arrivals).__name__}"
    )


def _check_host(host: object) -> Host:
    if not all(hasattr(host, a) for a in ("virtual", "policy", "profiles", "open")):
        raise TypeError(f"host must be a sy.SimHost or sy.HttpHost, got {type(host).__name__}")
    return host  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# One request


def _failure(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, ModelError):
        return exc.kind, str(exc)
    if isinstance(exc, NoTargets):
        return "no_targets", str(exc)
    if isinstance(exc, UnknownModel):
        return "unknown_model", str(exc)
    if isinstance(exc, SimDeadlock):
        return "deadlock", str(exc)
    return "algorithm_error", f"{type(exc).__name__}: {exc}"


def _check_outcome(outcome: object, run: RunState) -> tuple[Outcome | None, tuple[str, str] | None]:
    if not isinstance(outcome, Outcome):
        return None, (
            "invalid_outcome",
            f"the algorithm returned {type(outcome).__name__} {outcome!r:.80}; it must return "
            "sy.route_to(model, request, ...) or sy.answered(model, response)",
        )
    for model in outcome.models:
        if model not in run.profiles:
            error = UnknownModel(model, list(run.profiles), where="the algorithm's outcome")
            return outcome, ("unknown_model", str(error))
    return outcome, None


class _Runner:
    """Runs one strategy over the requests on an open host session."""

    def __init__(
        self,
        run: RunState,
        fn: Callable[..., Any],
        items: list[tuple[Any, Request, GroundTruth | None]],
        arrivals: list[float] | None,
        concurrency: int | None,
        progress: Any,
    ) -> None:
        self.run = run
        self.fn = fn
        self.items = items
        self.arrivals = arrivals
        self.concurrency = concurrency
        self.progress = progress
        self.rows: list[tuple[int, RequestRow]] = []

    async def main(self) -> None:
        loop = asyncio.get_running_loop()
        run = self.run
        restore_factory = None
        if isinstance(loop, _engine.VirtualTimeLoop):
            loop.task_created = _track_task
            loop.deadlock_handler = None if run.strict else self._unstick
        else:
            restore_factory = _install_task_tracking(loop)
        run.session = run.host.open(run.seed)
        semaphore = asyncio.Semaphore(self.concurrency) if self.concurrency else None
        try:
            async with asyncio.TaskGroup() as group:
                for index, (request_id, request, truth) in enumerate(self.items):
                    arrival = run.clock()
                    if self.arrivals is not None:
                        arrival = self.arrivals[index]
                        delay = arrival - run.clock()
                        if delay > 0:
                            await asyncio.sleep(delay)
                    if semaphore is not None:
                        await semaphore.acquire()
                    group.create_task(
                        self.route_one(index, request_id, request, truth, arrival, semaphore),
                        name=f"sykit request {request_id!r}",
                    )
        except BaseExceptionGroup as group_error:
            raise group_error.exceptions[0] from None
        finally:
            await run.session.aclose()
            if restore_factory is not None:
                restore_factory()

    def _unstick(self) -> bool:
        """On a deadlock, fail every request still inside its algorithm instead of hanging."""
        stuck = [
            s
            for s in self.run.in_flight
            if not s.closed and s.root is not None and not s.root.done()
        ]
        if not stuck:
            return False
        loop = asyncio.get_running_loop()
        message = (
            loop.describe_deadlock() if isinstance(loop, _engine.VirtualTimeLoop) else "deadlock"
        )
        for state in stuck:
            state.abort_error = SimDeadlock(message)
            state.root_cancelled = True
            assert state.root is not None
            state.root.cancel()
        return True

    async def route_one(
        self,
        index: int,
        request_id: Any,
        request: Request,
        truth: GroundTruth | None,
        arrival_s: float,
        semaphore: asyncio.Semaphore | None,
    ) -> None:
        run = self.run
        state = RequestState(run, request, request_id, truth, arrival_s)
        CURRENT_REQUEST.set(state)
        state.root = asyncio.current_task()
        state.start_s = run.clock()
        run.in_flight.add(state)
        try:
            await self._route(index, state)
        finally:
            run.in_flight.discard(state)
            if semaphore is not None:
                semaphore.release()
            if self.progress is not None:
                self.progress.update(1)

    async def _route(self, index: int, state: RequestState) -> None:
        run = self.run
        outcome: Any = None
        failure: tuple[str, str] | None = None
        try:
            pending = self.fn(state.request, Driver(state))
            if not inspect.isawaitable(pending):
                raise TypeError(
                    f"the algorithm returned {type(pending).__name__} instead of a coroutine; define it with `async def`"
                )
            outcome = await pending
        except asyncio.CancelledError:
            if state.abort_error is None:
                raise
            if state.root_cancelled and state.root is not None:
                state.root.uncancel()
            failure = _failure(state.abort_error)
        except ModelError as error:
            failure = _failure(error)
        except Exception as error:
            if run.strict:
                error.add_note(
                    f"(while routing request {state.request_id!r} with strategy {run.strategy!r})"
                )
                raise
            failure = _failure(error)
        state.closed = True
        routing_end = run.clock()
        await state.close_leftovers("abandoned" if failure is None else "request_failed")
        response: Response | None = None
        if failure is None:
            outcome, failure = _check_outcome(outcome, run)
            if failure is not None and run.strict:
                raise (
                    TypeError(failure[1])
                    if failure[0] == "invalid_outcome"
                    else UnknownModel(outcome.models[0] if outcome else None, list(run.profiles))
                )
        if failure is None:
            assert outcome is not None
            if outcome.response is not None:
                response = outcome.response
            else:
                try:
                    response = await run.serve(
                        state, outcome.request, outcome.models, "answer", "model"
                    )
                except ModelError as error:
                    failure = _failure(error)
        self.rows.append((index, self._request_row(state, outcome, response, failure, routing_end)))

    def _request_row(
        self,
        state: RequestState,
        outcome: Outcome | None,
        response: Response | None,
        failure: tuple[str, str] | None,
        routing_end: float,
    ) -> RequestRow:
        run = self.run
        end = run.clock()
        rows = state.rows
        served = None
        call_id = response.call_id if response is not None else None
        model_cost = routing_usd = 0.0
        n_attempts = n_cancelled = n_fallbacks = n_retries = 0
        for r in rows:
            status = r.status
            if r.kind == "model":
                model_cost += r.cost_usd
            else:
                routing_usd += r.cost_usd
            if status != "skipped":
                n_attempts += 1
            if status == "cancelled":
                n_cancelled += 1
            elif status == "ok" and r.call_id == call_id and call_id is not None:
                served = r
            if r.fallback_reason is not None:
                n_fallbacks += 1
            if r.retried:
                n_retries += 1
        if served is not None and failure is None:
            served.served = True
        ttft = math.nan
        if served is not None and not math.isnan(served.ttft_s):
            ttft = served.start_s + served.ttft_s - state.start_s
        ok = failure is None
        extra: dict[str, Any] = {}
        for key, value in state.request.metadata.items() if state.request.metadata else ():
            if value is None or isinstance(value, str | int | float | bool):
                extra[key if key not in _RESERVED else f"meta_{key}"] = value
        for key, value in state.evidence.items():
            extra[f"evidence_{key}"] = value
        return RequestRow(
            request_id=state.request_id,
            status="ok" if ok else "failed",
            error_kind=None if ok else failure[0],  # type: ignore[index]
            error_message=None if ok else failure[1],  # type: ignore[index]
            selected_model=outcome.model if isinstance(outcome, Outcome) else None,
            served_model=(served.model if served is not None else response.model)
            if ok and response
            else None,
            arrival_s=state.arrival_s,
            start_s=state.start_s,
            end_s=end,
            latency_s=end - state.start_s,
            queue_s=state.start_s - state.arrival_s,
            ttft_s=ttft if ok else math.nan,
            routing_s=routing_end - state.start_s,
            n_attempts=n_attempts,
            n_cancelled=n_cancelled,
            n_fallbacks=n_fallbacks,
            n_retries=n_retries,
            cost_usd=model_cost + routing_usd,
            wasted_usd=model_cost - (served.cost_usd if served is not None and ok else 0.0),
            routing_usd=routing_usd,
            quality=(
                response.quality
                if ok and response is not None and response.quality is not None
                else math.nan
            ),
            extra=extra,
        )


_RESERVED = frozenset(
    (*REQUEST_COLUMNS, "seed")
)  # metadata keys that would clash get a meta_ prefix


def _track_task(task: asyncio.Task[Any], context: contextvars.Context | None) -> None:
    state = context.get(CURRENT_REQUEST) if context is not None else CURRENT_REQUEST.get()
    if state is not None:
        state.tasks.add(task)


def _install_task_tracking(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """On a real loop, learn which tasks belong to which request through the task factory."""
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
        if previous is not None:
            task = previous(loop, coro, **kwargs)
        else:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        _track_task(task, kwargs.get("context"))  # type: ignore[arg-type]
        return task

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    return lambda: loop.set_task_factory(previous)


# --------------------------------------------------------------------------------------------
# Progress


def _progress_enabled(progress: bool | None) -> bool:
    if progress is None:
        return os.environ.get("SYKIT_PROGRESS", "1").lower() not in ("0", "false", "no", "off")
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True, False or None, got {progress!r}")
    return progress


def _make_progress(total: int, progress: bool | None, description: str) -> Any:
    """A tqdm bar (the notebook widget in Jupyter) that appears only if the run lasts over a second."""
    if not _progress_enabled(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=description,
        unit="req",
        delay=1.0 if progress is None else 0.0,
        leave=False,
    )


# --------------------------------------------------------------------------------------------
# Public entry points


class _Plan:
    """A checked set of runs (strategies × seeds) over one list of requests."""

    def __init__(
        self,
        strategies: list[tuple[str, Callable[..., Any]]],
        requests: object,
        host: object,
        concurrency: object,
        arrivals: object,
        seeds: list[int],
        strict: bool,
    ) -> None:
        self.host = _check_host(host)
        self.items = _as_requests(requests)
        self.concurrency = _check_concurrency(concurrency, arrivals is not None)
        self.arrivals = arrivals
        _arrival_times(arrivals, len(self.items), 0)  # validate now, not inside the simulation
        self.strategies = strategies
        self.seeds = seeds
        if not isinstance(strict, bool):
            raise TypeError("strict must be True or False")
        self.strict = strict

    @property
    def total_requests(self) -> int:
        return len(self.items) * len(self.strategies) * len(self.seeds)

    async def run_all(self, progress: Any) -> list[Result]:
        results = []
        for seed in self.seeds:
            for name, fn in self.strategies:
                results.append(await self.run_one(name, fn, seed, progress))
        return results

    async def run_one(self, name: str, fn: Callable[..., Any], seed: int, progress: Any) -> Result:
        owner = getattr(fn, "__self__", None)
        start_run = getattr(owner, "start_run", None)
        if callable(start_run):
            start_run()  # a stateful strategy starts every run afresh, so runs stay independent
        loop = asyncio.get_running_loop()
        start_wall = time.perf_counter()
        origin = loop.time()
        # A simulated run has a fresh virtual loop whose clock starts at 0; a real run counts from now.
        clock = loop.time if origin == 0.0 else (lambda: loop.time() - origin)
        run = RunState(host=self.host, seed=seed, strategy=name, strict=self.strict, clock=clock)
        runner = _Runner(
            run,
            fn,
            self.items,
            _arrival_times(self.arrivals, len(self.items), seed),
            self.concurrency,
            progress,
        )
        await runner.main()
        runner.rows.sort(key=lambda pair: pair[0])
        return Result(
            strategy=name,
            seed=seed,
            attempts=attempts_frame(name, run.rows),
            requests=requests_frame(name, [row for _, row in runner.rows]),
            wall_s=time.perf_counter() - start_wall,
        )


def _execute(plan: _Plan, progress_flag: bool | None, description: str) -> list[Result]:
    progress = _make_progress(plan.total_requests, progress_flag, description)
    try:
        if plan.host.virtual:
            return _run_each_on_fresh_loop(plan, progress)
        return _run_real(plan, progress)
    finally:
        if progress is not None:
            progress.close()


def _run_each_on_fresh_loop(plan: _Plan, progress: Any) -> list[Result]:
    results = []
    for seed in plan.seeds:
        for name, fn in plan.strategies:
            results.append(
                _engine.run(lambda n=name, f=fn, s=seed: plan.run_one(n, f, s, progress))
            )
    return results


def _run_real(plan: _Plan, progress: Any) -> list[Result]:
    async def main() -> list[Result]:
        return await plan.run_all(progress)

    if _engine.loop_is_running():
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sykit-real") as executor:
            context = contextvars.copy_context()
            return executor.submit(context.run, anyio.run, main).result()
    return anyio.run(main)


def run(
    algorithm: Algorithm,
    requests: Iterable[Request | str],
    *,
    host: Host,
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | None = None,
    seed: int = 0,
    strategy: str | None = None,
    progress: bool | None = None,
    strict: bool = False,
) -> Result:
    """Run ``algorithm`` over ``requests`` on ``host`` and return the records.

    Closed loop by default: ``concurrency`` requests in flight (32 when not given). With
    ``arrivals=sy.Poisson(rate_per_s)`` (or a list of arrival times) requests arrive on their own,
    limited by ``concurrency`` only if it is given. ``seed`` keys every random draw. A progress bar
    appears for runs longer than a second (``progress=False`` silences it, ``True`` forces it; the
    ``SYKIT_PROGRESS=0`` environment variable turns the automatic one off). An algorithm's
    exception fails only its request unless ``strict=True``, which re-raises it.

    Works in scripts and in notebook cells: with a SimHost it runs on a fresh virtual-time loop,
    in a worker thread when the calling thread already runs an event loop.
    """
    name, fn = _as_algorithm(algorithm, strategy)
    plan = _Plan([(name, fn)], requests, host, concurrency, arrivals, [_check_seed(seed)], strict)
    return _execute(plan, progress, name)[0]


async def arun(
    algorithm: Algorithm,
    requests: Iterable[Request | str],
    *,
    host: Host,
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | None = None,
    seed: int = 0,
    strategy: str | None = None,
    progress: bool | None = None,
    strict: bool = False,
) -> Result:
    """``await``-able :func:`run` for async code (top-level await in a notebook): a SimHost run
    happens in a worker thread and the caller's event loop stays free."""
    name, fn = _as_algorithm(algorithm, strategy)
    plan = _Plan([(name, fn)], requests, host, concurrency, arrivals, [_check_seed(seed)], strict)
    bar = _make_progress(plan.total_requests, progress, name)
    try:
        if plan.host.virtual:
            return await _engine.arun(lambda: plan.run_one(name, fn, plan.seeds[0], bar))
        return await plan.run_one(name, fn, plan.seeds[0], bar)
    finally:
        if bar is not None:
            bar.close()


def compare(
    strategies: Mapping[str, Algorithm] | Sequence[Algorithm],
    requests: Iterable[Request | str],
    *,
    host: Host,
    seeds: Sequence[int] = (0,),
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | None = None,
    progress: bool | None = None,
    strict: bool = False,
) -> Comparison:
    """Run several strategies on the same requests, with the same arrivals and the same random
    draws for the same attempts (common random numbers), once per seed."""
    if isinstance(strategies, Mapping):
        named = [_as_algorithm(algo, str(key)) for key, algo in strategies.items()]
    elif isinstance(strategies, Sequence) and not isinstance(strategies, str):
        named = [_as_algorithm(algo, None) for algo in strategies]
    else:
        raise TypeError("strategies must be a dict of name → algorithm or a list of algorithms")
    if not named:
        raise ValueError("strategies is empty")
    names = [n for n, _ in named]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(
            f"strategy names must be unique; repeated: {duplicates} (pass a dict to name them)"
        )
    if isinstance(seeds, int) or not isinstance(seeds, Sequence) or not seeds:
        raise TypeError("seeds must be a non-empty list of ints")
    plan = _Plan(
        named, requests, host, concurrency, arrivals, [_check_seed(s) for s in seeds], strict
    )
    return Comparison(_execute(plan, progress, "compare"))
