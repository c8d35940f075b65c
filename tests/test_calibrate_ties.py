"""calibrate() hits the target share exactly when scores tie at the threshold: the tied requests
are split by a seeded hash of their ids, and threshold_router honours the split in a run."""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy
from sykit import strategies as st
from sykit._base.rng import uniforms
from sykit.strategies._calibration import Threshold, tie_draw

N = 600
REQUESTS = [sy.Request(f"question {i}", id=f"r{i}") for i in range(N)]


def coarse(request: sy.Request) -> float:
    """Three distinct values, 200 requests each: every threshold is a heavy tie."""
    return [0.0, 0.5, 1.0][int(request.id[1:]) % 3]


def distinct(request: sy.Request) -> float:
    return int(request.id[1:]) / N


@pytest.fixture(scope="module")
def host():
    return sy.SimHost(
        {
            "weak": constant_profile(0.25, 50, 100.0, price_in=0.1, price_out=0.4, quality=0.5),
            "strong": constant_profile(1.0, 100, 50.0, price_in=5.0, price_out=15.0, quality=0.85),
        }
    )


def strong_ids(threshold, host, score=coarse, requests=REQUESTS) -> set:
    result = sy.run(
        st.threshold_router("weak", "strong", score=score, threshold=threshold),
        requests,
        host=host,
    )
    frame = result.requests
    return set(frame.loc[frame["selected_model"] == "strong", "request_id"])


@pytest.mark.parametrize("share", [0.1, 0.5, 0.9, 0.25, 0.75])
def test_a_heavily_tied_score_hits_the_share_exactly(share, host):
    threshold = st.calibrate(coarse, REQUESTS, share)
    assert isinstance(threshold, Threshold) and isinstance(threshold, float)
    assert len(strong_ids(threshold, host)) == round(share * N)
    assert threshold.strong == round(share * N)


def test_a_plain_float_keeps_the_old_tied_behaviour(host):
    threshold = st.calibrate(coarse, REQUESTS, 0.5)
    assert float(threshold) == 0.5
    assert len(strong_ids(float(threshold), host)) == 400  # every tie goes strong: 66.7 %


def test_the_note_has_the_right_numbers():
    threshold = st.calibrate(coarse, REQUESTS, 0.5)
    assert threshold.tied == 200
    assert threshold.tied_strong == 100  # 200 above 0.5 plus 100 of the 200 at it = 300
    assert threshold.requests == N and threshold.share == 0.5 and threshold.seed == 0
    assert threshold.note == (
        "200 requests tie at 0.5; 100 of them, chosen by a seeded hash of their ids (seed 0), "
        "go to the strong model so that 50.0 % of 600 do"
    )
    assert threshold.note in repr(threshold)
    tied = [i for i, r in enumerate(REQUESTS) if coarse(r) == 0.5]
    below = [i for i in tied if tie_draw(0, f"r{i}") < threshold.cut]
    assert len(below) == 100
    high = st.calibrate(coarse, REQUESTS, 0.9)
    assert (high.tied, high.tied_strong, float(high)) == (200, 140, 0.0)
    assert "90.0 % of 600" in high.note


def test_the_tie_hash_is_the_documented_keyed_draw():
    assert tie_draw(3, "r7") == uniforms(3, "tie", "r7")[0]


def test_the_same_seed_picks_the_same_requests_another_seed_others(host):
    first = strong_ids(st.calibrate(coarse, REQUESTS, 0.5, seed=1), host)
    again = strong_ids(st.calibrate(coarse, REQUESTS, 0.5, seed=1), host)
    other = strong_ids(st.calibrate(coarse, REQUESTS, 0.5, seed=2), host)
    assert first == again
    assert first != other
    assert len(other) == len(first) == 300
    above = {r.id for r in REQUESTS if coarse(r) == 1.0}
    assert above <= first and above <= other  # only the tied requests change


def test_untied_scores_calibrate_as_before(host):
    for share in (0.1, 0.5, 0.9):
        threshold = st.calibrate(distinct, REQUESTS, share)
        k = round(share * N)
        assert float(threshold) == sorted(distinct(r) for r in REQUESTS)[N - k]
        assert threshold.cut is None and threshold.tied == 1
        assert threshold.note.startswith("no ties")
        assert strong_ids(threshold, host, distinct) == strong_ids(float(threshold), host, distinct)
        assert len(strong_ids(threshold, host, distinct)) == k


