"""One strategy over a list of requests on an open host session: the life of each request.

Per request: the algorithm runs (routing phase) in its own task; when it returns, whatever it left
running is cancelled (cause ``abandoned``; ``request_failed`` if it failed); a ``route_to`` outcome
then gets its answer-phase call through the candidate loop; one request row is written. The tasks
an algorithm starts are known (the kernel records who started them; on an asyncio loop a task
factory does), so none outlives its request. Whatever one request raises — any exception, even a
``BaseException``, a ``SystemExit`` or an ``asyncio.CancelledError`` of its own making — fails that
request only (``strict=True`` raises it); ``KeyboardInterrupt`` stops the run.

Everything here is written once against the engine contract (:mod:`sykit._run.engines.base`).
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from types import CoroutineType
from typing import Any

from sykit._base.errors import ArgumentTypeError, ModelError, NoTargets, SimDeadlock, UnknownModel
from sykit._base.vocab import CancelCause, ErrorKind
from sykit._results.health import await_hint
from sykit._run.driver import Driver, guarded, task_wait_begins
from sykit._run.engines.base import EngineExit
from sykit._run.engines.columnwise import NeedsEvents
from sykit._run.records import MODEL, row_name
from sykit._run.state import RequestState, RunState
from sykit._world.models import GroundTruth, Outcome, Request, Response
from sykit._world.sessions import SessionPlan, with_input_tokens
from sykit._world.truth import TruthTable

__all__ = ["StrategyRun", "failure_of", "row_extra"]

#: How many times a leftover task is cancelled before it counts as ignoring cancellation.
_CANCEL_TRIES = 3
#: How many turns (zero virtual time) leftovers get to stop after each cancellation.
_SETTLE_TURNS = 50


class _NotAwaitable(Exception):
    """Carries the error that stops the run past the per-request ``except Exception``."""

    def __init__(self, error: ArgumentTypeError) -> None:
        self.error = error


def _innermost(exc: BaseException) -> BaseException:
    """The error inside (nested) exception groups of one exception, as a TaskGroup raises them."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


_RESPONSE_FIELDS = frozenset(("model", "text", "usage", "ttft_s", "latency_s", "call_id"))


def _hint(exc: BaseException) -> str:
    """A likely fix for an algorithm's error: the model name meant, or a forgotten ``await``."""
    if isinstance(exc, UnknownModel):
        model = exc.model
        close = difflib.get_close_matches(model, exc.known, n=1) if isinstance(model, str) else []
        return f"did you mean {close[0]!r}?" if close else ""
    if isinstance(exc, ModelError | NoTargets | SimDeadlock):
        return ""
    if (
        isinstance(exc, AttributeError)
        and str(exc).startswith("'tuple' object has no attribute")
        and getattr(exc, "name", None) in _RESPONSE_FIELDS
    ):
        return (
            "a tuple used as a Response: sy.first_ok(...) and sy.first(...) return "
            "`(index, response)`; unpack it: `index, response = await sy.first_ok(...)`"
        )
    return await_hint(f"{type(exc).__name__}: {exc}").strip(" ()")


def failure_of(exc: BaseException) -> tuple[str, str]:
    """The ``error_kind`` and ``error_message`` of a failed request; the error inside a group of
    one (a TaskGroup in the algorithm) speaks for itself."""
    exc = _innermost(exc)
    hint = _hint(exc)
    hint = f" ({hint})" if hint else ""
    if isinstance(exc, ModelError):
        return exc.kind, str(exc)
    if isinstance(exc, NoTargets):
        return ErrorKind.NO_TARGETS, str(exc)
    if isinstance(exc, UnknownModel):
        return ErrorKind.UNKNOWN_MODEL, str(exc) + hint
    if isinstance(exc, SimDeadlock):
        return ErrorKind.DEADLOCK, str(exc)
    if isinstance(exc, InvalidOutcome):
        return ErrorKind.INVALID_OUTCOME, str(exc)
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, BaseExceptionGroup):  # several errors: name each
        inner = "; ".join(failure_of(e)[1] for e in exc.exceptions[:3])
        message += f": {inner}" + ("; …" if len(exc.exceptions) > 3 else "")
    return ErrorKind.ALGORITHM_ERROR, message + hint


