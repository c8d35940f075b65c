"""Every error and warning sykit raises, and the classifier that turns an HTTP answer into one.

Every sykit error derives from :class:`SykitError`. Model failures derive from :class:`ModelError`
and carry a ``kind`` string that lands in the ``error_kind`` column; usage errors also derive from
the builtin they resemble, so ``except ValueError`` keeps working::

    SykitError
    ├── ModelError                      a call to a model or judge failed (.kind, .model, .http_status)
    │   ├── ContextWindowError          kind "context_window"  HTTP 400, input too long for the model
    │   ├── CapabilityError             kind "capability"      HTTP 400, the model cannot take this input
    │   ├── PolicyError                 kind "policy"          HTTP 400 content_policy_violation
    │   ├── InvalidRequestError         kind "invalid_request" any other 4xx: terminal
    │   ├── RateLimitError              kind "rate_limit"      HTTP 429 (.retry_after_s)
    │   ├── UnavailableError            kind "unavailable"     403, 408, 5xx, transport (.retry_after_s)
    │   ├── ModelTimeout                kind "timeout"         no answer before the per-call deadline
    │   └── InvalidResponseError        kind "invalid_response" a 2xx whose body is not usable
    ├── ArgumentError (ValueError)      an argument or setting has a value sykit cannot use
    ├── ArgumentTypeError (TypeError)   an argument or setting has the wrong type
    ├── NoTargets (ValueError)          call_model() was given no model
    ├── UnknownModel (ValueError)       a model name the host does not have
    ├── SimDeadlock (RuntimeError)      every simulated task waits and no timer is pending
    ├── RequestClosed (RuntimeError)    a call through the driver of a request that has finished
    ├── RequestHorizon (RuntimeError)   a request's algorithm waited past its virtual-time horizon
    ├── SwallowedCancellation (RuntimeError)  an algorithm swallowed the cancellations stopping it
    ├── AlgorithmError (RuntimeError)   strict=True: most requests failed on the algorithm's side
    ├── RealIOError (RuntimeError)      real network I/O attempted on the virtual-time loop
    └── RecordLimit (RuntimeError)      more calls, races or models than the records can number
    AlgorithmWarning (UserWarning)      most requests failed on the algorithm's side: a bug
    UngradedWarning (UserWarning)       some served answers have no grade in the dataset

The errors a routing algorithm catches are also at the top level: ``sy.ModelError`` and
``sy.errors.ModelError`` are one object, two spellings (likewise every class above but
``RealIOError``, ``RecordLimit``, ``RequestHorizon``, ``SwallowedCancellation`` and
``UngradedWarning``, which live here only).

Cancellation is never an error: a cancelled call raises ``asyncio.CancelledError`` (a
``BaseException``), which ``except Exception`` does not swallow.

One classifier serves every host, simulated or real, so a rule (which 400 is an overflow, which
status is retried) behaves the same in simulation and against real endpoints:

    sy.errors.classify(429, {"error": {"message": "slow down"}}, {"retry-after": "2"})
    sy.errors.fallback_reason(error)      # why the candidate loop may move on, or None (terminal)
"""

from sykit._base.errors import (
    ArgumentError,
    ArgumentTypeError,
    CapabilityError,
    ContextWindowError,
    InvalidRequestError,
    InvalidResponseError,
    ModelError,
    ModelTimeout,
    NoTargets,
    PolicyError,
    RateLimitError,
    RealIOError,
    RecordLimit,
    SimDeadlock,
    SykitError,
    UnavailableError,
    UnknownModel,
)
from sykit._results.health import AlgorithmError, AlgorithmWarning
from sykit._results.metrics import UngradedWarning
from sykit._run.driver import RequestClosed, RequestHorizon, SwallowedCancellation
from sykit._world.classify import FallbackReason, classify, fallback_reason

__all__ = [
    "AlgorithmError",
    "AlgorithmWarning",
    "ArgumentError",
    "ArgumentTypeError",
    "CapabilityError",
    "ContextWindowError",
    "FallbackReason",
    "InvalidRequestError",
    "InvalidResponseError",
    "ModelError",
    "ModelTimeout",
    "NoTargets",
    "PolicyError",
    "RateLimitError",
    "RealIOError",
    "RecordLimit",
    "RequestClosed",
    "RequestHorizon",
    "SimDeadlock",
    "SwallowedCancellation",
    "SykitError",
    "UnavailableError",
    "UngradedWarning",
    "UnknownModel",
    "classify",
    "fallback_reason",
]

# Reprs, pickles and tracebacks say sykit.errors.RecordLimit; the errors also at the top level
# say sykit.ModelError (sykit/__init__.py sets those).
for _obj in (FallbackReason, RealIOError, RecordLimit, UngradedWarning, classify, fallback_reason):
    _obj.__module__ = __name__
del _obj
