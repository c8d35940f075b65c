"""API keys for the HTTP host: where a key comes from, and keeping it out of everything shown.

A key is read once, from an argument or an environment variable, checked for the whitespace and
control characters a shell leaves behind, and wrapped in :class:`Secret`, whose repr is ``'***'``.
:func:`scrub` removes the raw keys from any text (error bodies, exception messages) before it
reaches a record, a log line or a DataFrame.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .._errors import ArgumentError, ArgumentTypeError

__all__ = ["Secret", "read_key", "scrub"]


class Secret:
    """An API key: its repr and str are ``'***'``, so it cannot slip into a log line or a DataFrame."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__


def read_key(value: object, env: object, name: str) -> Secret | None:
    """The key from ``value``, else from the environment variable ``env``, else None."""
    if value is not None:
        if isinstance(value, Secret):
            return value
        if not isinstance(value, str) or not value:
            raise ArgumentTypeError(f"{name} must be a non-empty string or None")
        return Secret(_clean_key(value, name))
    if env is None:
        return None
    if not isinstance(env, str) or not env:
        raise ArgumentTypeError(
            f"{name}_env must be the name of an environment variable or None, got {env!r}"
        )
    found = os.environ.get(env, "").strip()  # a trailing newline from `export KEY=$(cat file)`
    return Secret(_clean_key(found, f"the environment variable {env}")) if found else None


def _clean_key(key: str, name: str) -> str:
    # A header with a control character would fail inside httpx, quoting the key in its message.
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in key):
        raise ArgumentError(
            f"{name} contains whitespace or control characters; check how it was set"
        )
    return key


def scrub(text: str, secrets: Iterable[Secret]) -> str:
    """``text`` with every key in ``secrets`` replaced by ``***`` (give the longest first)."""
    for secret in secrets:
        key = secret.reveal()
        if key in text:
            text = text.replace(key, "***")
    return text
