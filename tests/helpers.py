"""Helpers shared by the tests: constant-latency profiles and attempt-row filters."""

from __future__ import annotations

import sykit as sy


def constant_profile(ttft: float, tokens: int, tps: float, **kwargs) -> sy.ModelProfile:
    """A profile whose every answer takes exactly ttft + tokens / tps seconds."""
    return sy.ModelProfile(
        latency=sy.Latency(ttft=ttft, tokens_per_s=tps), output_tokens=tokens, **kwargs
    )


def rows(result: sy.Result, **where) -> list[dict]:
    """Attempt rows matching column == value filters, as dicts in start order."""
    frame = result.attempts
    for column, value in where.items():
        frame = frame[frame[column] == value]
    return frame.to_dict("records")
