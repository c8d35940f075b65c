"""The waves of ``litellm_like``: a router that owns its retry loop, planned column-wise.

Where :func:`~sykit._run.engines.bulk._waves.run_waves` follows the host's candidate loop (one call per
request, its retries and fallbacks inside it), this follows LiteLLM's (see
:func:`sykit.strategies.litellm_like`): every attempt is its own call with no retries of the
host's, made while routing; after a failure the router decides whether it tries the same
deployment again and how long it waits first (its backoff or the error's Retry-After, with a
keyed jitter draw), and after the last try, or an error it does not retry, it moves on to the
next group. It takes the router only in a setting where no request can change another's
course (:meth:`~sykit.strategies._litellm._LiteLLMLike.bulk_path`), and plans each attempt with the same
keyed draws as the simulated host (timeouts timed as the requests are placed, see
:mod:`._waves`); what only the start can decide sends the whole request the exact way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sykit._base.errors import ModelError
from sykit._base.rng import uniforms
from sykit._run.engines.bulk._waves import Columns, Waves, _ErrorTable, collected, kept, plan_wave
from sykit._run.records import REASON_CODE
from sykit._world.classify import fallback_reason
from sykit._world.config import HostPolicy, ModelProfile

__all__ = ["OwnsRetries", "run_litellm_waves"]


@runtime_checkable
class OwnsRetries(Protocol):
    """A router that owns its retry loop (``litellm_like``'s): the bulk engine plans it when
    ``bulk_path()`` names the targets every request tries in order (None: it cannot), asking
    ``after_failure(error, try, draw)`` whether a failed target is tried again and how long the
    router waits first (see :meth:`sykit.strategies._litellm._LiteLLMLike.after_failure`)."""

    def bulk_path(self) -> tuple[str, ...] | None: ...

    def after_failure(
        self, error: ModelError, retry: int, draw: Callable[[], float]
    ) -> tuple[bool, float | None]: ...


def run_litellm_waves(
    columns: Columns,
    routes: np.ndarray,
    chains: list[tuple[str, ...]],
    todo: np.ndarray,
    profiles: Mapping[str, ModelProfile],
    model_codes: Mapping[str, int],
    policy: HostPolicy,
    seed: int,
    session: Any,
    *,
    router: OwnsRetries,
) -> Waves:
    """Plan the attempts of requests ``todo`` (positions) along the router's path (``chains``'
    one entry: its deployments in the order it tries them; every route is 0), as
    :func:`~sykit._run.engines.bulk._waves.run_waves` plans a fixed chain's."""
    path = chains[0]
    n = len(columns.ids)
    slow = np.zeros(n, dtype=bool)
    failed = np.full(n, -1, dtype=np.int32)
    codes = np.asarray([model_codes[m] for m in path], dtype=np.int32)
    names = dict(enumerate(path))
    errors = _ErrorTable(profiles, session, policy)
    draws = np.zeros(n, dtype=np.int64)  # keyed uniforms each request has drawn so far
    last = len(path) - 1
    ids = columns.ids

    out: dict[str, list[np.ndarray]] = {"call": [], "moved": []}  # with kept()'s fields
    seq_parts: list[np.ndarray] = []
    # the requests still going: their group (position in the path), try and call number
    active = np.asarray(todo, dtype=np.int64)
    group = np.zeros(len(active), dtype=np.int64)
    tries = np.zeros(len(active), dtype=np.int64)
    call = np.zeros(len(active), dtype=np.int64)
    step = 0
    while len(active):
        m = len(active)
        # a deployment appears once in the path: its attempt number is the try
        wave = plan_wave(group, names, profiles, columns, active, tries, seed, policy, errors)
        if wave.slow.any():
            slow[active[wave.slow]] = True
        keep = ~wave.slow
        wait = np.full(m, np.nan)
        fallback = np.full(m, -1, dtype=np.int16)
        moved = np.zeros(m, dtype=bool)
        next_group = group.copy()
        next_tries = tries + 1
        goes_on = np.zeros(m, dtype=bool)
        for k in np.flatnonzero(keep & ~wave.ok).tolist():
            error = errors.info[int(wave.error[k])].error
            request = int(active[k])

            def draw(request: int = request) -> float:
                number = int(draws[request])
                draws[request] = number + 1
                return uniforms(seed, "litellm_like", ids[request], number)[0]

            again, pause = router.after_failure(error, int(tries[k]), draw)
            if pause is not None:
                wait[k] = pause
            if again:
                goes_on[k] = True
            elif group[k] < last:
                moved[k] = True
                reason = fallback_reason(error)
                if reason is not None:
                    fallback[k] = REASON_CODE[reason]
                next_group[k] = group[k] + 1
                next_tries[k] = 0
                goes_on[k] = True
            else:
                failed[request] = wave.error[k]
        kept(out, seq_parts, step, keep, wave, active, codes[group], wait, fallback)
        out["call"].append(call[keep])
        out["moved"].append(moved[keep])
        active, group, tries, call = (
            active[goes_on],
            next_group[goes_on],
            next_tries[goes_on],
            call[goes_on] + 1,
        )
        step += 1

    return collected(out, seq_parts, slow, failed, errors)
