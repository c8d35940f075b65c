"""Every door an API key could leak through, each tried with a hostile server that echoes the key
back: escaped in a JSON error body, in a stream's error event, in a response header (which httpcore
logs at DEBUG). Also keys that cannot go in a header, URLs with credentials, and pickles."""

from __future__ import annotations

import copy
import html
import json
import logging
import pickle
import re
import threading
import urllib.parse
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import sykit as sy
from sykit._hosts._secrets import LogScrubber
from sykit._hosts.http import HttpHost, HttpModel

# A '/' so that JSON can escape it as '\/'; letters so that '\uXXXX' has hex letters to vary.
KEY = "sk-live/Abc-123+xyz_SECRET"
POLICY = sy.HostPolicy(max_retries=0, backoff_initial_s=0.01, cooldown_s=0, timeout_s=5.0)


def slash_escaped(key: str) -> str:
    return key.replace("/", "\\/")


def unicode_escaped(key: str) -> str:
    return "".join(f"\\u{ord(c):04X}" if c.isalpha() else c for c in key)


def leaked_forms(key: str) -> list[str]:
    """The key and the spellings a JSON decoder would turn back into it."""
    return [key, slash_escaped(key), unicode_escaped(key), unicode_escaped(key).lower()]


def html_spelled(key: str) -> str:
    """The key as an HTML page may echo it: '/' and '+' as named, hex and decimal references."""
    return key.replace("/", "&sol;", 1).replace("+", "&#x2B;", 1).replace("-", "&#45;", 1)


def url_spelled(key: str) -> str:
    return urllib.parse.quote(key, safe="")  # '/' as %2F, '+' as %2B


def decoded(text: str) -> str:
    """``text`` with every HTML reference, URL escape and JSON escape undone (nested ones too)."""
    for _ in range(3):
        text = html.unescape(text)
        text = re.sub(r"%u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), text)
        text = urllib.parse.unquote(text)
        text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), text)
        text = text.replace("\\/", "/")
    return text


def _completion(text: str) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }


