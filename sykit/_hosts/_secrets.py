"""API keys for the HTTP host: where a key comes from, and keeping it out of everything shown.

A key is read once, from an argument or an environment variable, checked to be printable ASCII
(what an HTTP header can carry; a shell often leaves whitespace behind), and wrapped in
:class:`Secret`, whose repr is ``'***'``. :func:`scrub` removes the raw keys, and every escaped
spelling a body can give them (JSON ``\\/``, ``\\u0073``; URL ``%73``; HTML ``&#x2F;``, ``&#47;``,
``&sol;``, as a proxy's 401 page may echo a key), from any text (error bodies, exception messages,
log lines) before it reaches a record, a log line or a DataFrame; :func:`scrub_json` does the same
to every string of a decoded JSON value, so an escape that slipped past cannot decode into a key.

A key is never pickled: a :class:`Secret` read from an environment variable pickles as the name of
that variable (the unpickled copy reads it again), and one given as a value refuses to pickle.
"""

from __future__ import annotations

import html.entities
import logging
import os
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, TypeVar

from sykit._base.errors import ArgumentError, ArgumentTypeError

__all__ = [
    "LogScrubber",
    "Secret",
    "env_key",
    "mask_keys",
    "raw_keys",
    "read_key",
    "redact_url",
    "scrub",
    "scrub_json",
    "without_keys",
]

_ESCAPED_QUOTES = "/\\\"'"


def _named_entities() -> dict[str, tuple[str, ...]]:
    """Each printable ASCII character's HTML named references (``/``: ``&sol;``; ``+``:
    ``&plus;``), with the legacy ones that need no semicolon (``&amp``)."""
    names: dict[str, list[str]] = {}
    for name, value in html.entities.html5.items():
        if len(value) == 1 and 32 < ord(value) < 127:
            names.setdefault(value, []).append(name)
    return {c: tuple(sorted(n, key=len, reverse=True)) for c, n in names.items()}


_NAMED_ENTITIES = _named_entities()


class Secret:
    """An API key: its repr and str are ``'***'``, so it cannot slip into a log line or a DataFrame.

    ``env`` names the environment variable the key was read from. Pickling keeps only that name,
    and the unpickled key reads the variable again (where it is unset, using the key raises
    :class:`ArgumentError`); a key given as a value raises ``TypeError`` instead of being written
    into the pickle. Copies share the key.
    """

    __slots__ = ("_env", "_pattern", "_value")

    def __init__(self, value: str | None, env: str | None = None) -> None:
        self._value = value
        self._env = env
        self._pattern: re.Pattern[str] | None = None

    @property
    def missing(self) -> bool:
        """True for a key unpickled where its environment variable is not set."""
        return self._value is None

    def reveal(self) -> str:
        if self._value is None:
            raise ArgumentError(self.missing_message())
        return self._value

    def missing_message(self) -> str:
        return (
            f"the API key of this host was read from the environment variable {self._env}, "
            f"which is not set in this process (keys are not pickled, only where they come from)"
        )

    def pattern(self) -> re.Pattern[str] | None:
        """A regex matching the key however a JSON, Python-repr or URL escape spells each char."""
        if self._value is None:
            return None
        if self._pattern is None:
            self._pattern = re.compile("".join(_char_pattern(c) for c in self._value))
        return self._pattern

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        if self._env is None:
            raise TypeError(
                "an API key given as api_key= is not pickled, so that it is never written to a "
                "file or sent to another process; give it as api_key_env= instead, and the "
                "unpickled host reads it from that environment variable"
            )
        return (_secret_from_env, (self._env,))

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self


