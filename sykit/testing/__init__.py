"""A loopback OpenAI-compatible server that injects provider faults, for tests and demos.

``FakeProvider`` is a real HTTP/1.1 server on 127.0.0.1 (standard library only: ``asyncio`` in a
background thread), so an algorithm runs through :class:`sykit.HttpHost` exactly as it would
against a provider, sockets and all. The model name picks the behaviour::

    with sy.testing.FakeProvider({"fast": FakeModel(ttft_s=0.01, tokens_per_s=800)}) as fake:
        host = sy.HttpHost(fake.base_url, models=["fast", "fail-429-once", "cut-stream"])
        res = sy.run(algo, requests, host=host)
        fake.requests        # what the server saw: model, fault, status, disconnected, ...

Fault names (the catalogue of :data:`FAULTS`) can be used directly as model names, or given to a
configured model with ``FakeModel(fault=...)``. A ``-once`` suffix (``"fail-500-once"``) fails only
the first request to that model, ``-x<N>`` the first N. Counters (and latency draws) are per model
and per run: ``HttpHost`` marks each run's requests with an ``X-Sykit-Run`` header, so every
strategy of a ``sy.compare`` meets the same sequence; :meth:`FakeProvider.reset` clears them for
other clients. Any other model name is a healthy model with the provider's default latency.

May import: :mod:`sykit._base`, :mod:`sykit._world`, :mod:`sykit._hosts`.
"""

# The private modules, one job each: _faults (the catalogue and fault-name parsing), _model
# (FakeModel), _record (ServedRequest), _connection (HTTP/1.1 framing), _chat (what an answer
# or error says), _answers (pacing a complete body or an SSE stream), _server (FakeProvider).

# The annotations of FakeModel and ServedRequest name these; with __module__ set to this package
# below, typing.get_type_hints resolves them here.
from collections.abc import Mapping, Sequence  # noqa: F401
from typing import Any  # noqa: F401

from sykit._world.capacity import Capacity  # noqa: F401
from sykit._world.dists import Distribution  # noqa: F401
from sykit._world.faults import Flapping  # noqa: F401
from sykit.testing._faults import FAULTS
from sykit.testing._model import FakeModel
from sykit.testing._record import ServedRequest
from sykit.testing._server import FakeProvider

__all__ = ["FAULTS", "FakeModel", "FakeProvider", "ServedRequest"]

# Reprs, pickles and tracebacks say sykit.testing.FakeModel, as before the package was split.
for _cls in (FakeModel, FakeProvider, ServedRequest):
    _cls.__module__ = __name__
del _cls
