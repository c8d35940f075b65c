"""sykit: prototype and compare LLM routing strategies in virtual time.

Write a routing algorithm as ``async def algo(request, driver) -> Outcome``, run it on a simulated
host with ``sy.run`` (thousands of requests a second, same seed, same result), and read every
attempt it caused from ``result.attempts`` and every request from ``result.requests``.
"""

from contextlib import suppress as _suppress

from . import datasets as datasets
from . import failoverbench as failoverbench
from . import faults as _faults  # sy.faults: the presets' and the catalogue's former home
from . import learn as learn
from . import profiles as profiles
from . import sessions as sessions
from . import strategies as strategies
from . import testing as testing
from . import widgets as widgets
from ._capacity import Capacity as Capacity
from ._classify import FallbackReason as FallbackReason
from ._classify import classify as classify
from ._classify import fallback_reason as fallback_reason
from ._config import ErrorFault as ErrorFault
from ._config import Faults as Faults
from ._config import Flapping as Flapping
from ._config import HostPolicy as HostPolicy
from ._config import Judge as Judge
from ._config import Latency as Latency
from ._config import ModelProfile as ModelProfile
from ._config import Poisson as Poisson
from ._config import PromptCache as PromptCache
from ._config import RateLimit as RateLimit
from ._dists import Constant as Constant
from ._dists import Empirical as Empirical
from ._dists import Exponential as Exponential
from ._dists import LogNormal as LogNormal
from ._dists import Uniform as Uniform
from ._driver import Driver as Driver
from ._driver import RequestClosed as RequestClosed
from ._errors import ArgumentError as ArgumentError
from ._errors import ArgumentTypeError as ArgumentTypeError
from ._errors import CapabilityError as CapabilityError
from ._errors import ContextWindowError as ContextWindowError
from ._errors import InvalidRequestError as InvalidRequestError
from ._errors import InvalidResponseError as InvalidResponseError
from ._errors import ModelError as ModelError
from ._errors import ModelTimeout as ModelTimeout
from ._errors import NoTargets as NoTargets
from ._errors import PolicyError as PolicyError
from ._errors import RateLimitError as RateLimitError
from ._errors import RealIOError as RealIOError
from ._errors import RecordLimit as RecordLimit
from ._errors import SimDeadlock as SimDeadlock
from ._errors import SykitError as SykitError
from ._errors import UnavailableError as UnavailableError
from ._errors import UnknownModel as UnknownModel
from ._fit_capacity import CapacityFit as CapacityFit
from ._fit_capacity import fit_capacity as fit_capacity
from ._grid import Grid as Grid
from ._grid import grid as grid
from ._health import AlgorithmError as AlgorithmError
from ._health import AlgorithmWarning as AlgorithmWarning
from ._hosts.http import HttpHost as HttpHost
from ._hosts.http import HttpModel as HttpModel
from ._hosts.sim import SimHost as SimHost
from ._metrics import UngradedWarning as UngradedWarning
from ._models import Answer as Answer
from ._models import Boolean as Boolean
from ._models import Choice as Choice
from ._models import DecisionRequest as DecisionRequest
from ._models import DecisionResponse as DecisionResponse
from ._models import GroundTruth as GroundTruth
from ._models import Outcome as Outcome
from ._models import Request as Request
from ._models import Response as Response
from ._models import Score as Score
from ._models import Usage as Usage
from ._models import answered as answered
from ._models import ask_good_enough as ask_good_enough
from ._models import route_to as route_to
from ._race import Started as Started
from ._race import first as first
from ._race import first_ok as first_ok
from ._race import hedge as hedge
from ._race import start as start
from ._race import timeout as timeout
from ._race import wait_first as wait_first
from ._results import Comparison as Comparison
from ._results import Result as Result
from ._runner import acompare as acompare
from ._runner import arun as arun
from ._runner import compare as compare
from ._runner import run as run
from ._static import static as static
from ._stream import Chunk as Chunk
from ._stream import ModelStream as ModelStream
from ._sweep import Sweep as Sweep
from ._sweep import sweep as sweep
from ._truth import peek_truth as peek_truth
from ._viz.load import offered_load as offered_load
from ._viz.load import plot_load as plot_load
from .datasets._traces import Trace as Trace
from .sessions._plan import Session as Session
from .sessions._plan import Turn as Turn

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
