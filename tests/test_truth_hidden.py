"""The ground truth is out of an algorithm's reach: no chain of attribute or item lookups from its
``driver``, its ``request`` or the responses it gets meets a ``GroundTruth`` or a dataset's grade,
on both engines, while ``sy.strategies.peek_truth`` (which marks the request), the simulated judge,
the oracle and the results still see it."""

from __future__ import annotations

import array
import collections
import math
import types
from collections.abc import Mapping

import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy
from sykit import strategies as st
from sykit._world.models import GroundTruth

ENGINES = ["kernel", "asyncio"]

# Grades no computation of sykit's would produce by chance, so a float equal to one of them is a
# grade that leaked. ``hidden`` is an analysis column: it reaches result.requests, not algorithms.
WEAK = [0.123456, 0.234567, 0.345678, 0.456789, 0.567891, 0.678912, 0.789123, 0.891234]
STRONG = [0.912345, 0.823456, 0.734567, 0.645678, 0.556789, 0.467891, 0.378912, 0.289123]
HIDDEN = [0.111317, 0.192329, 0.313741, 0.434753, 0.596167, 0.717379, 0.838997, 0.101103]
SENTINELS = frozenset(WEAK + STRONG + HIDDEN)

TABLE = pd.DataFrame(
    {
        "q": [f"question {i}" for i in range(8)],
        "weak": WEAK,
        "strong": STRONG,
        "hidden": HIDDEN,
        "topic": ["x", "y"] * 4,
    }
)

#: Objects whose contents are not data of the run: never walked into.
_OPAQUE = (
    bool,
    int,
    complex,
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
    str,
    bytes,
)


def _children(obj: object) -> list[tuple[str, object]]:
    """What one attribute or item lookup reaches from ``obj``: its instance attributes
    (``vars()``, ``__slots__``), and the items of a container."""
    out: list[tuple[str, object]] = []
    if isinstance(obj, dict | types.MappingProxyType | Mapping):
        try:
            for key, value in list(obj.items()):
                out.append((f"[{key!r:.40}]", value))
                out.append((f"<key {key!r:.40}>", key))
        except Exception:
            pass
    elif isinstance(obj, list | tuple | set | frozenset | collections.deque):
        out.extend((f"[{i}]", value) for i, value in enumerate(list(obj)))
    elif isinstance(obj, array.array):
        out.extend((f"[{i}]", value) for i, value in enumerate(obj))
    if isinstance(obj, types.FunctionType | types.MethodType):
        return out  # its own __dict__ only: not its globals, code or closure
    try:
        attributes = vars(obj)
    except TypeError:
        attributes = {}
    out.extend((f".{name}", value) for name, value in list(attributes.items()))
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                value = getattr(obj, name)
            except AttributeError:
                continue
            out.append((f".{name}", value))
    return out


def leaks(*roots: tuple[str, object], depth: int = 10) -> list[str]:
    """Breadth-first from ``roots``: the paths that reach a GroundTruth or a sentinel grade."""
    found: list[str] = []
    seen: set[int] = set()
    keep: list[object] = []  # holds what was visited, so no id is reused during the walk
    queue = collections.deque((path, obj, 0) for path, obj in roots)
    while queue:
        path, obj, level = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        keep.append(obj)
        if isinstance(obj, GroundTruth):
            found.append(path)
            continue
        if isinstance(obj, float):
            if obj in SENTINELS:
                found.append(f"{path} = {obj}")
            continue
        if obj is None or isinstance(obj, _OPAQUE) or level >= depth:
            continue
        for step, child in _children(obj):
            if id(child) not in seen:
                queue.append((path + step, child, level + 1))
    return found


def dataset() -> sy.datasets.Dataset:
    return sy.datasets.from_frame(
        TABLE, prompt="q", quality={"weak": "weak", "strong": "strong"}, metadata=["topic"]
    )


def host() -> sy.SimHost:
    return sy.SimHost(
        {
            "weak": constant_profile(0.25, 20, 100.0, price_in=0.1, price_out=0.4),
            "strong": constant_profile(0.5, 20, 50.0, price_in=1.0, price_out=3.0),
            "judge": constant_profile(0.1, 5, 100.0, price_in=0.1, price_out=0.1),
        },
        judge=sy.Judge(accuracy=1.0),
    )


def test_the_walk_finds_a_grade_where_there_is_one():
    """The walk itself: it finds the truth a dataset's own requests carry, and a grade anywhere."""
    request = next(iter(dataset()))
    assert leaks(("request", request))  # the dataset's request: with its truth
    assert leaks(("x", {"a": [array.array("d", (0.0, WEAK[3]))]}))
    assert not leaks(("x", {"a": [array.array("d", (0.0, 0.5))]}))