class _Hostile(BaseHTTPRequestHandler):
    """Answers as the model name says, quoting back whatever key it was sent."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        model = body.get("model")
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        self.server.seen.append(model)  # type: ignore[attr-defined]
        if model == "escaped-401":
            # Written by hand: json.dumps escapes neither '/' nor ASCII letters.
            raw = (
                '{"error": {"message": "Incorrect API key provided: '
                + slash_escaped(key)
                + " (also known as "
                + unicode_escaped(key)
                + ')", "code": "invalid_api_key"}}'
            )
            self._send(401, raw.encode(), "application/json")
        elif model == "html-401":
            page = (
                "<html><body><h1>401 Unauthorized</h1><p>Bad key "
                + html_spelled(key)
                + "</p></body></html>"
            )
            self._send(401, page.encode(), "text/html")
        elif model == "url-401":
            self._send(401, f"invalid key={url_spelled(key)}".encode(), "text/plain")
        elif model == "stream-error":
            event = '{"error": {"message": "bad key ' + slash_escaped(key) + '"}}'
            self._send(200, f"data: {event}\n\n".encode(), "text/event-stream")
        elif model == "echo-header":
            payload = json.dumps(_completion("hello")).encode()
            self._send(200, payload, "application/json", {"X-Echo-Authorization": f"Bearer {key}"})
        else:
            self._send(200, json.dumps(_completion("hello")).encode(), "application/json")

    def _send(
        self, status: int, payload: bytes, content_type: str, headers: dict | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def hostile() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def base_url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def one_call(model: str):
    async def algorithm(request, driver):
        return sy.answered(model, await driver.call_model(request, [model]))

    return algorithm


# -- 1. escaped keys in decoded bodies ------------------------------------------------------------


@pytest.mark.parametrize(("model", "stream"), [("escaped-401", False), ("stream-error", True)])
def test_an_escaped_key_in_an_error_body_is_scrubbed_once_decoded(hostile, model, stream):
    host = HttpHost(base_url(hostile), api_key=KEY, models=[model], policy=POLICY, stream=stream)
    messages: list[str] = []

    async def algorithm(request, driver):
        try:
            await driver.call_model(request, [model])
        except sy.ModelError as error:
            messages.extend([str(error), repr(error), error.message or ""])
            raise
        return sy.route_to(model, request)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = sy.run(algorithm, ["q"], host=host)
    (message,) = result.attempts["error_message"]
    assert "***" in message
    if model == "escaped-401":
        assert result.attempts["http_status"].iloc[0] == 401
    texts = [
        result.attempts.to_csv(),
        result.requests.to_csv(),
        repr(result),
        *messages,
        *(str(w.message) for w in caught),
    ]
    assert messages
    for text in texts:
        for form in leaked_forms(KEY):
            assert form not in text, (form, text)


#: The key with a '/' and a '+' spelled every way a JSON, URL or HTML body can spell them.
SPELLINGS = {
    "html named": KEY.replace("/", "&sol;").replace("+", "&plus;").replace("_", "&lowbar;"),
    "html hex": KEY.replace("/", "&#x2F;").replace("+", "&#X2b;"),
    "html decimal": KEY.replace("/", "&#47;").replace("+", "&#43;"),
    "html zero-padded, no semicolon": KEY.replace("/", "&#0047").replace("+", "&#x002B"),
    "html every char": "".join(f"&#{ord(c)};" for c in KEY),
    "url": url_spelled(KEY),
    "url lower case": KEY.replace("/", "%2f").replace("+", "%2b"),
    "url %u": KEY.replace("/", "%u002F").replace("+", "%u002b"),
    "json": slash_escaped(KEY).replace("+", "\\u002b"),
    "json every char": "".join(f"\\u{ord(c):04x}" for c in KEY),
    "mixed": KEY.replace("/", "&#x2f;").replace("+", "%2B").replace("A", "\\u0041"),
}


@pytest.mark.parametrize("spelled", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_every_spelling_of_a_key_a_body_can_carry_is_scrubbed(spelled):
    from sykit._hosts._secrets import Secret, scrub

    assert decoded(spelled) == KEY
    text = scrub(f"<p>Incorrect API key: {spelled} (401)</p>", [Secret(KEY)])
    assert text == "<p>Incorrect API key: *** (401)</p>"


def test_scrubbing_html_leaves_other_references_alone():
    from sykit._hosts._secrets import Secret, scrub

    text = "a &amp; b &#471; &sol;x"
    assert scrub(text, [Secret("/")]) == "a &amp; b &#471; ***x"


@pytest.mark.parametrize("model", ["html-401", "url-401"])
def test_a_key_spelled_in_an_html_or_url_encoded_error_body_is_scrubbed(hostile, model):
    host = HttpHost(base_url(hostile), api_key=KEY, models=[model], policy=POLICY)
    messages: list[str] = []

    async def algorithm(request, driver):
        try:
            await driver.call_model(request, [model])
        except sy.ModelError as error:
            messages.extend([str(error), repr(error), error.message or ""])
            raise
        return sy.route_to(model, request)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = sy.run(algorithm, ["q"], host=host)
    (message,) = result.attempts["error_message"]
    assert "***" in message
    assert result.attempts["http_status"].iloc[0] == 401
    texts = [
        result.attempts.to_csv(),
        result.requests.to_csv(),
        repr(result),
        *messages,
        *(str(w.message) for w in caught),
    ]
    assert messages
    for text in texts:
        assert KEY not in text and KEY not in decoded(text), text


# -- 2. keys a header cannot carry ----------------------------------------------------------------

NON_ASCII_KEY = "sk-proj-Zq8\u2013ünïcødé-7Kx"  # an en dash, as a paste from a web page leaves


def _parts(key: str, size: int = 4) -> list[str]:
    return [key[i : i + size] for i in range(len(key) - size + 1)]


def _assert_quotes_none_of(text: str, key: str) -> None:
    for part in _parts(key):
        assert part not in text, (part, text)


def test_a_non_ascii_key_is_refused_up_front_without_quoting_it(hostile, monkeypatch):
    before = len(hostile.seen)
    with pytest.raises(sy.ArgumentError, match="non-ASCII") as raised:
        HttpHost(base_url(hostile), api_key=NON_ASCII_KEY, models=["ok"], policy=POLICY)
    _assert_quotes_none_of(str(raised.value), NON_ASCII_KEY)
    _assert_quotes_none_of(repr(raised.value), NON_ASCII_KEY)

    with pytest.raises(sy.ArgumentError, match="non-ASCII") as raised:
        HttpModel(api_key=NON_ASCII_KEY)
    _assert_quotes_none_of(str(raised.value), NON_ASCII_KEY)

    monkeypatch.setenv("SYKIT_TEST_UNICODE_KEY", NON_ASCII_KEY)
    with pytest.raises(sy.ArgumentError, match="SYKIT_TEST_UNICODE_KEY") as raised:
        HttpHost(
            base_url(hostile), api_key_env="SYKIT_TEST_UNICODE_KEY", models=["ok"], policy=POLICY
        )
    _assert_quotes_none_of(str(raised.value), NON_ASCII_KEY)
    with pytest.raises(sy.ArgumentError, match="non-ASCII"):
        HttpHost(
            base_url(hostile),
            models={"m": HttpModel(api_key_env="SYKIT_TEST_UNICODE_KEY")},
            api_key_env=None,
        )
    assert len(hostile.seen) == before  # nothing was sent


# -- 3. URLs with credentials ---------------------------------------------------------------------

URL_SECRET = "sk-in-the-url-42"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"https://user:{URL_SECRET}@host/v1", "https://***@host/v1"),
        (f"ftp://user:{URL_SECRET}@host/v1", "ftp://***@host/v1"),
        (f"https://user:{URL_SECRET}@host:notaport/v1", "https://***@host:notaport/v1"),
        (f"https://user:{URL_SECRET}@/v1", "https://***@/v1"),
        (f"https://{URL_SECRET}@pass@host/v1", "https://***@host/v1"),
    ],
)
def test_a_url_with_credentials_is_shown_redacted(url, shown):
    for make in (
        lambda: HttpHost(url, models=["m"], api_key_env=None),
        lambda: HttpModel(base_url=url),
        lambda: HttpHost("http://x/v1", models={"m": HttpModel(base_url=url)}, api_key_env=None),
    ):
        with pytest.raises(sy.ArgumentError) as raised:
            make()
        assert URL_SECRET not in str(raised.value) and URL_SECRET not in repr(raised.value)
        assert shown in str(raised.value)


def test_a_url_that_is_not_a_string_is_shown_redacted():
    with pytest.raises(sy.ArgumentTypeError) as raised:
        HttpHost(f"https://u:{URL_SECRET}@host/v1".encode(), models=["m"], api_key_env=None)
    assert URL_SECRET not in str(raised.value) and "***@host" in str(raised.value)


# -- 4. httpx / httpcore DEBUG logs ----------------------------------------------------------------


def test_a_key_echoed_in_a_response_header_is_scrubbed_from_debug_logs(hostile, caplog):
    caplog.set_level(logging.DEBUG)
    host = HttpHost(base_url(hostile), api_key=KEY, models=["echo-header"], policy=POLICY)
    result = sy.run(one_call("echo-header"), ["q"], host=host)
    assert result.requests["status"].iloc[0] == "ok"
    headers_logged = [r for r in caplog.records if "x-echo-authorization" in r.getMessage().lower()]
    assert headers_logged, "httpcore did not log the response headers"
    for form in leaked_forms(KEY):
        assert form not in caplog.text
    assert "Bearer ***" in caplog.text
    # Only while a session is open: afterwards the loggers are as they were.
    for name in ("httpx", "httpcore", "httpcore.http11", "httpcore.connection"):
        assert not any(isinstance(f, LogScrubber) for f in logging.getLogger(name).filters)


# -- 5. pickles -----------------------------------------------------------------------------------


def test_a_host_holding_a_key_refuses_to_pickle_without_writing_it(hostile):
    host = HttpHost(base_url(hostile), api_key=KEY, models=["ok"], policy=POLICY)
    with pytest.raises(TypeError, match="api_key_env") as raised:
        pickle.dumps(host)
    assert KEY not in str(raised.value)
    per_model = HttpHost(
        base_url(hostile), models={"ok": HttpModel(api_key=KEY)}, api_key_env=None, policy=POLICY
    )
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(per_model)
    copied = copy.deepcopy(host)  # copies in memory share the key
    assert copied.scrub(KEY) == "***"


def test_a_key_from_the_environment_pickles_as_the_variables_name(hostile, monkeypatch):
    monkeypatch.setenv("SYKIT_TEST_PICKLED_KEY", KEY)
    host = HttpHost(
        base_url(hostile), api_key_env="SYKIT_TEST_PICKLED_KEY", models=["ok"], policy=POLICY
    )
    data = pickle.dumps(host)
    for form in leaked_forms(KEY):
        assert form.encode() not in data
    assert b"SYKIT_TEST_PICKLED_KEY" in data

    again = pickle.loads(data)
    assert again.scrub(f"key={KEY}") == "key=***"
    assert sy.run(one_call("ok"), ["q"], host=again).requests["status"].iloc[0] == "ok"

    monkeypatch.delenv("SYKIT_TEST_PICKLED_KEY")
    keyless = pickle.loads(data)
    with pytest.raises(sy.ArgumentError, match=r"SYKIT_TEST_PICKLED_KEY.*not set"):
        sy.run(one_call("ok"), ["q"], host=keyless)