def _hex(code: int, width: int) -> str:
    """``code`` as ``width`` hex digits, either case."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{code:0{width}x}")


def _char_pattern(c: str) -> str:
    """``c`` as itself or any escape of it: JSON and Python (``\\u002f``, ``\\x2f``, ``\\/``), URL
    (``%2F``, ``%u002F``) and HTML (``&#47;``, ``&#x2F;``, leading zeros and a missing semicolon
    too, and named references such as ``&sol;``)."""
    code = ord(c)
    forms = [
        re.escape(c),
        r"\\u" + _hex(code, 4),
        "%" + _hex(code, 2),
        "%[uU]" + _hex(code, 4),
        f"&#0*{code}(?:;|(?![0-9]))",
        "&#[xX]0*" + _hex(code, len(f"{code:x}")) + "(?:;|(?![0-9a-fA-F]))",
    ]
    if code < 256:
        forms.append(r"\\x" + _hex(code, 2))
    if c in _ESCAPED_QUOTES:
        forms.append(re.escape("\\" + c))
    forms.extend(re.escape("&" + name) for name in _NAMED_ENTITIES.get(c, ()))
    return "(?:" + "|".join(forms) + ")"


def env_key(env: str) -> str:
    """The environment variable ``env`` read as a key: stripped of the trailing newline that
    ``export KEY=$(cat file)`` leaves, ``""`` when it is unset."""
    return os.environ.get(env, "").strip()


def _secret_from_env(env: str) -> Secret:
    """A key unpickled: read again from its environment variable."""
    found = env_key(env)
    if not found:
        return Secret(None, env)
    return Secret(_clean_key(found, f"the environment variable {env}"), env)


def read_key(value: object, env: object, name: str) -> Secret | None:
    """The key from ``value``, else from the environment variable ``env``, else None."""
    if value is not None:
        if isinstance(value, Secret):
            if not value.missing:
                _clean_key(value.reveal(), name)
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
    found = env_key(env)
    return Secret(_clean_key(found, f"the environment variable {env}"), env) if found else None


def _clean_key(key: str, name: str) -> str:
    """``key``, if an HTTP header can carry it; the error never quotes any of it."""
    # A header with a control character or a non-ASCII one fails inside httpx, quoting the key.
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in key):
        raise ArgumentError(
            f"{name} contains whitespace or control characters; check how it was set"
        )
    if not key.isascii():
        count = sum(not c.isascii() for c in key)
        raise ArgumentError(
            f"{name} contains {count} non-ASCII character{'s' if count > 1 else ''}; an API key "
            "must be printable ASCII to go in an HTTP header (check for a pasted look-alike "
            "character such as a typographic dash or quote)"
        )
    return key


def scrub(text: str, secrets: Iterable[Secret]) -> str:
    """``text`` with every key in ``secrets``, plain or escaped, replaced by ``***`` (give the
    longest first)."""
    escaped = "\\" in text or "%" in text or "&" in text
    for secret in secrets:
        if secret.missing:
            continue
        key = secret.reveal()
        if key in text:
            text = text.replace(key, "***")
        if escaped:
            pattern = secret.pattern()
            assert pattern is not None
            text = pattern.sub("***", text)
    return text


def scrub_json(value: Any, secrets: Iterable[Secret]) -> Any:
    """A decoded JSON value with every key scrubbed from its strings (object keys included)."""
    secrets = tuple(secrets)
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub_json(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_json(v, secrets) for v in value]
    return value


#: What an API key looks like, to keep one passed by mistake (as a URL, a timeout, a model id) out of
#: an error: a provider prefix (``sk-``, ``sk-proj-``, ``sk-ant-``, ``gsk_``, ``xai-``, ``hf_``,
#: ``r8_``, ``pplx-``, ``AIza``) followed by a token, 20+ letters and digits mixing upper and lower
#: case and digits, 32+ hex digits (Azure-style keys) or any unbroken token of 40+ characters. A
#: model name such as ``Meta-Llama-3-70B-Instruct`` is none of these.
_KEY_SHAPES = re.compile(
    r"""(?x)
    (?<![A-Za-z0-9_\-])(?:
        (?:sk|pk|rk|gsk|xai|pplx|hf|r8|key|sess)[-_][A-Za-z0-9_\-]{8,}
      | AIza[A-Za-z0-9_\-]{20,}
      | (?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{20,}
      | [0-9a-fA-F]{32,}
      | [A-Za-z0-9_\-]{40,}
    )(?![A-Za-z0-9_\-])
    """
)


def mask_keys(text: str, keys: Iterable[str] = ()) -> str:
    """``text`` with each of ``keys`` (the raw keys held, longest first) and anything shaped like
    an API key replaced by ``***``: for an error that would quote an argument's value."""
    for key in sorted((k for k in keys if k), key=len, reverse=True):
        if len(key) >= 8:
            text = text.replace(key, "***")
        else:  # a short key (a local server's "token"): only where it stands alone
            text = re.sub(rf"(?<![A-Za-z0-9_\-]){re.escape(key)}(?![A-Za-z0-9_\-])", "***", text)
    return _KEY_SHAPES.sub("***", text)


def raw_keys(*given: object) -> list[str]:
    """The keys among ``given`` (strings, :class:`Secret` s, environment variables' values)."""
    keys: list[str] = []
    for value in given:
        if isinstance(value, Secret):
            if not value.missing:
                keys.append(value.reveal())
        elif isinstance(value, str) and value:
            keys.append(value)
    return keys


_Failure = TypeVar("_Failure", bound=Exception)


def without_keys(failure: _Failure, keys: Sequence[str]) -> _Failure:
    """A fresh error of ``failure``'s type whose message quotes neither ``keys`` nor anything
    shaped like a key; fresh, so that no ``__context__`` (an httpx error quoting a URL) keeps it."""
    return type(failure)(mask_keys(str(failure), keys))


def redact_url(url: str) -> str:
    """``url`` with anything before an ``@`` (user and password) shown as ``***``."""
    if "@" not in url:
        return url
    head, _, tail = url.rpartition("@")
    scheme, slashes, _ = head.partition("//")
    return f"{scheme}//***@{tail}" if slashes else f"***@{tail}"


_HTTP_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)