class InvalidOutcome(ArgumentTypeError):
    """The algorithm returned something that is not an :class:`~sykit.Outcome`."""


def _outcome_error(outcome: object, run: RunState) -> Exception | None:
    """Why ``outcome`` cannot be served (an invalid outcome or an unknown model), or None."""
    if not isinstance(outcome, Outcome):
        hint = ""
        if inspect.isawaitable(outcome):
            close = getattr(outcome, "close", None)
            if close is not None:
                close()  # not awaited by anyone: close it so Python does not warn again
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
    outcome: object, run: RunState, state: RequestState
) -> tuple[Outcome | None, tuple[str, str] | None, Exception | None]:
    """The outcome if it is one, and the failure and error that stop it from being served."""
    error = _outcome_error(outcome, run)
    if error is None and isinstance(outcome, Outcome) and outcome.response is not None:
        error = _not_answered_here(outcome.response, state)
    valid = outcome if isinstance(outcome, Outcome) else None
    return valid, None if error is None else failure_of(error), error


def _not_answered_here(response: Response, state: RequestState) -> InvalidOutcome | None:
    """Why ``sy.answered(model, response)`` cannot serve ``response`` (None: it can): only a
    Response that a model call of this request returned is an answer the records can show (its
    attempt, its cost); one built by hand or kept from another request is not."""
    call = response.call_id
    if call is not None and state.answers.get(call) is response:
        return None
    return InvalidOutcome(
        f"sy.answered({response.model!r}, response): the response did not come from a call of "
        f"request {state.request_id!r} (a Response built by hand, or kept from another request); "
        "serve only what this request's driver.call_model or stream_model returned, or "
        f"sy.route_to({response.model!r}, request) to have the model answer"
    )


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


class _Join:
    """What a session's next turn waits for: its pause, and each session its turn spawned."""

    __slots__ = ("index", "session", "waiting")

    def __init__(self, session: int, index: int, waiting: int) -> None:
        self.session = session  # the waiting session's position
        self.index = index  # the request index of its next turn
        self.waiting = waiting  # how many of the pause and the spawned sessions are not over


