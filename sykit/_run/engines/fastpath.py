"""A fast path for fixed chains: ``single(model)`` and ``fallback_chain(models)`` with no coroutine.

These strategies decide nothing per request: every request goes to the same candidates. On a
simulated host their requests need no task, no driver and no algorithm coroutine: the candidate
loop (the same :func:`~sykit._run.candidates.serve_steps` generator every call uses) is advanced from the
engine's timer callbacks, and the request is recorded as the general path records it. Same draws, same order of
events, the same frames (a test compares them); only the per-request machinery is gone.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from sykit._base.errors import ModelError
from sykit._run.candidates import serve_steps
from sykit._run.engines.base import ALARM
from sykit._run.lifecycle import StrategyRun, failure_of
from sykit._run.records import ANSWER, MODEL
from sykit._run.state import RequestState
from sykit._world.models import Outcome

__all__ = ["FixedChainRun", "fixed_chain"]


def fixed_chain(fn: Any) -> tuple[str, ...] | None:
    """The candidates of a fixed-chain strategy (a library ``single``/``fallback_chain``), else None."""
    chain = getattr(fn, "fixed_chain", None)
    if isinstance(chain, tuple) and chain and all(isinstance(m, str) for m in chain):
        return chain
    return None


class FixedChainRun(StrategyRun):
    """A :class:`StrategyRun` whose requests are driven by timer callbacks instead of tasks."""

    def __init__(self, *args: Any, chain: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chain = chain

    def _spawn(self, state: RequestState) -> None:
        run = self.run
        state.start_s = run.clock()
        state.closed = True  # the "algorithm" returned at once: its routing phase ends here
        steps = serve_steps(run, state, state.request, self.chain, ANSWER, MODEL)
        self._advance(state, steps, state.start_s)

    def _advance(
        self, state: RequestState, steps: Generator[Any, Any, Any], routing_end: float
    ) -> None:
        try:
            trap = next(steps)
        except StopIteration as stop:
            self._end(state, stop.value, None, routing_end)
            return
        except ModelError as error:
            self._end(state, None, failure_of(error), routing_end)
            return
        if trap[0] == ALARM:  # a call whose end its server re-times
            self.run.engine.call_at_alarm(trap[1], self._advance, state, steps, routing_end)
        else:
            self.run.engine.call_later(trap[1], self._advance, state, steps, routing_end)

    def _end(
        self,
        state: RequestState,
        response: Any,
        failure: tuple[str, str] | None,
        routing_end: float,
    ) -> None:
        if not self.stopping:
            outcome = Outcome(models=self.chain, request=state.request)
            self._record(state, outcome, response, failure, routing_end)
        self._release()
        if self.progress is not None:
            self.progress.update(1)
