"""The modelled cost of sub-agents: synthetic families that do a session's work split between a
parent and sub-agents, and the with/without cost ratio benchmarks/subagent_cost_ratio.py reports."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from helpers import load_script

import sykit as sy

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "subagent_cost_ratio.py"


def _script():
    return load_script(SCRIPT)


def test_a_family_makes_each_call_of_the_whole_session_once_plus_the_delegation():
    """Without briefings or re-made reads, a family is the session's calls, each made once (the
    sub-agents the first half, the parent the rest), plus the parent's delegating turn 0 and one
    report turn per sub-agent; each context holds only the growth of its own calls."""
    whole = sy.sessions.synthetic_sessions(6, seed=1)
    split = sy.sessions.synthetic_sessions(6, seed=1, subagents=2, briefing_tokens=0, rediscovery=0)
    for session in whole:
        family = [s for s in split if s.id == session.id or s.parent == session.id]
        if len(family) == 1:  # too short to split: unchanged
            assert len(session.turns) < 5
            assert family[0] == session
            continue
        parent, *children = family
        assert [c.id for c in children] == [f"{session.id}/sub0", f"{session.id}/sub1"]
        assert {(c.parent, c.parent_turn) for c in children} == {(session.id, 0)}
        tokens = [t.request.input_tokens for t in session.turns]
        n, m = len(tokens), len(tokens) // 2
        assert sum(len(s.turns) for s in family) == n + 1 + len(children)
        assert parent.turns[0].request == session.turns[0].request
        # the parent's own calls (m …) hold their growth, not the delegated calls'
        assert [t.request.input_tokens for t in parent.turns[1:]] == [
            x - (tokens[m] - tokens[0]) for x in tokens[m:]
        ]
        assert parent.turns[1].request.metadata["tool"] == "delegate"
        assert [t.gap_s for t in parent.turns[2:]] == [t.gap_s for t in session.turns[m + 1 :]]
        # each sub-agent opens afresh and holds its own calls' growth, through its report turn
        start = 0
        for child in children:
            calls = len(child.turns) - 1
            assert [t.request.input_tokens for t in child.turns] == [
                tokens[0] + x - tokens[start] for x in tokens[start : start + calls + 1]
            ]
            start += calls
        assert start == m


def test_subagents_must_be_a_count():
    with pytest.raises(sy.ArgumentError, match="subagents"):
        sy.sessions.synthetic_sessions(2, subagents=-1)


def test_asking_for_subagents_no_session_is_long_enough_for_warns():
    """Sessions too short for ``k`` sub-agents stay whole (as documented); when that leaves
    none split, the caller learns it instead of comparing families that are not there."""
    with pytest.warns(
        UserWarning, match=r"subagents=50 split none of the 3 session\(s\).*101 turns"
    ):
        sessions = sy.sessions.synthetic_sessions(3, subagents=50)
    assert sessions == sy.sessions.synthetic_sessions(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        split = sy.sessions.synthetic_sessions(3, subagents=2)
    assert any(s.parent is not None for s in split)


def test_the_modelled_cost_ratio_is_the_family_tokens_over_the_whole_sessions():
    """Without a cache and with 10-token answers at 1 USD per 1M prompt tokens and 2 per 1M
    answer tokens, a task costs its prompts plus its answers: a family's prompts are its
    sessions' own, plus each sub-agent's 10-token answer in every parent turn after the spawn."""
    profile = sy.ModelProfile(price_in=1.0, price_out=2.0, output_tokens=10)
    n, seed, k = 5, 2, 2
    with_, without, ratio = _script().modelled_cost_ratio(profile, n=n, seed=seed, subagents=k)

    def cost(sessions):
        total = 0.0
        for s in sessions:
            children = [c for c in sessions if c.parent == s.id]
            carried = 10 * len(children)
            for t, turn in enumerate(s.turns):
                total += turn.request.input_tokens + (carried if t > 0 else 0) + 2 * 10
        return total / 1e6 / n

    assert without == pytest.approx(cost(sy.sessions.synthetic_sessions(n, seed=seed)), rel=1e-12)
    split = sy.sessions.synthetic_sessions(n, seed=seed, subagents=k)
    assert with_ == pytest.approx(cost(split), rel=1e-12)
    assert ratio == pytest.approx(with_ / without, rel=1e-12)
    # briefings, report turns and re-made reads cost more than the shorter contexts save
    assert ratio > 1  # 1.22 here