class StrategyRun:
    """Runs one strategy over the requests on an open host session, on the run's engine.

    Requests start in input order: at once in a closed loop (up to ``concurrency`` at a time, the
    next one when one ends: its ``arrival_s`` is then its start), or at their arrival times in an
    open loop (waiting for a slot if ``concurrency`` is given).
    """

    def __init__(
        self,
        run: RunState,
        fn: Callable[..., Any],
        items: Sequence[tuple[Any, Request, GroundTruth | None]],
        arrivals: list[float] | None,
        concurrency: int | None,
        progress: Any,
        sessions: SessionPlan | None = None,
    ) -> None:
        self.run = run
        self.fn = fn
        self.items = items
        # a run's own items hold their ids and requests as lists: read by position, not as a
        # tuple per request (a dataset's items build theirs by block)
        ids, requests = getattr(items, "ids", None), getattr(items, "requests", None)
        self._lists = (ids, requests) if type(ids) is list and type(requests) is list else None
        self.arrivals = arrivals
        self.sessions = sessions
        # one dict per session, for the algorithm's own state across turns (driver.session_state)
        self.session_states: dict[int, dict[str, Any]] = {}
        # sub-agents: per task (root session), its sessions started and not ended; per waited
        # session, the join its parent's next turn waits on; per session, its last answer's
        # output tokens and the tokens its children's answers add to its later prompts
        self._live: dict[int, int] = {}
        self._joins: dict[int, _Join] = {}
        self._answers: dict[int, int] = {}
        self._carried: dict[int, int] = {}
        self.concurrency = concurrency
        self.progress = progress
        self.started = 0  # requests (or session turns) sent
        self.finished = 0  # requests recorded
        self.fatal: BaseException | None = None
        self.stopping = False
        self._next = 0  # closed loop: the next request to start
        self._waiting: list[tuple[int, float]] = []  # open loop: arrived, waiting for a slot
        self._waiting_head = 0
        self._free = concurrency if concurrency is not None else math.inf
        self._idle: Any = None  # the engine's event, set when no request is left
        self._running = 0
        self._fill_pending = False
        self.interrupted = False  # Ctrl-C stopped the run: what finished is kept

    #: How the whole run is evaluated column-wise with no events (what the bulk engine runs):
    #: ``evaluator(self)`` raises :class:`~sykit._run.engines.NeedsEvents`, before recording anything,
    #: when it cannot. None: only events run it.
    evaluator: Callable[[StrategyRun], None] | None = None

    def evaluate(self) -> None:
        """Evaluate the whole run column-wise (see :attr:`evaluator`)."""
        if self.evaluator is None:
            raise NeedsEvents("it needs the event engines")
        self.evaluator(self)

    # -- feeding requests ------------------------------------------------------------------------
    async def feed(self) -> None:
        """Start every request; return when the last one has finished."""
        run = self.run
        # the truth goes to the run's closures only: nothing the algorithm reaches holds it
        run.open(run.host.open(run.seed), TruthTable(self.items, run.profiles, run.seed))
        # The run starts once its host is ready: an HTTP client takes tens of milliseconds to
        # build (its TLS context), which no arrival should be delayed by or timed for.
        run.engine.start_clock()
        if self.arrivals is None:
            self._fill()
        else:
            b = run.engine
            for position, arrival in enumerate(self.arrivals):
                if self.stopping:
                    break
                delay = arrival - run.clock()
                if delay > 0:
                    await b.sleep(delay)
                index = position if self.sessions is None else self.sessions.first[position]
                self._waiting.append((index, arrival))
                self._fill()
        if self._running or self._fill_pending:
            self._idle = run.engine.event()
            await self._idle.wait()
        if run.session is not None:
            await run.session.aclose()

    def _fill(self) -> None:
        """Start requests while a slot is free and one is waiting (arrived, or next in a closed
        loop). A loop, not a recursion: a request that ends at once frees its slot for this loop."""
        self._fill_pending = False
        closed = self.arrivals is None
        starts = self.sessions.first if self.sessions is not None else None
        n = len(self.items) if starts is None else len(starts)
        while self._free > 0 and not self.stopping:
            if self._waiting_head < len(self._waiting):
                index, arrival = self._waiting[self._waiting_head]
                self._waiting_head += 1
            elif closed and self._next < n:
                index = self._next if starts is None else starts[self._next]
                self._next += 1
                arrival = self.run.clock()
            else:
                break
            self._free -= 1
            self._start(index, arrival)
        if self._running == 0 and not self._fill_pending and self._idle is not None:
            self._idle.set()

    def _start(self, index: int, arrival: float) -> None:
        lists = self._lists
        if lists is not None:
            request_id, request = lists[0][index], lists[1][index]
        else:
            request_id, request, _ = self.items[index]
        plan = self.sessions
        session = -1
        if plan is not None:
            session = plan.session[index]
            carried = self._carried.get(session, 0)
            if carried:
                request = with_input_tokens(request, carried)
        state = RequestState(self.run, index, request, request_id, arrival)
        if plan is not None:
            state.session_state = self.session_states.setdefault(session, {})
            if plan.turn[index] == 0:  # a session starts: its task has one more in flight
                root = plan.root[session]
                self._live[root] = self._live.get(root, 0) + 1
        self._running += 1
        self.started += 1
        self._spawn(state)
        if plan is not None and plan.turn[index] == 0:
            for child in plan.background.get(session, ()):
                self._start(plan.starts[child], arrival)

    def _spawn(self, state: RequestState) -> None:
        name = f"request {state.request_id!r}"
        state.root = self.run.engine.spawn_request(self.route_one(state), state, name)

    def _release(self, state: RequestState | None = None) -> None:
        """A request ended: its slot is free, and the next request starts at this same instant,
        once what is running now has finished its step (as an asyncio loop would start it). A
        session's turn instead hands over to what follows it in its task (see
        :meth:`_turn_ended`)."""
        if self.sessions is not None and state is not None:
            self._turn_ended(state)
            return
        self._running -= 1
        self._free_slot()

    def _free_slot(self) -> None:
        self._free += 1
        if not self._fill_pending:
            self._fill_pending = True
            self.run.engine.call_soon(self._fill)

    def _turn_ended(self, state: RequestState) -> None:
        """A session's turn ended. If it was answered and the session goes on, the sessions it
        spawns start now and its next turn waits for them and for its pause (the turn's count in
        ``_running`` passes to that wait); otherwise the session ends."""
        plan = self.sessions
        assert plan is not None
        index = state.index
        session = plan.session[index]
        following = plan.following[index]
        if following < 0 or self.stopping or not state.succeeded:
            self._session_ended(session, completed=following < 0 and state.succeeded)
            return
        children = plan.spawns.get(index, ())
        join = _Join(session, following, len(children) + 1)
        for child in children:
            self._joins[child] = join
        if children:
            self.run.engine.call_soon(self._start_children, children)
        gap = plan.gap(following, self.run.seed)
        self.run.engine.spawn_detached(self._pause(join, gap))

    def _start_children(self, children: tuple[int, ...]) -> None:
        assert self.sessions is not None
        clock = self.run.clock()
        for child in children:
            if self.stopping:  # never started: its parent's wait ends without it
                self._arrive(self._joins.pop(child))
            else:
                self._start(self.sessions.starts[child], clock)

    async def _pause(self, join: _Join, gap: float) -> None:
        """A session's pause before its next turn (its slot is held meanwhile)."""
        if gap > 0:
            await self.run.engine.sleep(gap)
        self._arrive(join)

    def _arrive(self, join: _Join) -> None:
        """One of what ``join`` waits for (the pause, a spawned session) is over; when the last
        is, the session's next turn starts now (or, when the run stops, the session ends)."""
        join.waiting -= 1
        if join.waiting:
            return
        if self.stopping:
            self._session_ended(join.session, completed=False)
            return
        self._running -= 1  # the wait ends; _start counts the turn
        self._start(join.index, self.run.clock())

    def _session_ended(self, session: int, *, completed: bool) -> None:
        """A session sent its last turn (or stopped): its parent's wait, if any, hears of it
        (with its final answer when it completed), and its task frees its slot when this was
        the task's last session in flight."""
        plan = self.sessions
        assert plan is not None
        self.session_states.pop(session, None)
        answer = self._answers.pop(session, 0)
        self._carried.pop(session, None)
        self._running -= 1
        join = self._joins.pop(session, None)
        if join is not None:
            if completed:
                self._carried[join.session] = self._carried.get(join.session, 0) + answer
            self._arrive(join)
        root = plan.root[session]
        self._live[root] -= 1
        if self._live[root] == 0:
            del self._live[root]
            self._free_slot()

    @property
    def strict(self) -> bool:
        """``strict=True``: a deadlock is raised, not turned into failed requests."""
        return self.run.strict

    def stop(self, error: BaseException | None) -> None:
        """Stop the run: start nothing more, cancel what runs; ``error`` is raised at the end."""
        if error is not None and self.fatal is None:
            self.fatal = error
        self.stopping = True
        b = self.run.engine
        for state in list(self.run.in_flight):
            if state.root is not None and not state.root.done():
                b.cancel(state.root, CancelCause.CANCELLED)

    #: On the virtual asyncio loop: a task of a request begins a wait (see
    #: :func:`sykit._run.driver.task_wait_begins`).
    wait_begins = staticmethod(task_wait_begins)

    def interrupt(self) -> None:
        """Ctrl-C: stop the requests in flight without recording them; those that finished are
        returned."""
        self.interrupted = True
        self.stop(None)

    def abandon(self) -> None:
        """Ctrl-C stopped the engine itself: nothing more starts or is recorded; those that
        finished are returned."""
        self.interrupted = True
        self.stopping = True

    def close(self) -> None:
        """The run is over: start nothing more, and drop what ties this run to itself, so no
        reference cycle (holding every request) is left for the cyclic collector."""
        self.stopping = True
        self._idle = None

    def unstick(self, describe: Callable[[], str]) -> bool:
        """On a deadlock, fail every request still inside its algorithm instead of hanging."""
        stuck = [
            s
            for s in self.run.in_flight
            if not s.closed and s.root is not None and not s.root.done()
        ]
        if not stuck:
            return False
        message = describe()
        b = self.run.engine
        for state in stuck:
            state.abort_error = SimDeadlock(message)
            state.root_cancelled = True
            b.cancel(state.root, None)
        return True

    # -- one request -------------------------------------------------------------------------------
    async def route_one(self, state: RequestState) -> None:
        run = self.run
        state.root = run.engine.current_task()  # the loop holds tasks weakly: the state holds it
        state.start_s = run.clock()
        run.in_flight[state] = None
        try:
            await self._route(state)
        except KeyboardInterrupt:
            # Escaping the engine it would lose every record: stop the run here instead; the
            # requests that finished are returned.
            self.interrupted = True
            for task in state.tasks:
                run.engine.cancel(task, CancelCause.CANCELLED)
            self.stop(None)
        except (EngineExit, GeneratorExit):
            raise
        except BaseException as error:  # a stop or a strict-mode error: the run ends with it
            if not self.stopping or self.fatal is None:
                self.stop(None if isinstance(error, asyncio.CancelledError) else error)
        finally:
            run.in_flight.pop(state, None)
            # No cycle may outlive the request: drop what ties the state to tasks and frames.
            state.tasks.clear()
            state.root = None
            state.abort_error = None
            self._release(state)
            if self.progress is not None:
                self.progress.update(1)

    async def _route(self, state: RequestState) -> None:
        run = self.run
        outcome: Any = None
        failure: tuple[str, str] | None = None
        try:
            pending = self.fn(state.request, Driver(state))
            if type(pending) is CoroutineType:
                # awaited through its request's limits (horizon, swallowed cancellations); the
                # guard holds the coroutine alone, so an abandoned one is freed when it is left
                pending = guarded(pending, state)
            elif not inspect.isawaitable(pending):
                # a lambda or wrapper that returned no awaitable: the whole run is wrong
                raise _NotAwaitable(_not_awaitable(run.strategy, pending))
            outcome = await pending
        except _NotAwaitable as stop:
            raise stop.error from None
        except asyncio.CancelledError:
            if state.abort_error is not None:
                if state.root_cancelled:
                    run.engine.uncancel(state.root)
                failure = failure_of(state.abort_error)
            elif self.stopping:
                raise
            else:  # the algorithm raised CancelledError itself: its request fails, nothing vanishes
                run.engine.uncancel(state.root)
                failure = (
                    ErrorKind.ALGORITHM_ERROR,
                    "CancelledError: the algorithm raised asyncio.CancelledError (or cancelled "
                    "its own task); to stop a call, cancel the task that awaits it",
                )
        except ModelError as error:
            failure = failure_of(error)
        except (Exception, SystemExit) as error:  # sys.exit() in an algorithm: its error too
            if run.strict and not isinstance(_innermost(error), ModelError):
                error.add_note(
                    f"(while routing request {state.request_id!r} with strategy {run.strategy!r})"
                )
                hint = _hint(_innermost(error))
                if hint:
                    error.add_note(hint)
                raise
            failure = failure_of(error)
        except GeneratorExit as error:
            if run.engine.current_task() is not state.root:
                raise  # the engine is closing this request's coroutine: let it close
            # the algorithm raised GeneratorExit itself: its request fails, nothing vanishes
            failure = (ErrorKind.ALGORITHM_ERROR, f"GeneratorExit: {error}".rstrip(": "))
        except (KeyboardInterrupt, EngineExit):
            raise
        except BaseException as error:  # a user's BaseException subclass
            failure = (ErrorKind.ALGORITHM_ERROR, f"{type(error).__name__}: {error}")
        if failure is None and state.abort_error is not None:
            # the request failed (recover_errors=False) while the algorithm went on: it fails
            if state.root_cancelled:
                run.engine.uncancel(state.root)
            failure = failure_of(state.abort_error)
        state.closed = True
        routing_end = run.clock()
        if state.streams:  # streams the algorithm left open stop now, like its leftover tasks
            cause = CancelCause.ABANDONED if failure is None else CancelCause.REQUEST_FAILED
            for stream in list(state.streams):
                await stream._aclose(cause)
        stuck = 0
        if state.tasks:
            stuck = await self._close_leftovers(
                state, CancelCause.ABANDONED if failure is None else CancelCause.REQUEST_FAILED
            )
        if stuck and failure is None:
            failure = (
                ErrorKind.ALGORITHM_ERROR,
                f"{stuck} task(s) the algorithm left running ignored cancellation "
                f"({_CANCEL_TRIES} tries) and were stopped; let CancelledError propagate",
            )
        response: Response | None = None
        if failure is None:
            outcome, failure, refused = _check_outcome(outcome, run, state)
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
                    response = await run.serve(state, outcome.request, outcome.models, 1, 0)
                except ModelError as error:
                    failure = failure_of(error)
        if not self.stopping:
            self._record(state, outcome, response, failure, routing_end)

    async def _close_leftovers(self, state: RequestState, cause: CancelCause) -> int:
        """Cancel every task the algorithm left running, in the order they started, and let them
        stop; return how many ignored cancellation (they are then stopped by force)."""
        b = self.run.engine
        pending = [t for t in state.tasks if not t.done()]
        if not pending:
            return 0
        for _ in range(_CANCEL_TRIES):
            b.cancel_all(pending, cause)
            # Those not stopped yet (on asyncio: all; on the kernel: those that were ready to
            # run, or wait for one that was) stop when they next run: let them, in zero time.
            for _turn in range(_SETTLE_TURNS):
                pending = [t for t in pending if not t.done()]
                if not pending:
                    break
                await b.sleep(0)
            pending = [t for t in pending if not t.done()]
            if not pending:
                break
        for task in state.tasks:
            if task.done() and not task.cancelled():
                task.exception()  # a leftover's error is reported by its call row, not as a warning
        for task in pending:
            b.drop(task)  # the kernel closes it; on asyncio it is left to the loop's shutdown
        return len(pending)

    def _record(
        self,
        state: RequestState,
        outcome: Outcome | None,
        response: Response | None,
        failure: tuple[str, str] | None,
        routing_end: float,
    ) -> None:
        run = self.run
        log = run.log
        end = run.clock()
        ok = failure is None
        ttft = math.nan
        served_cost = 0.0
        served_model = None
        graded = None  # the model whose answer the truth grades
        # the served attempt: the one that answered the response's call, in this request
        if ok and response is not None:
            served_model = response.model
            row = state.ok_rows.get(response.call_id) if response.call_id is not None else None
            if row is not None:
                start, served_ttft, cost, model, kind = log.served_of(row)
                if model == served_model:
                    log.set_served(row)
                    served_cost = cost
                    if not math.isnan(served_ttft):
                        ttft = start + served_ttft - state.start_s
                    if kind == MODEL:
                        graded = served_model
        extra = row_extra(run, state.index, state.request.metadata, state.evidence, graded)
        state.succeeded = ok
        if self.sessions is not None and ok and response is not None:
            # a session's answer so far: the last one is what a sub-agent hands its parent
            self._answers[self.sessions.session[state.index]] = response.usage.output_tokens
        run.requests.add(
            state.index,
            failure,
            outcome.model if isinstance(outcome, Outcome) else None,
            served_model if ok else None,
            state.arrival_s,
            state.start_s,
            end,
            ttft if ok else math.nan,
            routing_end - state.start_s,
            (state.n_attempts, state.n_cancelled, state.n_fallbacks, state.n_retries),
            (
                state.model_cost + state.routing_cost,
                state.model_cost - (served_cost if ok else 0.0),
                state.routing_cost,
            ),
            # the served answer's grade is written in when the records are read (see
            # note_truth): NaN until then, and for good when it failed or has no grade
            math.nan,
            state.reads_truth,
            extra,
        )
        self.finished += 1


def row_extra(
    run: RunState,
    index: int,
    metadata: Mapping[str, Any] | None,
    evidence: Mapping[str, Any] | None,
    graded: str | None,
    position: int | None = None,
) -> dict[str, Any] | None:
    """The extra values of the request row about to be added to ``run.requests`` (at
    ``position``; None: next): the request's
    metadata and the algorithm's evidence (``evidence_<key>``); ``graded`` names the served model
    whose answer the ground truth grades (None: no grade).

    The served answer's grade and the dataset's columns (hidden from algorithms) reach the row
    when the records are written, not now: later requests' algorithms could read this log."""
    note = run.note_truth
    # a dataset's metadata reaches the frame by column (run.row_values), not by row
    own = metadata if metadata and run.row_values is None else None
    if own is None and not evidence and note is None:
        return None  # nothing to add (most rows of a run without metadata)
    head: dict[str, Any] = {}
    if own is not None:
        for key, value in own.items():
            head[row_name(key)] = value
    tail = None
    if evidence:
        tail = {f"evidence_{key}": value for key, value in evidence.items()}
    if note is not None:
        return note(len(run.requests) if position is None else position, index, graded, head, tail)
    if tail:
        head.update(tail)
    return head