def test_the_ends_of_the_share_range():
    assert st.calibrate(coarse, REQUESTS, 0.0) == float("inf")
    everything = st.calibrate(coarse, REQUESTS, 1.0)
    assert float(everything) == 0.0 and everything.cut is None and everything.strong == N
    tiny = st.calibrate(coarse, REQUESTS, 0.0001)  # a positive share sends at least one
    assert tiny.strong == 1 and tiny.tied_strong == 1


def test_requests_without_ids_are_keyed_by_position(host):
    anonymous = [sy.Request(f"question {i}") for i in range(N)]

    def by_position(request: sy.Request) -> float:
        return [0.0, 0.5, 1.0][int(request.prompt.split()[1]) % 3]

    threshold = st.calibrate(by_position, anonymous, 0.5)
    assert len(strong_ids(threshold, host, by_position, anonymous)) == 300


def test_tied_requests_carry_their_tie_break_as_evidence(host):
    threshold = st.calibrate(coarse, REQUESTS, 0.5)
    frame = sy.run(
        st.threshold_router("weak", "strong", score=coarse, threshold=threshold),
        REQUESTS,
        host=host,
    ).requests
    tied = frame[frame["evidence_score"] == 0.5]
    assert len(tied) == 200
    assert (tied["evidence_tie_break"] == "strong").sum() == 100
    assert (tied["evidence_tie_break"] == tied["selected_model"]).all()
    assert frame.loc[frame["evidence_score"] != 0.5, "evidence_tie_break"].isna().all()
    assert set(frame["evidence_threshold"]) == {0.5}


def test_calibrate_is_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st.calibrate(coarse, REQUESTS, 0.5)


def test_a_threshold_behaves_as_its_number():
    threshold = st.calibrate(coarse, REQUESTS, 0.5)
    assert threshold == 0.5 and threshold + 1 == 1.5 and f"{threshold:.2f}" == "0.50"
    assert str(threshold) == "0.5"
    for clone in (pickle.loads(pickle.dumps(threshold)), copy.deepcopy(threshold)):
        assert isinstance(clone, Threshold)
        assert (clone.cut, clone.tied, clone.note) == (
            threshold.cut,
            threshold.tied,
            threshold.note,
        )


def test_several_shares_scored_once_give_each_share_s_threshold():
    """calibrate_shares scores the requests once and gives, share by share, what calibrate
    gives (ties split alike), for a function of the request and for a simulated score."""
    from sykit.strategies._calibration import calibrate_shares

    calls = []

    def counted(request: sy.Request) -> float:
        calls.append(request.id)
        return coarse(request)

    shares = [0.0, 0.1, 1 / 3, 0.5, 0.9, 1.0]
    together = calibrate_shares(counted, REQUESTS, shares, seed=3)
    assert len(calls) == N  # each request scored once
    for share, threshold in zip(shares, together, strict=True):
        alone = st.calibrate(coarse, REQUESTS, share, seed=3)
        assert float(threshold) == float(alone) and threshold.note == alone.note
    data = sy.datasets.load("routellm").filter(benchmark="gsm8k").sample(300, seed=0)
    score = st.simulated_score("mixtral-8x7b-instruct-v0.1", "gpt-4-1106-preview")
    simulated = calibrate_shares(score, data, [0.2, 0.7])
    assert [float(t) for t in simulated] == [
        float(st.calibrate(score, data, share)) for share in (0.2, 0.7)
    ]
    with pytest.raises(sy.ArgumentError, match="target_share"):
        calibrate_shares(coarse, REQUESTS, [0.5, 1.5])


def test_a_nan_score_fails_its_request_on_every_engine_and_calibrate_refuses_it() -> None:
    """NaN is on no side of a threshold: routed weak unseen, it would skew the share. The
    request fails, saying why, alike on every engine; calibrate names the request."""
    host = sy.SimHost({"w": sy.ModelProfile(), "s": sy.ModelProfile()})
    requests = [sy.Request(text, id=i) for i, text in enumerate("abc")]

    def score(request: sy.Request) -> float:
        return math.nan if request.id == 1 else 0.9

    router = st.threshold_router("w", "s", score=score, threshold=0.5)
    frames = {}
    for engine in ("auto", "kernel", "asyncio"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frames[engine] = sy.run(router, requests, host=host, engine=engine).requests
        pd.testing.assert_frame_equal(frames[engine], frames["auto"], check_exact=True)
    assert frames["auto"]["status"].astype(str).tolist() == ["ok", "failed", "ok"]
    assert "the score is NaN for request 1" in frames["auto"]["error_message"].iloc[1]
    with pytest.raises(sy.errors.ArgumentError, match="returned NaN for request 1"):
        st.calibrate(score, requests, 0.5)
