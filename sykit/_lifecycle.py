"""One strategy over a list of requests on an open host session: the life of each request.

Per request: the algorithm runs (routing phase) in its own task; when it returns, whatever it left
running is cancelled (cause ``abandoned``; ``request_failed`` if it failed); a ``route_to`` outcome
then gets its answer-phase call through the candidate loop; one request row is written. The tasks
an algorithm starts are known through the loop (its task hook on the virtual loop, a task factory
on a real one), so none outlives its request.
"""

from __future__ import annotations

import asyncio
import contextvars
import difflib
import inspect
import math
from collections.abc import Callable
from typing import Any

from . import _engine
from ._context import CURRENT_REQUEST
from ._driver import Driver, RequestState, RunState
from ._errors import ArgumentTypeError, ModelError, NoTargets, SimDeadlock, UnknownModel
from ._health import await_hint
from ._models import GroundTruth, Outcome, Request, Response
from ._records import REQUEST_COLUMNS, RequestRow

__all__ = ["StrategyRun", "install_task_tracking", "track_task"]


class _NotAwaitable(Exception):
    """Carries the error that stops the run past the per-request ``except Exception``."""

    def __init__(self, error: ArgumentTypeError) -> None:
        self.error = error


def _innermost(exc: BaseException) -> BaseException:
    """The error inside (nested) exception groups of one exception, as a TaskGroup raises them."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _hint(exc: BaseException) -> str:
    """A likely fix for an algorithm's error: the model name meant, or a forgotten ``await``."""
    if isinstance(exc, UnknownModel):
        model = exc.model
        close = difflib.get_close_matches(model, exc.known, n=1) if isinstance(model, str) else []
        return f"did you mean {close[0]!r}?" if close else ""
    if isinstance(exc, ModelError | NoTargets | SimDeadlock):
        return ""
    return await_hint(f"{type(exc).__name__}: {exc}").strip(" ()")


def _failure(exc: BaseException) -> tuple[str, str]:
    """The ``error_kind`` and ``error_message`` of a failed request; the error inside a group of
    one (a TaskGroup in the algorithm) speaks for itself."""
    exc = _innermost(exc)
    hint = _hint(exc)
    hint = f" ({hint})" if hint else ""
    if isinstance(exc, ModelError):
        return exc.kind, str(exc)
    if isinstance(exc, NoTargets):
        return "no_targets", str(exc)
    if isinstance(exc, UnknownModel):
        return "unknown_model", str(exc) + hint
    if isinstance(exc, SimDeadlock):
        return "deadlock", str(exc)
    if isinstance(exc, InvalidOutcome):
        return "invalid_outcome", str(exc)
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, BaseExceptionGroup):  # several errors: name each
        inner = "; ".join(_failure(e)[1] for e in exc.exceptions[:3])
        message += f": {inner}" + ("; …" if len(exc.exceptions) > 3 else "")
    return "algorithm_error", message + hint


class InvalidOutcome(ArgumentTypeError):
    """The algorithm returned something that is not an :class:`~sykit.Outcome`."""


def _outcome_error(outcome: object, run: RunState) -> Exception | None:
    """Why ``outcome`` cannot be served (an invalid outcome or an unknown model), or None."""
    if not isinstance(outcome, Outcome):
        hint = ""
        if inspect.iscoroutine(outcome):
            outcome.close()  # not awaited by anyone: close it so Python does not warn again
            hint = " (did you forget `await`? e.g. `return sy.answered(model, await ...)`)"
        elif isinstance(outcome, Response):
            hint = (
                " (wrap an answer you already have: `return sy.answered(response.model, response)`)"
            )
        return InvalidOutcome(
            f"the algorithm returned {type(outcome).__name__} {outcome!r:.80}; it must return "
            f"sy.route_to(model, request, ...) or sy.answered(model, response){hint}"
        )
    for model in outcome.models:
        if model not in run.profiles:
            return UnknownModel(model, list(run.profiles), where="the algorithm's outcome")
    return None


def _check_outcome(
    outcome: object, run: RunState
) -> tuple[Outcome | None, tuple[str, str] | None, Exception | None]:
    """The outcome if it is one, and the failure and error that stop it from being served."""
    error = _outcome_error(outcome, run)
    valid = outcome if isinstance(outcome, Outcome) else None
    return valid, None if error is None else _failure(error), error


def _not_awaitable(name: str, returned: object) -> ArgumentTypeError:
    """The error that stops a run whose algorithm returned something it cannot await."""
    hint = ""
    if isinstance(returned, Outcome):
        hint = " (it returned its outcome directly: only an `async def` function may do that)"
    label = name if name.isidentifier() else "algorithm"
    return ArgumentTypeError(
        f"algorithm {name!r} returned {type(returned).__name__} instead of an awaitable{hint}; "
        f"sykit awaits every algorithm, so define it with `async def {label}(request, driver): "
        "...` (a lambda cannot be async: use a named `async def`)"
    )


class StrategyRun:
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
            loop.task_created = track_task
            loop.deadlock_handler = None if run.strict else self._unstick
        else:
            restore_factory = install_task_tracking(loop)
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
            if not inspect.isawaitable(pending):  # a lambda or wrapper: the whole run is wrong
                raise _NotAwaitable(_not_awaitable(run.strategy, pending))
            outcome = await pending
        except _NotAwaitable as stop:
            raise stop.error from None
        except asyncio.CancelledError:
            if state.abort_error is None:
                raise
            if state.root_cancelled and state.root is not None:
                state.root.uncancel()
            failure = _failure(state.abort_error)
        except ModelError as error:
            failure = _failure(error)
        except Exception as error:
            if run.strict and not isinstance(_innermost(error), ModelError):
                error.add_note(
                    f"(while routing request {state.request_id!r} with strategy {run.strategy!r})"
                )
                hint = _hint(_innermost(error))
                if hint:
                    error.add_note(hint)
                raise
            failure = _failure(error)
        state.closed = True
        routing_end = run.clock()
        await state.close_leftovers("abandoned" if failure is None else "request_failed")
        response: Response | None = None
        if failure is None:
            outcome, failure, refused = _check_outcome(outcome, run)
            if refused is not None and run.strict:
                refused.add_note(
                    f"(while routing request {state.request_id!r} with strategy {run.strategy!r})"
                )
                if _hint(refused):
                    refused.add_note(_hint(refused))
                raise refused
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
            extra[key if key not in _RESERVED else f"meta_{key}"] = value
        if state.truth is not None:  # the dataset's own columns, hidden from the algorithm
            for key, value in state.truth.columns.items():
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
            # the served answer's grade: NaN when it failed (summaries count that as 0) or when
            # the dataset has no grade for it (summaries leave it out and count it)
            quality=served.quality if ok and served is not None else math.nan,
            reads_truth=state.reads_truth,
            extra=extra,
        )


_RESERVED = frozenset(
    (*REQUEST_COLUMNS, "seed")
)  # metadata keys that would clash get a meta_ prefix


def track_task(task: asyncio.Task[Any], context: contextvars.Context | None) -> None:
    state = context.get(CURRENT_REQUEST) if context is not None else CURRENT_REQUEST.get()
    if state is not None:
        state.tasks.add(task)


def install_task_tracking(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """On a real loop, learn which tasks belong to which request through the task factory."""
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
        if previous is not None:
            task = previous(loop, coro, **kwargs)
        else:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        track_task(task, kwargs.get("context"))  # type: ignore[arg-type]
        return task

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    return lambda: loop.set_task_factory(previous)
