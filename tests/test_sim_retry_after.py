"""Retry-After in every spelling on the SimHost (``retry_after_as``, ``retry_after_ms`` on
sy.Faults, sy.faults.ErrorFault and sy.faults.RateLimit): the headers it sends on its virtual
wall clock, what sykit's retries and litellm_like wait, the same readings as the FakeProvider's
for the same settings, the defaults unchanged, and the engines agreeing."""

from __future__ import annotations

import math
import time
import warnings

import pandas.testing as pdt
import pytest
from helpers import run_both

import sykit as sy
from sykit._base.retry_after import RetryAfter
from sykit.strategies._litellm_errors import _litellm_retry_after
from sykit.testing import FakeModel, FakeProvider

ErrorFault = sy.faults.ErrorFault

ONE_RETRY = sy.HostPolicy(max_retries=1, cooldown_s=0)


def sim_host(faults: sy.Faults | None = None, policy=ONE_RETRY, **profile) -> sy.SimHost:
    settings = {"faults": faults or sy.Faults(), **profile}
    return sy.SimHost({"a": sy.ModelProfile(**settings), "b": sy.ModelProfile()}, policy=policy)


def first_error(host, model: str = "a") -> sy.ModelError:
    """The error of one attempt at ``model``, as an algorithm catches it from call_model."""
    caught: list[sy.ModelError] = []

    async def algorithm(request, driver):
        try:
            await driver.call_model(request, [model], max_retries=0)
        except sy.ModelError as error:
            caught.append(error)
        return sy.answered("ok", await driver.call_model(request, ["b"], max_retries=0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        sy.run(algorithm, ["q"], host=host, progress=False)
    (error,) = caught
    return error


def retry_wait(result: sy.Result) -> float:
    """The wait before the one retry of a run of one request, as the attempts record it."""
    first, second = result.attempts.sort_values("start_s").to_dict("records")
    assert first["retried"] and second["status"] == "ok"
    return first["retry_wait_s"]


def gap(result: sy.Result) -> float:
    """The time from the first attempt's end to the second's start."""
    first, second = result.attempts.sort_values("start_s").to_dict("records")[:2]
    return second["start_s"] - first["end_s"]


def scripted(**retry_after) -> sy.Faults:
    """A 429 on the first attempt, with these Retry-After settings."""
    return sy.Faults(fail_first=1, fail_first_status=429, **retry_after)


# -- the headers on the virtual wall clock --------------------------------------------------------


def test_each_spelling_reads_back_from_the_sim_hosts_headers():
    # the 429 leaves at 0.05 s of virtual time (reject_delay_s): in the epoch's first second
    seconds = first_error(sim_host(scripted(retry_after_s=2))).retry_after
    assert seconds == RetryAfter(seconds=2.0, header="2")
    dated = first_error(sim_host(scripted(retry_after_s=2, retry_after_as="date"))).retry_after
    assert dated == RetryAfter(seconds=2.0, header="Wed, 01 Jan 2025 00:00:02 GMT", date_s=1.95)
    alone = first_error(sim_host(scripted(retry_after_s=None, retry_after_ms=1500))).retry_after
    assert alone == RetryAfter(seconds=1.5, ms="1500")
    both = first_error(sim_host(scripted(retry_after_s=1, retry_after_ms=3000))).retry_after
    assert both == RetryAfter(seconds=3.0, header="1", ms="3000")
    assert first_error(sim_host(scripted(retry_after_s=None))).retry_after is None


def test_the_date_is_the_epoch_plus_the_virtual_time_in_whole_seconds():
    from sykit._world.faults import VIRTUAL_EPOCH, VIRTUAL_EPOCH_S

    assert VIRTUAL_EPOCH.timestamp() == VIRTUAL_EPOCH_S
    faults = sy.Faults(retry_after_s=3, retry_after_as="date")
    assert faults.retry_after_headers(VIRTUAL_EPOCH_S + 61.98) == {
        "date": "Wed, 01 Jan 2025 00:01:01 GMT",
        "retry-after": "Wed, 01 Jan 2025 00:01:04 GMT",
    }
    # an answer leaving 0.99 s into its second: the Date rounds down, the date is as far off
    late = first_error(
        sim_host(scripted(retry_after_s=2, retry_after_as="date"), reject_delay_s=0.99)
    )
    assert late.retry_after.seconds == 2.0 and late.retry_after.date_s == pytest.approx(1.01)
    assert late.retry_after.header == "Wed, 01 Jan 2025 00:00:02 GMT"
    # an error fault's date, on a retry some virtual seconds into the run
    error = ErrorFault(503, 1.0, retry_after_s=4, retry_after_as="date")
    result = run_both(
        sy.strategies.single("a"),
        ["q"],
        host=sim_host(sy.Faults(errors=[error]), reject_delay_s=0.3),
    )
    assert result.attempts["retry_wait_s"].tolist()[0] == 4.0
    assert result.attempts["start_s"].tolist() == [0.0, 4.3]


@pytest.mark.parametrize(
    ("retry_after_s", "wait_s"), [(2.7, 2.0), (1.5, 1.0), (0.5, 0.0), (3, 3.0)]
)
def test_a_date_waits_whole_seconds_a_fraction_dropped(retry_after_s, wait_s):
    faults = scripted(retry_after_s=retry_after_s, retry_after_as="date")
    result = run_both(sy.strategies.single("a"), ["q"], host=sim_host(faults))
    assert retry_wait(result) == wait_s
    assert gap(result) == pytest.approx(wait_s)
    # the seconds spelling keeps the fraction
    seconds = run_both(
        sy.strategies.single("a"), ["q"], host=sim_host(scripted(retry_after_s=retry_after_s))
    )
    assert retry_wait(seconds) == pytest.approx(retry_after_s, rel=1e-6)  # a float32 column


@pytest.mark.parametrize(
    ("retry_after", "wait_s"),
    [
        ({"retry_after_s": 2}, 2.0),
        ({"retry_after_s": 2, "retry_after_as": "date"}, 2.0),
        ({"retry_after_s": None, "retry_after_ms": 1500}, 1.5),
        ({"retry_after_s": 1, "retry_after_ms": 3000}, 3.0),  # retry-after-ms first
        ({"retry_after_s": 1, "retry_after_ms": 250, "retry_after_as": "date"}, 0.25),
    ],
    ids=["seconds", "date", "ms", "ms-and-seconds", "ms-and-date"],
)
def test_sykits_retries_wait_each_spellings_reading(retry_after, wait_s):
    # a random rate limit: the SimHost's own 429s, and an error fault's 503s, the same way
    for faults in (
        sy.Faults(rate_limit=0.5, **retry_after),
        sy.Faults(errors=[ErrorFault(503, 0.5, **retry_after)]),
    ):
        result = run_both(
            sy.strategies.single("a"),
            [sy.Request(f"q{i}", id=i) for i in range(30)],
            host=sim_host(faults, policy=sy.HostPolicy(max_retries=3, cooldown_s=0)),
        )
        retried = result.attempts[result.attempts["retried"]]
        assert len(retried) > 5 and set(retried["retry_wait_s"]) == {wait_s}


def test_the_same_seed_gives_the_same_dated_frames():
    faults = sy.Faults(rate_limit=0.3, retry_after_s=2, retry_after_as="date", retry_after_ms=None)
    requests = [sy.Request(f"q{i}", id=i) for i in range(40)]
    router = sy.strategies.litellm_like(["a", "b"])
    first = sy.run(router, requests, host=sim_host(faults), seed=5, progress=False)
    again = sy.run(router, requests, host=sim_host(faults), seed=5, progress=False)
    pdt.assert_frame_equal(first.attempts, again.attempts)
    assert (first.attempts["http_status"] == 429).sum() > 5


# -- a quota's truthful Retry-After ---------------------------------------------------------------


def quota_run(**spelling) -> sy.Result:
    limit = sy.faults.RateLimit(requests_per_min=7, tokens_per_min=5000, **spelling)
    host = sy.SimHost(
        {"b": sy.ModelProfile(rate_limit=limit)},
        policy=sy.HostPolicy(max_retries=2, retry_after_cap_s=120),
    )
    requests = [sy.Request(f"q{i}", id=i) for i in range(9)]
    return run_both(sy.strategies.single("b"), requests, host=host, seed=3)


def limited(result: sy.Result) -> list[tuple[float, float]]:
    """(start_s, retry_wait_s) of each 429."""
    rows = result.attempts[result.attempts["http_status"] == 429]
    return [
        (round(s, 6), round(w, 6))
        for s, w in zip(rows["start_s"], rows["retry_wait_s"], strict=True)
    ]


def test_a_quotas_retry_after_in_each_spelling():
    seconds = limited(quota_run())
    assert seconds == [(0.0, 8.572), (0.0, 8.572), (8.622, 8.521)]  # rounded up to the ms
    assert limited(quota_run(retry_after_ms=True)) == seconds  # the same wait in milliseconds
    # a date: the first whole second of the virtual clock from which the bucket holds enough,
    # against a Date of the second the answer leaves in (8.572 s from 0 is 9 s): never early,
    # so each retry finds room, as above
    assert limited(quota_run(retry_after_as="date")) == [(0.0, 9.0), (0.0, 9.0), (9.05, 9.0)]
    # retry-after-ms is read first: a date beside it waits the milliseconds
    assert limited(quota_run(retry_after_as="date", retry_after_ms=True)) == seconds


# -- the same settings over HTTP -----------------------------------------------------------------


SPELLINGS = {
    "seconds": {"retry_after_s": 0.3},
    "date": {"retry_after_s": 1, "retry_after_as": "date"},
    "date-fraction": {"retry_after_s": 1.5, "retry_after_as": "date"},
    "ms": {"retry_after_s": None, "retry_after_ms": 300},
    "ms-and-seconds": {"retry_after_s": 2, "retry_after_ms": 300},
    "ms-and-date": {"retry_after_s": 1, "retry_after_as": "date", "retry_after_ms": 300},
}


def http_error(fake: FakeProvider, model: str) -> sy.ModelError:
    host = sy.HttpHost(fake.base_url, models=[model, "b"], api_key="x", policy=ONE_RETRY)
    error = first_error(host, model)
    fake.wait_idle()
    return error


def same_reading(sim: RetryAfter, http: RetryAfter) -> None:
    assert (sim.seconds, sim.ms) == (http.seconds, http.ms)
    assert (sim.header is None) == (http.header is None)
    assert (sim.date_s is None) == (http.date_s is None)  # a date on both sides, or on neither
    if sim.date_s is not None:
        # by the client's clock a date is a fraction of a second nearer than the whole seconds
        # after the Date header it was written as
        assert math.ceil(sim.date_s) == math.ceil(http.date_s) > sim.date_s > http.date_s - 1


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_sim_host_and_the_fake_provider_read_and_wait_the_same(spelling):
    settings = SPELLINGS[spelling]
    sim = sim_host(scripted(**settings))
    policy = sy.HostPolicy(max_retries=1, cooldown_s=0, backoff_initial_s=0.01, timeout_s=5.0)
    models = {"m": FakeModel(fault="fail-429-once", **settings)}
    with FakeProvider(models) as fake:
        http_read = http_error(fake, "m")
        fake.reset()
        host = sy.HttpHost(fake.base_url, models=["m"], api_key="x", policy=policy)
        over_http = sy.run(sy.strategies.single("m"), ["q"], host=host, progress=False)
    sim_read = first_error(sim)
    assert isinstance(sim_read, sy.RateLimitError) and isinstance(http_read, sy.RateLimitError)
    same_reading(sim_read.retry_after, http_read.retry_after)
    assert _litellm_retry_after(sim_read) == _litellm_retry_after(http_read)
    simulated = run_both(sy.strategies.single("a"), ["q"], host=sim)
    wait = http_read.retry_after.seconds
    assert retry_wait(simulated) == pytest.approx(wait, rel=1e-6)  # the float32 column
    assert wait * 0.95 <= retry_wait(over_http) < wait + 0.25  # the wait measured in real time
    assert gap(simulated) == pytest.approx(retry_wait(simulated))


def test_an_error_faults_date_reads_the_same_over_http():
    error = ErrorFault(503, 1.0, retry_after_s=2, retry_after_as="date", retry_after_ms=None)
    with FakeProvider({"m": FakeModel(fault=error)}) as fake:
        # the FakeProvider sends an error fault's date at once (not held to the first 0.9 s of a
        # second as a fail-429's is): ask early in a second, so it cannot arrive in the next one
        time.sleep(1.0 - time.time() % 1.0 if time.time() % 1.0 > 0.5 else 0.0)
        http_read = http_error(fake, "m")
    sim_read = first_error(sim_host(sy.Faults(errors=[error])))
    assert isinstance(sim_read, sy.UnavailableError) and isinstance(http_read, sy.UnavailableError)
    same_reading(sim_read.retry_after, http_read.retry_after)
    assert sim_read.retry_after.seconds == 2.0
    assert _litellm_retry_after(sim_read) == _litellm_retry_after(http_read) == 1


# -- litellm_like reads them as LiteLLM does ------------------------------------------------------


def litellm_gap(faults: sy.Faults, **profile) -> float:
    router = sy.strategies.litellm_like(["a"])
    return gap(run_both(router, ["q"], host=sim_host(faults, **profile), seed=11))


def test_litellm_like_reads_each_spelling_as_litellm_does():
    jitter = litellm_gap(scripted(retry_after_s=2)) - 2.0  # Retry-After: 2, plus its jitter
    assert 0 <= jitter < 0.75
    # a date 2 s after the Date, 0.05 s into its second: 1.95 s away by its clock, int() is 1
    assert litellm_gap(scripted(retry_after_s=2, retry_after_as="date")) == pytest.approx(
        1.0 + jitter
    )
    # retry-after-ms is never read: alone, the backoff (0.5 s); beside Retry-After, that
    assert litellm_gap(scripted(retry_after_s=None, retry_after_ms=1500)) == pytest.approx(
        0.5 + jitter
    )
    assert litellm_gap(scripted(retry_after_s=1, retry_after_ms=3000)) == pytest.approx(
        1.0 + jitter
    )
    # a date 1 s on reads as 0 by its clock: the backoff
    assert litellm_gap(scripted(retry_after_s=1, retry_after_as="date")) == pytest.approx(
        0.5 + jitter
    )
    # an answer leaving on a whole second is exactly the date's distance away
    on_the_second = scripted(retry_after_s=2, retry_after_as="date")
    assert litellm_gap(on_the_second, reject_delay_s=1.0) == pytest.approx(2.0 + jitter)
    # "any" reads it as sykit's retries do: the Date's 2 s
    router = sy.strategies.litellm_like(["a"], retry_after="any")
    result = run_both(router, ["q"], host=sim_host(on_the_second), seed=11)
    assert gap(result) == pytest.approx(2.0 + jitter)


# -- the defaults, as before ----------------------------------------------------------------------


#: (request_id, model, retry_index, start_s, end_s, http_status, retry_wait_s), pinned from the
#: SimHost before retry_after_as and retry_after_ms existed.
PINNED_CHAIN = [
    (0, "a", 0, 0.0, 0.05, 429, 2.0),
    (0, "a", 1, 2.05, 2.1, 429, 2.0),
    (0, "a", 2, 4.1, 6.22, 200, None),
    (1, "a", 0, 0.0, 4.08, 200, None),
    (2, "a", 0, 0.0, 6.42, 200, None),
    (3, "a", 0, 0.0, 3.62, 200, None),
    (4, "a", 0, 0.0, 12.7, 200, None),
    (5, "a", 0, 0.0, 0.05, 429, 2.0),
    (5, "a", 1, 2.05, 2.1, 503, 1.5),
    (5, "a", 2, 3.6, 3.65, 503, None),
    (5, "b", 0, 3.65, 7.23, 200, None),
    (6, "a", 0, 0.0, 0.05, 429, 2.0),
    (6, "a", 1, 2.05, 9.95, 200, None),
    (7, "a", 0, 0.0, 0.05, 429, 2.0),
    (7, "a", 1, 2.05, 2.1, 429, 2.0),
    (7, "a", 2, 4.1, 4.15, 503, None),
    (7, "b", 0, 4.15, 10.07, 200, None),
    (8, "a", 0, 0.0, 4.06, 200, None),
    (9, "a", 0, 0.0, 5.98, 200, None),
]


def pinned(result: sy.Result) -> list[tuple]:
    columns = [
        "request_id",
        "model",
        "retry_index",
        "start_s",
        "end_s",
        "http_status",
        "retry_wait_s",
    ]
    out = []
    for row in result.attempts[columns].itertuples(index=False):
        values = []
        for value in row:
            if isinstance(value, float):
                values.append(None if math.isnan(value) else round(value, 6))
            else:
                values.append(value if isinstance(value, str) else int(value))
        out.append(tuple(values))
    return out


def test_the_defaults_send_what_they_sent_before():
    faults = sy.Faults(
        rate_limit=0.3,
        retry_after_s=2,
        fail_first=1,
        errors=[ErrorFault(503, 0.2, retry_after_s=1.5)],
    )
    host = sy.SimHost(
        {
            "a": sy.ModelProfile(faults=faults),
            "b": sy.ModelProfile(rate_limit=sy.faults.RateLimit(requests_per_min=2)),
        },
        policy=sy.HostPolicy(max_retries=2),
    )
    requests = [sy.Request(f"q{i}", id=i) for i in range(10)]
    result = run_both(sy.strategies.fallback_chain(["a", "b"]), requests, host=host, seed=3)
    assert pinned(result) == PINNED_CHAIN
    quota = sy.SimHost(
        {
            "b": sy.ModelProfile(
                rate_limit=sy.faults.RateLimit(requests_per_min=7, tokens_per_min=5000)
            )
        },
        policy=sy.HostPolicy(max_retries=2, retry_after_cap_s=120),
    )
    requests = [sy.Request(f"q{i}", id=i) for i in range(9)]
    waits = pinned(run_both(sy.strategies.single("b"), requests, host=quota, seed=3))
    assert [row[2:] for row in waits if row[5] == 429] == [
        (0, 0.0, 0.05, 429, 8.572),
        (0, 0.0, 0.05, 429, 8.572),
        (1, 8.622, 8.672, 429, 8.521),
    ]
    # and the headers as sent
    assert first_error(sim_host(sy.Faults(rate_limit=1.0))).retry_after == RetryAfter(
        seconds=1.0, header="1"
    )
    assert ErrorFault(503, 1.0, retry_after_s=1.5).headers() == {"retry-after": "1.5"}
    assert ErrorFault(503, 1.0).headers() == {}


# -- bad values -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda: sy.Faults(retry_after_as="minutes"),
            r"^retry_after_as must be one of \['seconds', 'date'\], got 'minutes'",
        ),
        (lambda: sy.Faults(retry_after_as=None), r"retry_after_as must be one of"),
        (
            lambda: sy.Faults(retry_after_ms=-1),
            r"^retry_after_ms must be a number of milliseconds ≥ 0",
        ),
        (lambda: sy.Faults(retry_after_ms="300"), r"^retry_after_ms must be"),
        (lambda: sy.Faults(retry_after_ms=math.inf), r"^retry_after_ms must be"),
        (
            lambda: ErrorFault(429, 0.1, retry_after_as="ms"),
            r"^ErrorFault retry_after_as must be one of \['seconds', 'date'\]",
        ),
        (
            lambda: ErrorFault(429, 0.1, retry_after_ms=math.nan),
            r"^ErrorFault retry_after_ms must be",
        ),
        (
            lambda: sy.faults.RateLimit(requests_per_min=1, retry_after_as="Date"),
            r"^RateLimit retry_after_as must be one of",
        ),
        (
            lambda: sy.faults.RateLimit(requests_per_min=1, retry_after_ms=1500),
            r"^RateLimit retry_after_ms must be True or False",
        ),
    ],
)
def test_bad_spellings_are_argument_errors(make, match):
    with pytest.raises(sy.ArgumentError, match=match):
        make()


