"""The strategy library: each strategy does what its name says, on exact simulated timings."""

from __future__ import annotations

import pandas.testing as pdt
import pytest
from helpers import constant_profile, rows

import sykit as sy
from sykit import strategies as st


@pytest.fixture
def two_tier():
    """weak (cheap, right 50% of the time) and strong (pricey, right 85%), plus a perfect judge."""
    return sy.SimHost(
        {
            "weak": constant_profile(0.25, 50, 100.0, price_in=0.1, price_out=0.4, quality=0.5),
            "strong": constant_profile(
                1.0, 100, 50.0, price_in=5.0, price_out=15.0, quality=0.85, vision=True
            ),
            "judge": constant_profile(0.25, 5, 20.0, price_in=0.1, price_out=0.4),
        },
        judge=sy.Judge(accuracy=1.0),
    )


REQUESTS = [sy.Request(f"q{i}", id=i) for i in range(400)]


def served(result):
    return result.requests.set_index("request_id")["served_model"].astype(str)


def test_single_sends_everything_to_one_model(two_tier):
    res = sy.run(st.single("strong"), REQUESTS[:20], host=two_tier)
    assert set(served(res)) == {"strong"}
    assert res.strategy == "single(strong)"


def test_weighted_random_follows_its_weights_and_is_monotone(two_tier):
    light = sy.run(st.weighted_random({"weak": 0.7, "strong": 0.3}), REQUESTS, host=two_tier)
    heavy = sy.run(st.weighted_random({"weak": 0.4, "strong": 0.6}), REQUESTS, host=two_tier)
    light_strong = set(served(light)[served(light) == "strong"].index)
    heavy_strong = set(served(heavy)[served(heavy) == "strong"].index)
    assert len(light_strong) / len(REQUESTS) == pytest.approx(0.3, abs=0.06)
    assert light_strong <= heavy_strong  # raising a weight only moves requests toward it
    other_seed = sy.run(
        st.weighted_random({"weak": 0.7, "strong": 0.3}, seed=1), REQUESTS, host=two_tier
    )
    assert not served(other_seed).equals(served(light))


def test_weighted_random_draws_with_the_runs_seed_unless_given_its_own(two_tier):
    router = st.weighted_random({"weak": 0.5, "strong": 0.5})
    comparison = sy.compare({"r": router}, REQUESTS, host=two_tier, seeds=[0, 1, 2])
    picks = {
        seed: frame.set_index("request_id")["selected_model"].astype(str)
        for seed, frame in comparison.requests.groupby("seed")
    }
    assert not picks[0].equals(picks[1]) and not picks[1].equals(picks[2])
    again = sy.run(router, REQUESTS, host=two_tier, seed=1)
    assert again.requests.set_index("request_id")["selected_model"].astype(str).equals(picks[1])
    fixed = st.weighted_random({"weak": 0.5, "strong": 0.5}, seed=7)
    first, second = (sy.run(fixed, REQUESTS, host=two_tier, seed=s) for s in (0, 1))
    assert served(first).equals(served(second))  # its own seed wins over the run's
    with pytest.raises(ValueError, match="seed"):
        st.weighted_random(["weak", "strong"], seed=1.5)  # type: ignore[arg-type]  # a float seed is refused


def test_weighted_random_rejects_bad_weights():
    with pytest.raises(ValueError, match="weights"):
        st.weighted_random({"a": -1, "b": 1})
    with pytest.raises(ValueError, match="weights"):
        st.weighted_random({"a": 0, "b": 0})


def test_cascade_accepts_good_drafts_and_escalates_the_rest(two_tier):
    res = sy.run(st.cascade("weak", "strong", judge="judge"), REQUESTS[:100], host=two_tier)
    frame = res.requests
    accepted = frame[frame["evidence_verdict"] == "accept"]
    escalated = frame[frame["evidence_verdict"] == "escalate"]
    assert set(accepted["served_model"].astype(str)) == {"weak"}
    assert set(escalated["served_model"].astype(str)) == {"strong"}
    assert (accepted["quality"] == 1.0).all()  # a perfect judge accepts only correct drafts
    # the rejected draft was paid for and not served
    assert (escalated["wasted_usd"] > 0).all() and (accepted["wasted_usd"] == 0).all()


def test_cascade_with_a_judge_timeout_escalates(two_tier):
    res = sy.run(
        st.cascade("weak", "strong", judge="judge", judge_timeout_s=0.25),
        REQUESTS[:5],
        host=two_tier,
    )
    assert set(res.requests["evidence_verdict"]) == {"judge_unavailable"}
    assert set(rows(res, kind="decision")[0].values()) >= {"timeout"}


def test_calibrated_threshold_router_sends_the_target_share_to_strong(two_tier):
    score = st.simulated_score("weak", "strong", noise=0.3)
    threshold = st.calibrate(score, REQUESTS, 0.25, host=two_tier)
    res = sy.run(
        st.threshold_router("weak", "strong", score=score, threshold=threshold),
        REQUESTS,
        host=two_tier,
    )
    share = (served(res) == "strong").mean()
    assert share == pytest.approx(0.25, abs=0.01)
    assert "evidence_score" in res.requests.columns


def test_a_perfect_score_sends_strong_exactly_where_it_helps(two_tier):
    score = st.simulated_score("weak", "strong", noise=0.0)
    res = sy.run(
        st.threshold_router("weak", "strong", score=score, threshold=0.5), REQUESTS, host=two_tier
    )
    weak_alone = sy.run(st.single("weak"), REQUESTS, host=two_tier).requests.set_index(
        "request_id"
    )["quality"]
    strong_alone = sy.run(st.single("strong"), REQUESTS, host=two_tier).requests.set_index(
        "request_id"
    )["quality"]
    helps = set(strong_alone[(strong_alone == 1.0) & (weak_alone == 0.0)].index)
    assert set(served(res)[served(res) == "strong"].index) == helps


