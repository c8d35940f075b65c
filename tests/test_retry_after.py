"""Retry-After in every spelling: how sykit reads it for its own retries, how the FakeProvider
sends it, and how litellm_like reads it as LiteLLM's Router does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

import sykit as sy
from sykit._base.retry_after import RetryAfter, read_retry_after
from sykit.strategies._litellm_errors import _litellm_retry_after
from sykit.testing import FakeModel, FakeProvider

NOW = datetime(2026, 10, 21, 7, 28, 0, 300_000, tzinfo=UTC)  # 0.3 s into a second


def http_date(when: datetime) -> str:
    return format_datetime(when.replace(microsecond=0), usegmt=True)


# -- reading the headers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"RETRY-AFTER": " 3 "}, 3.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "1500", "Retry-After": "3"}, 1.5),  # OpenAI's client: ms first
        ({"retry-after-ms": "soon", "Retry-After": "3"}, 3.0),  # unusable ms: Retry-After
        ({"retry-after-ms": "-5", "Retry-After": "3"}, 3.0),
        ({"Retry-After": "-1"}, None),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "inf"}, None),
        ({"Retry-After": "later"}, None),
    ],
)
def test_seconds_and_milliseconds(headers, seconds):
    read = read_retry_after(headers, NOW)
    assert read is not None and read.seconds == seconds
    assert read.date_s is None


def test_no_retry_after_header_reads_as_none():
    assert read_retry_after(None) is None
    assert read_retry_after({}) is None
    assert read_retry_after({"Date": http_date(NOW), "X-Other": "1"}) is None


def test_a_date_is_measured_against_the_responses_date_header():
    sent = NOW.replace(microsecond=0)
    headers = {"Date": http_date(sent), "Retry-After": http_date(sent + timedelta(seconds=4))}
    read = read_retry_after(headers, NOW)
    assert read == RetryAfter(seconds=4.0, header=headers["Retry-After"], date_s=3.7)
    # the reading does not depend on when it is read, date_s does
    later = read_retry_after(headers, NOW + timedelta(seconds=1))
    assert later is not None and later.seconds == 4.0 and later.date_s == pytest.approx(2.7)


def test_a_date_without_a_date_header_is_measured_against_the_clock():
    headers = {"Retry-After": http_date(NOW + timedelta(seconds=4))}  # 07:28:04
    read = read_retry_after(headers, NOW)
    assert read is not None and read.seconds == pytest.approx(3.7) == read.date_s
    wall = read_retry_after({"Retry-After": http_date(datetime.now(UTC) + timedelta(seconds=10))})
    assert wall is not None and 8.9 < wall.seconds <= 10.0  # the current time by default


def test_a_date_in_the_past_is_no_wait_and_retry_after_ms_still_wins():
    past = {"Retry-After": http_date(NOW - timedelta(seconds=30))}
    read = read_retry_after(past, NOW)
    assert read is not None and read.seconds == 0.0 and read.date_s == pytest.approx(-30.3)
    both = {**past, "retry-after-ms": "250", "Date": http_date(NOW)}
    read = read_retry_after(both, NOW)
    assert read is not None and read.seconds == 0.25 and read.date_s == pytest.approx(-30.3)


@pytest.mark.parametrize("status", [429, 503, 529])
def test_classify_keeps_the_headers_as_sent_beside_the_reading(status):
    headers = {"retry-after-ms": "3000", "Retry-After": "1"}
    error = sy.errors.classify(status, {"error": {"message": "slow down"}}, headers)
    assert error is not None and error.retry_after_s == 3.0
    assert error.retry_after == RetryAfter(seconds=3.0, header="1", ms="3000")
    assert sy.errors.classify(status, "x").retry_after is None


# -- the FakeProvider sends each spelling ----------------------------------------------------------


def test_the_fake_model_spells_retry_after_as_asked():
    at = NOW.timestamp()
    assert FakeModel(retry_after_s=2).retry_after_headers(at) == {"Retry-After": "2"}
    dated = FakeModel(retry_after_s=4, retry_after_as="date").retry_after_headers(at)
    assert dated == {
        "Date": "Wed, 21 Oct 2026 07:28:00 GMT",
        "Retry-After": "Wed, 21 Oct 2026 07:28:04 GMT",
    }
    both = FakeModel(retry_after_s=1, retry_after_ms=3000).retry_after_headers(at)
    assert both == {"Retry-After": "1", "retry-after-ms": "3000"}
    alone = FakeModel(retry_after_s=None, retry_after_ms=250).retry_after_headers(at)
    assert alone == {"retry-after-ms": "250"}
    assert FakeModel(retry_after_s=None).retry_after_headers(at) == {}


def test_the_fake_model_refuses_an_unknown_spelling():
    with pytest.raises(sy.ArgumentError, match="retry_after_as must be one of"):
        FakeModel(retry_after_as="minutes")
    with pytest.raises(sy.ArgumentError, match="retry_after_ms"):
        FakeModel(retry_after_ms=-1)


def test_the_fake_provider_sends_each_spelling_with_a_date_header():
    models = {
        "dated": FakeModel(fault="fail-429", retry_after_s=4, retry_after_as="date"),
        "ms": FakeModel(fault="fail-429", retry_after_s=1, retry_after_ms=3000),
    }
    body = {"messages": [{"role": "user", "content": "hi"}]}
    with FakeProvider(models) as fake:
        dated = httpx.post(f"{fake.base_url}/chat/completions", json={**body, "model": "dated"})
        ms = httpx.post(f"{fake.base_url}/chat/completions", json={**body, "model": "ms"})
        ok = httpx.post(f"{fake.base_url}/chat/completions", json={**body, "model": "fine"})
    assert dated.status_code == 429
    read = read_retry_after(dated.headers)
    assert read is not None and read.seconds == 4.0  # exactly, from the Date header
    assert read.date_s is not None and 3.0 < read.date_s < 4.0  # a little less by the clock
    assert (ms.headers["retry-after"], ms.headers["retry-after-ms"]) == ("1", "3000")
    assert ok.status_code == 200 and "date" in ok.headers  # every answer has a Date


# -- sykit's own retries wait the same reading on an HttpHost --------------------------------------


@pytest.mark.parametrize(
    ("fake_model", "wait_s"),
    [
        (FakeModel(fault="fail-429-once", retry_after_s=0.3), 0.3),
        (FakeModel(fault="fail-429-once", retry_after_s=1, retry_after_as="date"), 1.0),
        (FakeModel(fault="fail-429-once", retry_after_s=None, retry_after_ms=300), 0.3),
        (FakeModel(fault="fail-429-once", retry_after_s=2, retry_after_ms=300), 0.3),
    ],
    ids=["seconds", "date", "ms", "ms-and-seconds"],
)
def test_the_host_policy_waits_what_each_spelling_asks(fake_model, wait_s):
    policy = sy.HostPolicy(max_retries=1, backoff_initial_s=0.01, cooldown_s=0, timeout_s=5.0)
    with FakeProvider({"m": fake_model}) as fake:
        host = sy.HttpHost(fake.base_url, models=["m"], api_key="x", policy=policy)
        result = sy.run(sy.strategies.single("m"), ["q"], host=host)
    first, second = result.attempts.sort_values("start_s").to_dict("records")
    assert (first["http_status"], first["retried"], second["status"]) == (429, True, "ok")
    # a date 1 s after the Date header waits 1 s, not the 0.1-1 s left by the clock
    assert wait_s * 0.95 <= second["start_s"] - first["end_s"] < wait_s + 0.25


# -- litellm_like reads Retry-After as LiteLLM does ------------------------------------------------


def rate_limited(**retry_after) -> sy.RateLimitError:
    return sy.RateLimitError("slow down", retry_after=RetryAfter(**retry_after))


@pytest.mark.parametrize(
    ("error", "seconds"),
    [
        (rate_limited(seconds=2.0, header="2"), 2),
        (rate_limited(seconds=2.0, header=" 2 "), 2),
        (rate_limited(seconds=90.0, header="90"), 90),
        (rate_limited(seconds=None, header="9" * 400), 2**63),  # as LiteLLM bounds it
        (rate_limited(seconds=0.0, header="0"), 0),
        (rate_limited(seconds=0.5, header="0.5"), None),  # int("0.5") fails
        (rate_limited(seconds=1.0, header="1.0"), None),
        (rate_limited(seconds=None, header="soon"), None),
        (rate_limited(seconds=4.0, header="Wed, 21 Oct 2026 07:28:04 GMT", date_s=3.7), 3),
        (rate_limited(seconds=0.0, header="Wed, 21 Oct 2026 07:27:00 GMT", date_s=-60.3), -60),
        (rate_limited(seconds=3.0, ms="3000"), None),  # retry-after-ms is never read
        (rate_limited(seconds=3.0, header="1", ms="3000"), 1),
        (sy.RateLimitError("made by hand", retry_after_s=2.0), 2),
        (sy.RateLimitError("made by hand", retry_after_s=2.5), None),
        (sy.RateLimitError("made by hand"), None),
    ],
)
def test_litellm_reads_retry_after_alone_with_int_or_as_a_date_by_its_clock(error, seconds):
    assert _litellm_retry_after(error) == seconds


def test_litellm_like_waits_what_it_reads_and_any_waits_sykits_reading():
    error = rate_limited(seconds=3.0, header="1", ms="3000")
    like = sy.strategies.litellm_like(["a", "b"])
    waits = [like._wait_s(error, 0, u) for u in (0.0, 0.5)]
    assert waits == [1.0, 1.375]  # Retry-After: 1 plus the jitter, not the 3 s of retry-after-ms
    anything = sy.strategies.litellm_like(["a", "b"], retry_after="any")
    assert anything._wait_s(error, 0, 0.0) == 3.0
    ignoring = sy.strategies.litellm_like(["a", "b"], retry_after="ignore")
    assert ignoring._wait_s(error, 0, 0.0) == 0.5  # the backoff