class LogScrubber(logging.Filter):
    """Scrubs the keys of every open HTTP session from httpx and httpcore log records.

    At DEBUG, httpcore logs response headers, so a server that echoes a key in a header would
    print it. The filter sits on those loggers only while some session is open (a logger's
    filters do not see its children's records, so each known logger gets it).
    """

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _sessions: ClassVar[dict[int, tuple[Secret, ...]]] = {}
    _active: ClassVar[tuple[Secret, ...]] = ()  # replaced whole, so a record reads it unlocked

    @classmethod
    def attach(cls, secrets: tuple[Secret, ...]) -> int:
        """Scrub ``secrets`` from the HTTP loggers until :meth:`detach` with the token returned."""
        with cls._lock:
            if not cls._sessions:
                for name in _logger_names():
                    logging.getLogger(name).addFilter(_FILTER)
            token = max(cls._sessions, default=0) + 1
            cls._sessions[token] = secrets
            cls._update()
            return token

    @classmethod
    def detach(cls, token: int) -> None:
        with cls._lock:
            if cls._sessions.pop(token, None) is None:
                return
            cls._update()
            if not cls._sessions:
                for name in _logger_names():
                    logging.getLogger(name).removeFilter(_FILTER)

    @classmethod
    def _update(cls) -> None:
        every = {s for group in cls._sessions.values() for s in group if not s.missing}
        cls._active = tuple(sorted(every, key=lambda s: len(s.reveal()), reverse=True))

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self._active
        if not secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:
            message = f"{record.msg!s} {record.args!r}"
        clean = scrub(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def _logger_names() -> list[str]:
    """The httpx and httpcore loggers, the known ones and any created since."""
    existing = [
        name
        for name in logging.Logger.manager.loggerDict
        if name.startswith(("httpx.", "httpcore."))
    ]
    return sorted(set(_HTTP_LOGGERS).union(existing))


_FILTER = LogScrubber()