def test_threshold_router_accepts_a_plain_score_function(two_tier):
    router = st.threshold_router("weak", "strong", score=lambda r: r.input_tokens, threshold=6)
    long = sy.Request("a much longer question text here", id="long")
    res = sy.run(router, [sy.Request("hi", id="short"), long], host=two_tier)
    assert served(res).to_dict() == {"short": "weak", "long": "strong"}


def test_hedge_at_an_observed_quantile_and_runs_stay_independent(two_tier):
    hedger = st.hedge("strong", after="p95", warmup=5, initial_after=0.5)
    first = sy.run(hedger, REQUESTS[:30], host=two_tier, concurrency=1)
    delays = first.requests["evidence_hedge_after_s"].tolist()
    assert delays[:5] == [0.5] * 5
    assert delays[5:] == [3.0] * 25  # every strong answer takes exactly 3.0 s
    second = sy.run(hedger, REQUESTS[:30], host=two_tier, concurrency=1)
    pdt.assert_frame_equal(first.requests, second.requests)


def test_hedge_rejects_a_bad_quantile():
    with pytest.raises(ValueError, match="p95"):
        st.hedge("strong", after="fast")


@pytest.mark.parametrize(("judge", "source"), [("judge", None), ("slow_judge", "strong_first")])
def test_speculative_branches(two_tier, judge, source):
    host = two_tier.replace(
        models={**two_tier.profiles, "slow_judge": constant_profile(5.0, 5, 20.0)}
    )
    res = sy.run(
        st.speculative("weak", "strong", judge=judge), REQUESTS[:40], host=host, concurrency=40
    )
    sources = set(res.requests["evidence_source"])
    if source is not None:
        assert sources == {source}
        assert set(rows(res, kind="decision")[0].values()) >= {"cancelled", "lost_race"}
        return
    assert sources == {"judge_weak", "judge_strong"}
    for rid, frame in res.attempts.groupby("request_id"):
        strong = frame[frame["model"] == "strong"].iloc[0]
        request = res.requests.set_index("request_id").loc[rid]
        if request["evidence_source"] == "judge_weak":
            assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
                "cancelled",
                "lost_race",
                0.5,
            )
            assert request["served_model"] == "weak"
        else:
            assert strong["status"] == "ok" and request["served_model"] == "strong"


def test_capability_aware_sends_images_to_vision_models_and_long_inputs_to_big_windows(two_tier):
    router = st.capability_aware(
        ["weak", "strong"], vision={"strong"}, context_windows={"weak": 8_000}
    )
    reqs = [
        sy.Request("text", id="text"),
        sy.Request("picture", id="image", images=["https://example.com/x.png"]),
        sy.Request("long", id="long", input_tokens=20_000),
    ]
    res = sy.run(router, reqs, host=two_tier)
    assert served(res).to_dict() == {"text": "weak", "image": "strong", "long": "strong"}
    assert len(res.attempts) == 3  # no capability 400 was needed to find out


def test_litellm_like_falls_back_on_429_and_on_a_plain_400():
    host = sy.SimHost(
        {
            "limited": constant_profile(
                0.25, 50, 100.0, faults=sy.Faults(rate_limit=1.0, retry_after_s=0.5)
            ),
            "picky": constant_profile(0.25, 50, 100.0, faults=sy.Faults(invalid=1.0)),
            "ok": constant_profile(0.25, 50, 100.0),
        },
        policy=sy.HostPolicy(max_retries=0),
    )
    res = sy.run(st.litellm_like(["limited", "ok"]), REQUESTS[:1], host=host)
    assert served(res).tolist() == ["ok"]
    # LiteLLM's fallbacks catch every error class, a plain 400 included (not retried)
    res = sy.run(st.litellm_like(["picky", "ok"]), REQUESTS[:1], host=host)
    assert served(res).tolist() == ["ok"]
    assert res.attempts["model"].tolist() == ["picky", "ok"]


def test_litellm_like_cools_a_failing_deployment_down():
    host = sy.SimHost(
        {
            "flaky": constant_profile(0.25, 50, 100.0, faults=sy.Faults(unavailable=1.0)),
            "ok": constant_profile(0.25, 50, 100.0),
        },
        policy=sy.HostPolicy(max_retries=0, cooldown_s=0),
    )
    router = st.litellm_like(["flaky", "ok"], num_retries=0, allowed_fails=1, cooldown_time=10.0)
    res = sy.run(router, REQUESTS[:4], host=host, arrivals=[0.0, 1.0, 2.0, 12.0])
    flaky = res.attempts[res.attempts["model"] == "flaky"]
    # the 2nd failure (> 1) cools it for request 2, which skips it; back at t=12
    assert flaky["request_id"].tolist() == [0, 1, 2, 3]
    assert flaky["status"].tolist() == ["error", "error", "skipped", "error"]


def test_oracle_is_the_upper_bound(two_tier):
    reqs = REQUESTS[:200]
    cmp = sy.compare(
        {
            "oracle": st.oracle(["weak", "strong"]),
            "weak": st.single("weak"),
            "strong": st.single("strong"),
            "random": st.weighted_random(["weak", "strong"]),
            "cascade": st.cascade("weak", "strong", judge="judge"),
        },
        reqs,
        host=two_tier,
    )
    summary = cmp.summary().set_index("strategy")
    best = summary.drop(index="oracle")["mean_quality"].max()
    assert summary.loc["oracle", "mean_quality"] >= best
    assert summary.loc["oracle", "cost_usd"] < summary.loc["strong", "cost_usd"]
    assert "oracle" not in list(cmp.pareto()["strategy"])  # a bound, not a router to choose
