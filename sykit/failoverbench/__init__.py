"""The failoverbench fault catalogue (S01–S16), in simulated time or over HTTP, each with a check of
what a correct router does.

Every scenario is a small, self-contained setup (a host with a faulty ``primary`` and a healthy
``secondary``, a few requests, a reference router) plus a check that reads the attempt log and
lists what a correct router would have done differently. The whole catalogue runs in well under a
second of wall time, so it can gate a router in CI or in a notebook:

    report = sy.failoverbench.run_catalogue()             # the reference routers: every row passes
    report = sy.failoverbench.run_catalogue(my_router)    # your router against the same faults
    sy.failoverbench.catalogue()["S07"].run(my_router).problems

The same catalogue runs over real HTTP, against a loopback :class:`sykit.testing.FakeProvider`
whose models reproduce each scenario's faults, through :class:`sykit.HttpHost` (streaming):

    report = sy.failoverbench.run_catalogue(over="http")                # a few seconds of wall time
    sy.failoverbench.catalogue()["S07"].run_http(my_router, time_scale=1 / 50)

Real time is slow (S06 waits 30 s, S15 flaps for a minute), so over HTTP every duration of the
scenario is multiplied by ``time_scale`` (default :data:`HTTP_TIME_SCALE`, 1/50): latencies,
Retry-After, outages, the host's deadline, backoff and cooldown, arrivals and the reference
routers' own deadlines and hedges. A router you pass keeps its own durations: give it scaled ones.
The checks are the same functions; over HTTP they compare times within a :class:`Tolerance` (10 ms
plus 10 % of the scaled time) instead of exactly, while counts, statuses and billing stay exact.
Each request carries text for the tokens it declares, so the provider counts (and bills) what the
simulation counts. One difference is the host's, not the catalogue's: over HTTP an attempt that
was sent and then cancelled or timed out is billed its input (the provider may have started), so
S06 and S09 cost a little more than in simulation.

May import: :mod:`sykit._base`, :mod:`sykit._results`, :mod:`sykit._world`, :mod:`sykit._hosts`,
:mod:`sykit._run`, :mod:`sykit.testing`.
"""

from __future__ import annotations

from sykit.failoverbench._catalogue import catalogue, run_catalogue
from sykit.failoverbench._harness import HTTP_TIME_SCALE, Scenario, ScenarioOutcome, Tolerance

# Not public: the tests and conformance/ use them to build a fake provider's models.
from sykit.failoverbench._harness import _fake_model as _fake_model
from sykit.failoverbench._harness import _on_the_wire as _on_the_wire

__all__ = [
    "HTTP_TIME_SCALE",
    "Scenario",
    "ScenarioOutcome",
    "Tolerance",
    "catalogue",
    "run_catalogue",
]
