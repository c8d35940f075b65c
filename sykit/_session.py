"""Former home of the session plan, now ``sykit.sessions._plan``; kept for _lifecycle and _runner."""

from .sessions._plan import Session, SessionPlan, Turn, flatten_sessions  # noqa: F401