def test_replace_checks_the_spelling_too():
    faults = sy.Faults(retry_after_as="date")
    assert faults.replace(rate_limit=0.1).retry_after_as == "date"
    with pytest.raises(sy.ArgumentError, match="retry_after_as"):
        faults.replace(retry_after_as="http-date")


# -- the engines ----------------------------------------------------------------------------------


def engines(algorithm, faults: sy.Faults) -> tuple[sy.Result, sy.Result]:
    """The run on the kernel (checked against asyncio) and with engine="auto"."""
    requests = [sy.Request(f"q{i}", id=i) for i in range(60)]
    host = sim_host(faults, policy=sy.HostPolicy(max_retries=2, cooldown_s=0))
    kernel = run_both(algorithm, requests, host=host, seed=2)
    auto = sy.run(algorithm, requests, host=host, seed=2, progress=False)
    pdt.assert_frame_equal(kernel.attempts, auto.attempts)
    pdt.assert_frame_equal(kernel.requests, auto.requests)
    return kernel, auto


ALGORITHMS = {
    "chain": lambda: sy.strategies.fallback_chain(["a", "b"]),
    "litellm": lambda: sy.strategies.litellm_like(["a", "b"]),
}


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_the_bulk_engine_reads_retry_after_ms_as_the_event_engines_do(algorithm):
    for retry_after in (
        {"retry_after_s": None, "retry_after_ms": 700},
        {"retry_after_s": 1, "retry_after_ms": 2500},
    ):
        faults = sy.Faults(
            rate_limit=0.3, errors=[ErrorFault(503, 0.1, **retry_after)], **retry_after
        )
        kernel, auto = engines(ALGORITHMS[algorithm](), faults)
        assert auto.engine == "bulk"
        assert (kernel.attempts["http_status"] == 429).sum() > 5


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_a_date_sends_the_run_to_the_event_engines(algorithm):
    for faults in (
        sy.Faults(rate_limit=0.3, retry_after_s=2, retry_after_as="date"),
        sy.Faults(errors=[ErrorFault(503, 0.3, retry_after_s=2, retry_after_as="date")]),
    ):
        _, auto = engines(ALGORITHMS[algorithm](), faults)
        assert auto.engine == "kernel"
        requests = [sy.Request(f"q{i}", id=i) for i in range(3)]
        with pytest.raises(sy.ArgumentError, match="sends Retry-After as an HTTP-date"):
            sy.run(ALGORITHMS[algorithm](), requests, host=sim_host(faults), engine="bulk")
    # a date spelling with no Retry-After to spell is no date: the bulk engine takes it
    _, auto = engines(
        ALGORITHMS[algorithm](),
        sy.Faults(rate_limit=0.3, retry_after_s=None, retry_after_as="date"),
    )
    assert auto.engine == "bulk"
