"""sykit: prototype and compare LLM routing strategies in virtual time.

Write a routing algorithm as ``async def algo(request, driver) -> Outcome``, run it on a simulated
host with ``sy.run`` (thousands of requests a second, same seed, same result), and read every
attempt it caused from ``result.attempts`` and every request from ``result.requests``.

The top level holds the core loop a notebook needs: requests and outcomes, the driver and its
race helpers, hosts and profiles, running, comparing and grids, and the errors an algorithm
catches. The rest lives in named sub-modules: ``sy.traffic`` (arrivals, traces, offered load),
``sy.dists`` (distributions), ``sy.errors`` (the whole error tree and the classifier),
``sy.faults`` (fault pieces beside ``sy.Faults``), ``sy.profiles``, ``sy.strategies``,
``sy.sessions``, ``sy.datasets``, ``sy.learn``, ``sy.testing``, ``sy.failoverbench`` and
``sy.widgets``.
"""

import sys as _sys
import warnings as _warnings
from contextlib import suppress as _suppress
from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from sykit import datasets as datasets
from sykit import dists as dists
from sykit import errors as errors
from sykit import faults as faults
from sykit import profiles as profiles
from sykit import sessions as sessions
from sykit import strategies as strategies
from sykit import traffic as traffic
from sykit._base.errors import ArgumentError as ArgumentError
from sykit._base.errors import ArgumentTypeError as ArgumentTypeError
from sykit._base.errors import CapabilityError as CapabilityError
from sykit._base.errors import ContextWindowError as ContextWindowError
from sykit._base.errors import InvalidRequestError as InvalidRequestError
from sykit._base.errors import InvalidResponseError as InvalidResponseError
from sykit._base.errors import ModelError as ModelError
from sykit._base.errors import ModelTimeout as ModelTimeout
from sykit._base.errors import NoTargets as NoTargets
from sykit._base.errors import PolicyError as PolicyError
from sykit._base.errors import RateLimitError as RateLimitError
from sykit._base.errors import SimDeadlock as SimDeadlock
from sykit._base.errors import SykitError as SykitError
from sykit._base.errors import UnavailableError as UnavailableError
from sykit._base.errors import UnknownModel as UnknownModel
from sykit._grid import Grid as Grid
from sykit._grid import grid as grid
from sykit._grid.compare import acompare as acompare
from sykit._grid.compare import compare as compare
from sykit._grid.sweep import Sweep as Sweep
from sykit._grid.sweep import sweep as sweep
from sykit._hosts.http import HttpHost as HttpHost
from sykit._hosts.http import HttpModel as HttpModel
from sykit._hosts.sim import SimHost as SimHost
from sykit._results.health import AlgorithmError as AlgorithmError
from sykit._results.health import AlgorithmWarning as AlgorithmWarning
from sykit._results.result import Comparison as Comparison
from sykit._results.result import Result as Result
from sykit._run.api import arun as arun
from sykit._run.api import run as run
from sykit._run.driver import Driver as Driver
from sykit._run.driver import RequestClosed as RequestClosed
from sykit._run.race import Started as Started
from sykit._run.race import first as first
from sykit._run.race import first_ok as first_ok
from sykit._run.race import hedge as hedge
from sykit._run.race import start as start
from sykit._run.race import timeout as timeout
from sykit._run.race import wait_first as wait_first
from sykit._run.stream import Chunk as Chunk
from sykit._run.stream import ModelStream as ModelStream
from sykit._world.capacity import Capacity as Capacity
from sykit._world.config import HostPolicy as HostPolicy
from sykit._world.config import Judge as Judge
from sykit._world.config import Latency as Latency
from sykit._world.config import ModelProfile as ModelProfile
from sykit._world.faults import Faults as Faults
from sykit._world.models import Answer as Answer
from sykit._world.models import Boolean as Boolean
from sykit._world.models import Choice as Choice
from sykit._world.models import DecisionRequest as DecisionRequest
from sykit._world.models import DecisionResponse as DecisionResponse
from sykit._world.models import Outcome as Outcome
from sykit._world.models import Request as Request
from sykit._world.models import Response as Response
from sykit._world.models import Score as Score
from sykit._world.models import Usage as Usage
from sykit._world.models import answered as answered
from sykit._world.models import ask_good_enough as ask_good_enough
from sykit._world.models import route_to as route_to