@pytest.mark.parametrize("engine", ENGINES)
def test_no_lookup_from_the_driver_request_or_responses_reaches_the_truth(engine):
    found: list[str] = []
    walks: list[int] = []
    verdicts: list[bool] = []

    def check(where: str, *roots: tuple[str, object]) -> None:
        walks.append(1)
        found.extend(f"{where}: {path}" for path in leaks(*roots))

    async def snoop(request, driver):
        check("start", ("driver", driver), ("request", request))
        weak = await driver.call_model(request, ["weak"])
        check("after a call", ("driver", driver), ("request", request), ("weak", weak))
        # a race: its loser is cancelled while the walk looks
        strong = await sy.first(
            driver.call_model(request, ["strong"]), driver.call_model(request, ["weak"])
        )
        verdict = await driver.call_decision(sy.ask_good_enough(request, weak), "judge")
        verdicts.append(verdict.yes("good_enough"))
        check("after a decision", ("driver", driver), ("strong", strong), ("verdict", verdict))
        async with driver.stream_model(request, ["strong"]) as stream:
            async for chunk in stream:
                if chunk.index == 3:  # mid-stream: the planned attempt is the stream's
                    check("streaming", ("driver", driver), ("stream", stream))
        check("after a stream", ("driver", driver), ("streamed", stream.response))
        driver.evidence(seen=len(walks))
        return sy.answered("weak", weak)

    data = dataset()
    result = sy.run(snoop, data, host=host(), engine=engine, concurrency=3, seed=1)
    assert found == []
    assert len(walks) == 5 * len(data)
    assert (result.requests["status"] == "ok").all()
    # the truth still reaches the judge (accuracy 1: it answers the truth) and the results
    assert verdicts.count(True) == sum(q >= 0.5 for q in WEAK)
    assert result.requests["quality"].tolist() == WEAK
    assert result.requests["hidden"].tolist() == HIDDEN
    assert result.requests["topic"].tolist() == ["x", "y"] * 4
    assert not result.requests["reads_truth"].any()
    ok = result.attempts[(result.attempts["status"] == "ok") & (result.attempts["kind"] == "model")]
    expected = [
        (WEAK if model == "weak" else STRONG)[i]
        for i, model in zip(ok["request_id"], ok["model"], strict=True)
    ]
    assert ok["quality"].tolist() == expected


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spill", [False, True])
def test_earlier_requests_leave_no_grades_behind(engine, spill, tmp_path, monkeypatch):
    """One request at a time: each one walks after the ones before it have been recorded (and,
    spilling in chunks of two rows, handed over)."""
    if spill:
        monkeypatch.setattr("sykit._run.spill.CHUNK_ROWS", 2)
    found: list[str] = []

    async def snoop(request, driver):
        found.extend(leaks(("driver", driver), ("request", request)))
        response = await driver.call_model(request, ["strong"])
        found.extend(leaks(("driver", driver), ("response", response)))
        driver.evidence(hidden=1)  # as the analysis column's name: its evidence_ column
        return sy.route_to("weak", request)

    where = str(tmp_path / "spill") if spill else None
    result = sy.run(snoop, dataset(), host=host(), engine=engine, concurrency=1, spill=where)
    assert found == []
    assert result.requests["quality"].tolist() == WEAK
    assert result.requests["hidden"].tolist() == HIDDEN
    assert result.requests["evidence_hidden"].tolist() == [1] * 8
    assert list(result.requests.columns[-3:]) == ["topic", "hidden", "evidence_hidden"]
    strong = result.attempts[result.attempts["model"] == "strong"]
    assert strong["quality"].tolist() == STRONG


@pytest.mark.parametrize("engine", ENGINES)
def test_session_turns_hide_their_truth_too(engine):
    found: list[str] = []

    async def snoop(request, driver):
        driver.session_state["n"] = driver.session_state.get("n", 0) + 1
        found.extend(leaks(("driver", driver), ("request", request)))
        return sy.route_to("strong", request)

    turns = list(dataset())
    sessions = [sy.sessions.Session(turns[:4], id="a"), sy.sessions.Session(turns[4:], id="b")]
    result = sy.run(snoop, sessions, host=host(), engine=engine)
    assert found == []
    assert result.requests["quality"].tolist() == STRONG
    assert result.requests["hidden"].tolist() == HIDDEN


@pytest.mark.parametrize("engine", ENGINES)
def test_peek_truth_still_opens_the_door_and_marks_the_request(engine):
    views: list[float | None] = []

    async def peeks_on_odd_ones(request, driver):
        if driver.request_id % 2:
            views.append(sy.strategies.peek_truth(driver).quality("strong"))
        return sy.route_to("weak", request)

    result = sy.run(peeks_on_odd_ones, dataset(), host=host(), engine=engine)
    assert views == STRONG[1::2]
    assert result.requests["reads_truth"].tolist() == [False, True] * 4
    summary = result.summary()
    assert not summary["realizable"].iloc[0]


def test_the_oracle_still_reads_the_truth():
    result = sy.run(st.oracle(["weak", "strong"]), dataset(), host=host())
    best = [max(w, s) for w, s in zip(WEAK, STRONG, strict=True)]
    assert result.requests["quality"].tolist() == best
    assert result.requests["reads_truth"].all()


def test_profile_drawn_grades_still_reach_the_records():
    """Without a dataset the grade comes from the profile's quality (one keyed draw a request)."""
    profiles = {
        "weak": constant_profile(0.25, 20, 100.0, price_in=0.1, price_out=0.4, quality=0.3),
        "strong": constant_profile(0.5, 20, 50.0, price_in=1.0, price_out=3.0, quality=0.9),
    }
    requests = [sy.Request(f"q{i}") for i in range(40)]
    seen: list[float | None] = []

    async def peek(request, driver):
        view = sy.strategies.peek_truth(driver)
        seen.append(view.quality("weak"))
        return sy.route_to("weak", request)

    result = sy.run(peek, requests, host=sy.SimHost(profiles), seed=3)
    quality = result.requests["quality"].tolist()
    assert set(quality) <= {0.0, 1.0} and 0 < sum(quality) < 40
    assert sorted(quality) == sorted(seen)
    assert not any(math.isnan(q) for q in quality)
