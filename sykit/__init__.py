"""sykit: prototype and compare LLM routing strategies in virtual time.

Write a routing algorithm as ``async def algo(request, driver) -> Outcome``, run it on a simulated
host with ``sy.run`` (thousands of requests a second, same seed, same result), and read every
attempt it caused from ``result.attempts`` and every request from ``result.requests``.
"""

from contextlib import suppress as _suppress

from sykit import datasets as datasets
from sykit import failoverbench, strategies
from sykit import faults as _faults  # sy.faults: the presets' and the catalogue's former home
from sykit import learn as learn
from sykit import profiles as profiles
from sykit import sessions as sessions
from sykit import testing as testing
from sykit import widgets as widgets
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
from sykit._base.errors import RealIOError as RealIOError
from sykit._base.errors import RecordLimit as RecordLimit
from sykit._base.errors import SimDeadlock as SimDeadlock
from sykit._base.errors import SykitError as SykitError
from sykit._base.errors import UnavailableError as UnavailableError
from sykit._base.errors import UnknownModel as UnknownModel
from sykit._fitting.capacity import CapacityFit as CapacityFit
from sykit._fitting.capacity import fit_capacity as fit_capacity
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
from sykit._results.metrics import UngradedWarning as UngradedWarning
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
from sykit._run.static import static as static
from sykit._run.stream import Chunk as Chunk
from sykit._run.stream import ModelStream as ModelStream
from sykit._viz.load import offered_load as offered_load
from sykit._viz.load import plot_load as plot_load
from sykit._world.capacity import Capacity as Capacity
from sykit._world.classify import FallbackReason as FallbackReason
from sykit._world.classify import classify as classify
from sykit._world.classify import fallback_reason as fallback_reason
from sykit._world.config import ErrorFault as ErrorFault
from sykit._world.config import Faults as Faults
from sykit._world.config import Flapping as Flapping
from sykit._world.config import HostPolicy as HostPolicy
from sykit._world.config import Judge as Judge
from sykit._world.config import Latency as Latency
from sykit._world.config import ModelProfile as ModelProfile
from sykit._world.config import Poisson as Poisson
from sykit._world.config import PromptCache as PromptCache
from sykit._world.config import RateLimit as RateLimit
from sykit._world.dists import Constant as Constant
from sykit._world.dists import Empirical as Empirical
from sykit._world.dists import Exponential as Exponential
from sykit._world.dists import LogNormal as LogNormal
from sykit._world.dists import Uniform as Uniform
from sykit._world.models import Answer as Answer
from sykit._world.models import Boolean as Boolean
from sykit._world.models import Choice as Choice
from sykit._world.models import DecisionRequest as DecisionRequest
from sykit._world.models import DecisionResponse as DecisionResponse
from sykit._world.models import GroundTruth as GroundTruth
from sykit._world.models import Outcome as Outcome
from sykit._world.models import Request as Request
from sykit._world.models import Response as Response
from sykit._world.models import Score as Score
from sykit._world.models import Usage as Usage
from sykit._world.models import answered as answered
from sykit._world.models import ask_good_enough as ask_good_enough
from sykit._world.models import route_to as route_to
from sykit._world.sessions import Session as Session
from sykit._world.sessions import Turn as Turn
from sykit._world.truth import peek_truth as peek_truth
from sykit.datasets._traces import Trace as Trace

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
    "CapacityFit",
    "Choice",
    "Chunk",
    "Comparison",
    "Constant",
    "ContextWindowError",
    "DecisionRequest",
    "DecisionResponse",
    "Driver",
    "Empirical",
    "ErrorFault",
    "Exponential",
    "FallbackReason",
    "Faults",
    "Flapping",
    "Grid",
    "GroundTruth",
    "HostPolicy",
    "HttpHost",
    "HttpModel",
    "InvalidRequestError",
    "InvalidResponseError",
    "Judge",
    "Latency",
    "LogNormal",
    "ModelError",
    "ModelProfile",
    "ModelStream",
    "ModelTimeout",
    "NoTargets",
    "Outcome",
    "Poisson",
    "PolicyError",
    "PromptCache",
    "RateLimit",
    "RateLimitError",
    "RealIOError",
    "RecordLimit",
    "Request",
    "RequestClosed",
    "Response",
    "Result",
    "Score",
    "Session",
    "SimDeadlock",
    "SimHost",
    "Started",
    "Sweep",
    "SykitError",
    "Trace",
    "Turn",
    "UnavailableError",
    "UngradedWarning",
    "Uniform",
    "UnknownModel",
    "Usage",
    "acompare",
    "answered",
    "arun",
    "ask_good_enough",
    "classify",
    "compare",
    "datasets",
    "failoverbench",
    "fallback_reason",
    "first",
    "first_ok",
    "fit_capacity",
    "grid",
    "hedge",
    "learn",
    "offered_load",
    "peek_truth",
    "plot_load",
    "profiles",
    "route_to",
    "run",
    "sessions",
    "start",
    "static",
    "strategies",
    "sweep",
    "testing",
    "timeout",
    "wait_first",
    "widgets",
]

# Reprs and tracebacks say sykit.SimHost, not sykit._hosts.sim.SimHost.
for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("sykit."):
        with _suppress(AttributeError, TypeError):
            _obj.__module__ = "sykit"
del _name, _obj, _faults