__version__ = "0.1.0"

__all__ = [
    "AlgorithmError",
    "AlgorithmWarning",
    "Answer",
    "ArgumentError",
    "ArgumentTypeError",
    "Boolean",
    "CapabilityError",
    "Capacity",
    "Choice",
    "Chunk",
    "Comparison",
    "ContextWindowError",
    "DecisionRequest",
    "DecisionResponse",
    "Driver",
    "Faults",
    "Grid",
    "HostPolicy",
    "HttpHost",
    "HttpModel",
    "InvalidRequestError",
    "InvalidResponseError",
    "Judge",
    "Latency",
    "ModelError",
    "ModelProfile",
    "ModelStream",
    "ModelTimeout",
    "NoTargets",
    "Outcome",
    "PolicyError",
    "RateLimitError",
    "Request",
    "RequestClosed",
    "Response",
    "Result",
    "Score",
    "SimDeadlock",
    "SimHost",
    "Started",
    "Sweep",
    "SykitError",
    "UnavailableError",
    "UnknownModel",
    "Usage",
    "acompare",
    "answered",
    "arun",
    "ask_good_enough",
    "compare",
    "first",
    "first_ok",
    "grid",
    "hedge",
    "route_to",
    "run",
    "start",
    "sweep",
    "timeout",
    "wait_first",
]

#: The names that left the top level, each with its new home: ``sy.Poisson`` still works for one
#: release (with a DeprecationWarning), as the same object as ``sy.traffic.Poisson``.
_MOVED = {
    "CapacityFit": "profiles",
    "Constant": "dists",
    "Empirical": "dists",
    "ErrorFault": "faults",
    "Exponential": "dists",
    "FallbackReason": "errors",
    "Flapping": "faults",
    "GroundTruth": "datasets",
    "LogNormal": "dists",
    "Poisson": "traffic",
    "PromptCache": "profiles",
    "RateLimit": "faults",
    "RealIOError": "errors",
    "RecordLimit": "errors",
    "Session": "sessions",
    "Trace": "traffic",
    "Turn": "sessions",
    "UngradedWarning": "errors",
    "Uniform": "dists",
    "classify": "errors",
    "fallback_reason": "errors",
    "fit_capacity": "profiles",
    "offered_load": "traffic",
    "peek_truth": "strategies",
    "plot_load": "traffic",
    "static": "strategies",
}


if _TYPE_CHECKING:
    from sykit import failoverbench as failoverbench
    from sykit import learn as learn
    from sykit import testing as testing
    from sykit import widgets as widgets

#: Sub-modules loaded when first used (``sy.learn`` imports it then): ``import sykit`` stays
#: short for the notebooks that never use them.
_LAZY = frozenset({"failoverbench", "learn", "testing", "widgets"})


def __getattr__(name: str) -> _Any:
    """The sub-modules of :data:`_LAZY`, imported when first used; and the old spellings of the
    names that moved to a sub-module: the same object, with a DeprecationWarning naming its new
    home."""
    if name in _LAZY:
        module = _import_module(f"sykit.{name}")
        globals()[name] = module
        return module
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'sykit' has no attribute {name!r}")
    value = getattr(globals()[home], name)
    caller = _sys._getframe(1)
    if caller.f_code.co_name == "_handle_fromlist" and "importlib" in caller.f_code.co_filename:
        return value  # ``from sykit import X`` asks twice: its import statement warns next, once
    _warnings.warn(
        f"sy.{name} moved to sy.{home}.{name}; the old spelling will be removed in the next "
        "release",
        DeprecationWarning,
        stacklevel=2,
    )
    return value


# Reprs and tracebacks say sykit.SimHost, not sykit._hosts.sim.SimHost.
for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("sykit."):
        with _suppress(AttributeError, TypeError):
            _obj.__module__ = "sykit"
del _name, _obj
